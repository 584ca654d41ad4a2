//! What a lab scenario needs built, as a list of steps: namespaces, veth
//! pairs, addresses, impairments, routes, files and processes. Pure: the
//! plan of a scenario can be made and checked anywhere (the unit tests
//! check the shipped scenarios' plans without root); `exec.rs` carries one
//! out and owns tearing it down.

use std::path::Path;

use crate::link::LossParams;
use crate::routing;
use crate::scenario::{Lab, LabVariant, Software};
use crate::step::Step;

/// The shared segments: a bridge per segment that floods every frame to
/// every port (learning off: as a radio, every access point in range
/// hears a client's frames), a port per access point (its access
/// interface) and per client (an unmodified Linux stack: an address and a
/// default route via the segment's gateway), and the roams' starting
/// losses (the access point a client roams to is out of its range).
fn segments(lab: &Lab, steps: &mut Vec<Step>) {
    for (s, seg) in lab.segments.iter().enumerate() {
        let sns = lab.segment_ns(s);
        steps.push(Step::Namespace { ns: sns.clone() });
        steps.push(Step::Bridge {
            ns: sns.clone(),
            dev: "hub".into(),
        });
        steps.push(Step::Up {
            ns: sns.clone(),
            dev: "hub".into(),
        });
        let mut ports: Vec<(String, String, String)> = seg
            .access_points
            .iter()
            .map(|&ap| (lab.ns(ap), Lab::access_dev(s), Lab::port_dev(ap)))
            .collect();
        for c in (0..lab.clients.len()).filter(|&c| lab.clients[c].segment == s) {
            let cns = lab.client_ns(c);
            steps.push(Step::Namespace { ns: cns.clone() });
            ports.push((cns, "eth0".into(), Lab::client_port_dev(c)));
        }
        for (ns, dev, port) in ports {
            steps.push(Step::Veth {
                a: (ns.clone(), dev.clone()),
                b: (sns.clone(), port.clone()),
            });
            steps.push(Step::command(
                &sns,
                &["ip", "link", "set", &port, "master", "hub"],
            ));
            steps.push(Step::command(
                &sns,
                &[
                    "ip",
                    "link",
                    "set",
                    &port,
                    "type",
                    "bridge_slave",
                    "learning",
                    "off",
                ],
            ));
            steps.push(Step::Up {
                ns: sns.clone(),
                dev: port,
            });
            steps.push(Step::Up { ns, dev });
        }
        for c in (0..lab.clients.len()).filter(|&c| lab.clients[c].segment == s) {
            let cns = lab.client_ns(c);
            if lab.ipv6() {
                // Its SLAAC address follows from it (Lab::client_addr6).
                let mac = lab
                    .client_mac(c)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(":");
                steps.push(Step::command(
                    &cns,
                    &["ip", "link", "set", "eth0", "address", &mac],
                ));
            }
            steps.push(Step::Addr {
                ns: cns.clone(),
                dev: "eth0".into(),
                addr: lab.client_addr(c),
                len: Lab::segment_net(s).1,
            });
            steps.push(Step::DefaultRoute {
                ns: cns,
                via: Lab::segment_gateway(s),
            });
        }
    }
    for r in &lab.roams {
        steps.push(Step::PortLoss {
            segment: lab.clients[r.client].segment,
            ap: r.to,
            per_mille: 1000,
        });
    }
}

/// Plain routing's access points: each gives its access interface the
/// gateway's address and link address (as braid's daemon does) and its
/// own; every router routes each client to its home access point.
fn plain_access(lab: &Lab, steps: &mut Vec<Step>) {
    let mac = braid_daemon::config::DEFAULT_GATEWAY_MAC
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":");
    for (s, seg) in lab.segments.iter().enumerate() {
        for &ap in &seg.access_points {
            let (ns, dev) = (lab.ns(ap), Lab::access_dev(s));
            steps.push(Step::command(
                &ns,
                &["ip", "link", "set", &dev, "address", &mac],
            ));
            steps.push(Step::Addr {
                ns: ns.clone(),
                dev: dev.clone(),
                addr: lab.access_addr(s, ap),
                len: Lab::segment_net(s).1,
            });
            steps.push(Step::Addr {
                ns,
                dev,
                addr: Lab::segment_gateway(s),
                len: 32,
            });
        }
    }
    for c in 0..lab.clients.len() {
        for (ns, args) in routing::kernel::client_routes(lab, c, lab.home_of(c)) {
            steps.push(Step::Command { ns, args });
        }
    }
}

