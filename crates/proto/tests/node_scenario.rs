//! Whole nodes end to end: five `Node`s on a seeded lossy medium find each
//! other, compute disjoint paths, and carry a host's UDP stream from the
//! gateway's side to the far site. Single path loses what its links lose;
//! mirroring over three disjoint paths loses almost nothing; the egress's
//! path reports reach the ingress, the first at a session's first packet
//! when the ingress equalises delays.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use braid_proto::control::External;
use braid_proto::node::{Dest, Interface, Node};
use braid_proto::redundancy::Mode;
use braid_proto::time::Instant;
use braid_wire::NodeId;
use common::mesh::{host_packet, Driver, Mesh, DIAMOND};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// 1 (serves 198.18.1.0/24) reaches 5 (serves 198.18.5.0/24) through 2,
/// 3 or 4; every link loses `loss` of its frames.
fn diamond(mode: Mode, loss: f64, seed: u64) -> Mesh {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let nodes = common::nodes(5, mode, seed, &mut rng);
    let mut net = Mesh::new(nodes, rng, LOSSY);
    for (a, b) in DIAMOND {
        net.link(a, b, loss);
    }
    net
}

/// Links that lose what they are set to lose.
const LOSSY: Driver = Driver {
    lossy: true,
    record_control: false,
    take_deliveries: false,
};

/// Sends `count` packets from node 1's host to 198.18.5.9, one every
/// 20 ms, and returns how many the far host got.
fn stream(net: &mut Mesh, count: u32) -> usize {
    net.stream(0, count, Duration::from_secs(2)).len()
}

fn secs(s: u64) -> Instant {
    Instant::from_millis(s * 1000)
}

#[test]
fn mirror_over_disjoint_paths_saves_what_single_path_loses() {
    let mut single = diamond(Mode::Single, 0.1, 1);
    single.run_until(secs(30));
    let paths = single.nodes[0]
        .paths_to(NodeId(5))
        .cloned()
        .unwrap_or_default();
    assert!(
        paths.is_empty(),
        "no route is computed before traffic needs one"
    );
    let got_single = stream(&mut single, 1000);
    eprintln!("single delivered {got_single}");
    // Two hops of 10% loss: about 81% arrive.
    assert!(
        (740..=870).contains(&got_single),
        "single delivered {got_single}"
    );
    assert_eq!(
        single.nodes[0].paths_to(NodeId(5)).unwrap().len(),
        3,
        "three disjoint paths known"
    );

    let mut mirror = diamond(Mode::Mirror(3), 0.1, 1);
    mirror.run_until(secs(30));
    let got_mirror = stream(&mut mirror, 1000);
    eprintln!("mirror delivered {got_mirror}");
    // 1 - 0.19^3 = 99.3%.
    assert!(got_mirror >= 980, "mirror:3 delivered {got_mirror}");

    // The egress told the ingress what each path lost.
    let c = mirror.nodes[0].counters();
    assert!(c.path_reports_received > 0, "{c:?}");
    let session = mirror.nodes[0].ingress().session(NodeId(5), 0).unwrap();
    let lost: u64 = session.counters().lost_per_path.iter().sum();
    let sent: u64 = session.counters().sent_per_path.iter().sum();
    let ratio = lost as f64 / sent as f64;
    eprintln!("measured {ratio:.3}, reports {}", c.path_reports_received);
    assert!(
        (0.1..0.3).contains(&ratio),
        "measured path loss {ratio:.3} ({lost} of {sent})"
    );
}

#[test]
fn parity_rebuilds_and_runs_are_deterministic() {
    let run = |seed| {
        let mut n = diamond(Mode::Parity(3), 0.05, seed);
        n.run_until(secs(30));
        let got = stream(&mut n, 600);
        let rebuilt: u64 = n.nodes[4]
            .egress()
            .sessions()
            .map(|(_, s)| s.counters().rebuilt)
            .sum();
        (got, rebuilt, n.nodes[0].counters(), n.nodes[4].counters())
    };
    let a = run(3);
    assert_eq!(a, run(3), "same seed, same run");
    assert!(a.1 > 0, "parity rebuilt lost packets");
    // 2 data + 1 parity over 3 paths of 2 hops at 5%: about 99.1%.
    assert!(a.0 >= 580, "parity:3 delivered {} of 600", a.0);
}

