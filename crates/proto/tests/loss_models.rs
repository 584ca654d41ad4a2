//! The delivery formulas and the path estimator against the real encoder
//! and decoder: packets through the wire encoding, lost per path by a
//! seeded Gilbert chain. What the formula predicts is what the sessions
//! deliver, and what the path reports measure is what the chain did.

use std::collections::VecDeque;
use std::time::Duration;

use braid_proto::redundancy::predict::{residual_loss, PathLoss};
use braid_proto::redundancy::{
    EgressConfig, EgressSession, IngressConfig, IngressSession, Mode, Outgoing, PacketMeta,
    PathState,
};
use braid_proto::time::Instant;
use braid_wire::{DataHeader, NodeId};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

mod common;
use common::sessions::{payload, wire, Gilbert};

/// An ingress session of `mode` told of `paths` (all up, its first
/// output returned with it), an egress session, and a seeded loss chain
/// per path.
fn sessions(
    mode: Mode,
    paths: &[PathLoss],
    seed: u64,
) -> (
    ChaCha8Rng,
    Vec<Gilbert>,
    IngressSession,
    EgressSession,
    Vec<Outgoing>,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let chains = paths
        .iter()
        .map(|p| Gilbert::new(p.loss, p.burst.max(1.0 / (1.0 - p.loss)), &mut rng))
        .collect();
    let mut ing = IngressSession::new(
        NodeId(1),
        NodeId(2),
        0,
        mode,
        IngressConfig::default(),
        7,
        9,
    );
    let states: Vec<PathState> = paths
        .iter()
        .map(|p| PathState {
            up: true,
            weight: p.weight,
            loss: p.loss,
        })
        .collect();
    let mut out = Vec::new();
    ing.set_paths(Instant::ZERO, &states, &mut out);
    let eg = EgressSession::new(EgressConfig::default(), Instant::ZERO);
    (rng, chains, ing, eg, out)
}

/// Sends `count` data packets of `mode` over `paths` (each lost by its own
/// chain); returns the fraction not delivered.
fn measured_residual(mode: Mode, paths: &[PathLoss], count: usize, seed: u64) -> f64 {
    let (mut rng, mut chains, mut ing, mut eg, mut out) = sessions(mode, paths, seed);
    let now = Instant::ZERO;
    let mut delivered = 0usize;
    for i in 0..count {
        ing.encode(now, &payload(i), PacketMeta::default(), &mut out);
        if i + 1 == count {
            ing.handle_timeout(now + Duration::from_secs(1), &mut out);
        }
        for o in out.drain(..) {
            if chains[o.path as usize].lose(&mut rng) {
                continue;
            }
            let bytes = wire(&o, &payload(o.header.seq.wrapping_sub(7) as usize));
            eg.receive(now, &DataHeader::parse(&bytes).unwrap(), &mut |_| {
                delivered += 1
            });
        }
    }
    1.0 - delivered as f64 / count as f64
}