/// IPv6 for the ends (flows with `ipv6 = true`): routers forward it, each
/// host gets 2001:2:0:(router+1)::2/64 behind its router's ::1 (no
/// duplicate address detection: nobody else is on that link); clients
/// take theirs from the access points' router advertisements.
fn ipv6(lab: &Lab, steps: &mut Vec<Step>) {
    for i in 0..lab.routers.len() {
        let ns = lab.ns(i);
        steps.push(Step::Sysctl {
            ns: ns.clone(),
            key: "net.ipv6.conf.all.forwarding".into(),
            value: "1".into(),
        });
        if lab.routers[i].host {
            let h = lab.host_ns(i);
            let gw = Lab::gateway_addr6(i).to_string();
            steps.push(Step::command(
                &ns,
                &[
                    "ip",
                    "-6",
                    "addr",
                    "add",
                    &format!("{gw}/64"),
                    "dev",
                    "host0",
                    "nodad",
                ],
            ));
            let own = format!("{}/64", Lab::host_addr6(i));
            steps.push(Step::command(
                &h,
                &["ip", "-6", "addr", "add", &own, "dev", "eth0", "nodad"],
            ));
            steps.push(Step::command(
                &h,
                &[
                    "ip", "-6", "route", "add", "default", "via", &gw, "dev", "eth0",
                ],
            ));
        }
    }
}

/// The steps that build `lab` for `variant`. `exe` is the braid binary
/// (the daemons and the delay emulator run it).
pub fn plan(lab: &Lab, variant: &LabVariant, exe: &Path) -> anyhow::Result<Vec<Step>> {
    let mut steps = Vec::new();
    for i in 0..lab.routers.len() {
        router(lab, i, &mut steps);
    }
    for j in 0..lab.links.len() {
        link(lab, j, &mut steps);
    }
    segments(lab, &mut steps);
    internet(lab, &mut steps);
    match &variant.software {
        Software::Braid { .. } | Software::Babeld { .. } | Software::Kernel => {}
        _ if lab.has_internet() => anyhow::bail!(
            "variant {}: uplinks need braid, babeld or plain kernel routing",
            variant.name
        ),
        _ => {}
    }
    match &variant.software {
        Software::Braid { .. } | Software::Kernel => {}
        _ if !lab.segments.is_empty() => anyhow::bail!(
            "variant {}: segments and clients need braid or plain kernel routing",
            variant.name
        ),
        _ => {}
    }
    if lab.ipv6() {
        if !matches!(variant.software, Software::Braid { .. }) {
            anyhow::bail!("variant {}: IPv6 flows need braid routing", variant.name);
        }
        ipv6(lab, &mut steps);
    }
    software(lab, variant, exe, &mut steps)?;
    Ok(steps)
}

