//! The egress the kernel runs, read back: each session's dedup window
//! gives its per-path receive counts (for the node's path reports) and
//! its counters (for the report); a window idle as long as the node's
//! session idle limit is dropped.

use std::time::Duration;

use braid_bpf::Datapath;
use braid_wire::NodeId;

use super::report::{KernelCounters, KernelEgressEntry, PathPackets};

/// Per-path receive counts of a session (ingress, class): (path index,
/// packets received).
pub(super) type PathCounts = ((NodeId, u8), Vec<(u8, u32)>);

/// Reads every egress window (`now_ns` on the programs' clock): the
/// per-path receive counts for the node and the report's entries; idle
/// windows are dropped and counted.
pub(super) fn read_windows(
    dp: &mut Datapath,
    idle: Duration,
    now_ns: u64,
    counters: &mut KernelCounters,
) -> (Vec<PathCounts>, Vec<KernelEgressEntry>) {
    let windows = dp.windows();
    let mut external = Vec::new();
    let mut egress_sessions = Vec::new();
    for (k, w) in &windows {
        if now_ns.saturating_sub(w.last_ns) >= idle.as_nanos() as u64 {
            if dp.remove_window(*k).is_ok() {
                counters.windows_expired += 1;
            }
            continue;
        }
        let received: Vec<(u8, u32)> = w
            .received
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(p, &n)| (p as u8, n))
            .collect();
        external.push(((NodeId(k.ingress), k.class_id), received.clone()));
        egress_sessions.push(KernelEgressEntry {
            ingress: k.ingress,
            class: k.class_id,
            delivered: w.delivered,
            duplicates: w.duplicates,
            too_old: w.too_old,
            too_far_ahead: w.too_far_ahead,
            old_epoch: w.old_epoch,
            epoch_changes: w.epoch_changes,
            received: received
                .into_iter()
                .map(|(path, n)| PathPackets {
                    path,
                    packets: u64::from(n),
                })
                .collect(),
        });
    }
    (external, egress_sessions)
}