/// Late binding: with a driver that has not sent anything yet, the node
/// hands it only `bound` datagrams per next hop; when that link goes,
/// everything still above the binding point leaves by another path.
#[test]
fn late_binding_strands_only_what_the_driver_holds() {
    let mut net = diamond(Mode::Single, 0.0, 5);
    net.run_until(secs(30));
    assert_eq!(stream(&mut net, 5), 5);
    let first = net.nodes[0].paths_to(NodeId(5)).unwrap()[0][0];
    let now = net.now;
    for i in 0..20 {
        net.nodes[0].send(now, &host_packet([198, 18, 5, 9], 100 + i));
    }
    // The driver holds everything it is given (no `on_sent` yet).
    let mut to: BTreeMap<NodeId, usize> = BTreeMap::new();
    let drain = |node: &mut Node, to: &mut BTreeMap<NodeId, usize>| {
        while let Some(t) = node.poll_transmit(now) {
            if let Dest::Neighbor(n) = t.dest {
                *to.entry(n).or_default() += 1;
            }
        }
    };
    drain(&mut net.nodes[0], &mut to);
    assert_eq!(
        to.get(&first),
        Some(&2),
        "two below the binding point: {to:?}"
    );
    assert_eq!(to.len(), 1, "single path: one next hop");
    assert!(
        net.nodes[0].holds_backlog(),
        "18 wait above the binding point"
    );
    // The link to the first hop goes: its 2 are lost with it, the other
    // 18 take another path (2 at a time, as the driver sends them).
    net.nodes[0].link_down(now, first, &mut net.rng);
    let moved = net.nodes[0].paths_to(NodeId(5)).unwrap()[0][0];
    assert_ne!(moved, first, "routes leave a link that is down at once");
    let mut sent_elsewhere = 0;
    for _ in 0..20 {
        let mut batch = BTreeMap::new();
        drain(&mut net.nodes[0], &mut batch);
        assert!(!batch.contains_key(&first), "nothing more to a dead link");
        assert!(batch.values().all(|&n| n <= 2), "{batch:?}");
        for (&n, &k) in &batch {
            sent_elsewhere += k;
            for _ in 0..k {
                net.nodes[0].on_sent(n);
            }
        }
    }
    assert_eq!(
        sent_elsewhere, 18,
        "nothing above the binding point is lost"
    );
    assert!(!net.nodes[0].holds_backlog(), "nothing waits any more");
}

/// The node tells its driver what happened: neighbors up, routes chosen,
/// garbage refused, a silent neighbor taken down after the timeout, and an
/// interface's neighbors with it.
#[test]
fn events_tell_the_driver_about_neighbors_routes_and_refusals() {
    use braid_proto::node::{DownReason, NodeEvent};
    let mut net = diamond(Mode::Single, 0.0, 9);
    let timeout = Duration::from_secs(3);
    for n in &mut net.nodes {
        *n = {
            let id = n.id();
            let mut config = braid_proto::node::NodeConfig {
                neighbor_timeout: Some(timeout),
                ..Default::default()
            };
            if id == NodeId(1) || id == NodeId(5) {
                config.control.prefixes = vec![braid_wire::Prefix::V4 {
                    addr: [198, 18, id.0 as u8, 0],
                    len: 24,
                }];
            }
            Node::new(id, config, Instant::ZERO, &mut net.rng).unwrap()
        };
    }
    net.run_until(secs(10));
    let ups: Vec<NodeId> = net
        .events(0)
        .into_iter()
        .filter_map(|e| match e {
            NodeEvent::NeighborUp { neighbor, .. } => Some(neighbor),
            _ => None,
        })
        .collect();
    assert_eq!(
        ups,
        vec![NodeId(2), NodeId(3), NodeId(4)],
        "each neighbor once"
    );
    assert_eq!(net.nodes[0].neighbors().len(), 3);
    stream(&mut net, 3);
    assert!(net
        .events(0)
        .contains(&NodeEvent::RouteChange { egress: NodeId(5) }));
    // Garbage from a neighbor is refused, with its reason.
    let sender = net.nodes[0].handle_datagram(net.now, Interface(1), None, &[0x13, 0, 0]);
    assert_eq!(sender, None);
    let refused = net.events(0);
    assert!(
        matches!(refused[..], [NodeEvent::Refused { reason }] if reason.reason() == "truncated"),
        "{refused:?}"
    );
    // 1 - 2 goes silent: after the timeout, 2 is down at 1 (and 1 at 2).
    net.link(0, 1, 1.0);
    let cut = net.now;
    net.run_until(cut + timeout + Duration::from_millis(1500));
    let down: Vec<NodeEvent> = net
        .events(0)
        .into_iter()
        .filter(|e| matches!(e, NodeEvent::NeighborDown { .. }))
        .collect();
    assert_eq!(
        down,
        vec![NodeEvent::NeighborDown {
            neighbor: NodeId(2),
            why: DownReason::Unheard
        }]
    );
    // Everything 1 heard on interface 2 (node 3) goes with it.
    let now = net.now;
    net.nodes[0].interface_down(now, Interface(2), &mut net.rng);
    assert!(net.events(0).contains(&NodeEvent::NeighborDown {
        neighbor: NodeId(3),
        why: DownReason::InterfaceDown
    }));
    assert_eq!(net.nodes[0].neighbors().len(), 1, "only 4 is left");
}

