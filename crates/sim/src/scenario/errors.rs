//! Why a scenario cannot run ([`ScenarioError`]: every problem found, each
//! naming the file, the line and the field), and the [`Checker`] the
//! `check_*` functions record problems in. Checks do not stop at the
//! first problem: they go on with what does not depend on it, so one run
//! of `braid sim` names every problem it can. The first problem is the
//! one braid has always reported first (the checks run in that order).

use std::ops::{Deref, Range};
use std::time::Duration;

use braid_conf::{LocatedError, Source, Spanned};
use braid_proto::redundancy::Mode;
use thiserror::Error;

/// Why a scenario cannot run: its first problem, and any others found,
/// each on a line of its own when shown. Reads as the first problem
/// (`error.field`, `error.message`); [`ScenarioError::all`] lists
/// them all.
#[derive(Debug, Error)]
#[error("{first}{}", more_lines(.more))]
pub struct ScenarioError {
    first: LocatedError,
    more: Vec<LocatedError>,
}

fn more_lines(more: &[LocatedError]) -> String {
    more.iter().map(|e| format!("\n{e}")).collect()
}

impl ScenarioError {
    /// The problem the checks met first.
    pub fn first(&self) -> &LocatedError {
        &self.first
    }

    /// Every problem found, the first first.
    pub fn all(&self) -> impl Iterator<Item = &LocatedError> {
        std::iter::once(&self.first).chain(&self.more)
    }
}

impl Deref for ScenarioError {
    type Target = LocatedError;

    /// The first problem.
    fn deref(&self) -> &LocatedError {
        &self.first
    }
}

impl From<LocatedError> for ScenarioError {
    fn from(first: LocatedError) -> Self {
        ScenarioError {
            first,
            more: Vec::new(),
        }
    }
}

/// The scenario's text (to locate problems) and the problems found so
/// far, in the order the checks found them.
pub(super) struct Checker<'a> {
    src: Source<'a>,
    found: Vec<LocatedError>,
}

impl<'a> Checker<'a> {
    pub(super) fn new(src: Source<'a>) -> Self {
        Checker {
            src,
            found: Vec::new(),
        }
    }

    /// A problem at `span` (its line; the first line without one).
    pub(super) fn err(
        &self,
        span: Option<Range<usize>>,
        field: &str,
        message: impl Into<String>,
    ) -> LocatedError {
        self.src.err(span, field, message)
    }

    /// Records a problem.
    pub(super) fn report(&mut self, problem: LocatedError) {
        self.found.push(problem);
    }

    /// Records a problem at `span`.
    pub(super) fn refuse(
        &mut self,
        span: Option<Range<usize>>,
        field: &str,
        message: impl Into<String>,
    ) {
        let problem = self.err(span, field, message);
        self.report(problem);
    }

    /// The value, or None with its problem recorded.
    pub(super) fn ok<T>(&mut self, result: Result<T, LocatedError>) -> Option<T> {
        result.map_err(|e| self.report(e)).ok()
    }

    /// Problems found so far (a check compares the count before and after
    /// to tell whether it found any).
    pub(super) fn count(&self) -> usize {
        self.found.len()
    }

    /// A duration such as "20ms"; `default` when absent; None (recorded)
    /// when it does not parse.
    pub(super) fn duration(
        &mut self,
        v: &Option<Spanned<String>>,
        field: &str,
        default: Duration,
    ) -> Option<Duration> {
        let parsed = self.src.duration(v, field, default);
        self.ok(parsed)
    }

    /// A duration that is only there when the file gives it: Some(None)
    /// when absent, None (recorded) when it does not parse.
    pub(super) fn optional_duration(
        &mut self,
        v: &Option<Spanned<String>>,
        field: &str,
    ) -> Option<Option<Duration>> {
        match v {
            None => Some(None),
            Some(_) => self.duration(v, field, Duration::ZERO).map(Some),
        }
    }

    /// A redundancy mode; None (recorded) when it does not parse.
    pub(super) fn mode(&mut self, v: &Spanned<String>, field: &str) -> Option<Mode> {
        let parsed = self.src.value(v, field);
        self.ok(parsed)
    }

    /// A mode only there when the file gives it.
    pub(super) fn optional_mode(
        &mut self,
        v: &Option<Spanned<String>>,
        field: &str,
    ) -> Option<Option<Mode>> {
        match v {
            None => Some(None),
            Some(m) => self.mode(m, field).map(Some),
        }
    }

    /// A bit rate such as "10Mbit", in bit/s; None (recorded) when it does
    /// not parse.
    pub(super) fn rate(&mut self, v: &Spanned<String>, field: &str) -> Option<u64> {
        let parsed = self.src.rate(v, field);
        self.ok(parsed)
    }

    /// The checked value when nothing was found, else every problem.
    pub(super) fn finish<T>(self, value: Option<T>) -> Result<T, ScenarioError> {
        let mut found = self.found.into_iter();
        match (found.next(), value) {
            (None, Some(v)) => Ok(v),
            (Some(first), _) => Err(ScenarioError {
                first,
                more: found.collect(),
            }),
            (None, None) => Err(ScenarioError::from(self.src.err(
                None,
                "scenario",
                "a check failed without naming the problem (a bug in braid: please report it)",
            ))),
        }
    }
}
