//! What the daemon's I/O layer counted (the node counts the protocol).

/// Counts of what the I/O layer did.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct IoCounters {
    pub tun_rx: u64,
    pub tun_tx: u64,
    pub tun_tx_errors: u64,
    /// The kernel's own IPv6 link-local and multicast packets read from
    /// the TUN device (router solicitations, listener reports): not for
    /// the mesh, left alone.
    #[serde(default)]
    pub tun_rx_link_local: u64,
    /// TCP SYNs read from the TUN device whose MSS was lowered to fit
    /// the tunnel (`crate::mss`).
    #[serde(default)]
    pub tcp_mss_clamped: u64,
    /// Packets the kernel routed to the TUN device and dropped because
    /// its queue (`txqueuelen`) was full: braid did not read them in
    /// time, so the traffic offered was more than braid forwarded. The
    /// kernel's own count (the device's TX dropped), read when `stats`
    /// or the metrics are asked for.
    #[serde(default)]
    pub tun_queue_dropped: u64,
    /// Packets braid wrote to the TUN device that the kernel dropped
    /// (the device's RX dropped), read the same way.
    #[serde(default)]
    pub tun_write_dropped: u64,
    pub udp_rx: u64,
    /// Datagrams the kernel dropped at braid's receiving sockets because
    /// their buffers were full (braid read too slowly): the sockets' own
    /// counts (`SO_MEMINFO`), read when `stats` or the metrics are asked
    /// for, with those of sockets closed since (an interface gone).
    #[serde(default)]
    pub udp_rx_dropped: u64,
    /// Of `udp_rx_dropped`, what sockets closed since counted.
    #[serde(skip)]
    pub udp_rx_dropped_closed: u64,
    /// Datagrams longer than the receive slot (TUN MTU + 512): dropped.
    pub udp_rx_truncated: u64,
    pub udp_tx: u64,
    pub udp_tx_errors: u64,
    /// Times an interface's kernel queue was full (late binding held
    /// the traffic in the node).
    pub udp_tx_blocked: u64,
    /// Datagrams dropped because too many waited for one interface.
    pub udp_tx_queue_full: u64,
    /// Local clients (ctl, metrics) refused: too many at once.
    pub clients_refused: u64,
    /// Unicast datagrams for a neighbor whose address is not known.
    pub unknown_neighbor: u64,
    /// Times an interface went down or lost its carrier (its neighbors
    /// went down with it).
    pub carrier_lost: u64,
    /// Link notifications from the kernel that did not decode.
    pub carrier_malformed: u64,
    /// Configured interfaces that do not exist now (a gauge, not a
    /// count: it goes down when one appears). braid opens each when it
    /// appears.
    #[serde(default)]
    pub interfaces_missing: u64,
    /// Times a configured interface appeared while the daemon ran (and
    /// was opened).
    #[serde(default)]
    pub interfaces_appeared: u64,
    /// Times an open interface went away (removed or renamed; its
    /// neighbors went down with it).
    #[serde(default)]
    pub interfaces_gone: u64,
    pub reloads: u64,
    pub reloads_refused: u64,
    pub ctl_requests: u64,
    pub ctl_bad_requests: u64,
}
