//! Every problem a lab file has, collected as the checks go (vector's
//! `config/validation.rs` is the model): [`Problems`], where the check
//! functions note what they find, and [`LabFileErrors`], what a refused
//! file is refused with.

use braid_conf::{LocatedError, Source};
use thiserror::Error;

/// A lab file refused: every problem found, one `FILE:LINE: FIELD:
/// problem` per line, in the order the file is checked. The first is the
/// one the checks meet first: what stopping there would have said.
#[derive(Debug, Error)]
#[error("{}", lines(.first, .rest))]
pub struct LabFileErrors {
    first: LocatedError,
    rest: Vec<LocatedError>,
}

fn lines(first: &LocatedError, rest: &[LocatedError]) -> String {
    std::iter::once(first)
        .chain(rest)
        .map(LocatedError::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

impl LabFileErrors {
    /// The problem the checks met first.
    pub fn first(&self) -> &LocatedError {
        &self.first
    }

    /// Every problem, the first first.
    pub fn all(&self) -> impl Iterator<Item = &LocatedError> {
        std::iter::once(&self.first).chain(&self.rest)
    }
}

impl From<LocatedError> for LabFileErrors {
    /// A file that does not parse as the schema at all (TOML syntax, an
    /// unknown or mistyped field): serde stops at the first.
    fn from(first: LocatedError) -> Self {
        LabFileErrors {
            first,
            rest: Vec::new(),
        }
    }
}

/// The problems found so far in one file, and the file (to locate new
/// ones).
pub(super) struct Problems<'a> {
    pub(super) src: Source<'a>,
    found: Vec<LocatedError>,
}

impl<'a> Problems<'a> {
    pub(super) fn new(src: Source<'a>) -> Self {
        Problems {
            src,
            found: Vec::new(),
        }
    }

    /// Notes a problem.
    pub(super) fn note(&mut self, problem: LocatedError) {
        self.found.push(problem);
    }

    /// A checked value, or `None` with its problem noted.
    pub(super) fn take<T>(&mut self, checked: Result<T, LocatedError>) -> Option<T> {
        checked.map_err(|e| self.note(e)).ok()
    }

    /// Runs a check that notes its own problems: its result when it noted
    /// none, else `None` (what depends on it is not checked, so that one
    /// mistake is reported once).
    pub(super) fn clean<T>(&mut self, check: impl FnOnce(&mut Self) -> T) -> Option<T> {
        let before = self.found.len();
        let value = check(self);
        (self.found.len() == before).then_some(value)
    }

    /// Whether no problem was found.
    pub(super) fn none(&self) -> bool {
        self.found.is_empty()
    }

    /// What the file is refused with: every problem noted. (A check that
    /// failed without noting one would be a bug; the file is refused all
    /// the same, saying so.)
    pub(super) fn refusal(self) -> LabFileErrors {
        let mut found = self.found.into_iter();
        let first = found.next().unwrap_or_else(|| {
            self.src
                .err(None, "(checks)", "refused without a problem named (a bug)")
        });
        LabFileErrors {
            first,
            rest: found.collect(),
        }
    }
}
