//! The HTTP/1.0 responses of the metrics port (one per connection).

/// An HTTP/1.0 response.
pub fn response(status: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.0 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}
