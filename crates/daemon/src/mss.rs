//! TCP MSS clamping at the ingress: a connection's SYN (and SYN-ACK) that
//! announces a maximum segment size too big for braid's tunnel gets the
//! largest that fits, so that neither end sends segments the ingress
//! must refuse. Without it, hosts on 1,500-byte links announce 1,460, the
//! first full segments meet the 1,400-byte TUN, and the sender learns the
//! path's MTU only from the ICMP errors they raise: its whole first
//! window is sent again (seen in the lab: 7-14 segments resent about 0.4 s
//! into every transfer, and TCP in loss recovery before it had measured
//! anything). Routers in front of a tunnel do the same (Linux's
//! `TCPMSS --clamp-mss-to-pmtu`, nftables' `maxseg size set rt mtu`).
//!
//! Only the option's value changes, and the TCP checksum with it
//! (incrementally, RFC 1624, with smoltcp's ones' complement sums, the
//! one checksum braid uses: a checksum that was wrong stays wrong).
//! Packets that are not a TCP SYN, IPv6 packets with extension headers,
//! fragments, and anything malformed pass unchanged: parsing never
//! panics and never rejects (the ingress's own checks do that).

use smoltcp::wire::checksum;

/// What [`clamp`] did to a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clamp {
    /// Not a TCP SYN carrying an MSS above the limit: unchanged.
    Untouched,
    /// The MSS option was lowered from the first value to the second.
    Lowered(u16, u16),
}

/// IPv4 header: version and header length (bytes 0), total length (2),
/// fragment offset and flags (6), protocol (9).
const V4_PROTO: usize = 9;
const V4_FRAGMENT: usize = 6;
/// IPv6 header: next header (6), fixed length 40.
const V6_NEXT: usize = 6;
const V6_LEN: usize = 40;
/// TCP header: data offset (12, high nibble), flags (13), checksum (16).
const TCP_OFFSET: usize = 12;
const TCP_FLAGS: usize = 13;
const TCP_CHECKSUM: usize = 16;
const TCP_MIN: usize = 20;
const SYN: u8 = 0x02;
const PROTO_TCP: u8 = 6;
/// TCP options: end of list, no-operation, maximum segment size.
const OPT_END: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_MSS: u8 = 2;

/// The largest MSS whose segments fit a tunnel of `mtu` bytes (inner
/// packets), for IPv4 (`v4`) or IPv6: the MTU less the IP and TCP headers
/// without options, as TCP itself counts it.
pub fn max_mss(mtu: u16, v4: bool) -> u16 {
    mtu.saturating_sub(if v4 { 40 } else { 60 })
}

/// Lowers the MSS a TCP SYN in `packet` (an IPv4 or IPv6 packet, as read
/// from the TUN device) announces to what fits `mtu`. Never panics.
pub fn clamp(packet: &mut [u8], mtu: u16) -> Clamp {
    let Some((tcp_at, v4)) = tcp_start(packet) else {
        return Clamp::Untouched;
    };
    let tcp = &mut packet[tcp_at..];
    if tcp.len() < TCP_MIN || tcp[TCP_FLAGS] & SYN == 0 {
        return Clamp::Untouched;
    }
    let header_len = usize::from(tcp[TCP_OFFSET] >> 4) * 4;
    if header_len < TCP_MIN || header_len > tcp.len() {
        return Clamp::Untouched;
    }
    let Some(at) = mss_value_at(&tcp[TCP_MIN..header_len]).map(|i| TCP_MIN + i) else {
        return Clamp::Untouched;
    };
    let limit = max_mss(mtu, v4);
    let old = u16::from_be_bytes([tcp[at], tcp[at + 1]]);
    if old <= limit {
        return Clamp::Untouched;
    }
    // RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'), over the 16-bit words of
    // the segment the two bytes lie in (one when the value is aligned,
    // two when not), before and after.
    let (first, last) = (at & !1, (at + 3) & !1);
    let held = !u16::from_be_bytes([tcp[TCP_CHECKSUM], tcp[TCP_CHECKSUM + 1]]);
    let before = !checksum::data(&tcp[first..last]);
    tcp[at..at + 2].copy_from_slice(&limit.to_be_bytes());
    let after = checksum::data(&tcp[first..last]);
    let sum = !checksum::combine(&[held, before, after]);
    tcp[TCP_CHECKSUM..TCP_CHECKSUM + 2].copy_from_slice(&sum.to_be_bytes());
    Clamp::Lowered(old, limit)
}

