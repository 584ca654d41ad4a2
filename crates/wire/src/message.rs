//! Any braid message, parsed from bytes that arrive from the network: the
//! one entry point that dispatches on the type byte.

use crate::control::{
    Challenge, ControlMessage, Echo, LsaBundle, PathReport, Probe, RepairRequest, SessionCheck,
};
use crate::data::{DataHeader, DataPacket};
use crate::{peek, MessageType, WireError};

/// Any braid message, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message<'a> {
    /// A data packet.
    Data(DataPacket<'a>),
    /// A small or big link probe, with the control message that carries it.
    Probe(ControlMessage<'a>, Probe<'a>),
    /// An LSA message: one or more LSAs.
    Lsa(ControlMessage<'a>, LsaBundle<'a>),
    /// An egress's per-path receive counts for one session.
    PathReport(ControlMessage<'a>, PathReport<'a>),
    /// A challenge request or reply.
    Challenge(ControlMessage<'a>, Challenge),
    /// An echo request or reply.
    Echo(ControlMessage<'a>, Echo),
    /// A session check request or proof.
    SessionCheck(ControlMessage<'a>, SessionCheck),
    /// A repair request.
    RepairRequest(ControlMessage<'a>, RepairRequest),
}

/// Parses whatever message `buf` holds. The one entry point for bytes that
/// arrive from the network (and the fuzz target's).
pub fn parse_any(buf: &[u8]) -> Result<Message<'_>, WireError> {
    match peek(buf)? {
        MessageType::Data => Ok(Message::Data(DataHeader::parse(buf)?)),
        MessageType::ProbeSmall | MessageType::ProbeBig => {
            let msg = ControlMessage::parse(buf)?;
            Ok(Message::Probe(msg, Probe::parse(&msg)?))
        }
        MessageType::Lsa => {
            let msg = ControlMessage::parse(buf)?;
            Ok(Message::Lsa(msg, LsaBundle::parse(&msg)?))
        }
        MessageType::PathReport => {
            let msg = ControlMessage::parse(buf)?;
            Ok(Message::PathReport(msg, PathReport::parse(&msg)?))
        }
        MessageType::Challenge => {
            let msg = ControlMessage::parse(buf)?;
            Ok(Message::Challenge(msg, Challenge::parse(&msg)?))
        }
        MessageType::Echo => {
            let msg = ControlMessage::parse(buf)?;
            Ok(Message::Echo(msg, Echo::parse(&msg)?))
        }
        MessageType::SessionCheck => {
            let msg = ControlMessage::parse(buf)?;
            Ok(Message::SessionCheck(msg, SessionCheck::parse(&msg)?))
        }
        MessageType::RepairRequest => {
            let msg = ControlMessage::parse(buf)?;
            Ok(Message::RepairRequest(msg, RepairRequest::parse(&msg)?))
        }
    }
}
