//! Per-origin signatures: every router signs its own link-state
//! advertisements with an Ed25519 key pair (crate `ed25519-dalek`), and
//! every router checks each advertisement against the public key(s) the
//! operator's roster binds to its origin's node id. So a router that
//! holds the network key (which makes it a neighbor) can no longer forge
//! another origin's links or prefixes: only the origin's own key signs
//! them. The network key's MAC still guards every message hop by hop;
//! this guards what an advertisement says end to end, whoever relays it.
//!
//! * **What is signed**: [`braid_wire::LsaEntry::signed_content`], the
//!   bytes the checksum covers (origin, number, links, prefixes; not the
//!   age) after a fixed prefix. Signing happens once per advertisement
//!   issued; relays carry the signature on unchanged.
//! * **Roster**: node id to at most [`MAX_KEYS_PER_NODE`] public keys
//!   (two while a router's key is rotated: add the new key to the roster
//!   everywhere, switch the router, then drop the old one). A node the
//!   roster does not name cannot originate anything (`unknown_origin`);
//!   dropping a key from the roster revokes it at the next reload.
//! * **Checked once**: an advertisement already held under the same
//!   number, checksum and signature is not checked again (flooding
//!   brings each one from every neighbor).
//!
//! With no roster the router does not check origins: advertisements are
//! taken as before (the network key's MAC alone). A router with a key
//! signs what it issues, roster or not: rolling signatures out is two
//! steps, (1) every router gets its key (all sign, none checks), (2)
//! every router gets the roster (all check). Doing (2) on one router
//! before (1) is done everywhere cuts the routers without a key off from
//! it (their advertisements are `unsigned_origin` there).

use std::collections::BTreeMap;

use braid_wire::{Lsa, LsaLink, NodeId, Prefix, ORIGIN_SIGNATURE_LEN};
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use thiserror::Error;

/// Public keys one node id may sign with at once (rotation).
pub const MAX_KEYS_PER_NODE: usize = 2;
/// Node ids a roster names, at most.
pub const MAX_ROSTER: usize = 65_535;
/// Bytes of a secret (signing) key and of a public key.
pub const KEY_LEN: usize = 32;

/// A router's own signing key.
#[derive(Clone)]
pub struct OriginKey(SigningKey);

impl std::fmt::Debug for OriginKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret.
        write!(f, "OriginKey {{ public: {} }}", hex(&self.public()))
    }
}

impl PartialEq for OriginKey {
    fn eq(&self, other: &Self) -> bool {
        self.public() == other.public()
    }
}

impl OriginKey {
    /// The key whose secret is `secret` (32 bytes, from `braid keygen
    /// --origin`).
    pub fn from_secret(secret: &[u8]) -> Result<Self, OriginError> {
        let bytes: [u8; KEY_LEN] = secret
            .try_into()
            .map_err(|_| OriginError::SecretLength(secret.len()))?;
        Ok(OriginKey(SigningKey::from_bytes(&bytes)))
    }

    /// Its public half, as the roster lists it.
    pub fn public(&self) -> [u8; KEY_LEN] {
        self.0.verifying_key().to_bytes()
    }
}

/// The operator's binding of node ids to public keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roster {
    keys: BTreeMap<NodeId, Vec<VerifyingKey>>,
}

impl Roster {
    /// A roster of `entries` (node id, public key), at most
    /// [`MAX_KEYS_PER_NODE`] per node.
    pub fn new(
        entries: impl IntoIterator<Item = (NodeId, [u8; KEY_LEN])>,
    ) -> Result<Self, OriginError> {
        let mut keys: BTreeMap<NodeId, Vec<VerifyingKey>> = BTreeMap::new();
        for (node, public) in entries {
            let key =
                VerifyingKey::from_bytes(&public).map_err(|_| OriginError::BadPublicKey(node.0))?;
            let list = keys.entry(node).or_default();
            if list.contains(&key) {
                continue;
            }
            if list.len() >= MAX_KEYS_PER_NODE {
                return Err(OriginError::TooManyKeys(node.0));
            }
            list.push(key);
            if keys.len() > MAX_ROSTER {
                return Err(OriginError::TooManyNodes);
            }
        }
        Ok(Roster { keys })
    }

    /// Node ids named.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether it names no node.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn lists(&self, node: NodeId, public: &[u8; KEY_LEN]) -> bool {
        self.keys
            .get(&node)
            .is_some_and(|l| l.iter().any(|k| k.as_bytes() == public))
    }
}