/// Where the TCP header of an unfragmented IPv4 or IPv6 (no extension
/// headers) packet starts, and whether it is IPv4.
fn tcp_start(packet: &[u8]) -> Option<(usize, bool)> {
    match packet.first()? >> 4 {
        4 => {
            let ihl = usize::from(packet[0] & 0x0f) * 4;
            let fragment =
                u16::from_be_bytes([*packet.get(V4_FRAGMENT)?, *packet.get(V4_FRAGMENT + 1)?]);
            // More fragments, or an offset: not a whole first segment.
            let fragmented = fragment & 0x3fff != 0;
            (ihl >= 20 && *packet.get(V4_PROTO)? == PROTO_TCP && !fragmented).then_some((ihl, true))
        }
        6 => (*packet.get(V6_NEXT)? == PROTO_TCP && packet.len() >= V6_LEN)
            .then_some((V6_LEN, false)),
        _ => None,
    }
}

/// Where the MSS option's value is in `options` (the bytes after the
/// fixed TCP header), if one is there and well formed.
fn mss_value_at(options: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < options.len() {
        match options[i] {
            OPT_END => return None,
            OPT_NOP => i += 1,
            kind => {
                let len = usize::from(*options.get(i + 1)?);
                if len < 2 || i + len > options.len() {
                    return None;
                }
                if kind == OPT_MSS {
                    return (len == 4).then_some(i + 2);
                }
                i += len;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The ones' complement sum of `bytes` added to `acc` (smoltcp's).
    fn sum(bytes: &[u8], acc: u16) -> u16 {
        checksum::combine(&[acc, checksum::data(bytes)])
    }

    /// Whether the TCP checksum of an IPv4 `packet` (20-byte header) is right.
    fn tcp_checksum_ok(packet: &[u8]) -> bool {
        let tcp = &packet[20..];
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&packet[12..20]);
        pseudo.extend_from_slice(&[0, PROTO_TCP]);
        pseudo.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
        sum(tcp, sum(&pseudo, 0)) == 0xffff
    }

    /// An IPv4 TCP packet with `flags` and these options, its checksum set.
    fn v4_tcp(flags: u8, options: &[u8]) -> Vec<u8> {
        let tcp_len = TCP_MIN + options.len();
        let mut p = vec![0u8; 20 + tcp_len];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&((20 + tcp_len) as u16).to_be_bytes());
        p[6] = 0x40; // don't fragment
        p[8] = 64;
        p[V4_PROTO] = PROTO_TCP;
        p[12..16].copy_from_slice(&[198, 18, 1, 2]);
        p[16..20].copy_from_slice(&[198, 18, 4, 2]);
        let t = &mut p[20..];
        t[0..2].copy_from_slice(&39412u16.to_be_bytes());
        t[2..4].copy_from_slice(&5201u16.to_be_bytes());
        t[TCP_OFFSET] = ((tcp_len / 4) as u8) << 4;
        t[TCP_FLAGS] = flags;
        t[TCP_MIN..].copy_from_slice(options);
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&p[12..20]);
        pseudo.extend_from_slice(&[0, PROTO_TCP]);
        pseudo.extend_from_slice(&(tcp_len as u16).to_be_bytes());
        let c = !sum(&p[20..], sum(&pseudo, 0));
        p[20 + TCP_CHECKSUM..20 + TCP_CHECKSUM + 2].copy_from_slice(&c.to_be_bytes());
        p
    }

    const LINUX_SYN: [u8; 20] = [
        2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 10,
    ];

    #[test]
    fn a_syn_announcing_1460_gets_what_fits_the_tunnel() {
        let mut p = v4_tcp(SYN, &LINUX_SYN);
        assert!(tcp_checksum_ok(&p));
        assert_eq!(clamp(&mut p, 1400), Clamp::Lowered(1460, 1360));
        assert_eq!(&p[42..44], &1360u16.to_be_bytes());
        assert!(tcp_checksum_ok(&p), "checksum kept right");
        assert_eq!(clamp(&mut p, 1400), Clamp::Untouched, "already fits");
        // A SYN-ACK too; an ACK, or a SYN within the limit, not.
        let mut synack = v4_tcp(SYN | 0x10, &LINUX_SYN);
        assert_eq!(clamp(&mut synack, 1400), Clamp::Lowered(1460, 1360));
        let mut ack = v4_tcp(0x10, &LINUX_SYN);
        assert_eq!(clamp(&mut ack, 1400), Clamp::Untouched);
        let mut big = v4_tcp(SYN, &LINUX_SYN);
        assert_eq!(clamp(&mut big, 1500), Clamp::Untouched);
        assert_eq!(max_mss(1400, false), 1340);
    }

    #[test]
    fn an_ipv6_syn_gets_what_fits_with_the_longer_header() {
        let mut p = vec![0u8; V6_LEN + TCP_MIN + LINUX_SYN.len()];
        p[0] = 0x60;
        let tcp_len = (TCP_MIN + LINUX_SYN.len()) as u16;
        p[4..6].copy_from_slice(&tcp_len.to_be_bytes());
        p[V6_NEXT] = PROTO_TCP;
        p[7] = 64;
        p[8..24].copy_from_slice(&[0x20, 0x01, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x10]);
        p[24..40].copy_from_slice(&[0x20, 0x01, 0, 2, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0x10]);
        let t = &mut p[V6_LEN..];
        t[TCP_OFFSET] = ((tcp_len / 4) as u8) << 4;
        t[TCP_FLAGS] = SYN;
        t[TCP_MIN..].copy_from_slice(&LINUX_SYN);
        let pseudo = |p: &[u8]| {
            let mut v = p[8..40].to_vec();
            v.extend_from_slice(&u32::from(tcp_len).to_be_bytes());
            v.extend_from_slice(&[0, 0, 0, PROTO_TCP]);
            v
        };
        let c = !sum(&p[V6_LEN..], sum(&pseudo(&p), 0));
        p[V6_LEN + TCP_CHECKSUM..V6_LEN + TCP_CHECKSUM + 2].copy_from_slice(&c.to_be_bytes());
        assert_eq!(clamp(&mut p, 1400), Clamp::Lowered(1460, 1340));
        assert_eq!(
            sum(&p[V6_LEN..], sum(&pseudo(&p), 0)),
            0xffff,
            "checksum kept right"
        );
        // An extension header first: left alone.
        let mut ext = p.clone();
        ext[V6_NEXT] = 0;
        assert_eq!(clamp(&mut ext, 1300), Clamp::Untouched);
    }

    #[test]
    fn an_unaligned_mss_option_keeps_the_checksum_right() {
        let opts = [1, 2, 4, 0x05, 0xb4, 1, 1, 1];
        let mut p = v4_tcp(SYN, &opts);
        assert_eq!(clamp(&mut p, 1400), Clamp::Lowered(1460, 1360));
        assert!(tcp_checksum_ok(&p));
    }

    #[test]
    fn malformed_or_other_packets_pass_unchanged() {
        for opts in [
            &[2u8, 3, 5, 0xb4][..],           // MSS of the wrong length
            &[8, 40, 0, 0][..],               // an option longer than the header
            &[0, 2, 4, 5, 0xb4, 0, 0, 0][..], // after the end of the list
            &[1, 1, 1, 1][..],
        ] {
            let mut p = v4_tcp(SYN, opts);
            let before = p.clone();
            assert_eq!(clamp(&mut p, 1400), Clamp::Untouched, "{opts:?}");
            assert_eq!(p, before);
        }
        let mut fragment = v4_tcp(SYN, &LINUX_SYN);
        fragment[6] = 0x20; // more fragments
        assert_eq!(clamp(&mut fragment, 1400), Clamp::Untouched);
        let mut udp = v4_tcp(SYN, &LINUX_SYN);
        udp[V4_PROTO] = 17;
        assert_eq!(clamp(&mut udp, 1400), Clamp::Untouched);
        for junk in [&[][..], &[0x45][..], &[0x60, 0, 0, 0, 0, 0, 6][..]] {
            assert_eq!(clamp(&mut junk.to_vec(), 1400), Clamp::Untouched);
        }
    }

    proptest! {
        #[test]
        fn clamping_never_panics_and_keeps_a_checksum_right(
            opts in proptest::collection::vec(any::<u8>(), 0..10usize).prop_map(|mut v| {
                v.resize(v.len().div_ceil(4) * 4, 1);
                v
            }),
            mss in 1000u16..9000,
            at in 0usize..8,
            mtu in 576u16..9000,
        ) {
            let mut opts = opts;
            let at = at.min(opts.len());
            let mut mss_opt = vec![OPT_NOP; at];
            mss_opt.extend_from_slice(&[OPT_MSS, 4]);
            mss_opt.extend_from_slice(&mss.to_be_bytes());
            mss_opt.append(&mut opts);
            mss_opt.resize(mss_opt.len().div_ceil(4) * 4, OPT_NOP);
            let mut p = v4_tcp(SYN, &mss_opt);
            let result = clamp(&mut p, mtu);
            prop_assert!(tcp_checksum_ok(&p));
            let limit = max_mss(mtu, true);
            match result {
                Clamp::Lowered(from, to) => {
                    prop_assert_eq!(from, mss);
                    prop_assert_eq!(to, limit);
                    prop_assert!(mss > limit);
                }
                Clamp::Untouched => prop_assert!(mss <= limit),
            }
        }

        #[test]
        fn garbage_never_panics(mut bytes in proptest::collection::vec(any::<u8>(), 0..80), mtu in 0u16..u16::MAX) {
            let _ = clamp(&mut bytes, mtu);
        }
    }
}
