//! `braid paths`: k disjoint paths or an SMesh entry-point tree on a
//! NetJSON topology, printed as JSON.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use braid_proto::graph::NodeIx;
use braid_proto::metric::path_cost_as_f64;
use braid_proto::netjson::{self, Topology};
use braid_proto::paths::{entry_tree, DisjointPaths, Disjointness};
use clap::{Args, ValueEnum};
use serde::Serialize;

#[derive(Args)]
pub struct PathsArgs {
    /// NetJSON NetworkGraph file.
    #[arg(long, value_name = "FILE")]
    topology: PathBuf,
    /// Source node id.
    #[arg(long, value_name = "NODE")]
    from: String,
    /// Destination node id (required unless --tree-to is given).
    #[arg(long, value_name = "NODE", required_unless_present = "tree_to")]
    to: Option<String>,
    /// Number of paths wanted.
    #[arg(long, default_value_t = 1, value_name = "N")]
    k: usize,
    /// What the paths must not share.
    #[arg(long, value_enum, default_value_t = DisjointArg::Node)]
    disjoint: DisjointArg,
    /// Print the entry-point tree from --from to these destinations instead.
    #[arg(
        long,
        value_name = "B,C,...",
        value_delimiter = ',',
        conflicts_with = "to"
    )]
    tree_to: Option<Vec<String>>,
}

#[derive(Clone, Copy, ValueEnum)]
enum DisjointArg {
    Node,
    Edge,
}

#[derive(Serialize)]
struct PathsOut<'a> {
    from: &'a str,
    to: &'a str,
    disjoint: &'a str,
    paths: Vec<PathOut<'a>>,
}

#[derive(Serialize)]
struct PathOut<'a> {
    nodes: Vec<&'a str>,
    cost: f64,
    shared: bool,
}

#[derive(Serialize)]
struct TreeOut<'a> {
    entry: &'a str,
    next_hops: BTreeMap<&'a str, Vec<&'a str>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unreachable: Vec<&'a str>,
}

fn node(topo: &Topology, name: &str, what: &str) -> Result<NodeIx> {
    match topo.node(name) {
        Some(v) => Ok(v),
        None => bail!("{what} node \"{name}\" is not in the topology"),
    }
}

/// Exit 0 with the answer; exit 1 (after printing the empty answer) when
/// the destination is unreachable; errors are exit 2 (in main).
pub fn run(args: PathsArgs) -> Result<ExitCode> {
    let text = braid_conf::read_text(&args.topology)
        .with_context(|| format!("cannot read {}", args.topology.display()))?;
    let topo = netjson::parse(&text).with_context(|| format!("{}", args.topology.display()))?;
    let from = node(&topo, &args.from, "--from")?;
    let names = |v: &[NodeIx]| -> Vec<&str> { v.iter().map(|&x| topo.name(x)).collect() };

    if let Some(dests) = &args.tree_to {
        let dests: Vec<NodeIx> = dests
            .iter()
            .map(|d| node(&topo, d, "--tree-to"))
            .collect::<Result<_>>()?;
        let tree = entry_tree(&topo.graph, from, &dests);
        let out = TreeOut {
            entry: topo.name(from),
            next_hops: tree
                .next_hops
                .iter()
                .map(|(&v, hops)| (topo.name(v), names(hops)))
                .collect(),
            unreachable: names(&tree.unreachable),
        };
        println!("{}", serde_json::to_string(&out)?);
        return Ok(exit_for(tree.unreachable.is_empty()));
    }

    let to_name = args
        .to
        .as_deref()
        .expect("clap requires --to without --tree-to");
    let to = node(&topo, to_name, "--to")?;
    let mode = match args.disjoint {
        DisjointArg::Node => Disjointness::Node,
        DisjointArg::Edge => Disjointness::Edge,
    };
    let paths = DisjointPaths::new(&topo.graph, from)?.to(to, args.k, mode)?;
    let out = PathsOut {
        from: topo.name(from),
        to: topo.name(to),
        disjoint: mode.as_str(),
        paths: paths
            .iter()
            .map(|p| PathOut {
                nodes: names(&p.nodes),
                cost: path_cost_as_f64(p.cost),
                shared: p.shared,
            })
            .collect(),
    };
    println!("{}", serde_json::to_string(&out)?);
    if paths.is_empty() {
        eprintln!(
            "braid: no path from {} to {}",
            topo.name(from),
            topo.name(to)
        );
    }
    Ok(exit_for(!paths.is_empty()))
}

fn exit_for(found: bool) -> ExitCode {
    if found {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