/// The internet beyond the gateways with an uplink: for the k-th, an ISP
/// namespace on its `up0` (its default route there, NAT to the ISP's
/// side, as a home or WISP gateway does), joined to the internet's
/// namespace, whose one host answers at [`Lab::INTERNET_HOST`] and routes
/// back to every ISP. Addresses: `names.rs`.
fn internet(lab: &Lab, steps: &mut Vec<Step>) {
    let gateways = lab.uplinks();
    if gateways.is_empty() {
        return;
    }
    let inet = lab.internet_ns();
    steps.push(Step::Namespace { ns: inet.clone() });
    steps.push(Step::command(
        &inet,
        &[
            "ip",
            "addr",
            "add",
            &format!("{}/32", Lab::INTERNET_HOST),
            "dev",
            "lo",
        ],
    ));
    for (k, &g) in gateways.iter().enumerate() {
        let (gw, isp) = (lab.ns(g), lab.isp_ns(k));
        let inet_dev = format!("isp{k}");
        steps.push(Step::Namespace { ns: isp.clone() });
        steps.push(Step::Sysctl {
            ns: isp.clone(),
            key: "net.ipv4.ip_forward".into(),
            value: "1".into(),
        });
        steps.push(Step::Veth {
            a: (gw.clone(), Lab::UPLINK_DEV.into()),
            b: (isp.clone(), "eth0".into()),
        });
        steps.push(Step::Veth {
            a: (isp.clone(), "eth1".into()),
            b: (inet.clone(), inet_dev.clone()),
        });
        for (ns, dev, addr, len) in [
            (&gw, Lab::UPLINK_DEV, Lab::uplink_addr(k, true), 24),
            (&isp, "eth0", Lab::uplink_addr(k, false), 24),
            (&isp, "eth1", Lab::transit_addr(k, true), 30),
            (&inet, inet_dev.as_str(), Lab::transit_addr(k, false), 30),
        ] {
            steps.push(Step::Addr {
                ns: ns.clone(),
                dev: dev.into(),
                addr,
                len,
            });
            steps.push(Step::Up {
                ns: ns.clone(),
                dev: dev.into(),
            });
        }
        steps.push(Step::DefaultRoute {
            ns: isp.clone(),
            via: Lab::transit_addr(k, false),
        });
        steps.push(Step::Route {
            ns: inet.clone(),
            dst: (Lab::uplink_net(k), 24),
            via: Lab::transit_addr(k, true),
            metric: None,
            table: None,
        });
        steps.push(Step::DefaultRoute {
            ns: gw.clone(),
            via: Lab::uplink_addr(k, false),
        });
        steps.push(Step::command(&gw, &["nft", "add", "table", "ip", "nat"]));
        steps.push(Step::command(
            &gw,
            &[
                "nft",
                "add chain ip nat post { type nat hook postrouting priority srcnat; }",
            ],
        ));
        steps.push(Step::command(
            &gw,
            &[
                "nft",
                &format!(
                    "add rule ip nat post oifname \"{}\" masquerade",
                    Lab::UPLINK_DEV
                ),
            ],
        ));
    }
}

/// Router `i`'s namespace, forwarding on, and its host (a namespace
/// behind it on a veth pair, with its address and default route).
fn router(lab: &Lab, i: usize, steps: &mut Vec<Step>) {
    let ns = lab.ns(i);
    steps.push(Step::Namespace { ns: ns.clone() });
    steps.push(Step::Sysctl {
        ns: ns.clone(),
        key: "net.ipv4.ip_forward".into(),
        value: "1".into(),
    });
    if !lab.routers[i].host {
        return;
    }
    let h = lab.host_ns(i);
    steps.push(Step::Namespace { ns: h.clone() });
    steps.push(Step::Veth {
        a: (ns.clone(), "host0".into()),
        b: (h.clone(), "eth0".into()),
    });
    steps.push(Step::Addr {
        ns: ns.clone(),
        dev: "host0".into(),
        addr: Lab::gateway_addr(i),
        len: 24,
    });
    steps.push(Step::Up {
        ns,
        dev: "host0".into(),
    });
    steps.push(Step::Addr {
        ns: h.clone(),
        dev: "eth0".into(),
        addr: Lab::host_addr(i),
        len: 24,
    });
    steps.push(Step::Up {
        ns: h.clone(),
        dev: "eth0".into(),
    });
    steps.push(Step::DefaultRoute {
        ns: h,
        via: Lab::gateway_addr(i),
    });
}

/// Link `j`: a veth pair, or two joined by the delay emulator's
/// namespace; its addresses, and its loss and rate at both ends.
fn link(lab: &Lab, j: usize, steps: &mut Vec<Step>) {
    let l = &lab.links[j];
    let dev = Lab::link_dev(j);
    let (na, nb) = (lab.ns(l.a), lab.ns(l.b));
    if l.delay.is_zero() && l.jitter.is_zero() {
        steps.push(Step::Veth {
            a: (na.clone(), dev.clone()),
            b: (nb.clone(), dev.clone()),
        });
    } else {
        emulated(lab, j, (&na, &nb), steps);
    }
    for (ns, router) in [(&na, l.a), (&nb, l.b)] {
        steps.push(Step::Addr {
            ns: ns.clone(),
            dev: dev.clone(),
            addr: lab.link_addr(j, router),
            len: 24,
        });
        steps.push(Step::Up {
            ns: ns.clone(),
            dev: dev.clone(),
        });
        if l.loss > 0.0 {
            steps.push(Step::Loss {
                ns: ns.clone(),
                dev: dev.clone(),
                params: LossParams::gilbert_elliott(l.loss, l.burst).sparing_arp(),
            });
        }
        if let Some(bps) = l.rate_bps {
            steps.push(Step::Rate {
                ns: ns.clone(),
                dev: dev.clone(),
                bps,
                queue: l.queue,
            });
        }
    }
}