#[test]
fn predicted_residual_loss_is_what_the_sessions_leave_on_unequal_paths() {
    let indep = PathLoss::independent;
    let bursty = |loss, burst| PathLoss {
        burst,
        ..PathLoss::independent(loss)
    };
    let weighted = |weight, loss| PathLoss {
        weight,
        ..PathLoss::independent(loss)
    };
    let cases: Vec<(Mode, Vec<PathLoss>)> = vec![
        (Mode::Parity(4), vec![indep(0.0), indep(0.2), indep(0.2)]),
        (
            Mode::Erasure {
                n: 6,
                m: 4,
                depth: 1,
            },
            vec![indep(0.0), indep(0.2), indep(0.2)],
        ),
        (
            Mode::ParityRotating(3),
            vec![indep(0.05), indep(0.3), indep(0.1)],
        ),
        (
            Mode::Erasure {
                n: 20,
                m: 12,
                depth: 1,
            },
            vec![bursty(0.2, 5.0), bursty(0.2, 5.0)],
        ),
        (
            Mode::Erasure {
                n: 9,
                m: 5,
                depth: 1,
            },
            vec![weighted(2, 0.1), weighted(1, 0.3)],
        ),
        (Mode::Parity(3), vec![bursty(0.1, 3.0), indep(0.02)]),
        // Interleaved: a group's shards on a path `depth` packets apart.
        (
            Mode::Erasure {
                n: 20,
                m: 12,
                depth: 4,
            },
            vec![bursty(0.2, 5.0), bursty(0.2, 5.0)],
        ),
        (
            Mode::Erasure {
                n: 18,
                m: 12,
                depth: 8,
            },
            vec![bursty(0.2, 5.0), bursty(0.2, 5.0)],
        ),
        (
            Mode::Erasure {
                n: 12,
                m: 6,
                depth: 3,
            },
            vec![bursty(0.1, 8.0), bursty(0.2, 3.0), indep(0.05)],
        ),
    ];
    for (i, (mode, paths)) in cases.iter().enumerate() {
        let count = 240_000;
        let want = residual_loss(mode, paths);
        let got = measured_residual(*mode, paths, count, 100 + i as u64);
        // A group loses at most m data packets, so the variance of the
        // packets lost is at most m times their mean; on a bursty path
        // runs span groups, which widens it by about the mean burst.
        // Five such standard deviations, and a floor.
        let (m, _) = mode.group_shape();
        let burst = paths.iter().map(|p| p.burst.max(1.0)).fold(1.0, f64::max);
        let sd = (f64::from(m) * want * burst / count as f64).sqrt();
        let margin = 5.0 * sd + 1e-4;
        eprintln!("{mode}: predicted {want:.5}, measured {got:.5} (margin {margin:.5})");
        assert!(
            (got - want).abs() <= margin,
            "{mode} over {paths:?}: predicted {want:.5}, measured {got:.5} (margin {margin:.5})"
        );
    }
}

/// Single over `losses.len()` paths round robin (stripe), each path
/// delivering `delay` packets late; a report every `every` packets.
/// Returns the ingress after `count` packets.
fn reported(
    losses: &[(f64, f64)],
    count: usize,
    delay: usize,
    every: usize,
    seed: u64,
) -> IngressSession {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut chains: Vec<Gilbert> = losses
        .iter()
        .map(|&(l, b)| Gilbert::new(l, b, &mut rng))
        .collect();
    let mut ing = IngressSession::new(
        NodeId(1),
        NodeId(2),
        0,
        Mode::Stripe { pin_flows: false },
        IngressConfig::default(),
        0,
        1,
    );
    let mut eg = EgressSession::new(EgressConfig::default(), Instant::ZERO);
    let states = vec![
        PathState {
            up: true,
            weight: 1,
            loss: 0.0,
        };
        losses.len()
    ];
    let mut out = Vec::new();
    let mut now = Instant::ZERO;
    ing.set_paths(now, &states, &mut out);
    let mut in_flight: VecDeque<Vec<u8>> = VecDeque::new();
    for i in 0..count {
        now = now + Duration::from_millis(1);
        ing.encode(now, &payload(i), PacketMeta::default(), &mut out);
        for o in out.drain(..) {
            if !chains[o.path as usize].lose(&mut rng) {
                in_flight.push_back(wire(&o, &payload(i)));
            }
        }
        while in_flight.len() > delay {
            let bytes = in_flight.pop_front().unwrap();
            eg.receive(now, &DataHeader::parse(&bytes).unwrap(), &mut |_| {});
        }
        if i % every == every - 1 {
            ing.on_path_report(now, &eg.path_counts(now), &mut out);
            assert!(out.is_empty());
        }
    }
    ing
}

#[test]
fn a_lossless_path_never_reports_loss_however_much_is_in_flight() {
    for (delay, every) in [(0, 100), (37, 50), (400, 250), (3000, 100)] {
        let ing = reported(&[(0.0, 1.0), (0.0, 1.0)], 20_000, delay, every, 1);
        let c = ing.counters();
        assert_eq!(c.lost_per_path[..2], [0, 0], "delay {delay}, every {every}");
        let e = ing.path_estimates();
        assert!(e.iter().all(|e| e.is_some_and(|e| e.loss == 0.0)), "{e:?}");
    }
}

