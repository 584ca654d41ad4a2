//! The ingress sessions lent to the kernel: which the kernel encodes, the
//! number each was lent from, when one comes back into user space (its
//! mode is one the kernel does not do, its packets keep reaching user
//! space, it went idle) and with which number (`IngressSession::lend`,
//! `take_back_session`), and what the kernel sent of each on each path
//! meanwhile (`note_sent_elsewhere`: the node's path estimates measure
//! the egress's reports against it).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use braid_bpf::compile::{self, IngressPath};
use braid_bpf::maps::{Seq, Session, SessionKey, KPATHS};
use braid_bpf::Datapath;
use braid_proto::node::Node;
use braid_proto::redundancy::mode::MAX_PATHS;
use braid_wire::NodeId;
use tracing::info;

use super::report::{KernelCounters, KernelIngressEntry, PathPackets};

/// Numbers a session keeps in user space when it is lent (packets queued
/// on the way to the daemon at that moment): well inside half of the
/// default dedup window, so the egress takes the step.
pub const LEND_GAP: u32 = 256;
/// Packets of a lent session that still reach user space after its own
/// numbers ran out before it is taken back for good.
const STRAY_LIMIT: u64 = 64;

/// A session the kernel encodes, as written.
#[derive(Debug, Clone)]
struct Lent {
    session: Session,
    /// The first number lent (what user space resumes from if the kernel
    /// never used one).
    first: u32,
    /// The session's `lent_out` when lent (strays counted since).
    strays_at_lend: u64,
    /// The kernel's per-path counts (by its path index) when last read.
    read: [u64; KPATHS],
    /// What the kernel sent on each path slot since lent: its counts'
    /// growth between reads, put on the slot its path index had then (a
    /// route change moves a path index to another slot).
    by_slot: [u64; MAX_PATHS],
}

impl Lent {
    /// Adds what `seq` counts beyond the last read to the slots'.
    fn count(&mut self, seq: &Seq) {
        for i in 0..KPATHS {
            let grown = seq.sent[i].saturating_sub(self.read[i]);
            if i < self.session.n_paths as usize {
                if let Some(s) = self.by_slot.get_mut(self.session.paths[i].slot as usize) {
                    *s += grown;
                }
            }
        }
        self.read = seq.sent;
    }
}

/// The sessions lent to the kernel, by (egress, class).
#[derive(Debug, Default)]
pub(super) struct Lending {
    sessions: BTreeMap<(NodeId, u8), Lent>,
    /// Sessions taken back for good (packets kept reaching user space).
    user_only: BTreeSet<(NodeId, u8)>,
}

impl Lending {
    /// Whether `key` is encoded in the kernel.
    pub(super) fn encodes(&self, key: (NodeId, u8)) -> bool {
        self.sessions.contains_key(&key)
    }

    /// Takes back what the kernel should no longer encode (sessions gone
    /// from the node, sessions whose strays keep coming, sessions the
    /// kernel can no longer encode), follows route and mode changes, and
    /// lends the open sessions the kernel can encode.
    pub(super) fn sync(
        &mut self,
        dp: &mut Datapath,
        node: &mut Node,
        counters: &mut KernelCounters,
    ) {
        // Taken back: sessions gone from the node, sessions whose strays
        // keep coming, sessions the kernel can no longer encode.
        let keys: Vec<(NodeId, u8)> = self.sessions.keys().copied().collect();
        for key in keys {
            let Some(s) = node.ingress().session(key.0, key.1) else {
                self.drop_kernel_session(dp, key);
                continue;
            };
            let strays = s.counters().lent_out - self.sessions[&key].strays_at_lend;
            if strays >= STRAY_LIMIT {
                info!(
                    egress = key.0 .0,
                    class = key.1,
                    "packets of a kernel session keep reaching user space: it stays there"
                );
                self.user_only.insert(key);
                self.take_back(dp, node, key, counters);
                continue;
            }
            match compile_session(node, key.0, key.1) {
                Ok((session, _)) => {
                    let lent = self.sessions.get_mut(&key).expect("listed");
                    if lent.session != session {
                        let k = session_key(key);
                        if dp.set_session(k, &session).is_ok() {
                            lent.session = session;
                        } else {
                            counters.map_errors += 1;
                        }
                    }
                }
                Err(_) => self.take_back(dp, node, key, counters),
            }
        }
        // Sessions kept in user space are remembered while the node has
        // them: one opened again later gets another chance.
        self.user_only
            .retain(|k| node.ingress().session(k.0, k.1).is_some());
        // Lent: open sessions the kernel can encode.
        let candidates: Vec<(NodeId, u8)> = node
            .ingress()
            .sessions()
            .filter(|(k, s)| {
                !s.is_lent()
                    && k.1 != braid_proto::redundancy::CLASS_CONTROL
                    && !self.user_only.contains(k)
                    && !self.sessions.contains_key(k)
            })
            .map(|(k, _)| *k)
            .collect();
        for key in candidates {
            let Ok((session, _)) = compile_session(node, key.0, key.1) else {
                continue;
            };
            let strays_at_lend = node
                .ingress()
                .session(key.0, key.1)
                .map_or(0, |s| s.counters().lent_out);
            let Some((_, first)) = node.lend_session(key.0, key.1, LEND_GAP) else {
                continue;
            };
            let k = session_key(key);
            if dp.start_seq(k, first).is_err() || dp.set_session(k, &session).is_err() {
                counters.map_errors += 1;
                let _ = dp.remove_session(k);
                node.take_back_session(key.0, key.1, first, &[]);
                self.user_only.insert(key);
                continue;
            }
            counters.lent += 1;
            self.sessions.insert(
                key,
                Lent {
                    session,
                    first,
                    strays_at_lend,
                    read: [0; KPATHS],
                    by_slot: [0; MAX_PATHS],
                },
            );
        }
        self.note_sent(dp, node, counters);
    }

