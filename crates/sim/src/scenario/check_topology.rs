//! Checks the `[topology]` table (its counts bounded before anything is
//! built, each kind's required fields, a NetJSON file or named links), and
//! that the nodes the rest of the file names are in it.

use std::path::Path;

use braid_conf::Spanned;

use super::errors::Checker;
use super::raw::{RawFlow, RawLinkOverride, RawTopology};
use super::spec::MAX_SIM_NODES;
use crate::topology::TopologySpec;

/// The topology, or None with its problems recorded. Relative file names
/// start at `dir`.
pub(super) fn check_topology(
    ck: &mut Checker,
    t: &RawTopology,
    dir: &Path,
) -> Option<TopologySpec> {
    if !check_bounds(ck, t) {
        return None;
    }
    match t.kind.get_ref().as_str() {
        "line" => Some(TopologySpec::Line {
            nodes: need(ck, t, t.nodes, "nodes")?,
        }),
        "grid" => {
            let (width, height) = (
                need(ck, t, t.width, "width"),
                need(ck, t, t.height, "height"),
            );
            Some(TopologySpec::Grid {
                width: width?,
                height: height?,
            })
        }
        "parallel" => {
            let (paths, hops) = (need(ck, t, t.paths, "paths"), need(ck, t, t.hops, "hops"));
            Some(TopologySpec::Parallel {
                paths: paths?,
                hops: hops?,
            })
        }
        "geometric" => Some(TopologySpec::Geometric {
            nodes: need(ck, t, t.nodes, "nodes")?,
            degree: t.degree.unwrap_or(8.0),
        }),
        "wisp" => {
            let (nodes, edges) = (t.nodes.unwrap_or(64), t.edges.unwrap_or(41));
            if nodes < 2 || edges + 1 >= nodes {
                ck.refuse(
                    Some(t.kind.span()),
                    "topology.edges",
                    format!(
                        "a WISP of {nodes} nodes has room for at most {} edge sites besides the gateway and one relay",
                        nodes.saturating_sub(2)
                    ),
                );
                return None;
            }
            Some(TopologySpec::Wisp {
                nodes,
                edges,
                cross: t.cross.unwrap_or(8),
            })
        }
        "citymesh" => {
            let max_loss = t.max_loss.unwrap_or(0.5);
            if !(0.0..1.0).contains(&max_loss) {
                ck.refuse(
                    Some(t.kind.span()),
                    "topology.max_loss",
                    format!("{max_loss} is not a loss ratio in [0, 1)"),
                );
                return None;
            }
            Some(TopologySpec::CityMesh {
                nodes: t.nodes.unwrap_or(40),
                degree: t.degree.unwrap_or(6.0),
                max_loss,
            })
        }
        "netjson" => netjson(ck, t, dir),
        "links" => named_links(ck, t),
        other => {
            ck.refuse(
                Some(t.kind.span()),
                "topology.kind",
                format!(
                    "unknown topology \"{other}\" (line, grid, parallel, geometric, citymesh, wisp, netjson, links)"
                ),
            );
            None
        }
    }
}

/// Every count is bounded, and so is the grid's and the parallel paths'
/// product: a simulated mesh of at most [`MAX_SIM_NODES`] nodes. False
/// (recorded) when one is over; a product only when its factors are not.
fn check_bounds(ck: &mut Checker, t: &RawTopology) -> bool {
    let counts = [
        (t.nodes, "nodes"),
        (t.width, "width"),
        (t.height, "height"),
        (t.paths, "paths"),
        (t.hops, "hops"),
        (t.edges, "edges"),
    ];
    let products = [
        (
            t.width.zip(t.height).map(|(w, h)| w.saturating_mul(h)),
            "width",
        ),
        (
            t.paths.zip(t.hops).map(|(p, h)| p.saturating_mul(h)),
            "hops",
        ),
    ];
    let mut within = true;
    for (v, f) in counts {
        if v.is_some_and(|n| n > MAX_SIM_NODES) {
            within = false;
            over_limit(ck, t, f);
        }
    }
    if within {
        for (v, f) in products {
            if v.is_some_and(|n| n > MAX_SIM_NODES) {
                within = false;
                over_limit(ck, t, f);
            }
        }
    }
    within
}

fn over_limit(ck: &mut Checker, t: &RawTopology, f: &str) {
    ck.refuse(
        Some(t.kind.span()),
        &format!("topology.{f}"),
        format!("at most {MAX_SIM_NODES} nodes in a simulated topology"),
    );
}

/// A count this kind of topology needs, positive; None (recorded) when
/// absent or 0.
fn need(ck: &mut Checker, t: &RawTopology, v: Option<usize>, f: &str) -> Option<usize> {
    let found = v.filter(|&n| n > 0);
    if found.is_none() {
        ck.refuse(
            Some(t.kind.span()),
            &format!("topology.{f}"),
            format!(
                "a {} topology needs {f} (a positive number)",
                t.kind.get_ref()
            ),
        );
    }
    found
}

