//! Parse + emit of a data header (the per-packet cost every hop pays), and
//! the in-place forwarding step of a transit node.

use std::hint::black_box;

use braid_wire::data::forward_in_place;
use braid_wire::{DataFlags, DataHeader, Group, NodeId, RedundancyMode};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn header() -> DataHeader {
    DataHeader {
        flags: DataFlags::empty(),
        mode: RedundancyMode::Parity,
        path: 1,
        route_ptr: 0,
        ingress: NodeId(1),
        egress: NodeId(9),
        seq: 123_456,
        group: Group {
            data: 3,
            repair: 1,
            index: 2,
            depth: 1,
        },
        hop_limit: 32,
        class: 0,
        epoch: 7,
    }
}

fn wire(c: &mut Criterion) {
    let route = [NodeId(2), NodeId(3), NodeId(4), NodeId(5)]; // a 5-hop route
    let mut packet = vec![0u8; 1400 + DataHeader::encoded_len(route.len())];
    let mut group = c.benchmark_group("data_header");
    group.throughput(Throughput::Elements(1));
    group.bench_function("parse_emit_5hop", |b| {
        let n = header().emit(&route, &mut packet).unwrap();
        let _ = n;
        let mut out = [0u8; 64];
        b.iter(|| {
            let pkt = DataHeader::parse(black_box(&packet)).unwrap();
            let mut hops = [NodeId(0); 15];
            let len = pkt.route.len();
            for (slot, hop) in hops.iter_mut().zip(pkt.route.iter()) {
                *slot = hop;
            }
            black_box(pkt.header.emit(&hops[..len], &mut out).unwrap())
        })
    });
    group.bench_function("forward_in_place", |b| {
        b.iter(|| {
            header().emit(&route, &mut packet).unwrap();
            black_box(forward_in_place(black_box(&mut packet), NodeId(1)).unwrap())
        })
    });
    group.finish();
}

criterion_group!(benches, wire);
criterion_main!(benches);
