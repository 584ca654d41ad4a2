//! Why a scenario cannot run ([`ScenarioError`]: every problem found, each
//! naming the file, the line and the field), and the [`Checker`] the
//! `check_*` functions record problems in. Checks do not stop at the
//! first problem: they go on with what does not depend on it, so one run
//! of `braid sim` names every problem it can. The first problem is the
//! one braid has always reported first (the checks run in that order).

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use braid_conf::{Findings, Source, Spanned};
use braid_proto::redundancy::Mode;

/// Why a scenario cannot run: its first problem, and any others found,
/// each on a line of its own when shown (the one type every braid file
/// is refused with). Reads as the first problem (`error.field`,
/// `error.message`); `all()` lists them all.
pub type ScenarioError = braid_conf::LocatedErrors;

/// The problems found so far (braid_conf's `Findings`, which it reads
/// as), and the value forms only scenarios have.
pub(super) struct Checker<'a> {
    findings: Findings<'a>,
}

impl<'a> Deref for Checker<'a> {
    type Target = Findings<'a>;

    fn deref(&self) -> &Findings<'a> {
        &self.findings
    }
}

impl DerefMut for Checker<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.findings
    }
}

impl<'a> Checker<'a> {
    pub(super) fn new(src: Source<'a>) -> Self {
        Checker {
            findings: Findings::new(src),
        }
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
        self.keep(parsed)
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
        self.keep(parsed)
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
        self.keep(parsed)
    }

    /// The checked value when nothing was found, else every problem.
    pub(super) fn finish<T>(self, value: Option<T>) -> Result<T, ScenarioError> {
        self.findings.finish(value)
    }
}
