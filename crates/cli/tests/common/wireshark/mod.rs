//! What the Wireshark dissector's test (`tests/dissector.rs`) stands on,
//! one part a file:
//!
//! | module | holds |
//! | --- | --- |
//! | [`tshark`] | running tshark with the dissector, and other tools, bounded in time, in the test's scratch directory |
//! | [`pdml`] | tshark's PDML read into a tree of items |
//! | [`dissection`] | what the dissector showed, judged: uncovered bytes, expert infos |
//! | [`captures`] | pcap files the test writes (braid's one pcap writer), IP packets, braid's datagrams read back |
//! | [`codec_fields`] | what braid's codec says each captured message's fields are |
//! | [`capture_check`] | a capture checked datagram by datagram against the codec |
//! | [`codec_messages`] | the codec's well-formed and malformed messages, and how braid takes each |
//! | [`lab_capture`] | a lab run captured by dumpcap in a router's namespace |
#![allow(dead_code)] // the dissector test's: the other test binaries include common/ too

pub mod capture_check;
pub mod captures;
pub mod codec_fields;
pub mod codec_messages;
pub mod dissection;
pub mod lab_capture;
pub mod pdml;
pub mod tshark;
