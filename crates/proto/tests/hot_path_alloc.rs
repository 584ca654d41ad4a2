//! The data path allocates nothing once warm: packets entering at one
//! node, copied over two disjoint paths (mirror:2), forwarded by transit
//! nodes, de-duplicated and delivered at the far node, with a driver that
//! gives its buffers back (`Node::recycle`). Allocations are counted by a
//! global allocator, on this test's thread only.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use braid_proto::redundancy::Mode;
use common::mesh::{Driver, Mesh};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}

/// Links without loss or queue; each node's delivered packets taken at
/// once and every buffer given back to the node it came from.
const RECYCLING: Driver = Driver {
    lossy: false,
    record_control: false,
    take_deliveries: true,
};

/// 1 reaches 4 by 2 or by 3.
fn mesh(mode: Mode) -> Mesh {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let nodes = common::nodes(4, mode, 0, &mut rng);
    let mut net = Mesh::new(nodes, rng, RECYCLING);
    for (a, b) in [(0, 1), (1, 3), (0, 2), (2, 3)] {
        net.link(a, b, 0.0);
    }
    net
}

/// UDP packets `first..first + count` from 198.18.1.10 to 198.18.4.9,
/// each moved through the mesh before the next (time stands still: no
/// timers; the numbers differ, or the egress would take a packet sent
/// again for a copy that entered the mesh twice).
fn send(net: &mut Mesh, first: u32, count: u32, packet: &mut [u8]) {
    for i in first..first + count {
        packet[28..32].copy_from_slice(&i.to_be_bytes());
        let a0 = allocations();
        net.nodes[0].send(net.now, packet);
        let a1 = allocations();
        net.flush();
        if std::env::var_os("ALLOC_DEBUG").is_some() && i == first + count - 1 {
            eprintln!("send {} flush {}", a1 - a0, allocations() - a1);
        }
    }
}

fn udp_packet() -> Vec<u8> {
    let mut p = vec![0u8; 1200];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&1200u16.to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&[198, 18, 1, 10]);
    p[16..20].copy_from_slice(&[198, 18, 4, 9]);
    p[20..22].copy_from_slice(&4000u16.to_be_bytes());
    p[22..24].copy_from_slice(&5000u16.to_be_bytes());
    p
}

#[test]
fn forwarding_mirrored_packets_allocates_nothing_once_warm() {
    for mode in [Mode::Single, Mode::Mirror(2)] {
        let mut net = mesh(mode);
        net.run_for(Duration::from_secs(30));
        let mut packet = udp_packet();
        send(&mut net, 0, 2_000, &mut packet);
        let (before, delivered) = (allocations(), net.delivered);
        send(&mut net, 2_000, 10_000, &mut packet);
        let (spent, got) = (allocations() - before, net.delivered - delivered);
        eprintln!("{mode}: {spent} allocations for {got} packets delivered");
        assert_eq!(got, 10_000, "{mode}: every packet arrived once");
        assert!(spent < 10, "{mode}: {spent} allocations for 10,000 packets");
    }
}
