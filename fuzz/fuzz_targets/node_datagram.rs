//! Any datagrams fed to a whole node with authentication on, from any
//! claimed neighbor: never a panic, every refusal counted, tables within
//! their bounds. Each datagram's first byte says who the driver thinks
//! sent it (0: nobody known) and whether to sign it with the network's
//! key first (bit 7), so that the fuzzer also reaches what lies behind
//! the MAC check (replay windows, challenges, flooding, forwarding).
#![no_main]

use braid_proto::auth::{AuthConfig, AuthKey, Authenticator};
use braid_proto::node::{Interface, Node, NodeConfig};
use braid_proto::time::Instant;
use braid_wire::NodeId;
use braid_fuzz::Counter;
use libfuzzer_sys::fuzz_target;

const SECRET: &[u8] = b"the fuzzed network's key, 32 B!!";

fuzz_target!(|data: &[u8]| {
    let mut rng = Counter(1);
    let auth = AuthConfig {
        keys: vec![AuthKey::new(1, SECRET).unwrap()],
    };
    let mut config = NodeConfig::default();
    config.control.auth = auth.clone();
    let max_origins = config.control.lsdb.max_origins;
    let mut node = Node::new(NodeId(1), config, Instant::ZERO, &mut rng).unwrap();
    let signer = Authenticator::new(NodeId(2), auth, 7).unwrap();
    let mut now = Instant::ZERO;
    for chunk in data.split(|&b| b == 0xfe) {
        let Some((&first, rest)) = chunk.split_first() else {
            continue;
        };
        now = Instant(now.0 + 100_000);
        let from = match first & 0x0f {
            0 => None,
            n => Some(NodeId(n as u16)),
        };
        let mut bytes = rest.to_vec();
        if first & 0x80 != 0 {
            signer.sign(&mut bytes);
        }
        node.handle_datagram(now, Interface((first >> 4 & 0x7) as u16), from, &bytes);
        node.handle_timeout(now, &mut rng);
        while node.poll_transmit(now).is_some() {}
        while node.poll_deliver().is_some() {}
        while node.poll_event().is_some() {}
    }
    assert!(node.control().lsdb().len() <= max_origins);
    assert!(node.control().auth().verified() <= braid_proto::auth::MAX_PEERS);
});
