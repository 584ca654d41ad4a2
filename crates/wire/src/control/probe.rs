//! Link probes (types 1 and 2): small probes measure ACK-sized delivery,
//! big probes MTU-sized delivery; each carries the sender's reports on
//! how well it hears its neighbors' probes.

use super::header::{emit_control, expect_type, ControlHeader, ControlMessage, CONTROL_HEADER_LEN};
use super::offset;
use crate::{MessageType, NodeId, Reader, WireError};

const PROBE_FIXED_LEN: usize = offset::probe::REPORTS;
const PROBE_REPORT_LEN: usize = offset::probe_report::LEN;

/// Small probes measure ACK-sized delivery; big probes measure MTU-sized
/// delivery, one stream per bit-rate (SrcRR section 4.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    /// A small (ACK-sized) probe.
    Small,
    /// A big (MTU-sized) probe; one stream per bit-rate.
    Big,
}

impl ProbeKind {
    /// The message type that carries probes of this kind.
    pub fn message_type(self) -> MessageType {
        match self {
            ProbeKind::Small => MessageType::ProbeSmall,
            ProbeKind::Big => MessageType::ProbeBig,
        }
    }
}

/// The `rate` of the small-probe stream in reports.
pub const RATE_SMALL: u16 = 0;
/// The `rate` of big probes sent at whatever rate the radio picks (real
/// radios, whose driver reports the link's throughput instead).
pub const RATE_UNSPECIFIED: u16 = u16::MAX;

/// One line of a prober's report: how well it hears `neighbor`'s probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProbeReport {
    /// The neighbor whose probes this line is about.
    pub neighbor: NodeId,
    /// Which probe stream: [`RATE_SMALL`] for small probes, else the big
    /// probes' bit-rate in units of 100 kbit/s (or [`RATE_UNSPECIFIED`]).
    pub rate: u16,
    /// Delivery ratio of that stream over the window, scaled to 0..=255.
    pub ratio: u8,
}

/// A parsed probe. Its reports are decoded on demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe<'a> {
    /// Small or big, from the header's message type.
    pub kind: ProbeKind,
    /// Per (sender, kind, rate) sequence number: gaps are losses.
    pub seq: u32,
    /// The sender's mean probe interval for this stream, in milliseconds.
    pub interval_ms: u16,
    /// Bit-rate this probe was sent at, 100 kbit/s units; [`RATE_SMALL`]
    /// for small probes, [`RATE_UNSPECIFIED`] when the radio chose.
    pub rate: u16,
    /// A 16-bit digest of the sender's link-state database (which
    /// advertisement, by origin and sequence number, it holds): a neighbor
    /// whose own digest stays different knows that flooding lost something
    /// between them, and floods again what changed since they agreed.
    pub digest: u16,
    reports: &'a [u8],
}

impl<'a> Probe<'a> {
    /// Decodes a probe body (the header says small or big).
    pub fn parse(msg: &ControlMessage<'a>) -> Result<Self, WireError> {
        expect_type(
            &msg.header,
            &[MessageType::ProbeSmall, MessageType::ProbeBig],
        )?;
        let kind = if msg.header.msg_type == MessageType::ProbeSmall {
            ProbeKind::Small
        } else {
            ProbeKind::Big
        };
        let mut r = Reader::new(msg.body);
        let seq = r.u32()?;
        let interval_ms = r.u16()?;
        let rate = r.u16()?;
        let count = r.u16()? as usize;
        let digest = r.u16()?;
        let reports = r.take(count * PROBE_REPORT_LEN)?;
        // Whatever follows is padding that makes a big probe big.
        Ok(Probe {
            kind,
            seq,
            interval_ms,
            rate,
            digest,
            reports,
        })
    }

    /// How many reports the probe carries.
    pub fn report_count(&self) -> usize {
        self.reports.len() / PROBE_REPORT_LEN
    }

