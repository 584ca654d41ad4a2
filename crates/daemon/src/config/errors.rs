//! What is wrong with a config file: every problem the checks found, in
//! the order they found them ([`ConfigErrors`], collected by
//! [`Findings`]), and why a file could not be used at all
//! ([`ConfigLoadError`]).
//!
//! The checks run in a fixed order and each notes what it finds instead
//! of stopping, so an operator fixes a file in one pass; the first problem
//! is the one a check that stopped at the first would have named.

use std::fmt;
use std::ops::Range;

use braid_conf::{LocatedError, Source};

/// Every problem found in a config file (at least one), each shown as
/// `FILE:LINE: FIELD: problem` on its own line, in the order the checks
/// found them.
#[derive(Debug)]
pub struct ConfigErrors {
    first: LocatedError,
    more: Vec<LocatedError>,
}

impl ConfigErrors {
    /// The first problem found.
    pub fn first(&self) -> &LocatedError {
        &self.first
    }

    /// Every problem found, the first first.
    pub fn iter(&self) -> impl Iterator<Item = &LocatedError> {
        std::iter::once(&self.first).chain(&self.more)
    }
}

impl From<LocatedError> for ConfigErrors {
    fn from(first: LocatedError) -> Self {
        ConfigErrors {
            first,
            more: Vec::new(),
        }
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.first)?;
        for e in &self.more {
            write!(f, "\n{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// The problems the checks of one file have found so far.
pub(super) struct Findings<'a> {
    /// The file being checked (to locate what is found).
    pub src: Source<'a>,
    found: Vec<LocatedError>,
}

impl<'a> Findings<'a> {
    pub fn new(src: Source<'a>) -> Self {
        Findings {
            src,
            found: Vec::new(),
        }
    }

    /// Notes a problem with `field`, written at `span` (none: the file as
    /// a whole, shown at its first line).
    pub fn refuse(&mut self, span: Option<Range<usize>>, field: &str, message: impl Into<String>) {
        self.found.push(self.src.err(span, field, message));
    }

    /// The value of a check that may fail: `None` when it did, its error
    /// noted.
    pub fn keep<T>(&mut self, checked: Result<T, LocatedError>) -> Option<T> {
        checked.map_err(|e| self.found.push(e)).ok()
    }

    /// `value` when nothing was found, else every problem found.
    pub fn finish<T>(self, value: T) -> Result<T, ConfigErrors> {
        let mut found = self.found.into_iter();
        match found.next() {
            None => Ok(value),
            Some(first) => Err(ConfigErrors {
                first,
                more: found.collect(),
            }),
        }
    }
}

/// Why a config file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigLoadError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Invalid(#[from] ConfigErrors),
    #[error("key file {path} {why}")]
    KeyFile { path: String, why: String },
}
