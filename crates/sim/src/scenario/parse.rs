//! Reading a scenario: the file's text deserialized ([`super::raw`]), then
//! checked part by part by the `check_*` functions in the order that
//! decides which problem is reported first, then assembled with every
//! default filled in.

use std::path::Path;
use std::time::Duration;

use braid_conf::{LocatedError, Source};
use braid_proto::redundancy::Mode;

use super::check_events::{check_node_failures, check_path_cuts, check_strangers};
use super::check_flows::{check_flows, check_random_flows};
use super::check_links::{check_link, check_link_overrides};
use super::check_nodes::{check_node_and_variants, check_radio, check_radio_needed};
use super::check_sweep::check_sweep;
use super::check_topology::{
    check_flow_ends, check_link_ends, check_parallel_hops, check_topology,
};
use super::errors::{Checker, ScenarioError};
use super::raw::Raw;
use super::spec::Scenario;
use crate::link::LinkSpec;
use crate::topology::TopologySpec;

impl Scenario {
    /// Reads and checks a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = braid_conf::read_text(path).map_err(|e| LocatedError {
            file: file.clone(),
            line: 0,
            field: "file".into(),
            message: e.to_string(),
        })?;
        Scenario::parse_in(&file, &text, path.parent().unwrap_or(Path::new(".")))
    }

    /// Parses scenario text; `file` names it in errors. Relative paths in
    /// it are taken from the current directory.
    pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_in(file, text, Path::new("."))
    }

    /// Parses scenario text whose relative paths start at `dir`. A file
    /// TOML cannot read is one problem; otherwise every problem the checks
    /// find is reported.
    pub fn parse_in(file: &str, text: &str, dir: &Path) -> Result<Scenario, ScenarioError> {
        let src = Source::new(file, text);
        let raw: Raw = src.parse()?;
        let mut ck = Checker::new(src);
        let scenario = check(&mut ck, raw, file, dir);
        ck.finish(scenario)
    }
}

/// Every check, in order; the scenario when all of it is right.
fn check(ck: &mut Checker, raw: Raw, file: &str, dir: &Path) -> Option<Scenario> {
    let topology = check_topology(ck, &raw.topology, dir);
    let names = topology.as_ref().map(TopologySpec::node_names);
    let names = names.as_deref();
    if let Some(names) = names {
        check_flow_ends(ck, &raw.flows, names);
        check_link_ends(ck, &raw.links, names);
    }
    let link = check_link(ck, &raw.link, &LinkSpec::default(), "link");
    let links = check_link_overrides(ck, &raw.links, link.as_ref());
    if let Some(topology) = &topology {
        check_parallel_hops(ck, topology, &raw.topology);
    }
    let models = link.as_ref().zip(links.as_deref());
    let sweep = check_sweep(ck, raw.sweep.as_ref(), topology.as_ref(), models);
    let node_failures = check_node_failures(ck, &raw.nodes, names);
    let duration = ck.duration(&raw.duration, "duration", Duration::from_secs(60));
    let strangers = check_strangers(ck, &raw.strangers, names, duration);
    let path_cuts = check_path_cuts(ck, &raw.path_cuts, duration);
    let (node, variants) = check_node_and_variants(ck, &raw);
    let radio = check_radio(ck, raw.radio.as_ref(), models);
    if raw.radio.is_none() {
        check_radio_needed(ck, node.as_ref(), &variants, models);
    }
    let areas = check_areas(ck, &raw.topology, names);
    let sparse_ids = check_ids(ck, &raw.topology);
    let random = check_random_flows(ck, raw.random_flows.as_ref(), names, raw.seed.unwrap_or(1));
    let first = random.as_ref().map_or(0, Vec::len);
    let listed = check_flows(ck, &raw.flows, first, duration);

    let mut flows = random?;
    flows.extend(listed?);
    let node = node?;
    Some(Scenario {
        name: raw.name.unwrap_or_else(|| file.to_string()),
        description: raw.description.unwrap_or_default(),
        duration: duration?,
        seed: raw.seed.unwrap_or(1),
        runs: raw.runs.unwrap_or(1).max(1),
        topology: topology?,
        link: link?,
        links: links?,
        mode: node.mode.unwrap_or(Mode::Single),
        paths: node.paths.unwrap_or(3),
        flush: node.flush.unwrap_or(Duration::from_millis(20)),
        reorder: node.reorder.unwrap_or(false),
        equalise_delay: node.equalise_delay.unwrap_or(false),
        pace: node.pace.unwrap_or(false),
        report_interval: node.report_interval,
        metric: node.metric.unwrap_or_default(),
        damping: node.damping.unwrap_or(true),
        ignore_tx_failures: node.ignore_tx_failures.unwrap_or(true),
        dead_after: node.dead_after,
        rate_control: node.rate_control.unwrap_or_default(),
        persistence: node.persistence.unwrap_or(1),
        bound: node
            .bound
            .unwrap_or(Some(braid_proto::node::LateBinding::DEFAULT_BOUND)),
        clients: node.clients.clone().unwrap_or_default(),
        radio: radio?,
        node_variants: variants.into_iter().collect::<Option<Vec<_>>>()?,
        flows,
        sweep: sweep?,
        node_failures: node_failures?,
        auth: node.auth.unwrap_or(false),
        sign_origins: node.sign_origins.unwrap_or(false),
        origin_check_cost: node.origin_check_cost.unwrap_or(Duration::ZERO),
        origin_sign_cost: node.origin_sign_cost.unwrap_or(Duration::ZERO),
        watch_flooding: node.watch_flooding.unwrap_or(false),
        strangers: strangers?,
        areas: areas?,
        sparse_ids: sparse_ids?,
        path_cuts: path_cuts?,
    })
}

/// `[topology] ids`: "dense" (each router's id is its index, the
/// default) or "sparse".
fn check_ids(ck: &mut Checker, t: &super::raw::RawTopology) -> Option<bool> {
    let Some(ids) = &t.ids else {
        return Some(false);
    };
    match ids.get_ref().as_str() {
        "dense" => Some(false),
        "sparse" => Some(true),
        other => {
            ck.refuse(
                Some(ids.span()),
                "topology.ids",
                format!(
                    "\"{other}\": dense (each router's id is its index) or sparse (ids drawn from 0-65,534)"
                ),
            );
            None
        }
    }
}

/// `[topology] areas`: 1 to [`super::spec::MAX_AREAS`], and no more than
/// the nodes.
fn check_areas(
    ck: &mut Checker,
    t: &super::raw::RawTopology,
    names: Option<&[String]>,
) -> Option<usize> {
    let Some(areas) = &t.areas else {
        return Some(0);
    };
    let n = *areas.get_ref();
    let nodes = names.map_or(usize::MAX, <[String]>::len);
    if n == 0 || n > super::spec::MAX_AREAS || n > nodes {
        ck.refuse(
            Some(areas.span()),
            "topology.areas",
            format!(
                "{n} areas: 1 to {} and at most one per node",
                super::spec::MAX_AREAS
            ),
        );
        return None;
    }
    Some(n)
}
