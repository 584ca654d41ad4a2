//! The keys that sign and check every control message (`[auth]`): given
//! inline (`keys`) or in a key file (`key_file`) that only its owner can
//! read, and what makes a key usable (one or two, distinct ids, secrets
//! of 16 to 64 bytes written as hex).

use std::path::{Path, PathBuf};

use braid_conf::Source;
use braid_proto::auth::{AuthConfig, AuthKey, MAX_KEYS};

use braid_conf::Findings;

use super::errors::{ConfigErrors, ConfigLoadError};
use super::schema::{AuthFile, KeyFile, KeysOnly};

/// Checks `[auth]`: the inline keys it holds, or the key file it names
/// (read later, by [`load_keys`]), not both.
pub(super) fn check_auth(
    found: &mut Findings<'_>,
    auth: Option<&AuthFile>,
) -> (AuthConfig, Option<PathBuf>) {
    let Some(a) = auth else {
        return (AuthConfig::default(), None);
    };
    match &a.key_file {
        Some(f) => {
            if !a.keys.is_empty() {
                found.refuse(
                    Some(f.span()),
                    "auth.key_file",
                    "give the keys inline (auth.keys) or in a file (auth.key_file), not both",
                );
            }
            (AuthConfig::default(), Some(PathBuf::from(f.get_ref())))
        }
        None => (check_keys(found, &a.keys, "auth.keys"), None),
    }
}

/// Checks a list of keys (`field`: where it is, `auth.keys` or a key
/// file's `keys`): one or two, distinct ids, secrets of 16 to 64 bytes
/// written as hex.
fn check_keys(found: &mut Findings<'_>, keys: &[KeyFile], field: &str) -> AuthConfig {
    if keys.is_empty() {
        found.refuse(None, field, "no key: give one (or two while rotating)");
        return AuthConfig::default();
    }
    if let Some(extra) = keys.get(MAX_KEYS) {
        found.refuse(
            Some(extra.id.span()),
            field,
            format!("at most {MAX_KEYS} keys (the one in use and the one being rotated)"),
        );
    }
    let mut out = AuthConfig::default();
    for (i, k) in keys.iter().enumerate() {
        let here = format!("{field}[{i}]");
        let key = check_secret(found, k, &here);
        let id = *k.id.get_ref();
        if keys[..i].iter().any(|o| *o.id.get_ref() == id) {
            found.refuse(
                Some(k.id.span()),
                &format!("{here}.id"),
                format!("two keys have id {id}"),
            );
        }
        out.keys.extend(key);
    }
    out
}

/// One key's secret: hex digits making 16 to 64 bytes.
fn check_secret(found: &mut Findings<'_>, k: &KeyFile, here: &str) -> Option<AuthKey> {
    let field = format!("{here}.secret");
    let Some(bytes) = hex_bytes(k.secret.get_ref().trim()) else {
        found.refuse(
            Some(k.secret.span()),
            &field,
            "not hex digits (make one with `braid keygen`)",
        );
        return None;
    };
    AuthKey::new(*k.id.get_ref(), &bytes)
        .map_err(|e| found.refuse(Some(k.secret.span()), &field, e.to_string()))
        .ok()
}

pub(super) fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// Reads a key file: it must be a regular file that only its owner can
/// read (mode 0600 or 0400) and owned by root or by the user the daemon
/// runs as.
pub(super) fn load_keys(path: &Path) -> Result<AuthConfig, ConfigLoadError> {
    owner_only(path)?;
    let shown = path.display().to_string();
    let text = braid_conf::read_text(path).map_err(|e| ConfigLoadError::Read {
        path: shown.clone(),
        source: e,
    })?;
    let src = Source::new(&shown, &text);
    let raw: KeysOnly = src.parse().map_err(ConfigErrors::from)?;
    let mut found = Findings::new(src);
    let keys = check_keys(&mut found, &raw.keys, "keys");
    Ok(found.finish(Some(keys))?)
}

/// The warning for a config file at `path` that holds `[auth]` keys
/// itself (no `key_file`) and that other users can read: the network's
/// key is then anyone's on this host. Not refused (a config made by a
/// tool may be mode 0644 first), but said at start and by `--check`.
pub fn inline_keys_warning(path: &Path, config: &super::Config) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    if config.key_file.is_some() || !config.node_config.control.auth.enabled() {
        return None;
    }
    let mode = std::fs::metadata(path).ok()?.mode() & 0o7777;
    let shown = path.display();
    (mode & 0o077 != 0).then(|| {
        format!(
            "{shown} holds the [auth] keys and other users can read it (mode {mode:04o}): run `chmod 600 {shown}`, or move the keys into a key_file of their own (mode 0600)"
        )
    })
}

/// Checks that the secret file at `path` is a regular file only its
/// owner can read (mode 0600 or 0400), owned by root or by the user the
/// daemon runs as.
pub(super) fn owner_only(path: &Path) -> Result<(), ConfigLoadError> {
    use std::os::unix::fs::MetadataExt;
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| ConfigLoadError::Read {
        path: shown.clone(),
        source: e,
    })?;
    let me = nix::unistd::geteuid().as_raw();
    if !meta.is_file() {
        return Err(ConfigLoadError::KeyFile {
            path: shown,
            why: "is not a regular file".to_string(),
        });
    }
    if meta.mode() & 0o077 != 0 {
        return Err(ConfigLoadError::KeyFile {
            path: shown.clone(),
            why: format!(
                "can be read by others (mode {:04o}); run `chmod 600 {shown}`",
                meta.mode() & 0o7777
            ),
        });
    }
    if meta.uid() != 0 && meta.uid() != me {
        return Err(ConfigLoadError::KeyFile {
            path: shown,
            why: format!("belongs to uid {}, not root", meta.uid()),
        });
    }
    Ok(())
}