/// A NetJSON NetworkGraph's node ids and links (each once).
fn netjson(ck: &mut Checker, t: &RawTopology, dir: &Path) -> Option<TopologySpec> {
    let Some(f) = t.file.as_ref() else {
        ck.refuse(
            Some(t.kind.span()),
            "topology.file",
            "a netjson topology needs file = \"PATH\"",
        );
        return None;
    };
    let path = dir.join(f.get_ref());
    let read = braid_conf::read_text(&path).map_err(|e| {
        ck.err(
            Some(f.span()),
            "topology.file",
            format!("{}: {e}", path.display()),
        )
    });
    let text = ck.keep(read)?;
    let parsed = braid_proto::netjson::parse(&text).map_err(|e| {
        ck.err(
            Some(f.span()),
            "topology.file",
            format!("{}: {e}", path.display()),
        )
    });
    let topo = ck.keep(parsed)?;
    let g = &topo.graph;
    let mut edges: Vec<(u32, u32)> = (0..g.arc_count() as u32)
        .map(|a| g.arc(a))
        .map(|a| (a.from.min(a.to), a.from.max(a.to)))
        .collect();
    edges.sort_unstable();
    edges.dedup();
    Some(TopologySpec::NetJson {
        names: topo.names().to_vec(),
        edges,
    })
}

/// The `links` topology: named links written in the scenario, each
/// between two different nodes, none twice.
fn named_links(ck: &mut Checker, t: &RawTopology) -> Option<TopologySpec> {
    let Some(l) = t.links.as_ref() else {
        ck.refuse(
            Some(t.kind.span()),
            "topology.links",
            "a links topology needs links = [[\"a\", \"b\"], ...]",
        );
        return None;
    };
    let before = ck.count();
    let mut names: Vec<String> = Vec::new();
    let mut edges = Vec::new();
    for pair in l.get_ref() {
        if pair.len() != 2 || pair[0] == pair[1] {
            ck.refuse(
                Some(l.span()),
                "topology.links",
                "each link names two different nodes",
            );
            continue;
        }
        let mut ends = [0u32; 2];
        for (e, name) in ends.iter_mut().zip(pair) {
            *e = match names.iter().position(|n| n == name) {
                Some(i) => i as u32,
                None => {
                    names.push(name.clone());
                    names.len() as u32 - 1
                }
            };
        }
        let e = (ends[0].min(ends[1]), ends[0].max(ends[1]));
        if edges.contains(&e) {
            ck.refuse(
                Some(l.span()),
                "topology.links",
                format!("{} and {} are linked twice", pair[0], pair[1]),
            );
            continue;
        }
        edges.push(e);
    }
    (ck.count() == before).then_some(TopologySpec::NetJson { names, edges })
}

/// Parallel paths of one hop would be one link: refused.
pub(super) fn check_parallel_hops(ck: &mut Checker, topology: &TopologySpec, t: &RawTopology) {
    if let TopologySpec::Parallel { paths, hops } = *topology {
        if hops < 2 && paths > 1 {
            ck.refuse(
                Some(t.kind.span()),
                "topology.hops",
                "parallel paths need at least 2 hops (two nodes have one link between them)",
            );
        }
    }
}

/// True when `v` names a node of the topology; else records a problem
/// that lists some of them.
pub(super) fn known(ck: &mut Checker, names: &[String], v: &Spanned<String>, field: &str) -> bool {
    if names.iter().any(|n| n == v.get_ref()) {
        return true;
    }
    let some: Vec<&str> = names.iter().take(6).map(String::as_str).collect();
    ck.refuse(
        Some(v.span()),
        field,
        format!(
            "no node \"{}\" in this topology (nodes: {}{})",
            v.get_ref(),
            some.join(", "),
            if names.len() > 6 { ", ..." } else { "" }
        ),
    );
    false
}

/// Each flow's ends are nodes of the topology, and two different ones.
pub(super) fn check_flow_ends(ck: &mut Checker, flows: &[RawFlow], names: &[String]) {
    for (i, f) in flows.iter().enumerate() {
        let from = known(ck, names, &f.from, &format!("flows[{i}].from"));
        let to = known(ck, names, &f.to, &format!("flows[{i}].to"));
        if from && to && f.from.get_ref() == f.to.get_ref() {
            ck.refuse(
                Some(f.to.span()),
                &format!("flows[{i}].to"),
                "a flow needs two different nodes",
            );
        }
    }
}

/// Each `[[links]]` override names nodes of the topology.
pub(super) fn check_link_ends(ck: &mut Checker, links: &[RawLinkOverride], names: &[String]) {
    for (i, o) in links.iter().enumerate() {
        for end in o.between.get_ref() {
            if !names.contains(end) {
                ck.refuse(
                    Some(o.between.span()),
                    &format!("links[{i}].between"),
                    format!("no node \"{end}\" in this topology"),
                );
            }
        }
    }
}