/// SMesh (seed 000): an unmodified client heard by two access points is
/// served by both; a packet entering the mesh at node 1 follows 1's tree
/// (1 - 2 - 3, where it branches to the access points 4 and 5), every
/// node forwarding by the entry point's table, and both access points
/// deliver it. When one access point loses the client, it stops serving
/// after the hold and the tree prunes it. In single mode only the best
/// access point gets the packet.
#[test]
fn tree_mode_reaches_every_access_point_that_serves_the_client() {
    use braid_proto::access::ClientAddr;
    let client = ClientAddr {
        addr: {
            let mut a = [0u8; 16];
            a[..4].copy_from_slice(&[198, 18, 9, 9]);
            a
        },
        v4: true,
    };
    let run = |mode: Mode| {
        let mut net = diamond(mode, 0.0, 11);
        net.links.clear();
        for (a, b) in [(0, 1), (1, 2), (2, 3), (2, 4)] {
            net.link(a, b, 0.0);
        }
        net.run_until(secs(10));
        let now = net.now;
        net.nodes[3].client_heard(now, client, 200);
        net.nodes[4].client_heard(now, client, 180);
        net.run_until(secs(13));
        let send = |net: &mut Mesh, first: u32, count: u32| {
            for i in first..first + count {
                let at = Instant(net.now.0 + 20_000);
                net.run_until(at);
                // The access points keep hearing the client as before.
                for (ap, q) in [(3, 200), (4, 180)] {
                    let q = if ap == 3 && first > 0 { 10 } else { q };
                    let now = net.now;
                    net.nodes[ap].client_heard(now, client, q);
                }
                net.nodes[0].send(net.now, &host_packet([198, 18, 9, 9], i));
                net.flush();
            }
            let got = |net: &mut Mesh, ap: usize| {
                std::iter::from_fn(|| net.nodes[ap].poll_deliver()).count()
            };
            (got(net, 3), got(net, 4))
        };
        let both = send(&mut net, 0, 50);
        // Access point 4 hears the client badly from now on: out of the
        // margin, it lets go after the 3 s hold.
        let _ = send(&mut net, 1000, 200);
        let after = send(&mut net, 2000, 50);
        (
            both,
            after,
            net.nodes[2].counters(),
            net.nodes[1].counters(),
        )
    };
    let (both, after, branch, transit) = run(Mode::Tree);
    assert_eq!(both, (50, 50), "both access points deliver every packet");
    assert_eq!(
        after,
        (0, 50),
        "the tree pruned the access point that let go"
    );
    assert!(
        branch.tree_copies >= 100,
        "3 copies to each branch: {branch:?}"
    );
    assert!(
        transit.forwarded >= 50,
        "2 forwards by 1's table: {transit:?}"
    );
    assert_eq!(transit.not_on_tree, 0);
    let (both, _, _, _) = run(Mode::Single);
    assert_eq!(both, (50, 0), "single: the best access point only");
}

/// Sends packets `from..from + count` of one flow (source port `port`)
/// from node 1 toward the Internet, 20 ms apart, lets the mesh run 0.5 s
/// more, and returns how many gateways 4 and 5 delivered.
fn to_gateways(net: &mut Mesh, port: u16, from: u32, count: u32) -> (usize, usize) {
    for i in from..from + count {
        let at = Instant(net.now.0 + 20_000);
        net.run_until(at);
        let mut p = host_packet([203, 0, 113, 9], i);
        p[20..22].copy_from_slice(&port.to_be_bytes());
        let now = net.now;
        net.nodes[0].send(now, &p);
        net.flush();
    }
    let at = Instant(net.now.0 + 500_000);
    net.run_until(at);
    let got = |net: &mut Mesh, g: usize| std::iter::from_fn(|| net.nodes[g].poll_deliver()).count();
    (got(net, 3), got(net, 4))
}

/// Two gateways (4 and 5) serve the default route: node 1's traffic goes
/// to the nearer (4, two hops; 5 is three), every packet of it; when 4
/// fails (its links go silent), 1's traffic moves to 5 once 4's neighbor
/// stops hearing it (the neighbor timeout), and only what was sent in
/// between is lost.
#[test]
fn traffic_goes_to_the_nearest_gateway_and_to_the_next_when_it_fails() {
    let timeout = Duration::from_secs(2);
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let nodes = (1..=6u16)
        .map(|id| {
            let mut config = braid_proto::node::NodeConfig {
                neighbor_timeout: Some(timeout),
                ..Default::default()
            };
            config.control.prefixes = match id {
                1 => vec![braid_wire::Prefix::V4 {
                    addr: [198, 18, 1, 0],
                    len: 24,
                }],
                4 | 5 => vec![braid_wire::Prefix::V4 {
                    addr: [0, 0, 0, 0],
                    len: 0,
                }],
                _ => vec![],
            };
            Node::new(NodeId(id), config, Instant::ZERO, &mut rng).unwrap()
        })
        .collect();
    let mut net = Mesh::new(nodes, rng, LOSSY);
    // 1 - 2 - 4, and 1 - 3 - 6 - 5.
    for (a, b) in [(0, 1), (1, 3), (0, 2), (2, 5), (5, 4)] {
        net.link(a, b, 0.0);
    }
    net.run_until(secs(10));
    let send = |net: &mut Mesh, from: u32, count: u32| to_gateways(net, 4000, from, count);
    assert_eq!(
        send(&mut net, 0, 100),
        (100, 0),
        "all to the nearest gateway"
    );
    // Gateway 4 goes silent (a crash: nothing tells anyone).
    net.link(1, 3, 1.0);
    let (at4, at5) = send(&mut net, 1000, 250);
    assert_eq!(at4, 0, "4 hears nothing any more");
    let lost = 250 - at5;
    eprintln!("lost {lost} while gateway 4 failed");
    // Lost: what 1 sent until 2 took 4 down and the news reached 1 (the
    // 2 s timeout, at 20 ms a packet: about 100), nothing after.
    assert!((50..=130).contains(&lost), "lost {lost}");
    assert_eq!(
        send(&mut net, 2000, 100),
        (0, 100),
        "all to the other gateway"
    );
}

