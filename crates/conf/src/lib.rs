//! Reading braid's TOML files: simulator scenarios, lab scenarios and the
//! daemon's config. One error type that names the file, the line and the
//! field (what an operator needs to fix a typo), every problem of a file
//! at once ([`Findings`] collects them as a file's checks run,
//! [`LocatedErrors`] is what the file is refused with), and the value
//! forms every file shares: durations ("20ms", "1m 30s"), rates
//! ("10Mbit") and anything with a `FromStr` (modes, prefixes).

#![forbid(unsafe_code)]

use std::fmt;
use std::io::Read;
use std::ops::{Deref, Range};
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

/// Every problem found in one file (at least one), in the order its
/// checks found them; shown one per line, `FILE:LINE: FIELD: problem`.
/// The checks of every braid file run in a fixed order and note what they
/// find instead of stopping, so an operator fixes a file in one pass; the
/// first problem is the one a check that stopped at the first would have
/// named, and the value reads as it (`errors.field`, `errors.message`).
#[derive(Debug)]
pub struct LocatedErrors {
    first: LocatedError,
    more: Vec<LocatedError>,
}

impl LocatedErrors {
    /// The problem the checks met first.
    pub fn first(&self) -> &LocatedError {
        &self.first
    }

    /// Every problem found, the first first.
    pub fn all(&self) -> impl Iterator<Item = &LocatedError> {
        std::iter::once(&self.first).chain(&self.more)
    }
}

impl From<LocatedError> for LocatedErrors {
    /// One problem (a file that does not parse as its schema at all:
    /// serde stops at the first).
    fn from(first: LocatedError) -> Self {
        LocatedErrors {
            first,
            more: Vec::new(),
        }
    }
}

impl Deref for LocatedErrors {
    type Target = LocatedError;

    /// The first problem.
    fn deref(&self) -> &LocatedError {
        &self.first
    }
}

