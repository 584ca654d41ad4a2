//! The egress the kernel runs, read back: each session's dedup window
//! gives its per-path receive counts (for the node's path reports) and
//! its counters (for the report); a window idle as long as the node's
//! session idle limit is dropped.

use std::time::Duration;

use braid_bpf::maps::Window;
use braid_bpf::Datapath;
use braid_proto::node::DecodedPath;
use braid_proto::time::Instant;
use braid_wire::data::data_send_order;
use braid_wire::NodeId;

use super::report::{KernelCounters, KernelEgressEntry, PathPackets};

/// What the kernel received of a session (ingress, class), per path.
pub(super) type PathCounts = ((NodeId, u8), Vec<DecodedPath>);

/// Reads every egress window (`now_ns` on the programs' clock, `now` on
/// the node's): the per-path receive counts for the node and the
/// report's entries; idle windows are dropped and counted.
pub(super) fn read_windows(
    dp: &mut Datapath,
    idle: Duration,
    (now_ns, now): (u64, Instant),
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
        let received: Vec<DecodedPath> = (0..w.received.len())
            .filter(|&p| w.received[p] > 0)
            .map(|p| decoded_path(w, p, now_ns, now))
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
                .map(|d| PathPackets {
                    path: d.path,
                    packets: u64::from(d.received),
                })
                .collect(),
        });
    }
    (external, egress_sessions)
}

/// Path `p` of window `w`: its arrivals, and once the window has one,
/// its newest arrival's send order and when it came on the node's clock
/// (`now` is `now_ns` there). The programs note arrivals on the coarse
/// clock: a tick early at most.
fn decoded_path(w: &Window, p: usize, now_ns: u64, now: Instant) -> DecodedPath {
    let known = w.latest_ns[p] != 0;
    let ago = Duration::from_nanos(now_ns.saturating_sub(w.latest_ns[p]));
    DecodedPath {
        path: p as u8,
        received: w.received[p],
        newest: known.then(|| {
            let at = Instant(now.0.saturating_sub(ago.as_micros() as u64));
            (data_send_order(w.latest[p]), at)
        }),
    }
}
