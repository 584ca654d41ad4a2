//! Shared by the integration tests that drive several nodes by hand.

use braid_proto::time::Instant;

/// The item whose timer is due first (ties: the lowest index), if it is
/// due by `until`; `now` moves to that time, or to `until` when none is.
pub fn next_due<T>(
    items: &[T],
    now: &mut Instant,
    until: Instant,
    timeout: impl Fn(&T) -> Instant,
) -> Option<usize> {
    let (i, t) = items
        .iter()
        .enumerate()
        .map(|(i, x)| (i, timeout(x)))
        .min_by_key(|&(i, t)| (t, i))?;
    if t > until {
        *now = until;
        return None;
    }
    *now = (*now).max(t);
    Some(i)
}