/// The same two gateways, their default route served through an uplink
/// each checks (`Node::set_external_prefixes`): when 4's uplink fails, 4
/// withdraws the route at once (not after the advertisement interval),
/// and 1's traffic moves to 5 within the flooding's few milliseconds;
/// when it recovers, the route comes back within the advertisement
/// interval and the traffic with it.
#[test]
fn a_gateway_whose_uplink_fails_withdraws_its_route_at_once_and_takes_it_back() {
    let mut rng = ChaCha8Rng::seed_from_u64(22);
    let default = braid_wire::Prefix::V4 {
        addr: [0, 0, 0, 0],
        len: 0,
    };
    let nodes = (1..=6u16)
        .map(|id| {
            let mut config = braid_proto::node::NodeConfig::default();
            if id == 1 {
                config.control.prefixes = vec![braid_wire::Prefix::V4 {
                    addr: [198, 18, 1, 0],
                    len: 24,
                }];
            }
            let mut node = Node::new(NodeId(id), config, Instant::ZERO, &mut rng).unwrap();
            if id == 4 || id == 5 {
                assert_eq!(
                    node.set_external_prefixes(External::Uplink, vec![default]),
                    0
                );
            }
            node
        })
        .collect();
    let mut net = Mesh::new(nodes, rng, LOSSY);
    for (a, b) in [(0, 1), (1, 3), (0, 2), (2, 5), (5, 4)] {
        net.link(a, b, 0.0);
    }
    net.run_until(secs(10));
    assert_eq!(
        to_gateways(&mut net, 1, 0, 100),
        (100, 0),
        "the nearest gateway"
    );
    // Its uplink fails: 4 stays up and reachable, but serves no route.
    net.nodes[3].set_external_prefixes(External::Uplink, vec![]);
    let (at4, at5) = to_gateways(&mut net, 1, 1000, 100);
    eprintln!("withdrawn: {at4} still to 4, {at5} to 5");
    assert!(at4 <= 2, "{at4} sent to 4 after it withdrew the route");
    assert_eq!(
        at4 + at5,
        100,
        "nothing lost: 4 still delivers what reached it"
    );
    assert_eq!(to_gateways(&mut net, 1, 2000, 100), (0, 100), "all to 5");
    // Back: a new flow goes to 4 within the advertisement interval (1 s)
    // and the flood; the flow that moved to 5 stays there (its
    // connection is NATed at 5 now).
    net.nodes[3].set_external_prefixes(External::Uplink, vec![default]);
    let (back4, back5) = to_gateways(&mut net, 2, 3000, 100);
    eprintln!("restored: {back4} to 4, {back5} to 5");
    assert!(back4 >= 40 && back4 + back5 == 100, "{back4} + {back5}");
    assert_eq!(
        to_gateways(&mut net, 2, 4000, 100),
        (100, 0),
        "the new flow at 4"
    );
    assert_eq!(
        to_gateways(&mut net, 1, 5000, 100),
        (0, 100),
        "the old one kept at 5"
    );
    let (c, _) = net.nodes[0].gateway_counters();
    assert_eq!(c.flows_moved, 1, "{c:?}");
}

