//! The loop's poll tokens: which of the daemon's sources an event is
//! for. Fixed tokens for the single sources; ranges for those there are
//! several of (access interfaces, each interface's two sockets, local
//! clients), each item at its index's place.

use mio::Token;

pub(super) const TUN: Token = Token(0);
pub(super) const SIGNALS: Token = Token(1);
pub(super) const CTL: Token = Token(2);
pub(super) const METRICS: Token = Token(3);
pub(super) const CARRIER: Token = Token(4);
/// The uplink checker's answer sockets (ICMP, DNS): a read drains them.
pub(super) const UPLINK: Token = Token(5);
/// Interface `i`'s sockets: this plus `2i` (control and received data),
/// plus `2i + 1` (room again in its data socket's send queue).
const PORT_BASE: usize = 16;
/// Access interfaces' sockets: this plus their index.
const ACCESS_BASE: usize = 1 << 16;
/// The uplink checker's TCP probes: this plus their target's index.
const UPLINK_TCP_BASE: usize = 1 << 18;
/// Local clients (`crate::clients`): this plus their slot.
const CLIENT_BASE: usize = 1 << 20;

/// What an event is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ready {
    Tun,
    Signals,
    Ctl,
    Metrics,
    Carrier,
    /// The uplink checker's answers.
    Uplink,
    /// The uplink checker's TCP probe to this target.
    UplinkTcp(usize),
    /// The local client in this slot.
    Client(usize),
    /// The access interface at this index.
    Access(usize),
    /// Interface `i` has datagrams to read.
    PortReadable(usize),
    /// Interface `i`'s data socket can take more.
    PortWritable(usize),
    Unknown,
}

/// What `token` is for.
pub(super) fn ready(token: Token) -> Ready {
    match token {
        TUN => Ready::Tun,
        SIGNALS => Ready::Signals,
        CTL => Ready::Ctl,
        METRICS => Ready::Metrics,
        CARRIER => Ready::Carrier,
        UPLINK => Ready::Uplink,
        Token(t) if t >= CLIENT_BASE => Ready::Client(t - CLIENT_BASE),
        Token(t) if t >= UPLINK_TCP_BASE => Ready::UplinkTcp(t - UPLINK_TCP_BASE),
        Token(t) if t >= ACCESS_BASE => Ready::Access(t - ACCESS_BASE),
        Token(t) if t >= PORT_BASE && (t - PORT_BASE).is_multiple_of(2) => {
            Ready::PortReadable((t - PORT_BASE) / 2)
        }
        Token(t) if t >= PORT_BASE => Ready::PortWritable((t - PORT_BASE) / 2),
        _ => Ready::Unknown,
    }
}

/// Interface `i`'s readable socket's token.
pub(super) fn port_readable(i: usize) -> Token {
    Token(PORT_BASE + 2 * i)
}

/// Interface `i`'s data socket's token (writable again).
pub(super) fn port_writable(i: usize) -> Token {
    Token(PORT_BASE + 2 * i + 1)
}

/// Access interface `i`'s token (all its sockets).
pub(super) fn access(i: usize) -> Token {
    Token(ACCESS_BASE + i)
}

/// The uplink's TCP probe to target `i`'s token.
pub(super) fn uplink_tcp(i: usize) -> Token {
    Token(UPLINK_TCP_BASE + i)
}

/// The local client in `slot`'s token.
pub(super) fn client(slot: usize) -> Token {
    Token(CLIENT_BASE + slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_source_gets_its_events_back() {
        for (token, source) in [
            (TUN, Ready::Tun),
            (SIGNALS, Ready::Signals),
            (CTL, Ready::Ctl),
            (METRICS, Ready::Metrics),
            (CARRIER, Ready::Carrier),
            (UPLINK, Ready::Uplink),
            (uplink_tcp(7), Ready::UplinkTcp(7)),
            (port_readable(0), Ready::PortReadable(0)),
            (port_writable(0), Ready::PortWritable(0)),
            (port_readable(300), Ready::PortReadable(300)),
            (port_writable(300), Ready::PortWritable(300)),
            (access(3), Ready::Access(3)),
            (client(63), Ready::Client(63)),
            (Token(9), Ready::Unknown),
        ] {
            assert_eq!(ready(token), source, "{token:?}");
        }
    }
}
