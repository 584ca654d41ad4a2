//! Packet captures of a simulated link, readable by tcpdump and Wireshark.
//!
//! Each braid datagram that crosses the link is written as an Ethernet
//! frame carrying IPv4 and UDP (port 6868 both ways) between two synthetic
//! addresses of the benchmarking range (198.19.255.x, x = node index mod
//! 254 + 1), timestamped with simulated time. The format (libpcap, µs
//! timestamps, link type 1) is small enough to write here; the `pcap-file`
//! crate was weighed and would add a dependency for 40 lines.

/// The UDP port braid datagrams appear on in captures.
pub const BRAID_PORT: u16 = 6868;

/// A capture being written in memory.
#[derive(Debug, Clone)]
pub struct Capture {
    pub a: u32,
    pub b: u32,
    bytes: Vec<u8>,
    /// Records written.
    pub packets: u64,
}

fn addr(node: u32) -> [u8; 4] {
    [198, 19, 255, (node % 254 + 1) as u8]
}

fn checksum(data: &[u8]) -> u16 {
    let mut sum = 0u32;
    for c in data.chunks(2) {
        sum += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

impl Capture {
    /// A capture of the link between nodes `a` and `b` (both directions).
    pub fn new(a: u32, b: u32) -> Self {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&4u16.to_le_bytes());
        bytes.extend_from_slice(&0i32.to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes.extend_from_slice(&65_535u32.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes()); // Ethernet
        Capture {
            a,
            b,
            bytes,
            packets: 0,
        }
    }

    /// Whether a datagram from `from` to `to` crosses this link.
    pub fn covers(&self, from: u32, to: u32) -> bool {
        (from, to) == (self.a, self.b) || (from, to) == (self.b, self.a)
    }

    /// Records a datagram from `from` to `to` at `micros` of simulated time.
    pub fn record(&mut self, micros: u64, from: u32, to: u32, datagram: &[u8]) {
        let udp_len = 8 + datagram.len();
        let ip_len = 20 + udp_len;
        let mut frame = Vec::with_capacity(14 + ip_len);
        frame.extend_from_slice(&[0x02, 0, 0, 0, (to >> 8) as u8, to as u8]);
        frame.extend_from_slice(&[0x02, 0, 0, 0, (from >> 8) as u8, from as u8]);
        frame.extend_from_slice(&0x0800u16.to_be_bytes());
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&(ip_len.min(65_535) as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&addr(from));
        ip[16..20].copy_from_slice(&addr(to));
        let sum = checksum(&ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        frame.extend_from_slice(&ip);
        frame.extend_from_slice(&BRAID_PORT.to_be_bytes());
        frame.extend_from_slice(&BRAID_PORT.to_be_bytes());
        frame.extend_from_slice(&(udp_len.min(65_535) as u16).to_be_bytes());
        frame.extend_from_slice(&0u16.to_be_bytes()); // no UDP checksum (IPv4 allows it)
        frame.extend_from_slice(datagram);
        self.bytes
            .extend_from_slice(&((micros / 1_000_000) as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&((micros % 1_000_000) as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&(frame.len() as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&(frame.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(&frame);
        self.packets += 1;
    }

    /// The capture file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
