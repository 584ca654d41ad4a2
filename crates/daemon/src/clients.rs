//! Local clients of the control socket (`braid ctl`) and of the metrics
//! port, served without ever making the forwarding loop wait: a client's
//! request line is read as it arrives and its answer written as its
//! socket takes it, each step on a readiness event. What a client may
//! cost is bounded: at most `MAX_CLIENTS` at once, a request line of at
//! most `MAX_REQUEST` bytes, and `IDLE` without progress before it is
//! dropped.

use std::io::{self, ErrorKind, Read, Write};
use std::time::Duration;

use mio::event::Source;
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};

use braid_proto::time::Instant;

/// Clients served at once; more are refused (closed at once).
pub const MAX_CLIENTS: usize = 16;
/// The longest request line read (an HTTP request's first line, or a ctl
/// command).
pub const MAX_REQUEST: usize = 4096;
/// A client that makes no progress for this long is dropped.
pub const IDLE: Duration = Duration::from_secs(5);

/// Which service a client came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    Ctl,
    Metrics,
}

/// A connection of either kind.
#[derive(Debug)]
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Source for Stream {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.register(r, t, i),
            Stream::Tcp(s) => s.register(r, t, i),
        }
    }
    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.reregister(r, t, i),
            Stream::Tcp(s) => s.reregister(r, t, i),
        }
    }
    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.deregister(r),
            Stream::Tcp(s) => s.deregister(r),
        }
    }
}

/// One client's state.
#[derive(Debug)]
pub struct Client {
    pub service: Service,
    pub stream: Stream,
    request: Vec<u8>,
    reply: Vec<u8>,
    written: usize,
    last_progress: Instant,
}

/// What a client needs next from the daemon.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing yet: wait for the next readiness event.
    Wait,
    /// Its request is complete (a ctl command line; an HTTP request's
    /// headers): answer it with [`Client::answer`]. The first line,
    /// without its line end.
    Request(String),
    /// Done, or gone, or misbehaving: close it.
    Close { bad: bool },
}

impl Client {
    pub fn new(service: Service, stream: Stream, now: Instant) -> Client {
        Client {
            service,
            stream,
            request: Vec::new(),
            reply: Vec::new(),
            written: 0,
            last_progress: now,
        }
    }

    /// Reads what has arrived (until the socket has no more).
    pub fn on_readable(&mut self, now: Instant) -> Step {
        if !self.reply.is_empty() {
            return Step::Wait;
        }
        let mut buf = [0u8; 512];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => return Step::Close { bad: true },
                Ok(n) => {
                    self.last_progress = now;
                    let room = MAX_REQUEST - self.request.len();
                    self.request.extend_from_slice(&buf[..n.min(room)]);
                    if self.complete() {
                        let end = self.request.iter().position(|&b| b == b'\n');
                        let line = String::from_utf8_lossy(&self.request[..end.unwrap_or(0)]);
                        return Step::Request(line.trim_end_matches('\r').to_string());
                    }
                    if self.request.len() >= MAX_REQUEST {
                        return Step::Close { bad: true };
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Step::Wait,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Step::Close { bad: true },
            }
        }
    }

    /// Whether the whole request is in: a ctl command is one line; an HTTP
    /// request ends with an empty line (read whole, so that closing after
    /// the answer does not reset the connection under unread headers).
    fn complete(&self) -> bool {
        let r = &self.request;
        match self.service {
            Service::Ctl => r.contains(&b'\n'),
            Service::Metrics => {
                r.windows(4).any(|w| w == b"\r\n\r\n") || r.windows(2).any(|w| w == b"\n\n")
            }
        }
    }

    /// Sets the answer and writes as much of it as the socket takes.
    pub fn answer(&mut self, reply: Vec<u8>, now: Instant) -> Step {
        self.reply = reply;
        self.written = 0;
        self.on_writable(now)
    }

    /// Writes more of the answer; closes when all of it is written.
    pub fn on_writable(&mut self, now: Instant) -> Step {
        if self.reply.is_empty() {
            return Step::Wait;
        }
        while self.written < self.reply.len() {
            match self.stream.write(&self.reply[self.written..]) {
                Ok(0) => return Step::Close { bad: true },
                Ok(n) => {
                    self.written += n;
                    self.last_progress = now;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Step::Wait,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Step::Close { bad: true },
            }
        }
        Step::Close { bad: false }
    }

    /// Whether the client has made no progress for `IDLE`.
    pub fn idle(&self, now: Instant) -> bool {
        now.since(self.last_progress) > IDLE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Client, std::os::unix::net::UnixStream) {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let client = Client::new(
            Service::Ctl,
            Stream::Unix(UnixStream::from_std(a)),
            Instant::ZERO,
        );
        (client, b)
    }

    #[test]
    fn a_request_line_arriving_in_pieces_is_answered_whole() {
        let (mut c, mut peer) = pair();
        assert_eq!(c.on_readable(Instant::ZERO), Step::Wait);
        peer.write_all(b"sta").unwrap();
        assert_eq!(c.on_readable(Instant::ZERO), Step::Wait);
        peer.write_all(b"tus\r\n").unwrap();
        assert_eq!(c.on_readable(Instant::ZERO), Step::Request("status".into()));
        assert_eq!(
            c.answer(b"{}\n".to_vec(), Instant::ZERO),
            Step::Close { bad: false }
        );
        let mut got = [0u8; 3];
        peer.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"{}\n");
    }

    #[test]
    fn an_http_request_is_read_to_the_end_of_its_headers() {
        let (a, mut peer) = std::os::unix::net::UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let mut c = Client::new(
            Service::Metrics,
            Stream::Unix(UnixStream::from_std(a)),
            Instant::ZERO,
        );
        peer.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            .unwrap();
        assert_eq!(c.on_readable(Instant::ZERO), Step::Wait);
        peer.write_all(b"\r\n").unwrap();
        assert_eq!(
            c.on_readable(Instant::ZERO),
            Step::Request("GET /metrics HTTP/1.1".into())
        );
    }

    #[test]
    fn an_endless_line_or_a_silent_client_is_dropped() {
        let (mut c, mut peer) = pair();
        peer.write_all(&[b'x'; MAX_REQUEST + 10]).unwrap();
        assert_eq!(c.on_readable(Instant::ZERO), Step::Close { bad: true });
        let (c, _peer) = pair();
        let later = Instant::ZERO + IDLE + Duration::from_millis(1);
        assert!(!c.idle(Instant::ZERO) && c.idle(later));
    }

    #[test]
    fn a_reply_the_socket_cannot_take_at_once_waits_for_room() {
        let (mut c, mut peer) = pair();
        let big = vec![b'y'; 4 << 20];
        assert_eq!(c.answer(big.clone(), Instant::ZERO), Step::Wait);
        // The peer reads; each writable event writes more, until done.
        let mut got = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = peer.read(&mut buf).unwrap();
            got.extend_from_slice(&buf[..n]);
            if c.on_writable(Instant::ZERO) == (Step::Close { bad: false }) {
                break;
            }
        }
        drop(c);
        peer.read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), big.len());
    }
}
