//! The daemon's config file (TOML): what it reads, the defaults, and the
//! checks that refuse a bad file with its name, line and field, every
//! problem at once. Every field is documented in docs/operations.md; keep
//! the two in step.
//!
//! | module | owns |
//! |---|---|
//! | `schema` | the file as written: [`ConfigFile`] and its tables, unchecked, each value with where it stands |
//! | `settings` | the checked [`Config`] the daemon runs with, its parts and defaults |
//! | `parse` | [`Config::parse`] and [`Config::load`]: one `check_*` function per field or table, run in a fixed order |
//! | `costs` | `[[cost]]`: cost factors on links by neighbor or interface, and what the protocol node is told of them |
//! | `access` | `[[access]]`: [`AccessInterface`] and the rules its entries meet |
//! | `fields` | checks several tables share: a number in a range, a list of whole prefixes |
//! | `uplink` | `[uplink]`: the prefixes served through a checked uplink, its targets and method, and the rules they meet |
//! | `routes` | `[redistribute]` and `[install]`: kernel routes taken into the mesh, the mesh's routes put into the kernel, protocol names |
//! | `keys` | `[auth]` keys, inline or in a key file only its owner can read |
//! | `errors` | every problem found in a file ([`ConfigErrors`]), and why a file could not be used ([`ConfigLoadError`]) |

mod access;
mod costs;
mod errors;
mod fields;
mod keys;
pub use keys::inline_keys_warning;
mod origins;
mod parse;
mod routes;
mod schema;
mod settings;
#[cfg(test)]
mod tests;
mod uplink;

pub use access::{parse_mac, AccessInterface, DEFAULT_GATEWAY_MAC};
pub use costs::{cost_overrides, CostOverride, CostTarget};
pub use errors::{ConfigErrors, ConfigLoadError};
pub use schema::{
    value, AccessFile, AuthFile, ConfigFile, CostFile, InterfaceFile, KeyFile, KeysOnly,
    PolicyFile, ProbesFile, TunFile, UplinkFile,
};
pub use settings::{
    Config, DatapathChoice, KernelDelivery, LogFormat, TunConfig, UnderlayFamily,
    DEFAULT_DEAD_AFTER, DEFAULT_GROUP, DEFAULT_GROUP6, DEFAULT_PORT, DEFAULT_SEND_BUFFER,
    DEFAULT_SOCKET,
};