    /// The probe's reports, decoded in order.
    pub fn reports(&self) -> impl Iterator<Item = ProbeReport> + 'a {
        use offset::probe_report::*;
        self.reports
            .chunks_exact(PROBE_REPORT_LEN)
            .map(|b| ProbeReport {
                neighbor: NodeId(u16::from_be_bytes([b[NEIGHBOR], b[NEIGHBOR + 1]])),
                rate: u16::from_be_bytes([b[RATE], b[RATE + 1]]),
                ratio: b[RATIO],
            })
    }

    /// Bytes a probe with `reports` reports takes, with a MAC of
    /// `mac_len` bytes, padded to at least `pad_to` (what [`Self::emit`]
    /// writes).
    pub const fn encoded_len(reports: usize, pad_to: usize, mac_len: usize) -> usize {
        let unpadded = CONTROL_HEADER_LEN + PROBE_FIXED_LEN + reports * PROBE_REPORT_LEN + mac_len;
        if unpadded > pad_to {
            unpadded
        } else {
            pad_to
        }
    }

    /// Writes a probe. The body is padded with zeros so that the whole
    /// message is at least `pad_to` bytes long (big probes).
    #[allow(clippy::too_many_arguments)]
    pub fn emit(
        header: &ControlHeader,
        seq: u32,
        interval_ms: u16,
        rate: u16,
        digest: u16,
        reports: &[ProbeReport],
        pad_to: usize,
        out: &mut [u8],
    ) -> Result<usize, WireError> {
        expect_type(header, &[MessageType::ProbeSmall, MessageType::ProbeBig])?;
        let count = u16::try_from(reports.len()).map_err(|_| WireError::TooLarge {
            field: "probe reports",
            value: reports.len(),
        })?;
        let content = PROBE_FIXED_LEN + reports.len() * PROBE_REPORT_LEN;
        let unpadded = CONTROL_HEADER_LEN + content + header.mac_len as usize;
        let body_len = content + pad_to.saturating_sub(unpadded);
        emit_control(header, body_len, out, |w| {
            w.u32(seq);
            w.u16(interval_ms);
            w.u16(rate);
            w.u16(count);
            w.u16(digest);
            for rep in reports {
                w.u16(rep.neighbor.0);
                w.u16(rep.rate);
                w.u8(rep.ratio);
                w.u8(0);
            }
            w.zeros(body_len - content);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::header::test_header as hdr;
    use crate::control::ControlFlags;

    /// Every byte of a probe, emitted into a buffer pre-filled with a
    /// pattern (a byte the emitter forgets shows), and the named offsets
    /// pointing at their fields.
    #[test]
    fn probe_known_bytes() {
        let mut buf = [0xa5u8; 64];
        let reports = [ProbeReport {
            neighbor: NodeId(3),
            rate: 110,
            ratio: 200,
        }];
        let n = Probe::emit(
            &hdr(MessageType::ProbeSmall),
            0x0102_0304,
            1000,
            0,
            0xbeef,
            &reports,
            0,
            &mut buf,
        )
        .unwrap();
        assert_eq!(n, Probe::encoded_len(1, 0, 0));
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            &[0x11, 0, 0, 18, 0, 7, 0, 0, 0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0, 42][..],
            &[1, 2, 3, 4, 0x03, 0xe8, 0, 0, 0, 1, 0xbe, 0xef],
            &[0, 3, 0, 110, 200, 0],
        ]
        .concat();
        assert_eq!(&buf[..n], &expected[..]);
        let body = &buf[offset::header::BODY..n];
        assert_eq!(body[offset::probe::DIGEST..][..2], [0xbe, 0xef]);
        let rep = &body[offset::probe::REPORTS..];
        assert_eq!(rep[offset::probe_report::RATIO], 200);
    }

    #[test]
    fn probe_round_trip_with_padding() {
        let reports = [
            ProbeReport {
                neighbor: NodeId(3),
                rate: 0,
                ratio: 255,
            },
            ProbeReport {
                neighbor: NodeId(3),
                rate: 110,
                ratio: 128,
            },
        ];
        let mut buf = [0u8; 1500];
        let n = Probe::emit(
            &hdr(MessageType::ProbeBig),
            9,
            1000,
            110,
            0xbeef,
            &reports,
            1400,
            &mut buf,
        )
        .unwrap();
        assert_eq!(n, 1400);
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        assert_eq!(msg.header, hdr(MessageType::ProbeBig));
        let p = Probe::parse(&msg).unwrap();
        assert_eq!(
            (p.kind, p.seq, p.interval_ms, p.rate, p.digest),
            (ProbeKind::Big, 9, 1000, 110, 0xbeef)
        );
        assert_eq!(p.reports().collect::<Vec<_>>(), reports);
        // Without padding the small probe is as short as it can be.
        let n = Probe::emit(
            &hdr(MessageType::ProbeSmall),
            1,
            1000,
            0,
            0,
            &[],
            0,
            &mut buf,
        )
        .unwrap();
        assert_eq!(n, CONTROL_HEADER_LEN + PROBE_FIXED_LEN);
        // Flags this version does not define are ignored on receipt.
        buf[1] = 0xfe;
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        assert_eq!(msg.header.flags, ControlFlags::empty());
    }

    #[test]
    fn mac_trailer_is_reserved_and_covered_range_excludes_it() {
        let mut h = hdr(MessageType::ProbeSmall);
        h.key_id = 3;
        h.mac_len = 16;
        let mut buf = [0u8; 128];
        let n = Probe::emit(&h, 1, 500, 0, 0, &[], 0, &mut buf).unwrap();
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        assert_eq!(msg.mac.len(), 16);
        assert_eq!(msg.authenticated.len(), n - 16);
        assert_eq!(msg.header.key_id, 3);
    }
}
