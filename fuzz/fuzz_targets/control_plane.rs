//! Any datagrams fed to a control plane: never a panic, every refusal
//! counted, tables within their bounds.
#![no_main]

use braid_proto::control::{ControlConfig, ControlPlane};
use braid_proto::time::Instant;
use braid_wire::NodeId;
use braid_fuzz::Counter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut rng = Counter(1);
    let config = ControlConfig::default();
    let max_origins = config.lsdb.max_origins;
    let mut cp = ControlPlane::new(NodeId(1), config, Instant::ZERO, &mut rng).unwrap();
    let mut buf = vec![0u8; 4096];
    let mut now = Instant::ZERO;
    // Datagrams separated by 0xfe; each advances time by a second.
    for chunk in data.split(|&b| b == 0xfe) {
        now = Instant(now.0 + 1_000_000);
        let _ = cp.handle(now, chunk);
        cp.handle_timeout(now, &mut rng);
        while cp.poll_transmit(now, &mut buf).is_some() {}
    }
    assert!(cp.lsdb().len() <= max_origins);
});
