//! Any bytes: the parser returns a value or an error, never panics; a
//! parsed data header re-emits to bytes that parse to the same value
//! (reserved bits are ignored on receipt and sent as zero, so the bytes
//! themselves need not match).
#![no_main]

use braid_wire::data::forward_in_place;
use braid_wire::{parse_any, DataHeader, Message, NodeId};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Message::Data(pkt)) = parse_any(data) {
        let route: Vec<NodeId> = pkt.route.iter().collect();
        let mut out = vec![0u8; DataHeader::encoded_len(63)];
        let n = pkt.header.emit(&route, &mut out).expect("a parsed header re-emits");
        let again = DataHeader::parse(&out[..n]).expect("re-emitted bytes parse");
        assert_eq!(again.header, pkt.header);
        assert!(again.route.iter().eq(pkt.route.iter()));
    }
    let mut copy = data.to_vec();
    let _ = forward_in_place(&mut copy, NodeId(1));
});
