//! Packet captures of a simulated link, readable by tcpdump and Wireshark.
//!
//! Each braid datagram that crosses the link is written as an Ethernet
//! frame carrying IPv4 and UDP (port 6868 both ways) between two synthetic
//! addresses of the benchmarking range (198.19.255.x, x = node index mod
//! 254 + 1), timestamped with simulated time. The file (libpcap, µs
//! timestamps, link type 1) is written by smoltcp's `PcapSink` and the
//! headers through smoltcp's `wire` views (its checksum): braid's one pcap
//! writer and one IP checksum, which the tests' captures use too.

use smoltcp::phy::{PcapLinkType, PcapSink};
use smoltcp::wire::{IpProtocol, Ipv4Packet, UdpPacket};

/// The UDP port braid datagrams appear on in captures.
pub const BRAID_PORT: u16 = 6868;

/// The snap length a capture declares: no frame braid writes is longer.
const SNAP_LEN: u32 = 65_535;

/// A libpcap file of Ethernet frames, written in memory.
#[derive(Debug, Clone)]
pub struct PcapFile {
    bytes: Vec<u8>,
}

impl PcapSink for PcapFile {
    fn write(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
    }

    fn max_packet_size(&self) -> u32 {
        SNAP_LEN
    }
}

impl Default for PcapFile {
    fn default() -> Self {
        Self::new()
    }
}

impl PcapFile {
    /// An empty capture: the file header alone.
    pub fn new() -> Self {
        let mut file = PcapFile { bytes: Vec::new() };
        file.global_header(PcapLinkType::Ethernet);
        file
    }

    /// Appends `frame` (an Ethernet frame) seen at `micros`.
    pub fn frame(&mut self, micros: u64, frame: &[u8]) {
        let at = i64::try_from(micros).unwrap_or(i64::MAX);
        self.packet(smoltcp::time::Instant::from_micros(at), frame);
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// An IPv4 packet carrying UDP from `src` to `dst` between `ports` (time
/// to live 64, no UDP checksum: IPv4 allows it), its header checksum
/// filled; `ident` and `flags` (the flags and fragment offset word) as
/// given.
pub fn ipv4_udp(
    src: [u8; 4],
    dst: [u8; 4],
    ports: (u16, u16),
    ident: u16,
    flags: u16,
    body: &[u8],
) -> Vec<u8> {
    let udp_len = 8 + body.len();
    let mut packet = vec![0u8; 20 + udp_len];
    let mut udp = UdpPacket::new_unchecked(&mut packet[20..]);
    udp.set_src_port(ports.0);
    udp.set_dst_port(ports.1);
    udp.set_len(udp_len.min(65_535) as u16);
    udp.set_checksum(0);
    packet[28..].copy_from_slice(body);
    let mut ip = Ipv4Packet::new_unchecked(&mut packet);
    ip.set_version(4);
    ip.set_header_len(20);
    ip.set_total_len((20 + udp_len).min(65_535) as u16);
    ip.set_ident(ident);
    ip.set_hop_limit(64);
    ip.set_next_header(IpProtocol::Udp);
    ip.set_src_addr(src.into());
    ip.set_dst_addr(dst.into());
    // Every flag bit as given, the reserved one too (smoltcp sets only
    // DF and MF).
    packet[6..8].copy_from_slice(&flags.to_be_bytes());
    Ipv4Packet::new_unchecked(&mut packet).fill_checksum();
    packet
}

/// An Ethernet frame carrying the IPv4 `packet` from `src` to `dst`.
pub fn ethernet_ipv4(dst: [u8; 6], src: [u8; 6], packet: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(14 + packet.len());
    frame.extend_from_slice(&dst);
    frame.extend_from_slice(&src);
    frame.extend_from_slice(&0x0800u16.to_be_bytes());
    frame.extend_from_slice(packet);
    frame
}

/// A capture being written in memory.
#[derive(Debug, Clone)]
pub struct Capture {
    pub a: u32,
    pub b: u32,
    file: PcapFile,
    /// Records written.
    pub packets: u64,
}

fn addr(node: u32) -> [u8; 4] {
    [198, 19, 255, (node % 254 + 1) as u8]
}

/// A node's synthetic (locally administered) MAC address.
fn mac(node: u32) -> [u8; 6] {
    [0x02, 0, 0, 0, (node >> 8) as u8, node as u8]
}

impl Capture {
    /// A capture of the link between nodes `a` and `b` (both directions).
    pub fn new(a: u32, b: u32) -> Self {
        Capture {
            a,
            b,
            file: PcapFile::new(),
            packets: 0,
        }
    }

    /// Whether a datagram from `from` to `to` crosses this link.
    pub fn covers(&self, from: u32, to: u32) -> bool {
        (from, to) == (self.a, self.b) || (from, to) == (self.b, self.a)
    }

    /// Records a datagram from `from` to `to` at `micros` of simulated time.
    pub fn record(&mut self, micros: u64, from: u32, to: u32, datagram: &[u8]) {
        let ip = ipv4_udp(
            addr(from),
            addr(to),
            (BRAID_PORT, BRAID_PORT),
            0,
            0,
            datagram,
        );
        self.file
            .frame(micros, &ethernet_ipv4(mac(to), mac(from), &ip));
        self.packets += 1;
    }

    /// The capture file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.file.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ones' complement sum of `data` (zero over a header whose
    /// checksum is right), by smoltcp.
    fn checksum(data: &[u8]) -> u16 {
        !smoltcp::wire::checksum::data(data)
    }

    #[test]
    fn a_record_is_a_valid_ethernet_ipv4_udp_frame() {
        let mut c = Capture::new(3, 7);
        assert!(c.covers(7, 3) && c.covers(3, 7) && !c.covers(3, 8));
        c.record(1_500_000, 3, 7, b"\x10hello");
        let b = c.bytes();
        assert_eq!(&b[..4], &0xa1b2_c3d4u32.to_le_bytes());
        let rec = &b[24..];
        assert_eq!(u32::from_le_bytes(rec[0..4].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(rec[4..8].try_into().unwrap()), 500_000);
        let frame = &rec[16..];
        assert_eq!(&frame[12..14], &[0x08, 0x00]);
        let ip = &frame[14..34];
        assert_eq!(checksum(ip), 0, "the IP header checksum verifies");
        assert_eq!(&ip[12..16], &[198, 19, 255, 4]);
        assert_eq!(&frame[34..36], &BRAID_PORT.to_be_bytes());
        assert_eq!(&frame[42..], b"\x10hello");
    }
}