/// Nodes 1-6 with gateways 4 and 5 serving the default route (through
/// `gateway`, or plainly in `prefixes` when `None`), node 1 the entry
/// point (`choice`): 1 - 2 - 4 and 1 - 3 - 6 - 5, and a shortcut 1 - 5
/// (index 0 - 4) the tests bring up and down.
fn two_gateways(
    seed: u64,
    choice: braid_proto::node::GatewayChoice,
    gateway: Option<[braid_wire::Prefix; 2]>,
) -> Mesh {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let default = braid_wire::Prefix::V4 {
        addr: [0, 0, 0, 0],
        len: 0,
    };
    let nodes = (1..=6u16)
        .map(|id| {
            let mut config = braid_proto::node::NodeConfig {
                neighbor_timeout: Some(Duration::from_secs(2)),
                gateways: choice,
                ..Default::default()
            };
            if (id == 4 || id == 5) && gateway.is_none() {
                config.control.prefixes = vec![default];
            }
            let mut node = Node::new(NodeId(id), config, Instant::ZERO, &mut rng).unwrap();
            if let (4 | 5, Some(g)) = (id, gateway) {
                node.set_external_prefixes(External::Uplink, vec![default, g[id as usize - 4]]);
            }
            node
        })
        .collect();
    let mut net = Mesh::new(nodes, rng, LOSSY);
    for (a, b) in [(0, 1), (1, 3), (0, 2), (2, 5), (5, 4)] {
        net.link(a, b, 0.0);
    }
    net.link(0, 4, 1.0);
    net.run_until(secs(10));
    net
}

/// Sends one packet of each flow (`ports`, the source port) from node 1
/// toward the Internet, 20 ms apart, and returns the ports that reached
/// gateway 4 and gateway 5.
fn flows_to(net: &mut Mesh, ports: &[u16]) -> (Vec<u16>, Vec<u16>) {
    for (i, &port) in ports.iter().enumerate() {
        net.run_for(Duration::from_millis(20));
        let mut p = host_packet([203, 0, 113, 9], i as u32);
        p[20..22].copy_from_slice(&port.to_be_bytes());
        let now = net.now;
        net.nodes[0].send(now, &p);
        net.flush();
    }
    net.run_for(Duration::from_millis(300));
    let mut got = |g: usize| -> Vec<u16> {
        std::iter::from_fn(|| net.nodes[g].poll_deliver())
            .map(|p| u16::from_be_bytes([p[20], p[21]]))
            .collect()
    };
    (got(3), got(4))
}

/// Issue 33: ten topology changes, each making the other gateway nearer
/// (the shortcut 1 - 5 comes and goes), with both healthy: a flow that
/// started at gateway 4 stays there through all of them (its NAT state
/// lives there), while each new flow goes to the gateway nearest when it
/// starts.
#[test]
fn flows_stay_on_their_gateway_through_ten_topology_changes() {
    let mut net = two_gateways(23, Default::default(), None);
    let long = 1u16;
    assert_eq!(flows_to(&mut net, &[long]), (vec![long], vec![]));
    for change in 0..10u16 {
        let shortcut = change % 2 == 0;
        net.link(0, 4, if shortcut { 0.0 } else { 1.0 });
        // Long enough for the news either way: the 2-s timeout, and a
        // returning link's estimate (19 s, past the estimator's window of
        // 16 one-second probes: at 13 s the shortcut's ETX was still
        // about 2, as costly as the two hops to 4, and which gateway was
        // nearer depended on the seed's draws).
        for _ in 0..60 {
            let (at4, at5) = flows_to(&mut net, &[long]);
            assert!(at5.is_empty(), "change {change}: the long flow moved");
            assert!(at4.len() <= 1);
        }
        let nearest = if shortcut { NodeId(5) } else { NodeId(4) };
        let dst = {
            let mut d = [0u8; 16];
            d[..4].copy_from_slice(&[203, 0, 113, 9]);
            d
        };
        assert_eq!(net.nodes[0].choose_egress(&dst, true), Some(nearest));
        // What `braid ctl stats` shows as the choice for new flows, from
        // the long flow's latest packet, while that flow stays kept.
        assert_eq!(
            net.nodes[0].flow_pins().latest_choice(),
            Some(nearest),
            "change {change}"
        );
        let new = 100 + change;
        let (at4, at5) = flows_to(&mut net, &[new, long]);
        let at_nearest = if shortcut { &at5 } else { &at4 };
        assert!(
            at_nearest.contains(&new),
            "change {change}: {at4:?} {at5:?}"
        );
        assert!(at4.contains(&long), "change {change}");
    }
    let (c, pinned) = net.nodes[0].gateway_counters();
    assert_eq!(c.flows_moved, 0, "{c:?}");
    assert!(c.packets_kept >= 50, "{c:?}");
    assert_eq!(pinned, 11);
}

