//! Reading braid's TOML files: simulator scenarios, lab scenarios and the
//! daemon's config. One error type that names the file, the line and the
//! field (what an operator needs to fix a typo), and the value forms every
//! file shares: durations ("20ms", "1m 30s"), rates ("10Mbit") and
//! anything with a `FromStr` (modes, prefixes).

#![forbid(unsafe_code)]

use std::io::Read;
use std::ops::Range;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use serde::de::DeserializeOwned;
use thiserror::Error;
pub use toml::Spanned;

/// The largest file braid reads as text (configs, scenarios, topologies):
/// 16 MiB, far above any real one, so a path to a device or a runaway file
/// gives an error instead of eating memory.
pub const MAX_TEXT_FILE: u64 = 16 << 20;

/// Reads a whole text file of at most [`MAX_TEXT_FILE`] bytes.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let mut text = String::new();
    file.take(MAX_TEXT_FILE + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_TEXT_FILE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {} MiB", MAX_TEXT_FILE >> 20),
        ));
    }
    Ok(text)
}

/// A problem in a file, where it is.
#[derive(Debug, Error)]
#[error("{file}:{line}: {field}: {message}")]
pub struct LocatedError {
    pub file: String,
    pub line: usize,
    pub field: String,
    pub message: String,
}

/// A file's name and text, for locating errors.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

impl<'a> Source<'a> {
    pub fn new(file: &'a str, text: &'a str) -> Self {
        Source { file, text }
    }

    /// Deserializes the whole file; a syntax error or an unknown or
    /// mistyped field is located.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, LocatedError> {
        toml::from_str(self.text).map_err(|e| {
            let message = e.message().to_string();
            let field = message
                .split('`')
                .nth(1)
                .map(str::to_string)
                .unwrap_or_else(|| "(syntax)".into());
            self.err(e.span(), &field, message)
        })
    }

    /// The 1-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    pub fn err(
        &self,
        span: Option<Range<usize>>,
        field: &str,
        message: impl Into<String>,
    ) -> LocatedError {
        LocatedError {
            file: self.file.to_string(),
            line: span.map_or(1, |s| self.line_of(s.start)),
            field: field.to_string(),
            message: message.into(),
        }
    }

    /// A duration such as "20ms" or "1m 30s"; `default` when absent.
    pub fn duration(
        &self,
        v: &Option<Spanned<String>>,
        field: &str,
        default: Duration,
    ) -> Result<Duration, LocatedError> {
        match v {
            None => Ok(default),
            Some(s) => humantime::parse_duration(s.get_ref().trim()).map_err(|e| {
                self.err(
                    Some(s.span()),
                    field,
                    format!(
                        "\"{}\" is not a duration ({e}); write e.g. \"20ms\" or \"1m 30s\"",
                        s.get_ref()
                    ),
                )
            }),
        }
    }

    /// Any value with a text form (a mode, a prefix); its parse error is
    /// the message.
    pub fn value<T>(&self, v: &Spanned<String>, field: &str) -> Result<T, LocatedError>
    where
        T: FromStr,
        T::Err: std::fmt::Display,
    {
        v.get_ref()
            .trim()
            .parse()
            .map_err(|e| self.err(Some(v.span()), field, format!("{e}")))
    }

    /// A bit rate such as "10Mbit", in bit/s.
    pub fn rate(&self, v: &Spanned<String>, field: &str) -> Result<u64, LocatedError> {
        let s = v.get_ref().trim().to_ascii_lowercase();
        let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let mult = match unit.trim() {
            "bit" | "bps" | "" => 1.0,
            "kbit" | "kbps" => 1e3,
            "mbit" | "mbps" => 1e6,
            "gbit" | "gbps" => 1e9,
            _ => 0.0,
        };
        match num.trim().parse::<f64>() {
            Ok(n) if mult > 0.0 && n > 0.0 && n.is_finite() => Ok((n * mult) as u64),
            _ => Err(self.err(
                Some(v.span()),
                field,
                format!("\"{}\" is not a rate; write e.g. \"10Mbit\"", v.get_ref()),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct T {
        wait: Option<Spanned<String>>,
        speed: Option<Spanned<String>>,
    }

    #[test]
    fn a_file_without_end_is_refused_not_read_into_memory() {
        let e = read_text(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("larger than 16 MiB"), "{e}");
        let text = read_text(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("Cargo.toml")
                .as_path(),
        );
        assert!(text.unwrap().contains("braid-conf"));
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let text = "# comment\nwait = \"5 parsecs\"\nspeed = \"fast\"\n";
        let src = Source::new("x.toml", text);
        let t: T = src.parse().unwrap();
        let e = src.duration(&t.wait, "wait", Duration::ZERO).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (2, "wait"));
        assert!(e.to_string().starts_with("x.toml:2: wait: "), "{e}");
        let e = src.rate(t.speed.as_ref().unwrap(), "speed").unwrap_err();
        assert_eq!(e.line, 3);
        let e = Source::new("y.toml", "\n\nwat = 1\n")
            .parse::<T>()
            .unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (3, "wat"));
        let ok = Source::new("z.toml", "speed = \"2.5 Mbit\"\n");
        let t: T = ok.parse().unwrap();
        assert_eq!(
            ok.rate(t.speed.as_ref().unwrap(), "speed").unwrap(),
            2_500_000
        );
        assert_eq!(
            ok.duration(&None, "wait", Duration::from_secs(1)).unwrap(),
            Duration::from_secs(1)
        );
    }
}