/// Per-origin signing: this router's key (it signs) and the roster (it
/// checks).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OriginConfig {
    /// This router's signing key.
    pub key: Option<OriginKey>,
    /// Whose keys are whose (shared: the simulator's nodes hold one);
    /// `None`: this router does not check origins.
    pub roster: Option<std::sync::Arc<Roster>>,
}

/// An origin configuration that cannot run.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OriginError {
    /// A secret of the wrong size.
    #[error("an origin key's secret is {KEY_LEN} bytes, got {0}")]
    SecretLength(usize),
    /// A roster entry that is not an Ed25519 public key.
    #[error("the roster's key for node {0} is not an Ed25519 public key")]
    BadPublicKey(u16),
    /// More keys for one node than rotation needs.
    #[error("the roster lists more than {MAX_KEYS_PER_NODE} keys for node {0}")]
    TooManyKeys(u16),
    /// More node ids than there are.
    #[error("the roster names more than {MAX_ROSTER} nodes")]
    TooManyNodes,
    /// A roster without this router's key, or a key without a roster.
    #[error("{0}")]
    Incomplete(&'static str),
    /// This router's key is not the roster's for its id.
    #[error("the roster does not list this router's public key {public} for node {node}: every other router would refuse its advertisements")]
    NotInRoster {
        /// This router's id.
        node: u16,
        /// Its public key, hex.
        public: String,
    },
}

/// Why an advertisement's origin was not taken; each is a counter of the
/// control plane's `rx_errors`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum OriginRefusal {
    /// It carries no signature, while the network signs origins.
    #[error("unsigned origin")]
    Unsigned,
    /// Its origin is not in the roster.
    #[error("origin not in the roster")]
    UnknownOrigin,
    /// The signature is not its origin's (a key holder forging another
    /// origin, or a corrupted one).
    #[error("bad origin signature")]
    BadSignature,
}

impl OriginRefusal {
    /// The counter's name.
    pub fn kind(self) -> &'static str {
        match self {
            OriginRefusal::Unsigned => "unsigned_origin",
            OriginRefusal::UnknownOrigin => "unknown_origin",
            OriginRefusal::BadSignature => "bad_origin_signature",
        }
    }
}

impl OriginConfig {
    /// Checks that node `id` can run with it.
    pub fn validate(&self, id: NodeId) -> Result<(), OriginError> {
        match (&self.key, &self.roster) {
            (None, None) | (Some(_), None) => Ok(()),
            (None, Some(_)) => Err(OriginError::Incomplete(
                "a roster without this router's origin key: give it its key (braid keygen --origin)",
            )),
            (Some(k), Some(r)) => {
                if r.lists(id, &k.public()) {
                    Ok(())
                } else {
                    Err(OriginError::NotInRoster {
                        node: id.0,
                        public: hex(&k.public()),
                    })
                }
            }
        }
    }

    /// Whether this router checks origins (a roster is configured).
    pub fn checks(&self) -> bool {
        self.roster.is_some()
    }

    /// This router's signature over an advertisement it issues (`None`
    /// when it has no key).
    pub fn sign(
        &self,
        origin: NodeId,
        seq: u32,
        links: &[LsaLink],
        prefixes: &[Prefix],
    ) -> Option<[u8; ORIGIN_SIGNATURE_LEN]> {
        let key = self.key.as_ref()?;
        let content = braid_wire::LsaEntry::signed_content(origin, seq, links, prefixes);
        Some(key.0.sign(&content).to_bytes())
    }

    /// Whether `lsa` is its origin's (always, when the network does not
    /// sign origins).
    pub fn verify(&self, lsa: &Lsa<'_>) -> Result<(), OriginRefusal> {
        let Some(roster) = &self.roster else {
            return Ok(());
        };
        let sig = lsa.signature.ok_or(OriginRefusal::Unsigned)?;
        let keys = roster
            .keys
            .get(&lsa.origin)
            .ok_or(OriginRefusal::UnknownOrigin)?;
        let signature = Signature::from_bytes(sig);
        let content = lsa.signed_content();
        if keys.iter().any(|k| k.verify(&content, &signature).is_ok()) {
            Ok(())
        } else {
            Err(OriginRefusal::BadSignature)
        }
    }
}