/// Issue 33: a primary gateway (4, preference 200, 1 Gbit/s) and an
/// LTE-like backup (5, preference 10, 50 Mbit/s) that is nearer: nothing
/// goes to the backup while the primary serves; everything, old flows
/// too, once the primary's uplink fails; new flows back to the primary
/// once it recovers. Then with both preferred alike and spreading on,
/// flows split in proportion to capacity.
#[test]
fn gateways_are_chosen_by_preference_and_spread_by_capacity() {
    let gateway = |preference, capacity_kbps| braid_wire::Prefix::Gateway {
        preference,
        capacity_kbps,
    };
    let default = braid_wire::Prefix::V4 {
        addr: [0, 0, 0, 0],
        len: 0,
    };
    let g = [gateway(200, 1_000_000), gateway(10, 50_000)];
    let mut net = two_gateways(24, Default::default(), Some(g));
    net.link(0, 4, 0.0);
    net.run_for(Duration::from_secs(5));
    let first: Vec<u16> = (1..=50).collect();
    let (at4, at5) = flows_to(&mut net, &first);
    assert_eq!(
        (at4.len(), at5.len()),
        (50, 0),
        "the primary, though farther"
    );
    net.nodes[3].set_external_prefixes(External::Uplink, vec![]);
    let (at4, at5) = flows_to(&mut net, &first);
    assert!(at4.len() <= 2 && at4.len() + at5.len() == 50, "{at4:?}");
    let (at4, at5) = flows_to(&mut net, &first);
    assert_eq!((at4.len(), at5.len()), (0, 50), "all on the backup");
    net.nodes[3].set_external_prefixes(External::Uplink, vec![default, g[0]]);
    net.run_for(Duration::from_millis(1100));
    let second: Vec<u16> = (51..=100).collect();
    let (at4, at5) = flows_to(&mut net, &second);
    assert_eq!((at4.len(), at5.len()), (50, 0), "new flows at the primary");
    let (at4, at5) = flows_to(&mut net, &first);
    assert_eq!(
        (at4.len(), at5.len()),
        (0, 50),
        "old ones kept on the backup"
    );

    // Preferred alike, 3:1 in capacity, spreading on.
    let choice = braid_proto::node::GatewayChoice {
        spread: true,
        ..Default::default()
    };
    let g = [gateway(100, 30_000), gateway(100, 10_000)];
    let mut net = two_gateways(25, choice, Some(g));
    let flows: Vec<u16> = (1..=400).collect();
    let (at4, at5) = flows_to(&mut net, &flows);
    assert_eq!(at4.len() + at5.len(), 400);
    let share = at4.len() as f64 / 400.0;
    eprintln!(
        "spread: {} to 4 (30 Mbit/s), {} to 5 (10)",
        at4.len(),
        at5.len()
    );
    assert!((0.65..=0.85).contains(&share), "{share}");
    // And each flow stays where it was sent.
    let (again4, _) = flows_to(&mut net, &flows);
    assert_eq!(again4, at4);
}

/// Issue 33: a client on a shared radio is heard by two access points (1
/// and 2), and both forward each of its packets toward the gateway (4):
/// the gateway delivers each once, the copies counted; with the copy
/// window off, every copy leaves (the uplink pays for it).
#[test]
fn copies_of_a_clients_packet_from_two_access_points_leave_the_gateway_once() {
    let run = |window: Option<Duration>| -> (usize, u64) {
        let mut rng = ChaCha8Rng::seed_from_u64(26);
        let nodes = (1..=4u16)
            .map(|id| {
                let mut config = braid_proto::node::NodeConfig {
                    copy_window: window,
                    ..Default::default()
                };
                if id == 4 {
                    config.control.prefixes = vec![braid_wire::Prefix::V4 {
                        addr: [0, 0, 0, 0],
                        len: 0,
                    }];
                }
                Node::new(NodeId(id), config, Instant::ZERO, &mut rng).unwrap()
            })
            .collect();
        let mut net = Mesh::new(nodes, rng, LOSSY);
        // 1 - 3 - 4 and 2 - 4: the copies take paths of unequal length.
        for (a, b) in [(0, 2), (2, 3), (1, 3), (0, 1)] {
            net.link(a, b, 0.0);
        }
        net.run_until(secs(10));
        for i in 0..200u32 {
            let at = Instant(net.now.0 + 20_000);
            net.run_until(at);
            let mut p = host_packet([203, 0, 113, 9], i);
            p[4..6].copy_from_slice(&(i as u16).to_be_bytes());
            let now = net.now;
            net.nodes[0].send(now, &p);
            net.nodes[1].send(now, &p);
            net.flush();
        }
        net.run_for(Duration::from_millis(500));
        let delivered = std::iter::from_fn(|| net.nodes[3].poll_deliver()).count();
        (delivered, net.nodes[3].counters().copies_dropped)
    };
    assert_eq!(run(Some(Duration::from_millis(50))), (200, 200));
    assert_eq!(run(None), (400, 0), "without the window every copy leaves");
}

