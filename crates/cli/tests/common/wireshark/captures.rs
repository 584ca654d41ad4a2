//! Packet captures in the dissector test: libpcap files of frames it
//! writes (braid's own pcap writer, `braid_sim::pcap`), the IP packets
//! inside them, and the UDP datagrams on braid's port read back out of
//! any capture (the simulator's, dumpcap's).

use std::net::{IpAddr, Ipv6Addr};

use braid_sim::pcap::{ethernet_ipv4, ipv4_udp, PcapFile};
use smoltcp::wire::{checksum, UdpPacket};

/// braid's UDP port (the daemon's default, the simulator's captures').
pub const PORT: u16 = 6868;

/// A libpcap file of Ethernet frames the test writes (frame n at n
/// seconds), from 02:00:00:00:00:01 to 02:00:00:00:00:02.
pub struct PcapWriter {
    file: PcapFile,
    frames: usize,
}

impl PcapWriter {
    pub fn new() -> Self {
        PcapWriter {
            file: PcapFile::new(),
            frames: 0,
        }
    }

    /// An IPv4 packet in an Ethernet frame; returns its frame number.
    pub fn ipv4(&mut self, packet: &[u8]) -> usize {
        self.frames += 1;
        let frame = ethernet_ipv4([0x02, 0, 0, 0, 0, 2], [0x02, 0, 0, 0, 0, 1], packet);
        self.file.frame(self.frames as u64 * 1_000_000, &frame);
        self.frames
    }

    /// A braid datagram between two underlay addresses, from and to `port`.
    pub fn braid(&mut self, port: u16, datagram: &[u8]) -> usize {
        self.ipv4(&ipv4_udp(
            [198, 18, 0, 1],
            [198, 18, 0, 2],
            (port, port),
            0,
            0,
            datagram,
        ))
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.file.bytes()
    }
}

/// An IPv6 packet carrying UDP (checksum computed: IPv6 needs one).
pub fn ipv6_udp(src: Ipv6Addr, dst: Ipv6Addr, ports: (u16, u16), body: &[u8]) -> Vec<u8> {
    let len = (8 + body.len()) as u16;
    let mut p = vec![0u8; 40 + usize::from(len)];
    p[0] = 0x60;
    p[4..6].copy_from_slice(&len.to_be_bytes());
    p[6] = 17;
    p[7] = 64;
    p[8..24].copy_from_slice(&src.octets());
    p[24..40].copy_from_slice(&dst.octets());
    let mut udp = UdpPacket::new_unchecked(&mut p[40..]);
    udp.set_src_port(ports.0);
    udp.set_dst_port(ports.1);
    udp.set_len(len);
    udp.set_checksum(0);
    p[48..].copy_from_slice(body);
    // Over the pseudo-header and the datagram, by smoltcp's checksum (its
    // IPv6 pseudo-header wants a feature braid does not build smoltcp with).
    let sum = !checksum::combine(&[
        checksum::data(&src.octets()),
        checksum::data(&dst.octets()),
        checksum::data(&u32::from(len).to_be_bytes()),
        checksum::data(&[0, 0, 0, 17]),
        checksum::data(&p[40..]),
    ]);
    p[46..48].copy_from_slice(&sum.to_be_bytes());
    p
}

/// A UDP datagram on braid's port, as a capture holds it.
pub struct Datagram {
    /// Its frame's number (from 1).
    pub frame: usize,
    pub src: IpAddr,
    /// Where the datagram starts in the frame.
    pub offset: usize,
    pub bytes: Vec<u8>,
}

/// The UDP datagrams to or from `port` in a libpcap file of Ethernet,
/// Linux cooked (v1, v2) or raw IP frames.
pub fn datagrams(pcap: &[u8], port: u16) -> Vec<Datagram> {
    let magic = u32::from_le_bytes(pcap[0..4].try_into().unwrap());
    assert!(
        magic == 0xa1b2_c3d4 || magic == 0xa1b2_3c4d,
        "not a little-endian libpcap file: {magic:#x}"
    );
    let linktype = u32::from_le_bytes(pcap[20..24].try_into().unwrap());
    let mut out = Vec::new();
    let mut at = 24;
    let mut frame = 0;
    while at + 16 <= pcap.len() {
        let caplen = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        let origlen = u32::from_le_bytes(pcap[at + 12..at + 16].try_into().unwrap()) as usize;
        let data = &pcap[at + 16..at + 16 + caplen];
        at += 16 + caplen;
        frame += 1;
        assert_eq!(caplen, origlen, "frame {frame} was cut by the snap length");
        let (ethertype, l3) = match linktype {
            1 => (u16::from_be_bytes([data[12], data[13]]), 14),
            113 => (u16::from_be_bytes([data[14], data[15]]), 16),
            276 => (u16::from_be_bytes([data[0], data[1]]), 20),
            101 => (if data[0] >> 4 == 6 { 0x86dd } else { 0x0800 }, 0),
            other => panic!("link type {other} not read here"),
        };
        let ip = &data[l3..];
        let (src, udp) = match ethertype {
            0x0800 if ip[9] == 17 && u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff == 0 => {
                let ihl = usize::from(ip[0] & 0x0f) * 4;
                let src: [u8; 4] = ip[12..16].try_into().unwrap();
                (IpAddr::from(src), l3 + ihl)
            }
            0x86dd if ip[6] == 17 => {
                let src: [u8; 16] = ip[8..24].try_into().unwrap();
                (IpAddr::from(src), l3 + 40)
            }
            _ => continue,
        };
        let u = &data[udp..];
        let (sport, dport) = (
            u16::from_be_bytes([u[0], u[1]]),
            u16::from_be_bytes([u[2], u[3]]),
        );
        let len = usize::from(u16::from_be_bytes([u[4], u[5]]));
        if sport != port && dport != port {
            continue;
        }
        out.push(Datagram {
            frame,
            src,
            offset: udp + 8,
            bytes: u[8..len].to_vec(),
        });
    }
    out
}
