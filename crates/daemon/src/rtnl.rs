//! Route netlink batches: a buffer the kernel filled with messages (link
//! notifications, a neighbor table dump) split into its messages and
//! decoded with `netlink-packet-route`; what does not decode is counted.
//! Shared by the carrier watch and the access interfaces' neighbor-table
//! reads.

use netlink_packet_core::{NetlinkMessage, NetlinkPayload};
use netlink_packet_route::RouteNetlinkMessage;

/// Hands each message of `bytes` to `each`; returns how many did not
/// decode (a length that overruns the buffer ends the batch).
pub fn each_message(
    mut bytes: &[u8],
    mut each: impl FnMut(NetlinkPayload<RouteNetlinkMessage>),
) -> u64 {
    let mut malformed = 0;
    while bytes.len() >= 16 {
        let len = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        if len < 16 || len > bytes.len() {
            return malformed + 1;
        }
        match NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes[..len]) {
            Ok(m) => each(m.payload),
            Err(_) => malformed += 1,
        }
        // Messages are 4-byte aligned.
        let step = (len + 3) & !3;
        bytes = &bytes[step.min(bytes.len())..];
    }
    malformed
}
