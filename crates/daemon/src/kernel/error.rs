//! Why the kernel data path is not running here.

use braid_bpf::DatapathError;

/// Why the kernel data path is not running here.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error(transparent)]
    Datapath(#[from] DatapathError),
    #[error("{what}: {message}")]
    Setup { what: String, message: String },
}