/// A delayed link `j` between namespaces `na` and `nb`: each router's
/// end joins the emulator's namespace, which passes frames between its
/// two interfaces after the delay.
fn emulated(lab: &Lab, j: usize, (na, nb): (&String, &String), steps: &mut Vec<Step>) {
    let l = &lab.links[j];
    let dev = Lab::link_dev(j);
    let ne = lab.emulator_ns(j);
    steps.push(Step::Namespace { ns: ne.clone() });
    for (ns, side) in [(na, "ea"), (nb, "eb")] {
        steps.push(Step::Veth {
            a: (ns.clone(), dev.clone()),
            b: (ne.clone(), side.into()),
        });
        steps.push(Step::Up {
            ns: ne.clone(),
            dev: side.into(),
        });
        steps.push(Step::OffloadsOff {
            ns: ns.clone(),
            dev: dev.clone(),
        });
        steps.push(Step::OffloadsOff {
            ns: ne.clone(),
            dev: side.into(),
        });
    }
    steps.push(Step::Emulator {
        ns: ne,
        a: "ea".into(),
        b: "eb".into(),
        delay: l.delay,
        jitter: l.jitter,
        log: format!("d{j}"),
    });
}

/// The variant's routing: each router's daemon (braid, babeld, FRR), or
/// static kernel routes (with plain access points, or MPTCP's subflow
/// paths).
fn software(
    lab: &Lab,
    variant: &LabVariant,
    exe: &Path,
    steps: &mut Vec<Step>,
) -> anyhow::Result<()> {
    match &variant.software {
        Software::Braid { mode, datapath } => {
            for i in 0..lab.routers.len() {
                steps.extend(routing::braid::start(lab, i, mode, datapath, exe)?);
            }
        }
        Software::Babeld { hello } => {
            for i in 0..lab.routers.len() {
                steps.extend(routing::babeld::start(lab, i, *hello));
            }
        }
        Software::Ospf(ospf) => {
            if let Some(why) = routing::frr::missing() {
                anyhow::bail!("variant {}: {why}", variant.name);
            }
            for i in 0..lab.routers.len() {
                steps.extend(routing::frr::start(lab, i, *ospf));
            }
        }
        Software::Kernel => {
            steps.extend(routing::kernel::static_routes(lab));
            steps.extend(routing::kernel::default_routes(lab));
            plain_access(lab, steps);
        }
        Software::Mptcp => {
            steps.extend(routing::kernel::static_routes(lab));
            steps.extend(routing::mptcp::subflow_paths(lab)?);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::namespaces;
    use std::collections::BTreeSet;
    use std::time::Duration;

    fn shipped(name: &str) -> Lab {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/lab")
            .join(name);
        Lab::load(&p).unwrap()
    }

    const SHIPPED: [&str; 12] = [
        "chain.toml",
        "diamond.toml",
        "failover.toml",
        "grid100.toml",
        "handoff.toml",
        "smesh-roam.toml",
        "smesh-roam6.toml",
        "tree-bench.toml",
        "tree-line.toml",
        "urgent.toml",
        "wispr-5.3.toml",
        "wispr-fig10.toml",
    ];

    /// Every shipped scenario, every variant: namespaces are unique, every
    /// interface that gets an address or a qdisc was made by a veth step
    /// first, in a namespace made before, and every braid daemon's config
    /// is one the daemon itself accepts.
    #[test]
    fn plans_of_the_shipped_scenarios_are_consistent() {
        let exe = Path::new("/usr/bin/braid");
        for name in SHIPPED {
            let lab = shipped(name);
            for v in &lab.variants {
                let steps = plan(&lab, v, exe).unwrap();
                let mut made_ns = BTreeSet::new();
                let mut made_dev = BTreeSet::new();
                let mut files = std::collections::BTreeMap::new();
                for s in &steps {
                    let need = |ns: &str, dev: &str, made: &BTreeSet<(String, String)>| {
                        assert!(
                            made.contains(&(ns.to_string(), dev.to_string())),
                            "{name} [{}]: {dev} in {ns} used before it exists",
                            v.name
                        )
                    };
                    match s {
                        Step::Namespace { ns } => {
                            assert!(made_ns.insert(ns.clone()), "{name}: {ns} twice")
                        }
                        Step::Bridge { ns, dev } => {
                            assert!(made_ns.contains(ns), "{name}: {ns} not made yet");
                            assert!(made_dev.insert((ns.clone(), dev.clone())));
                        }
                        Step::Veth { a, b } => {
                            for (ns, dev) in [a, b] {
                                assert!(made_ns.contains(ns), "{name}: {ns} not made yet");
                                assert!(made_dev.insert((ns.clone(), dev.clone())));
                            }
                        }
                        Step::Up { ns, dev }
                        | Step::Addr { ns, dev, .. }
                        | Step::OffloadsOff { ns, dev }
                        | Step::Loss { ns, dev, .. }
                        | Step::Rate { ns, dev, .. } => need(ns, dev, &made_dev),
                        Step::File { name: f, contents } => {
                            files.insert(f.clone(), contents.clone());
                        }
                        Step::Daemon { router, args, .. }
                            if args.first().map(String::as_str) == Some("daemon") =>
                        {
                            let conf = &files[&format!("{}.toml", lab.routers[*router].name)];
                            let c = braid_daemon::config::Config::parse("plan", conf)
                                .unwrap_or_else(|e| panic!("{name}: {e}\n{conf}"));
                            assert_eq!(c.node.0 as usize, router + 1);
                            assert_eq!(c.interfaces, lab.interfaces_of(*router));
                        }
                        _ => {}
                    }
                }
                assert!(made_ns.len() >= lab.routers.len(), "{name}");
            }
        }
    }

    #[test]
    fn ipv6_flows_give_the_ends_ipv6_and_need_braid() {
        let base = "name = \"t\"\n[[router]]\nname = \"a\"\nhost = true\n[[router]]\nname = \"b\"\nhost = true\n\
             [[link]]\na = \"a\"\nb = \"b\"\n[[flow]]\nfrom = \"a\"\nto = \"b\"\nipv6 = true\n";
        let lab = Lab::parse("t.toml", base).unwrap();
        assert!(lab.ipv6());
        assert_eq!(
            lab.flow_addr(&lab.flows[0], 1).to_string(),
            "2001:2:0:2::2",
            "the host behind b"
        );
        let steps = plan(&lab, &lab.variants[0], Path::new("braid")).unwrap();
        let text = format!("{steps:?}");
        assert!(text.contains("net.ipv6.conf.all.forwarding"));
        assert!(text.contains("2001:2:0:1::1/64") && text.contains("2001:2:0:1::2/64"));
        let config = routing::braid::config(&lab, 0, "single", &Default::default()).unwrap();
        let toml = config.to_toml().unwrap();
        assert!(
            toml.contains("2001:2::/48") && toml.contains("2001:2:0:1::/64"),
            "{toml}"
        );
        let kernel = format!("{base}[[variant]]\nname = \"k\"\nsoftware = \"kernel\"\n");
        let lab = Lab::parse("t.toml", &kernel).unwrap();
        let err = plan(&lab, &lab.variants[0], Path::new("braid")).unwrap_err();
        assert!(err.to_string().contains("IPv6 flows need braid"), "{err}");
        let urgent = base.replace("ipv6 = true", "kind = \"urgent\"\nipv6 = true");
        let err = Lab::parse("t.toml", &urgent).unwrap_err();
        assert!(err.to_string().contains("flow[0].ipv6"), "{err}");
    }

    #[test]
    fn gateways_with_an_uplink_get_an_isp_nat_and_the_internet_beyond() {
        let lab = shipped("gateways.toml");
        let gw1 = lab.routers.iter().position(|r| r.name == "gw1").unwrap();
        let r = lab.routers.iter().position(|r| r.name == "r").unwrap();
        assert_eq!(lab.flows[0].to, lab.internet_end());
        assert_eq!(lab.end_name(lab.flows[0].to), "internet");
        assert_eq!(lab.end_addr(lab.flows[0].to).to_string(), "198.19.255.1");
        let braid = plan(&lab, &lab.variants[0], Path::new("braid")).unwrap();
        let made: Vec<&str> = namespaces(&braid).collect();
        for ns in [
            "braid-gateways-isp0",
            "braid-gateways-isp1",
            "braid-gateways-inet",
        ] {
            assert!(made.contains(&ns), "{made:?}");
        }
        let text = format!("{braid:?}");
        assert!(text.contains("masquerade"), "NAT at the gateways");
        // The gateway checks its uplink; the others send the rest into braid.
        let config =
            |i: usize| routing::braid::config(&lab, i, "single", &Default::default()).unwrap();
        let into_braid = |i: usize| {
            config(i)
                .tun
                .routes
                .iter()
                .any(|r| r.get_ref() == "0.0.0.0/0")
        };
        let gw = config(gw1).to_toml().unwrap();
        assert!(
            gw.contains("[uplink]") && gw.contains("198.19.255.1"),
            "{gw}"
        );
        assert!(!into_braid(gw1), "a gateway's own default is its ISP");
        assert!(config(r).uplink.is_none() && into_braid(r));
        // Static routes: r's default is gw1 (one hop), m's is gw2.
        let plain = plan(&lab, &lab.variants[1], Path::new("braid")).unwrap();
        let default_via = |name: &str| {
            plain.iter().find_map(|s| match s {
                Step::DefaultRoute { ns, via } if ns == &format!("braid-gateways-{name}") => {
                    Some(via.to_string())
                }
                _ => None,
            })
        };
        assert_eq!(default_via("r").as_deref(), Some("198.19.0.1"));
        assert_eq!(default_via("m").as_deref(), Some("198.19.2.2"));
        assert_eq!(
            default_via("gw1").as_deref(),
            Some("198.19.250.1"),
            "its ISP"
        );
        // OSPF has no way out here: refused.
        let ospf = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/lab/gateways.toml"),
        )
        .unwrap()
        .replace(
            "name = \"static routes\"\nsoftware = \"kernel\"",
            "name = \"o\"\nsoftware = \"ospf\"",
        );
        let lab = Lab::parse("g.toml", &ospf).unwrap();
        let err = plan(&lab, &lab.variants[1], Path::new("braid")).unwrap_err();
        assert!(err.to_string().contains("uplinks need"), "{err}");
    }

    #[test]
    fn a_lossy_delayed_link_is_emulated_and_impaired_at_both_ends() {
        let lab = Lab::parse(
            "t.toml",
            "name = \"t\"\n[[router]]\nname = \"a\"\nhost = true\n[[router]]\nname = \"b\"\nhost = true\n\
             [[link]]\na = \"a\"\nb = \"b\"\nloss = 0.05\nburst = 3\nrate = \"10Mbit\"\ndelay = \"10ms\"\n",
        )
        .unwrap();
        let steps = plan(&lab, &lab.variants[0], Path::new("braid")).unwrap();
        let loss: Vec<&Step> = steps
            .iter()
            .filter(|s| matches!(s, Step::Loss { .. }))
            .collect();
        assert_eq!(loss.len(), 2, "each receiving side");
        // A lossy link spares ARP (bpf/loss.c).
        let ge = LossParams::gilbert_elliott(0.05, 3.0).sparing_arp();
        assert!(loss
            .iter()
            .all(|s| matches!(s, Step::Loss { params, .. } if *params == ge)));
        assert_eq!(
            steps
                .iter()
                .filter(|s| matches!(
                    s,
                    Step::Rate {
                        bps: 10_000_000,
                        ..
                    }
                ))
                .count(),
            2
        );
        assert!(steps.contains(&Step::Emulator {
            ns: "braid-t-d0".into(),
            a: "ea".into(),
            b: "eb".into(),
            delay: Duration::from_millis(10),
            jitter: Duration::ZERO,
            log: "d0".into(),
        }));
        assert_eq!(
            namespaces(&steps).collect::<Vec<_>>(),
            [
                "braid-t-a",
                "braid-t-ah",
                "braid-t-b",
                "braid-t-bh",
                "braid-t-d0"
            ]
        );
    }
}
