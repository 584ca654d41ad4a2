//! Per-packet cost of the redundancy engine with 1400-byte payloads:
//! ingress (encode) and egress (parse, dedup, rebuild, deliver) for every
//! mode over three paths; classification; the late-binding scheduler; and
//! the memory one egress session holds. Figures go in docs/performance.md.

use std::hint::black_box;
use std::time::Duration;

use braid_proto::classify::{inspect, Classifier};
use braid_proto::redundancy::{
    EgressConfig, EgressSession, IngressConfig, IngressSession, Mode, Outgoing, PacketMeta,
    PathState, Payload,
};
use braid_proto::scheduler::{Scheduler, SchedulerConfig};
use braid_proto::time::Instant;
use braid_wire::{DataHeader, NodeId};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

const PAYLOAD: usize = 1400;
const STREAM: usize = 3000;

fn modes() -> Vec<Mode> {
    [
        "single",
        "stripe",
        "mirror:2",
        "mirror:3",
        "parity:4",
        "parity-rotating:4",
        "erasure:6,4",
        "sliding:6,4",
        "sliding:2,1",
    ]
    .iter()
    .map(|m| m.parse().unwrap())
    .collect()
}

fn session(mode: Mode) -> IngressSession {
    let mut s = IngressSession::new(
        NodeId(1),
        NodeId(2),
        0,
        mode,
        IngressConfig::default(),
        0,
        0,
    );
    let paths = [PathState {
        up: true,
        weight: 1,
        loss: 0.0,
    }; 3];
    s.set_paths(Instant::ZERO, &paths, &mut Vec::new());
    s
}

/// The wire packets a stream of `STREAM` data packets becomes.
fn stream(mode: Mode, packet: &[u8]) -> Vec<Vec<u8>> {
    let mut s = session(mode);
    let mut out: Vec<Outgoing> = Vec::new();
    for i in 0..STREAM {
        s.encode(
            Instant::from_micros(i as u64),
            packet,
            PacketMeta::default(),
            &mut out,
        );
    }
    out.iter()
        .map(|o| {
            let body = match &o.payload {
                Payload::Input => packet,
                Payload::Repair(r) => r.as_slice(),
            };
            let mut b = vec![0u8; braid_wire::data::DATA_HEADER_LEN];
            let n = o.header.emit(&[], &mut b).unwrap();
            b.truncate(n);
            b.extend_from_slice(body);
            b
        })
        .collect()
}

fn redundancy(c: &mut Criterion) {
    let packet = vec![0xabu8; PAYLOAD];
    let mut ingress = c.benchmark_group("ingress_1400B");
    ingress.throughput(Throughput::Elements(1));
    for mode in modes() {
        ingress.bench_function(mode.to_string(), |b| {
            let mut s = session(mode);
            let mut out = Vec::with_capacity(16);
            let mut t = 0u64;
            b.iter(|| {
                out.clear();
                t += 1;
                s.encode(
                    Instant::from_micros(t),
                    black_box(&packet),
                    PacketMeta::default(),
                    &mut out,
                );
                black_box(out.len())
            })
        });
    }
    ingress.finish();

    let mut egress = c.benchmark_group("egress_1400B");
    egress.measurement_time(Duration::from_secs(3));
    for mode in modes() {
        let wire = stream(mode, &packet);
        // Throughput in received wire packets; data packets are STREAM.
        egress.throughput(Throughput::Elements(wire.len() as u64));
        egress.bench_function(
            format!("{mode} ({} wire packets per {STREAM} data)", wire.len()),
            |b| {
                b.iter_batched(
                    || EgressSession::new(EgressConfig::default(), Instant::ZERO),
                    |mut eg| {
                        let mut delivered = 0usize;
                        for w in &wire {
                            let pkt = DataHeader::parse(w).unwrap();
                            eg.receive(Instant::ZERO, &pkt, &mut |p| delivered += p.len());
                        }
                        black_box(delivered)
                    },
                    BatchSize::LargeInput,
                )
            },
        );
    }
    egress.finish();

    // Rebuild cost: one data packet in six lost, every one rebuilt.
    let mut rebuild = c.benchmark_group("egress_rebuild_1400B");
    for mode in ["parity:4", "erasure:6,4", "sliding:6,4"].map(|m| m.parse::<Mode>().unwrap()) {
        // One data packet in six lost (the third of every six).
        let mut data = 0usize;
        let wire: Vec<Vec<u8>> = stream(mode, &packet)
            .into_iter()
            .filter(|w| {
                if DataHeader::parse(w).unwrap().header.group.is_repair() {
                    return true;
                }
                data += 1;
                data % 6 != 3
            })
            .collect();
        // Every lost packet is rebuilt (checked once, outside the timing).
        let mut check = EgressSession::new(EgressConfig::default(), Instant::ZERO);
        for w in &wire {
            check.receive(Instant::ZERO, &DataHeader::parse(w).unwrap(), &mut |_| {});
        }
        assert_eq!(check.counters().rebuilt, (STREAM / 6) as u64, "{mode}");
        rebuild.throughput(Throughput::Elements(STREAM as u64));
        rebuild.bench_function(
            format!("{mode} (1 data packet of 6 lost, per data packet)"),
            |b| {
                b.iter_batched(
                    || EgressSession::new(EgressConfig::default(), Instant::ZERO),
                    |mut eg| {
                        for w in &wire {
                            eg.receive(Instant::ZERO, &DataHeader::parse(w).unwrap(), &mut |p| {
                                black_box(p);
                            });
                        }
                        black_box(eg.counters().rebuilt)
                    },
                    BatchSize::LargeInput,
                )
            },
        );
    }
    rebuild.finish();

    let classifier = Classifier::example();
    let mut ip = vec![0u8; PAYLOAD];
    ip[0] = 0x45;
    ip[9] = 6;
    ip[16..20].copy_from_slice(&[198, 18, 0, 9]);
    ip[22..24].copy_from_slice(&443u16.to_be_bytes());
    c.bench_function("classify_3_rules_no_match", |b| {
        b.iter(|| black_box(classifier.classify(&inspect(black_box(&ip)).unwrap())))
    });

    c.bench_function("scheduler_enqueue_pull", |b| {
        let mut s: Scheduler<u32> = Scheduler::new(SchedulerConfig::default(), 3);
        let mut i = 0u32;
        b.iter(|| {
            i = i.wrapping_add(1);
            s.enqueue(i, PAYLOAD, (i % 8) as u64, false, 0b111);
            black_box(s.pull((i % 3) as usize))
        })
    });

    // Memory per egress session.
    let idle = EgressSession::new(EgressConfig::default(), Instant::ZERO);
    let mut busy = EgressSession::new(EgressConfig::default(), Instant::ZERO);
    for w in stream("erasure:6,4".parse().unwrap(), &packet)
        .iter()
        .filter(|w| DataHeader::parse(w).unwrap().header.group.index != 5)
    {
        busy.receive(Instant::ZERO, &DataHeader::parse(w).unwrap(), &mut |_| {});
    }
    eprintln!(
        "memory per egress session: {} bytes idle (dedup window of {} packets); {} bytes after an erasure:6,4 stream",
        idle.memory(),
        EgressConfig::default().dedup_window,
        busy.memory()
    );
}

criterion_group!(benches, redundancy);
criterion_main!(benches);