#[test]
fn a_path_found_after_the_first_joins_at_once_behind_the_primary() {
    // Only 1-2-5 exists (10% loss a link), then 1-3-5 appears (lossless,
    // a little cheaper: not by the damping margin) within the damping hold
    // of the first route. Mirror takes the second path as soon as the
    // topology knows it, behind the primary it already rides.
    let mut net = diamond(Mode::Mirror(2), 0.1, 3);
    let hidden = [(0, 2), (2, 4), (0, 3), (3, 4)];
    for (a, b) in hidden {
        net.links.remove(&(a, b));
        net.links.remove(&(b, a));
    }
    net.run_until(secs(20));
    stream(&mut net, 5);
    let first = net.nodes[0].paths_to(NodeId(5)).cloned().unwrap();
    assert_eq!(first, vec![vec![NodeId(2)]]);
    let found = net.now;
    for (a, b) in [(0, 2), (2, 4)] {
        net.link(a, b, 0.0);
    }
    let mut joined = None;
    while net.now < Instant(found.0 + 10_000_000) {
        stream(&mut net, 5);
        let paths = net.nodes[0].paths_to(NodeId(5)).cloned().unwrap();
        if paths.len() == 2 {
            joined = Some((net.now, paths));
            break;
        }
    }
    let (at, paths) = joined.expect("the second path joined");
    eprintln!("joined after {} ms: {paths:?}", (at.0 - found.0) / 1000);
    assert_eq!(paths, vec![vec![NodeId(2)], vec![NodeId(3)]]);
    assert!(
        at.0 - found.0 < 4_000_000,
        "joined {} ms after the first route (the hold is 5 s)",
        (at.0 - found.0) / 1000
    );
    // The cheaper path becomes the primary once the hold has passed (and
    // both ends of its links have measured them: a direction costs the
    // worse of its two ends' word).
    let mut swapped = None;
    while net.now < Instant(found.0 + 30_000_000) {
        stream(&mut net, 25);
        let paths = net.nodes[0].paths_to(NodeId(5)).cloned().unwrap();
        if paths[0] == vec![NodeId(3)] {
            swapped = Some((net.now, paths));
            break;
        }
    }
    let (at, paths) = swapped.expect("the cheaper path became the primary");
    eprintln!("primary swapped after {} ms", (at.0 - found.0) / 1000);
    assert_eq!(paths, vec![vec![NodeId(3)], vec![NodeId(2)]]);
    assert!(
        at.0 - found.0 >= 5_000_000,
        "swapped {} ms after the first route, within the 5-s hold",
        (at.0 - found.0) / 1000
    );
}

#[test]
fn an_echo_crosses_the_mesh_and_comes_back_with_its_number_and_stamp() {
    use braid_proto::node::NodeEvent;
    let mut net = diamond(Mode::Single, 0.0, 21);
    net.run_until(secs(10));
    // From node 1 to node 5, two hops away through 2, 3 or 4; and to a
    // transit router, which serves no prefix.
    for (target, seq) in [(NodeId(5), 7), (NodeId(3), 8)] {
        assert!(net.nodes[0].send_echo(net.now, target, seq, 0xfeed_0000 + u64::from(seq)));
        net.flush();
        let t = Instant(net.now.0 + 100_000);
        net.run_until(t);
        let replies: Vec<NodeEvent> = std::iter::from_fn(|| net.nodes[0].poll_event())
            .filter(|e| matches!(e, NodeEvent::EchoReply { .. }))
            .collect();
        assert_eq!(
            replies,
            vec![NodeEvent::EchoReply {
                from: target,
                seq,
                stamp: 0xfeed_0000 + u64::from(seq),
            }],
            "one reply from {target:?}"
        );
        let t = net.index(target);
        assert_eq!(
            net.nodes[t].counters().echoes_answered,
            1,
            "{target:?} answered once"
        );
        // Nothing reaches a host: echoes are the routers' own.
        assert!(net.nodes[t].poll_deliver().is_none());
    }
    // No path to a router nobody knows: refused at once.
    assert!(!net.nodes[0].send_echo(net.now, NodeId(99), 1, 0));
}

#[test]
fn an_equalising_sessions_first_packet_dates_every_path_at_once() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let stripe = Mode::Stripe { pin_flows: false };
    let nodes = common::nodes_with(5, stripe, 3, &mut rng, |c| c.equalise_delay = true);
    let mut net = Mesh::new(nodes, rng, LOSSY);
    for (a, b) in DIAMOND {
        net.link(a, b, 0.0);
    }
    net.run_until(secs(30));
    // No session yet, so no report yet: what comes next, with no timer
    // fired (flush moves datagrams only), is the early report.
    assert_eq!(net.nodes[0].counters().path_reports_received, 0);
    let start = net.now;
    net.nodes[0].send(start, &host_packet([198, 18, 5, 9], 0));
    net.flush();
    let c = net.nodes[0].counters();
    assert_eq!(c.probe_copies, 2, "a copy on each of the two other paths");
    assert!(
        c.path_reports_received >= 1,
        "the egress reported the paths' first packets at once: {c:?}"
    );
    // Every path is dated now: the next packets go once each.
    for i in 1..10 {
        net.nodes[0].send(start, &host_packet([198, 18, 5, 9], i));
        net.flush();
    }
    assert_eq!(net.nodes[0].counters().probe_copies, 2);
    let mut got = Vec::new();
    while let Some(p) = net.nodes[4].poll_deliver() {
        got.push(u32::from_be_bytes([p[28], p[29], p[30], p[31]]));
    }
    assert_eq!(got, (0..10).collect::<Vec<_>>(), "each delivered once");
    let copies: u64 = (net.nodes[4].egress().sessions())
        .filter(|((_, class), _)| *class != braid_proto::redundancy::CLASS_CONTROL)
        .map(|(_, s)| s.counters().duplicates)
        .sum();
    assert_eq!(copies, 2, "the copies, dropped at the egress");
}

