//! Linux MPTCP as a peer: over the static kernel routes, every TCP flow's
//! sender gets one address per node-disjoint path (fewest hops first, as
//! braid computes them) and an MPTCP endpoint for each but the first
//! (which iperf3 binds to); each router along path k sends traffic from
//! that address along the path (a policy rule and a routing table of the
//! flow's and path's own), and the routers on the way back return traffic
//! to it the same way. UDP flows take the static routes.

use braid_proto::graph::GraphBuilder;
use braid_proto::metric::Metric;
use braid_proto::paths::{DisjointPaths, Disjointness};

use crate::scenario::{FlowKind, Lab};
use crate::step::Step;

/// The subflows' addresses, endpoints, rules and routes.
pub fn subflow_paths(lab: &Lab) -> anyhow::Result<Vec<Step>> {
    let mut g = GraphBuilder::new(lab.routers.len());
    for l in &lab.links {
        g.add_link(l.a as u32, l.b as u32, Some(Metric::ONE), Some(Metric::ONE));
    }
    let graph = g.build();
    let mut steps = Vec::new();
    for (i, f) in lab.flows.iter().enumerate() {
        if !matches!(f.kind, FlowKind::Iperf(_)) {
            continue;
        }
        let paths = DisjointPaths::new(&graph, f.from as u32)?.to(
            f.to as u32,
            lab.paths,
            Disjointness::Node,
        )?;
        for end in [f.from, f.to] {
            steps.push(Step::MptcpLimits {
                ns: lab.host_ns(end),
            });
        }
        for (k, path) in paths.iter().enumerate() {
            let addr = Lab::subflow_addr(f.from, k);
            let host = lab.host_ns(f.from);
            steps.push(Step::Addr {
                ns: host.clone(),
                dev: "eth0".into(),
                addr,
                len: 24,
            });
            if k > 0 {
                steps.push(Step::MptcpEndpoint {
                    ns: host,
                    addr,
                    dev: "eth0".into(),
                });
            }
            let table = (1000 + 8 * i + k) as u32;
            for &a in &path.arcs {
                let arc = graph.arc(a);
                let (u, v, j) = (arc.from as usize, arc.to as usize, arc.link as usize);
                steps.push(Step::Route {
                    ns: lab.ns(u),
                    dst: Lab::host_net(f.to),
                    via: lab.link_addr(j, v),
                    metric: None,
                    table: Some(table),
                });
                steps.push(Step::Rule {
                    ns: lab.ns(u),
                    from: addr,
                    table,
                });
                steps.push(Step::Route {
                    ns: lab.ns(v),
                    dst: (addr, 32),
                    via: lab.link_addr(j, u),
                    metric: None,
                    table: None,
                });
            }
        }
    }
    Ok(steps)
}
