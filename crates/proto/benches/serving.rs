//! What choosing a user packet's egress costs a router whose database
//! holds 1,000 origins: the origins that serve its destination best
//! (`Lsdb::best_origins`), looked up in the index built when the database
//! changed, beside the scan of every record it replaced (kept as
//! `best_origins_by_scan`), and what building the index once after a
//! change costs. Figures go in docs/performance.md.

use std::hint::black_box;

use braid_proto::lsdb::{Lsdb, LsdbConfig};
use braid_proto::time::Instant;
use braid_wire::{ControlHeader, ControlMessage, Lsa, LsaLink, MessageType, NodeId, Prefix};
use criterion::{criterion_group, criterion_main, Criterion};

const ORIGINS: u16 = 1000;

/// Origin `o`'s advertisement: links to the four nearest ids either way
/// round a ring (every link two-way), its /24 (198.18.0.0/15 and
/// 198.19.0.0/16 spread over them) with two clients in it, and a default
/// route on every hundredth (the gateways).
fn install(db: &mut Lsdb, o: u16, seq: u32, extra: &[Prefix]) {
    let links: Vec<LsaLink> = [1u16, 2, ORIGINS - 1, ORIGINS - 2]
        .iter()
        .map(|d| LsaLink {
            neighbor: NodeId((o - 1 + d) % ORIGINS + 1),
            link_id: 0,
            metric_out: 1000,
            metric_in: 1000,
        })
        .collect();
    let [a, b] = (o).to_be_bytes();
    let mut prefixes = vec![
        Prefix::V4 {
            addr: [198, 18 + a / 4, b, 0],
            len: 24,
        },
        Prefix::Client4 {
            addr: [198, 18 + a / 4, b, 7],
            quality: 200,
        },
        Prefix::Client4 {
            addr: [198, 18 + a / 4, b, 8],
            quality: 180,
        },
    ];
    if o.is_multiple_of(100) {
        prefixes.push(Prefix::V4 {
            addr: [0; 4],
            len: 0,
        });
    }
    prefixes.extend_from_slice(extra);
    let header = ControlHeader::new(MessageType::Lsa, NodeId(o));
    let mut buf = vec![0u8; 4096];
    let n = Lsa::emit(&header, NodeId(o), 0, seq, &links, &prefixes, &mut buf).unwrap();
    let msg = ControlMessage::parse(&buf[..n]).unwrap();
    db.install(Instant::ZERO, &Lsa::parse(&msg).unwrap());
}

fn destinations() -> Vec<[u8; 16]> {
    // An address in a /24, a client, an address only the default covers.
    [[198, 19, 0x20, 9], [198, 18, 200, 7], [203, 0, 113, 5]]
        .iter()
        .map(|a| {
            let mut d = [0u8; 16];
            d[..4].copy_from_slice(a);
            d
        })
        .collect()
}

fn serving(c: &mut Criterion) {
    let mut db = Lsdb::new(LsdbConfig::default());
    for o in 1..=ORIGINS {
        install(&mut db, o, 1, &[]);
    }
    let me = NodeId(1);
    let dsts = destinations();
    let mut out = Vec::new();
    // The two answer alike (as the unit tests check on random databases).
    for d in &dsts {
        let mut scan = Vec::new();
        assert_eq!(
            db.best_origins(d, true, me, &mut out),
            db.best_origins_by_scan(d, true, me, &mut scan)
        );
        assert_eq!(out, scan);
    }
    let mut g = c.benchmark_group("lsdb1000");
    g.bench_function("best_origins_indexed", |b| {
        b.iter(|| {
            for d in &dsts {
                black_box(db.best_origins(black_box(d), true, me, &mut out));
            }
        })
    });
    g.bench_function("best_origins_scan", |b| {
        b.iter(|| {
            for d in &dsts {
                black_box(db.best_origins_by_scan(black_box(d), true, me, &mut out));
            }
        })
    });
    // A change (one origin's clients move), then the same lookups: the
    // first rebuilds the index.
    let mut seq = 1;
    g.bench_function("change_then_best_origins_indexed", |b| {
        b.iter(|| {
            seq += 1;
            let moved = Prefix::Client4 {
                addr: [198, 18, 3, (seq % 200) as u8 + 20],
                quality: 100,
            };
            install(&mut db, 500, seq, &[moved]);
            for d in &dsts {
                black_box(db.best_origins(black_box(d), true, me, &mut out));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, serving);
criterion_main!(benches);