    /// Tells the node what the kernel has sent of each lent session, per
    /// path slot, so that its path estimates measure the egress's reports
    /// against it (read every sync: the reports' latest arrivals are
    /// dated against these reads, a sync apart).
    ///
    /// Read twice: the counts from the first read, the number from the
    /// second. The programs take a packet's number before they count it
    /// sent (both atomic), so every packet the first read counted was
    /// numbered before the second read: below its `next`. (One read
    /// copies the number before the counts, which may then hold packets
    /// numbered meanwhile.)
    fn note_sent(&mut self, dp: &Datapath, node: &mut Node, counters: &mut KernelCounters) {
        for (key, lent) in &mut self.sessions {
            let k = session_key(*key);
            match (dp.seq(k), dp.seq(k)) {
                (Ok(Some(counts)), Ok(Some(number))) => {
                    lent.count(&counts);
                    node.note_sent_elsewhere(*key, number.next, &lent.by_slot);
                }
                (Ok(_), Ok(_)) => {}
                _ => counters.map_errors += 1,
            }
        }
    }

    /// Stops encoding `key` in the kernel and gives the node the number
    /// the kernel stopped at.
    pub(super) fn take_back(
        &mut self,
        dp: &mut Datapath,
        node: &mut Node,
        key: (NodeId, u8),
        counters: &mut KernelCounters,
    ) {
        let Some(mut lent) = self.sessions.remove(&key) else {
            return;
        };
        let next = match dp.remove_session(session_key(key)) {
            Ok(Some(seq)) => {
                lent.count(&seq);
                seq.next
            }
            _ => lent.first,
        };
        node.take_back_session(key.0, key.1, next, &lent.by_slot);
        counters.taken_back += 1;
    }

    /// Takes every lent session back (the kernel no longer encodes).
    pub(super) fn take_back_all(
        &mut self,
        dp: &mut Datapath,
        node: &mut Node,
        counters: &mut KernelCounters,
    ) {
        let keys: Vec<_> = self.sessions.keys().copied().collect();
        for k in keys {
            self.take_back(dp, node, k, counters);
        }
    }

    /// The node dropped the session: so does the kernel.
    fn drop_kernel_session(&mut self, dp: &mut Datapath, key: (NodeId, u8)) {
        self.sessions.remove(&key);
        let _ = dp.remove_session(session_key(key));
    }

    /// The lent sessions' counters read back (`now_ns` on the programs'
    /// clock) for the report; sessions idle as long as the node's idle
    /// limit go back (and then expire in the node as usual).
    pub(super) fn sweep(
        &mut self,
        dp: &mut Datapath,
        node: &mut Node,
        idle: Duration,
        now_ns: u64,
        counters: &mut KernelCounters,
    ) -> Vec<KernelIngressEntry> {
        let mut ingress_sessions = Vec::new();
        let keys: Vec<(NodeId, u8)> = self.sessions.keys().copied().collect();
        for key in keys {
            let seq = dp.seq(session_key(key)).ok().flatten();
            match seq {
                Some(s)
                    if s.packets > 0
                        && now_ns.saturating_sub(s.last_ns) < idle.as_nanos() as u64 =>
                {
                    let lent = &self.sessions[&key];
                    ingress_sessions.push(KernelIngressEntry {
                        egress: key.0 .0,
                        class: key.1,
                        mode: ["single", "stripe", "mirror"]
                            .get(lent.session.mode as usize)
                            .unwrap_or(&"?")
                            .to_string(),
                        next_seq: s.next,
                        packets: s.packets,
                        sent: (0..lent.session.n_paths as usize)
                            .map(|i| PathPackets {
                                path: lent.session.paths[i].slot,
                                packets: s.sent[i],
                            })
                            .collect(),
                    });
                }
                Some(s) if s.packets == 0 => {}
                _ => self.take_back(dp, node, key, counters),
            }
        }
        ingress_sessions
    }
}

/// The kernel's version of a node's ingress session, or why none.
fn compile_session(node: &Node, egress: NodeId, class: u8) -> Result<(Session, u32), String> {
    let s = node.ingress().session(egress, class).ok_or("no session")?;
    let transit = node.paths_to(egress).ok_or("no route")?;
    let paths: Vec<IngressPath<'_>> = transit
        .iter()
        .zip(s.paths())
        .enumerate()
        .map(|(i, (t, st))| IngressPath {
            slot: i as u8,
            transit: t,
            state: *st,
        })
        .collect();
    compile::session(egress, s.active_mode(), s.epoch(), &paths)
        .map(|k| (k, s.epoch()))
        .map_err(|e| e.to_string())
}

fn session_key((egress, class): (NodeId, u8)) -> SessionKey {
    SessionKey {
        egress: egress.0,
        class_id: class,
        pad: 0,
    }
}