#[test]
fn a_cost_override_at_one_end_keeps_traffic_off_the_link_both_ways() {
    use braid_proto::metric::CostFactor;
    use braid_proto::node::CostOverrides;
    // Three lossless two-hop paths from 1 to 5, through 2, 3 and 4. Node
    // 2 raises its link to 1 (by neighbor) and node 5 its link heard
    // from 3 (by interface: the harness numbers interfaces by sender):
    // only 2 and 5 are told, and every router routes around both links,
    // both ways, while the path through 4 stays at its measured cost.
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let nodes = common::nodes_with(5, Mode::Single, 7, &mut rng, |c| {
        c.max_paths = 1;
    });
    let mut net = Mesh::new(nodes, rng, LOSSY);
    for (a, b) in DIAMOND {
        net.link(a, b, 0.0);
    }
    net.run_until(secs(20));
    stream(&mut net, 5);
    let plain = net.nodes[0].paths_to(NodeId(5)).cloned().unwrap();
    assert_eq!(plain, vec![vec![NodeId(2)]], "equal costs: the lowest id");

    let factor = CostFactor::new(5.0).unwrap();
    let mut at_2 = CostOverrides::default();
    at_2.neighbors.insert(NodeId(1), factor);
    net.nodes[1].set_cost_overrides(at_2);
    let mut at_5 = CostOverrides::default();
    at_5.interfaces.insert(Interface(2), factor);
    net.nodes[4].set_cost_overrides(at_5);
    net.run_for(Duration::from_secs(10));
    stream(&mut net, 5);

    // Every router's topology holds the raised links, both directions.
    let cost = |net: &Mesh, at: usize, from: u16, to: u16| {
        let g = net.nodes[at].control().graph();
        let (a, b) = (
            g.index_of(NodeId(from)).unwrap(),
            g.index_of(NodeId(to)).unwrap(),
        );
        g.graph.arc(g.graph.find_arc(a, b).unwrap()).cost.as_cost()
    };
    for at in 0..5 {
        for (a, b) in [(1, 2), (2, 1), (3, 5), (5, 3)] {
            assert_eq!(cost(&net, at, a, b), 5.0, "at {}: {a}->{b}", at + 1);
        }
        for (a, b) in [(1, 4), (4, 1), (4, 5), (5, 4), (1, 3), (2, 5)] {
            assert_eq!(cost(&net, at, a, b), 1.0, "at {}: {a}->{b}", at + 1);
        }
    }
    // The damping hold (5 s) has passed: the path moves off 2.
    stream(&mut net, 5);
    let raised = net.nodes[0].paths_to(NodeId(5)).cloned().unwrap();
    assert_eq!(raised, vec![vec![NodeId(4)]]);

    // Taken back (a reload without them): the measured costs return.
    net.nodes[1].set_cost_overrides(CostOverrides::default());
    net.nodes[4].set_cost_overrides(CostOverrides::default());
    net.run_for(Duration::from_secs(10));
    assert_eq!(cost(&net, 0, 1, 2), 1.0);
    assert_eq!(cost(&net, 0, 5, 3), 1.0);
    assert_eq!(net.nodes[1].control().cost_factor(NodeId(1)), None);
}

/// Repair requests between whole nodes: the egress's request is a signed
/// node message, the ingress answers with repair that rebuilds what the
/// repair sent with the data did not. sliding:11,10 over three paths of
/// two hops losing 10% each (19% per path): a packet and its tail
/// repair are both lost a few times in a hundred; asked for, nearly all
/// comes back.
#[test]
fn an_egress_asks_for_the_repair_it_misses_and_the_ingress_sends_it() {
    let mode = Mode::Sliding {
        n: 11,
        m: 10,
        span: 32,
    };
    let mut net = diamond(mode, 0.1, 5);
    net.run_until(secs(30));
    let got = stream(&mut net, 1000);
    let (ingress, egress) = (net.nodes[0].counters(), net.nodes[4].counters());
    let session = net.nodes[0].ingress().session(NodeId(5), 0).unwrap();
    let on_request = session.counters().repair_on_request;
    eprintln!(
        "delivered {got} of 1000; requests sent {}, answered {}, unanswered {}; {on_request} repair packets on request",
        egress.repair_requests_sent, ingress.repair_requests_answered, ingress.repair_requests_unanswered
    );
    assert!(egress.repair_requests_sent > 0, "{egress:?}");
    assert!(ingress.repair_requests_answered > 0, "{ingress:?}");
    assert!(on_request > 0);
    // Lost requests and lost answers are asked again: 0.5% at most.
    assert!(got >= 995, "delivered {got} of 1000");
}
