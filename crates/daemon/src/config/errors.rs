//! What is wrong with a config file: every problem the checks found, in
//! the order they found them ([`ConfigErrors`], collected by braid_conf's
//! `Findings` as every braid file's checks are), and why a file could not
//! be used at all ([`ConfigLoadError`]).
//!
//! The checks run in a fixed order and each notes what it finds instead
//! of stopping, so an operator fixes a file in one pass; the first problem
//! is the one a check that stopped at the first would have named.

/// Every problem found in a config file (at least one), each shown as
/// `FILE:LINE: FIELD: problem` on its own line, in the order the checks
/// found them: the one type every braid file is refused with.
pub type ConfigErrors = braid_conf::LocatedErrors;

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