impl fmt::Display for LocatedErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.first)?;
        for e in &self.more {
            write!(f, "\n{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LocatedErrors {}

/// The problems the checks of one file have found so far, and the file
/// (to locate new ones).
#[derive(Debug)]
pub struct Findings<'a> {
    /// The file being checked.
    pub src: Source<'a>,
    found: Vec<LocatedError>,
}

impl<'a> Findings<'a> {
    /// Nothing found yet in `src`.
    pub fn new(src: Source<'a>) -> Self {
        Findings {
            src,
            found: Vec::new(),
        }
    }

    /// A problem with `field` written at `span` (none: the file as a
    /// whole, shown at its first line), not yet noted.
    pub fn err(
        &self,
        span: Option<Range<usize>>,
        field: &str,
        message: impl Into<String>,
    ) -> LocatedError {
        self.src.err(span, field, message)
    }

    /// Notes a problem.
    pub fn note(&mut self, problem: LocatedError) {
        self.found.push(problem);
    }

    /// Notes a problem with `field` written at `span`.
    pub fn refuse(&mut self, span: Option<Range<usize>>, field: &str, message: impl Into<String>) {
        let problem = self.err(span, field, message);
        self.note(problem);
    }

    /// The value of a check that may fail: `None` when it did, its
    /// problem noted.
    pub fn keep<T>(&mut self, checked: Result<T, LocatedError>) -> Option<T> {
        checked.map_err(|e| self.note(e)).ok()
    }

    /// Problems noted so far.
    pub fn count(&self) -> usize {
        self.found.len()
    }

    /// Whether nothing was found.
    pub fn is_clean(&self) -> bool {
        self.found.is_empty()
    }

    /// Runs a check that notes its own problems: its result when it
    /// noted none, else `None` (what depends on it is then not checked,
    /// so that one mistake is reported once).
    pub fn clean<T>(&mut self, check: impl FnOnce(&mut Self) -> T) -> Option<T> {
        let before = self.found.len();
        let value = check(self);
        (self.found.len() == before).then_some(value)
    }

    /// The checked value when nothing was found, else every problem
    /// found ([`Self::refusal`]).
    pub fn finish<T>(self, value: Option<T>) -> Result<T, LocatedErrors> {
        match value {
            Some(value) if self.is_clean() => Ok(value),
            _ => Err(self.refusal()),
        }
    }

    /// What the file is refused with: every problem noted. (A check that
    /// failed without noting one would be a bug in braid; the file is
    /// refused all the same, saying so.)
    pub fn refusal(self) -> LocatedErrors {
        let mut found = self.found.into_iter();
        match found.next() {
            Some(first) => LocatedErrors {
                first,
                more: found.collect(),
            },
            None => LocatedErrors::from(self.src.err(
                None,
                "(checks)",
                "refused without a problem named (a bug in braid: please report it)",
            )),
        }
    }
}

/// The name in a table header line: `probes` for `[probes]`,
/// `interface` for `[[interface]]`.
fn table_header(line: &str) -> Option<String> {
    let inner = line.strip_prefix('[')?.split(']').next()?;
    let name = inner.trim_start_matches('[').trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// serde's message in an operator's words: the value forms a TOML file
/// has, not Rust's type names (`u16`, `a sequence`).
/// For serde's "unknown field `x`, expected one of `a`, `b`, ...": the
/// field meant, when one is close to what was written (a letter or two
/// off, or one is the other's beginning: `prefix` for `prefixes`).
fn nearest_field(raw: &str) -> Option<String> {
    let rest = raw.strip_prefix("unknown field `")?;
    let (written, rest) = rest.split_once('`')?;
    let expected = rest.split_once("expected")?.1;
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|f| (strsim::levenshtein(written, f), f))
        .filter(|(d, f)| {
            *d <= 2.max(written.len() / 4) || (written.len() >= 3 && f.starts_with(written))
        })
        .min()
        .map(|(_, f)| f.to_string())
}

fn plain_message(raw: &str) -> String {
    fn form(t: &str) -> String {
        let t = t.trim().trim_matches('`');
        let words = match t {
            "u8" => "a whole number from 0 to 255",
            "u16" => "a whole number from 0 to 65535",
            "u32" => "a whole number from 0 to 4294967295",
            "u64" | "usize" => "a whole number, 0 or more",
            "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number",
            "f32" | "f64" => "a number",
            "a boolean" | "bool" => "true or false",
            "a string" | "string" => "text in quotes",
            "a sequence" | "sequence" => "a list (`[...]`, or a table written `[[name]]`)",
            "map" | "a map" => "a table",
            _ if t.starts_with("struct ") => "a table",
            _ if t.starts_with("string ") => return format!("the text {}", &t[7..]),
            _ if t.starts_with("integer ") => {
                return format!("the number {}", t[8..].trim_matches('`'))
            }
            _ if t.starts_with("floating point ") => {
                return format!("the number {}", t[15..].trim_matches('`'))
            }
            _ if t.starts_with("boolean ") => return t[8..].trim_matches('`').to_string(),
            _ => return t.to_string(),
        };
        words.to_string()
    }
    let first = raw.lines().next().unwrap_or(raw);
    if let Some(rest) = first.strip_prefix("invalid type: ") {
        if let Some((found, expected)) = rest.split_once(", expected ") {
            return format!("expected {}, found {}", form(expected), form(found));
        }
    }
    if let Some(rest) = first.strip_prefix("invalid value: ") {
        if let Some((found, expected)) = rest.split_once(", expected ") {
            return format!(
                "{} is out of range: expected {}",
                form(found),
                form(expected)
            );
        }
    }
    raw.to_string()
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
            let raw = e.message().trim().to_string();
            // serde names the field itself only for unknown, missing and
            // duplicate fields; otherwise the field is the key written
            // where the error points, under its table.
            let named = ["unknown field", "missing field", "duplicate key"]
                .iter()
                .any(|p| raw.starts_with(p));
            let field = match raw.split('`').nth(1) {
                // A table header names itself; a key is under its table.
                Some(f) if named && self.header_at(e.span()) => f.to_string(),
                Some(f) if named => self
                    .table_at(e.span())
                    .map_or(f.to_string(), |t| format!("{t}.{f}")),
                _ => self.key_at(e.span()).unwrap_or_else(|| "(syntax)".into()),
            };
            let mut message = plain_message(&raw);
            if let Some(near) = nearest_field(&raw) {
                message = format!("unknown field; did you mean `{near}`?");
            }
            if raw.starts_with("invalid type: map, expected a sequence") {
                message =
                    format!("a list of tables: write [[{field}]] (two brackets), once per entry");
            }
            self.err(e.span(), &field, message)
        })
    }

    /// The dotted key written on the line a span starts on, under the
    /// table that line is in (`probes.dead_after`), or the table itself
    /// when the span is a table header.
    fn key_at(&self, span: Option<Range<usize>>) -> Option<String> {
        let (line_start, line) = self.line_at(span?);
        if let Some(header) = table_header(line) {
            return Some(header);
        }
        let key = line.split('=').next()?.trim().trim_matches('"');
        let plain = !key.is_empty()
            && line.contains('=')
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
        if !plain {
            return None;
        }
        Some(match self.table_at(Some(line_start..line_start)) {
            Some(t) => format!("{t}.{key}"),
            None => key.to_string(),
        })
    }

    /// Whether the line a span starts on is a table header.
    fn header_at(&self, span: Option<Range<usize>>) -> bool {
        span.is_some_and(|span| table_header(self.line_at(span).1).is_some())
    }

    /// Where the line a span starts on begins, and that line, trimmed.
    fn line_at(&self, span: Range<usize>) -> (usize, &str) {
        let start = span.start.min(self.text.len());
        let line_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
        let line = self.text[line_start..].lines().next().unwrap_or("").trim();
        (line_start, line)
    }

    /// The table (`[probes]`, `[[interface]]`) the text at a span is in;
    /// None at the top level.
    fn table_at(&self, span: Option<Range<usize>>) -> Option<String> {
        let (line_start, _) = self.line_at(span?);
        self.text[..line_start]
            .lines()
            .rev()
            .find_map(|l| table_header(l.trim()))
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

    #[test]
    fn findings_collect_every_problem_the_first_first() {
        let src = Source::new("f.toml", "a = 1\nb = 2\n");
        let mut f = Findings::new(src);
        assert_eq!(f.keep(Ok::<_, LocatedError>(3)), Some(3));
        assert!(f.is_clean());
        assert_eq!(f.clean(|f| f.refuse(Some(6..11), "b", "too big")), None);
        let e = f.err(None, "a", "missing");
        f.note(e);
        assert_eq!(f.count(), 2);
        let errors = f.finish(Some(())).unwrap_err();
        assert_eq!(errors.field, "b", "reads as the first");
        assert_eq!(errors.all().count(), 2);
        assert_eq!(
            errors.to_string(),
            "f.toml:2: b: too big\nf.toml:1: a: missing"
        );
        assert_eq!(Findings::new(src).finish(Some(7)).unwrap(), 7);
        assert!(
            Findings::new(src).finish::<()>(None).is_err(),
            "never a silent refusal"
        );
    }

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

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Nested {
        port: Option<u16>,
        probes: Option<Probes>,
        interface: Option<Vec<Iface>>,
    }
    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Probes {
        dead_after: Option<u32>,
        quick: Option<bool>,
    }
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Iface {
        name: String,
    }

    #[test]
    fn type_errors_name_the_field_and_speak_toml_not_rust() {
        let e = Source::new("c.toml", "port = \"1\"\n")
            .parse::<Nested>()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.toml:1: port: expected a whole number from 0 to 65535, found the text \"1\""
        );
        let e = Source::new("c.toml", "port = 70000\n")
            .parse::<Nested>()
            .unwrap_err();
        assert_eq!(e.field, "port");
        assert!(e.message.contains("70000 is out of range"), "{e}");
        let text = "port = 1\n[probes]\nquick = 1\n";
        let e = Source::new("c.toml", text).parse::<Nested>().unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (3, "probes.quick"), "{e}");
        assert!(e.message.contains("expected true or false"), "{e}");
        let e = Source::new("c.toml", "[probes]\nslow = 1\n")
            .parse::<Nested>()
            .unwrap_err();
        assert_eq!(e.field, "probes.slow", "{e}");
        let e = Source::new("c.toml", "[probes]\nquick = true\n[[prbes]]\n")
            .parse::<Nested>()
            .unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (3, "prbes"), "{e}");
        let e = Source::new("c.toml", "[interface]\nname = \"eth0\"\n")
            .parse::<Nested>()
            .unwrap_err();
        assert_eq!(e.field, "interface", "{e}");
        assert!(e.message.contains("[[interface]]"), "{e}");
        for text in ["[probes\n", "port = \n", "port = [1, 2\n"] {
            let e = Source::new("c.toml", text).parse::<Nested>().unwrap_err();
            assert!(!e.field.contains(']') && !e.field.contains('`'), "{e}");
            assert!(!e.message.contains("u16"), "{e}");
        }
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
