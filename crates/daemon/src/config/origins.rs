//! Per-origin signatures (`[origin]`): this router's signing key, in a
//! key file only its owner can read (`key_file`, made by `braid keygen
//! --origin`), and the roster of every router's public key
//! (`roster_file`, the same file on every router; it holds no secret).
//! docs/security.md says how they are rolled out, rotated and revoked.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use braid_conf::{Findings, Source};
use braid_proto::origin::{OriginConfig, OriginKey, Roster, KEY_LEN};
use braid_wire::NodeId;

use super::errors::{ConfigErrors, ConfigLoadError};
use super::keys::{hex_bytes, owner_only};
use super::schema::{OriginFile, OriginKeyFile, RosterFile};

/// `[origin]`'s two files, read later by [`load_origins`].
pub(super) fn check_origin(
    found: &mut Findings<'_>,
    origin: Option<&OriginFile>,
) -> (Option<PathBuf>, Option<PathBuf>) {
    let Some(o) = origin else {
        return (None, None);
    };
    if o.key_file.is_none() && o.roster_file.is_some() {
        found.refuse(
            None,
            "origin.key_file",
            "a roster needs this router's own key too (make one with `braid keygen --origin`)",
        );
    }
    (
        o.key_file.as_ref().map(|f| PathBuf::from(f.get_ref())),
        o.roster_file.as_ref().map(|f| PathBuf::from(f.get_ref())),
    )
}

/// Reads the key file and the roster, and checks that the roster lists
/// this router's key for `node`.
pub(super) fn load_origins(
    node: NodeId,
    key_file: Option<&Path>,
    roster_file: Option<&Path>,
) -> Result<OriginConfig, ConfigLoadError> {
    let key = key_file.map(load_key).transpose()?;
    let roster = roster_file.map(load_roster).transpose()?.map(Arc::new);
    let config = OriginConfig { key, roster };
    config
        .validate(node)
        .map_err(|e| ConfigLoadError::KeyFile {
            path: roster_file
                .or(key_file)
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            why: e.to_string(),
        })?;
    Ok(config)
}

fn read(path: &Path) -> Result<(String, String), ConfigLoadError> {
    let shown = path.display().to_string();
    let text = braid_conf::read_text(path).map_err(|e| ConfigLoadError::Read {
        path: shown.clone(),
        source: e,
    })?;
    Ok((shown, text))
}

/// A secret key file (`secret = "<64 hex digits>"`), owner-only.
fn load_key(path: &Path) -> Result<OriginKey, ConfigLoadError> {
    owner_only(path)?;
    let (shown, text) = read(path)?;
    let src = Source::new(&shown, &text);
    let raw: OriginKeyFile = src.parse().map_err(ConfigErrors::from)?;
    let mut found = Findings::new(src);
    let key = match hex_bytes(raw.secret.get_ref().trim()) {
        Some(b) => OriginKey::from_secret(&b)
            .map_err(|e| found.refuse(Some(raw.secret.span()), "secret", e.to_string()))
            .ok(),
        None => {
            found.refuse(
                Some(raw.secret.span()),
                "secret",
                "not hex digits (make one with `braid keygen --origin`)",
            );
            None
        }
    };
    Ok(found.finish(key)?)
}

/// The roster (`[[router]] node = N, key = "<64 hex digits>"`, at most
/// two keys per node: rotation).
fn load_roster(path: &Path) -> Result<Roster, ConfigLoadError> {
    let (shown, text) = read(path)?;
    let src = Source::new(&shown, &text);
    let raw: RosterFile = src.parse().map_err(ConfigErrors::from)?;
    let mut found = Findings::new(src);
    let mut entries = Vec::new();
    for (i, r) in raw.router.iter().enumerate() {
        let node = *r.node.get_ref();
        if node == 0 || node == u16::MAX {
            found.refuse(
                Some(r.node.span()),
                &format!("router[{i}].node"),
                "a node id is 1 to 65534",
            );
        }
        match hex_bytes(r.key.get_ref().trim()).and_then(|b| <[u8; KEY_LEN]>::try_from(b).ok()) {
            Some(k) => entries.push((NodeId(node), k)),
            None => found.refuse(
                Some(r.key.span()),
                &format!("router[{i}].key"),
                format!(
                    "a public key is {KEY_LEN} bytes of hex (`braid keygen --origin` prints it)"
                ),
            ),
        }
    }
    let roster = Roster::new(entries)
        .map_err(|e| found.refuse(None, "router", e.to_string()))
        .ok();
    Ok(found.finish(roster)?)
}
