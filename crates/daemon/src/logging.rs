//! The daemon's log: where lines go (standard error), how they are
//! written (`log_format`: text, or one JSON object per line for log
//! shippers) and at which level (`log`), which a reload changes while the
//! daemon runs. Set up once per process by the binary; a process that set
//! up its own subscriber (a test) has no level to change here, and a
//! reload then says `log` needs a restart.

use std::sync::OnceLock;

use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::prelude::*;
use tracing_subscriber::{reload, Registry};

use crate::config::LogFormat;

/// The handle that changes the level, once [`init`] ran.
static LEVEL: OnceLock<reload::Handle<LevelFilter, Registry>> = OnceLock::new();

/// The level named `level` (one of the config's `log` values).
fn level_of(level: &str) -> LevelFilter {
    level.parse().unwrap_or(LevelFilter::WARN)
}

/// Sends this process's log to standard error at `level`, in `format`.
/// Colour codes only on a terminal. A second call changes nothing.
pub fn init(level: &str, format: LogFormat) {
    let (filter, handle) = reload::Layer::new(level_of(level));
    let stderr = std::io::stderr;
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let registry = tracing_subscriber::registry().with(filter);
    let installed = match format {
        LogFormat::Text => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(stderr)
                    .with_ansi(ansi)
                    .with_target(false),
            )
            .try_init(),
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_writer(stderr)
                    .with_target(false),
            )
            .try_init(),
    };
    if installed.is_ok() {
        let _ = LEVEL.set(handle);
    }
}

/// Sets the level to `level`; false when this process's log was not set
/// up by [`init`] (the level is then fixed until a restart).
pub fn set_level(level: &str) -> bool {
    LEVEL
        .get()
        .is_some_and(|h| h.modify(|f| *f = level_of(level)).is_ok())
}
