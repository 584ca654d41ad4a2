//! What the kernel data path reports (`braid ctl stats`, metrics): what
//! runs in the kernel or why not, the sessions it encodes and
//! deduplicates, the programs' counters and what its control plane did.

use std::collections::BTreeMap;

use braid_proto::redundancy::EgressCounters;
use serde::{Deserialize, Serialize};

/// What the kernel data path is doing, for `braid ctl stats` and metrics.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KernelReport {
    /// Transit forwarding in the kernel.
    pub transit: bool,
    /// The egress in the kernel, or why not.
    pub egress: String,
    /// The ingress in the kernel, or why not.
    pub ingress: String,
    /// Whether the ingress finishes checksums a sender left to the device
    /// before encoding, and why.
    #[serde(default)]
    pub checksums: String,
    /// How the egress hands delivered packets on (`kernel_delivery`):
    /// `route` or `stack`, and why.
    #[serde(default)]
    pub delivery: String,
    /// Tree mode: whether packets entering here are marked in the kernel,
    /// or why not.
    #[serde(default)]
    pub tree_entry: String,
    /// Tree mode: (entry point, client) entries in the kernel's table.
    #[serde(default)]
    pub tree_entries: usize,
    /// The programs' counters, by name.
    pub programs: BTreeMap<String, u64>,
    /// Sessions encoded in the kernel now.
    pub ingress_sessions: Vec<KernelIngressEntry>,
    /// Egress sessions the kernel deduplicates.
    pub egress_sessions: Vec<KernelEgressEntry>,
    /// What this control plane did.
    pub counters: KernelCounters,
}

/// Packets on one path (by its index in the data header).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathPackets {
    pub path: u8,
    pub packets: u64,
}

/// A session the kernel encodes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KernelIngressEntry {
    pub egress: u16,
    pub class: u8,
    pub mode: String,
    pub next_seq: u32,
    pub packets: u64,
    /// Copies sent on each of the session's kernel paths.
    pub sent: Vec<PathPackets>,
}

/// An egress session the kernel deduplicates.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KernelEgressEntry {
    pub ingress: u16,
    pub class: u8,
    pub delivered: u64,
    pub duplicates: u64,
    pub too_old: u64,
    pub too_far_ahead: u64,
    pub old_epoch: u64,
    pub epoch_changes: u64,
    /// Packets received on each path (wrapping at 2^32, as path reports
    /// carry them).
    pub received: Vec<PathPackets>,
}

impl KernelEgressEntry {
    /// Its counters as the user-space egress counts them (`ctl sessions`
    /// lists both kinds alike).
    pub fn counters(&self) -> EgressCounters {
        let mut c = EgressCounters {
            delivered: self.delivered,
            duplicates: self.duplicates,
            too_old: self.too_old,
            too_far_ahead: self.too_far_ahead,
            old_epoch: self.old_epoch,
            epoch_changes: self.epoch_changes,
            ..EgressCounters::default()
        };
        for p in &self.received {
            if let Some(pc) = c.per_path.get_mut(p.path as usize) {
                pc.received = p.packets;
            }
        }
        c
    }
}

/// What the control plane did.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct KernelCounters {
    /// Sessions handed to the kernel.
    pub lent: u64,
    /// Sessions taken back into user space.
    pub taken_back: u64,
    /// Egress windows dropped after `idle` without a packet.
    pub windows_expired: u64,
    /// Egress windows rewritten as the node's after the ingress proved a
    /// new epoch or a jump.
    #[serde(default)]
    pub windows_handed_over: u64,
    /// Map writes the kernel refused (full maps): that part stays in
    /// user space.
    pub map_errors: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctl::{Doc, Stats};

    /// The report inside `braid ctl stats --json` reads back into the
    /// typed document (the lab and other clients read it so).
    #[test]
    fn the_kernel_report_reads_back_from_a_stats_document() {
        let r = KernelReport {
            transit: true,
            egress: "kernel".into(),
            ingress: "user space: late binding".into(),
            checksums: "left to the interfaces' devices (all physical)".into(),
            delivery: "route (auto: nothing in the stack on the way it skips)".into(),
            tree_entry: "kernel".into(),
            tree_entries: 4,
            programs: [("rx_forwarded".to_string(), 7)].into_iter().collect(),
            ingress_sessions: vec![KernelIngressEntry {
                egress: 3,
                class: 0,
                mode: "single".into(),
                next_seq: 9,
                packets: 299,
                sent: vec![PathPackets {
                    path: 0,
                    packets: 299,
                }],
            }],
            egress_sessions: vec![KernelEgressEntry {
                ingress: 1,
                received: vec![PathPackets {
                    path: 1,
                    packets: 5,
                }],
                ..KernelEgressEntry::default()
            }],
            counters: KernelCounters::default(),
        };
        let doc = serde_json::json!({
            "version": 1, "node": 1,
            "stats": {
                "node": braid_proto::node::NodeCounters::default(),
                "control": braid_proto::control::ControlCounters::default(),
                "lsdb": braid_proto::lsdb::LsdbCounters::default(),
                "ingress": braid_proto::redundancy::IngressTotals::default(),
                "egress": { "sessions": braid_proto::redundancy::SessionTableCounters::default() },
                "io": crate::counters::IoCounters::default(),
                "kernel": r,
            }
        });
        let back: Doc<Stats> = serde_json::from_value(doc).unwrap();
        let k = back.body.stats.kernel.unwrap();
        assert_eq!(k.ingress_sessions[0].sent[0].packets, 299);
        assert_eq!(k.egress_sessions[0].received[0].path, 1);
        assert_eq!(k.programs["rx_forwarded"], 7);
    }
}
