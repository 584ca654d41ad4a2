//! The egress the kernel runs, read back: each session's dedup window
//! gives its per-path receive counts (for the node's path reports), its
//! epoch and highest number (for the node's checks of what the kernel
//! passes up as unproven) and its counters (for the report); a window
//! idle as long as the node's session idle limit is dropped. And written:
//! a window whose ingress proved a new epoch or a jump to the node is
//! made the node's ([`hand_over`]).

use std::time::Duration;

use braid_bpf::maps::{Window, WindowKey};
use braid_bpf::Datapath;
use braid_proto::node::DecodedPath;
use braid_proto::time::Instant;
use braid_wire::data::data_send_order;
use braid_wire::NodeId;

use super::report::{KernelCounters, KernelEgressEntry, PathPackets};

/// What the kernel received of a session (ingress, class), per path.
pub(super) type PathCounts = ((NodeId, u8), Vec<DecodedPath>);

/// A session's (ingress, class) epoch and highest number in the kernel.
pub(super) type WindowState = ((NodeId, u8), (u32, Option<u32>));

/// What the sweep read of the kernel's egress windows.
pub(super) struct Windows {
    pub counts: Vec<PathCounts>,
    pub states: Vec<WindowState>,
    pub entries: Vec<KernelEgressEntry>,
}

/// Rewrites the kernel's windows the node's ingresses proved (a new
/// epoch, a jump) as the node's, for a kernel window of `mask + 1`
/// numbers. A window the kernel no longer holds is left alone.
pub(super) fn hand_over(
    dp: &mut Datapath,
    node: &mut braid_proto::node::Node,
    mask: u32,
    counters: &mut KernelCounters,
) {
    while let Some(p) = node.poll_proven_window() {
        let key = WindowKey {
            ingress: p.session.0 .0,
            class_id: p.session.1,
            pad: 0,
        };
        match dp.window(key) {
            Ok(Some(current)) => {
                let w = braid_bpf::handover::take_over(current, &p, mask);
                match dp.set_window(key, &w) {
                    Ok(()) => counters.windows_handed_over += 1,
                    Err(_) => counters.map_errors += 1,
                }
            }
            Ok(None) => {}
            Err(_) => counters.map_errors += 1,
        }
    }
}

/// Reads every egress window (`now_ns` on the programs' clock, `now` on
/// the node's): the per-path receive counts and the epochs for the node
/// and the report's entries; idle windows are dropped and counted.
pub(super) fn read_windows(
    dp: &mut Datapath,
    idle: Duration,
    (now_ns, now): (u64, Instant),
    counters: &mut KernelCounters,
) -> Windows {
    let windows = dp.windows();
    let mut external = Vec::new();
    let mut states = Vec::new();
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
        if w.has_epoch == 1 {
            let highest = (w.started == 1).then_some(w.highest);
            states.push(((NodeId(k.ingress), k.class_id), (w.epoch, highest)));
        }
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
    Windows {
        counts: external,
        states,
        entries: egress_sessions,
    }
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
