//! Why the daemon could not start or had to stop ([`DaemonError`]).

use std::io;

use thiserror::Error;

use crate::access::AccessError;
use crate::config::ConfigLoadError;
use crate::kernel::KernelError;
use crate::underlay::UnderlayError;

/// Why the daemon could not start or had to stop.
#[derive(Debug, Error)]
pub enum DaemonError {
    #[error(transparent)]
    Config(#[from] ConfigLoadError),
    #[error("invalid node settings: {0}")]
    Node(#[from] braid_proto::control::ConfigError),
    #[error(transparent)]
    Underlay(#[from] UnderlayError),
    #[error(transparent)]
    Access(#[from] AccessError),
    #[error("kernel data path (datapath = \"kernel\"): {0}")]
    Kernel(#[from] KernelError),
    #[error("TUN device {name}: {source}{}", if source.kind() == io::ErrorKind::PermissionDenied { " (run braid as root, or with CAP_NET_ADMIN: the packaged systemd unit does)" } else { "" })]
    Tun { name: String, source: io::Error },
    #[error("route {route} via {dev}: {message}")]
    Route {
        route: String,
        dev: String,
        message: String,
    },
    #[error("control socket {path}: {source}")]
    Socket { path: String, source: io::Error },
    #[error("a braid daemon already runs here: its control socket {path} answers (stop it first, or give this one its own control_socket, [tun] name and interfaces)")]
    AlreadyRunning { path: String },
    #[error("TUN device {name} is in use, by another braid daemon or another program (ip -d link show {name}); stop it, or set another [tun] name")]
    TunBusy { name: String },
    #[error("metrics port {addr} (the `metrics` field): {source}; another program (another braid daemon?) listens there: give this daemon another `metrics` address")]
    Metrics {
        addr: std::net::SocketAddr,
        source: io::Error,
    },
    #[error("[tun] routes: {route} is already routed via {dev} (another braid daemon's, or the system's own route); this daemon would take it over and remove it when it stops. Drop it from [tun] routes, or remove that route first")]
    RouteTaken { route: String, dev: String },
    #[error("control_group {group}: {why}")]
    ControlGroup { group: String, why: String },
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        source: io::Error,
    },
}

/// An I/O error while doing `what`, as a [`DaemonError`].
pub(super) fn io_err(what: &'static str) -> impl FnOnce(io::Error) -> DaemonError {
    move |source| DaemonError::Io { what, source }
}