#[test]
fn independent_loss_is_measured_within_its_binomial_interval() {
    for (seed, (a, b)) in [(0.1, 0.3), (0.02, 0.0), (0.2, 0.2)]
        .into_iter()
        .enumerate()
    {
        let ing = reported(
            &[(a, 1.0 / (1.0 - a)), (b, 1.0 / (1.0 - b))],
            40_000,
            120,
            250,
            seed as u64,
        );
        for (path, want) in [a, b].into_iter().enumerate() {
            let e = ing.path_estimates()[path].unwrap();
            let sd = (want * (1.0 - want) / e.packets as f64).sqrt();
            assert!(
                (e.loss - want).abs() <= 4.0 * sd + 1e-9,
                "path {path}: {want} measured {:.4} over {} packets",
                e.loss,
                e.packets
            );
            // Independent loss is not taken for bursts.
            if want > 0.0 {
                assert!(
                    e.burst < 1.6 / (1.0 - want),
                    "path {path}: burst {:.2}",
                    e.burst
                );
            }
        }
    }
}

#[test]
fn a_bursty_path_reports_its_mean_burst() {
    for (seed, burst) in [(10, 5.0), (11, 20.0), (12, 5.0)] {
        let ing = reported(&[(0.2, burst), (0.05, 1.0 / 0.95)], 80_000, 60, 250, seed);
        let e = ing.path_estimates()[0].unwrap();
        assert!((e.loss - 0.2).abs() < 0.05, "loss {:.3}", e.loss);
        assert!(
            e.burst > burst / 1.6 && e.burst < burst * 1.6,
            "mean burst {burst}: measured {:.2}",
            e.burst
        );
        let calm = ing.path_estimates()[1].unwrap();
        assert!(
            calm.burst < 1.6,
            "independent path: burst {:.2}",
            calm.burst
        );
    }
}

/// The sliding-window code against block codes of the same rate on two
/// paths losing 20% in bursts of 5 (the lab's bursty point): it leaves
/// less residual loss than the code the formulas take it for (a lower
/// bound), and less than the same rate interleaved 8 deep, which waits
/// for a block of 8 groups where it waits for a few packets. (Measured
/// here: 0.49% against 11.1% and 3.0%; a span of 32 leaves 2.9%, and
/// sliding:2,1 with a span of 32 0.03%.)
#[test]
fn the_sliding_code_rebuilds_bursts_better_than_blocks_of_its_rate() {
    let bursty = PathLoss {
        burst: 5.0,
        ..PathLoss::independent(0.2)
    };
    let paths = [bursty, bursty];
    let count = 60_000;
    let sliding = Mode::Sliding {
        n: 18,
        m: 12,
        span: 64,
    };
    let block = Mode::Erasure {
        n: 18,
        m: 12,
        depth: 1,
    };
    let interleaved = Mode::Erasure {
        n: 18,
        m: 12,
        depth: 8,
    };
    let got = |mode| measured_residual(mode, &paths, count, 42);
    let (s, b, i) = (got(sliding), got(block), got(interleaved));
    eprintln!("residual loss: sliding {s:.4}, erasure:18,12 {b:.4}, erasure:18,12,8 {i:.4}");
    assert!(s < b / 10.0, "sliding {s} against the block code's {b}");
    assert!(s < i / 3.0, "sliding {s} against interleaved {i}");
    assert!(
        s <= residual_loss(&sliding, &paths),
        "the formula's lower bound on delivery"
    );
}