/// `bytes` in lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_wire::{
        ControlFlags, ControlHeader, ControlMessage, LsaBundle, LsaEntry, MessageType,
    };

    fn key(n: u8) -> OriginKey {
        OriginKey::from_secret(&[n; KEY_LEN]).unwrap()
    }

    /// A signed LSA message from `origin` signed by `signer`.
    fn message(origin: u16, seq: u32, signer: &OriginConfig) -> Vec<u8> {
        let links = [LsaLink {
            neighbor: NodeId(1),
            link_id: 0,
            metric_out: 1,
            metric_in: 1,
        }];
        let prefixes = [Prefix::V4 {
            addr: [198, 18, 5, 0],
            len: 24,
        }];
        let sig = signer.sign(NodeId(origin), seq, &links, &prefixes).unwrap();
        let entry = LsaEntry {
            signature: Some(&sig),
            ..LsaEntry::new(NodeId(origin), 3, seq, &links, &prefixes)
        };
        let header = ControlHeader {
            flags: ControlFlags::SIGNED_ORIGINS,
            ..ControlHeader::new(MessageType::Lsa, NodeId(9))
        };
        let mut buf = vec![0u8; 512];
        let n = braid_wire::Lsa::emit_bundle(&header, &[entry], &mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    fn check(config: &OriginConfig, bytes: &[u8]) -> Result<(), OriginRefusal> {
        let msg = ControlMessage::parse(bytes).unwrap();
        let bundle = LsaBundle::parse(&msg).unwrap();
        let lsa = bundle.iter().next().unwrap();
        config.verify(&lsa)
    }

    fn config(id: u8, roster: &[(u16, u8)]) -> OriginConfig {
        OriginConfig {
            key: Some(key(id)),
            roster: Some(std::sync::Arc::new(
                Roster::new(roster.iter().map(|&(n, k)| (NodeId(n), key(k).public()))).unwrap(),
            )),
        }
    }

    #[test]
    fn only_the_origins_own_key_signs_for_it() {
        let roster = [(1, 1), (2, 2), (3, 3)];
        let me = config(1, &roster);
        let two = config(2, &roster);
        let three = config(3, &roster);
        assert_eq!(check(&me, &message(2, 7, &two)), Ok(()));
        // Node 3 (a key holder) forging node 2's advertisement.
        assert_eq!(
            check(&me, &message(2, 8, &three)),
            Err(OriginRefusal::BadSignature)
        );
        // An origin the roster does not name.
        assert_eq!(
            check(&me, &message(9, 1, &three)),
            Err(OriginRefusal::UnknownOrigin)
        );
        // A flipped bit in what was signed (the age is not signed).
        let mut bad = message(2, 7, &two);
        let age = braid_wire::CONTROL_HEADER_LEN + 2;
        bad[age + 1] ^= 1;
        assert_eq!(check(&me, &bad), Ok(()), "the age changes in flight");
        // Unsigned, where the network signs.
        let unsigned = OriginConfig {
            key: None,
            roster: None,
        };
        assert_eq!(check(&unsigned, &message(2, 8, &three)), Ok(()));
    }

    #[test]
    fn a_rotated_key_is_taken_beside_the_old_one_and_revoked_by_the_roster() {
        let both = config(1, &[(1, 1), (2, 2), (2, 5)]);
        let new_two = config(5, &[(2, 5)]);
        assert_eq!(check(&both, &message(2, 7, &config(2, &[(2, 2)]))), Ok(()));
        assert_eq!(check(&both, &message(2, 8, &new_two)), Ok(()));
        let revoked = config(1, &[(1, 1), (2, 5)]);
        assert_eq!(
            check(&revoked, &message(2, 9, &config(2, &[(2, 2)]))),
            Err(OriginRefusal::BadSignature)
        );
    }

    #[test]
    fn configurations_that_cannot_work_are_refused() {
        assert!(config(1, &[(1, 1)]).validate(NodeId(1)).is_ok());
        assert!(matches!(
            config(1, &[(1, 2)]).validate(NodeId(1)),
            Err(OriginError::NotInRoster { node: 1, .. })
        ));
        let signing_only = OriginConfig {
            key: Some(key(1)),
            roster: None,
        };
        assert!(
            signing_only.validate(NodeId(1)).is_ok(),
            "step 1 of a rollout"
        );
        let no_key = OriginConfig {
            key: None,
            roster: config(1, &[(1, 1)]).roster,
        };
        assert!(no_key.validate(NodeId(1)).is_err());
        assert_eq!(
            Roster::new([
                (NodeId(1), key(1).public()),
                (NodeId(1), key(2).public()),
                (NodeId(1), key(3).public())
            ]),
            Err(OriginError::TooManyKeys(1))
        );
        assert!(OriginKey::from_secret(&[1; 31]).is_err());
        assert!(!format!("{:?}", key(1)).contains("0101010101"));
    }
}