/// Sends `count` data packets of `mode`, one a millisecond, over `paths`
/// (each lost by its own chain) with `delay` each way; with `ask`, the
/// egress's repair requests reach the ingress `delay` later and its
/// answers come back as the data do (lost the same way). Returns the
/// fraction not delivered, and the repair packets sent on request.
fn residual_with_requests(
    mode: Mode,
    paths: &[PathLoss],
    count: usize,
    (delay, ask): (Duration, bool),
    seed: u64,
) -> (f64, u64) {
    let (mut rng, mut chains, mut ing, mut eg, mut out) = sessions(mode, paths, seed);
    // (arrival, wire bytes) toward the egress; (arrival, request) back.
    let mut to_egress: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut to_ingress = VecDeque::new();
    let mut delivered = 0usize;
    let step = Duration::from_millis(1);
    let end = count + 1000;
    for i in 0..end {
        let now = Instant::ZERO + step * i as u32;
        if i < count {
            ing.encode(now, &payload(i), PacketMeta::default(), &mut out);
        }
        while to_ingress.front().is_some_and(|(at, _)| *at <= now) {
            let (_, w): (Instant, braid_proto::redundancy::sliding_ask::Want) =
                to_ingress.pop_front().unwrap();
            ing.answer_repair(now, (w.first, w.end), w.count, &mut out);
        }
        ing.handle_timeout(now, &mut out);
        for o in out.drain(..) {
            if chains[o.path as usize].lose(&mut rng) {
                continue;
            }
            let seq = o.header.seq.wrapping_sub(7) as usize;
            to_egress.push_back((now + delay, wire(&o, &payload(seq))));
        }
        while to_egress.front().is_some_and(|(at, _)| *at <= now) {
            let (_, bytes) = to_egress.pop_front().unwrap();
            eg.receive(now, &DataHeader::parse(&bytes).unwrap(), &mut |_| {
                delivered += 1
            });
        }
        while let Some(w) = eg.poll_repair(now) {
            if ask {
                to_ingress.push_back((now + delay, w));
            }
        }
    }
    let asked = ing.counters().repair_on_request;
    eprintln!(
        "asking: {:?}, unanswered {}",
        eg.ask_counters(),
        ing.counters().requests_unanswered,
    );
    (1.0 - delivered as f64 / count as f64, asked)
}

/// Repair on request: what the repair sent with the data leaves lost,
/// the egress asks for, and a round trip later it is rebuilt. Two paths
/// losing 5% (independent) under sliding:16,15 (little more repair than
/// the paths lose), and 20% in bursts of 5 under sliding:4,3 (a little more,
/// but bursts defeat it now and then), 20 ms each way.
/// The requests take the residual loss down at least fivefold, for a
/// repair cost of a few percent of the data. (Measured here: 2.1% to
/// 0.11% for 2.8% more repair; 10.0% to 1.7% for 8.3%.)
#[test]
fn repair_on_request_rebuilds_what_the_repair_sent_with_the_data_did_not() {
    let count = 20_000;
    let delay = Duration::from_millis(20);
    let sliding = |n, m| Mode::Sliding { n, m, span: 32 };
    for (mode, paths) in [
        (sliding(16, 15), [PathLoss::independent(0.05); 2]),
        (
            sliding(4, 3),
            [PathLoss {
                burst: 5.0,
                ..PathLoss::independent(0.2)
            }; 2],
        ),
    ] {
        let (without, none) = residual_with_requests(mode, &paths, count, (delay, false), 7);
        let (with, asked) = residual_with_requests(mode, &paths, count, (delay, true), 7);
        eprintln!(
            "{mode}, loss {} burst {}: residual {without:.4} without requests, {with:.4} with ({asked} repair packets asked for, {:.1}% of the data)",
            paths[0].loss, paths[0].burst, asked as f64 * 100.0 / count as f64
        );
        assert_eq!(none, 0);
        assert!(without > 0.0, "nothing to rebuild: {without}");
        assert!(with <= without / 5.0, "{with} against {without}");
        assert!(asked > 0);
    }
}
/// The sliding code's prediction (`sliding_predict.rs`) against the real
/// encoder and decoder under independent loss: above what they leave
/// (within the count's noise), where the code holds and where it fails.
#[test]
fn the_sliding_prediction_is_above_what_the_code_leaves() {
    let count = 40_000;
    for (loss, n, m) in [
        (0.015, 16, 15),
        (0.02, 15, 14),
        (0.05, 11, 10),
        (0.05, 8, 7),
        (0.1, 6, 5),
        (0.1, 17, 15),
        (0.2, 4, 3),
        (0.2, 19, 13),
        (0.3, 22, 14),
    ] {
        let paths = [PathLoss::independent(loss); 2];
        let mode = Mode::Sliding { n, m, span: 32 };
        let predicted = residual_loss(&mode, &paths);
        let measured = measured_residual(mode, &paths, count, 11);
        eprintln!("{mode} at {loss}: predicted {predicted:.5}, measured {measured:.5}");
        assert!(
            measured <= predicted * 1.25 + 0.0005,
            "{mode} at {loss}: measured {measured} above the prediction {predicted}"
        );
    }
}
