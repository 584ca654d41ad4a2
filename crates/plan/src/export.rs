//! What a plan hands on: a design as a NetJSON NetworkGraph (which
//! `braid plan` reads back and `braid sim` and `braid paths` run), and the
//! rain-fade scenario that shows what braid's modes do on it.

use std::collections::VecDeque;

use serde_json::{json, Map, Value};

use crate::design::{Design, Equipment, Problem};
use crate::network::Network;

/// A design as NetJSON: every site, one link per pair carrying radios
/// (parallel radios listed in `properties.radios`), the constraints and
/// the line-of-sight pairs still unused. Each link's routing `cost` is
/// today's where given, else 1.0 (braid measures ETX once it runs).
pub fn topology_json(problem: &Problem, design: &Design, label: &str) -> String {
    let net = problem.net;
    let nodes: Vec<Value> = net
        .sites
        .iter()
        .map(|s| {
            let mut props = Map::new();
            props.insert("role".into(), json!(s.role.as_str()));
            if let Some((lat, lon)) = s.position {
                props.insert("lat".into(), json!(lat));
                props.insert("lon".into(), json!(lon));
            }
            if let Some(m) = s.max_links {
                props.insert("max_links".into(), json!(m));
            }
            let mut node = Map::new();
            node.insert("id".into(), json!(s.id));
            if let Some(l) = &s.label {
                node.insert("label".into(), json!(l));
            }
            node.insert("properties".into(), Value::Object(props));
            Value::Object(node)
        })
        .collect();
    let mut links = Vec::new();
    let mut unused_sight = Vec::new();
    for (p, pair) in net.pairs.iter().enumerate() {
        let mut radios = Vec::new();
        for (c, &k) in problem.choices[p].iter().zip(&design.counts[p]) {
            for _ in 0..k {
                let mut r = Map::new();
                let model = match c.equipment {
                    Equipment::Existing { radio } => pair.radios[radio].model.clone(),
                    Equipment::Model(m) => Some(problem.catalogue.models[m].name.clone()),
                };
                if let Some(m) = model {
                    r.insert("model".into(), json!(m));
                }
                r.insert("capacity_mbps".into(), json!(c.capacity_mbps));
                r.insert("channel_mhz".into(), json!(c.channel_mhz));
                r.insert("price".into(), json!(c.list_price));
                radios.push(Value::Object(r));
            }
        }
        let (a, b) = (&net.sites[pair.a].id, &net.sites[pair.b].id);
        if radios.is_empty() {
            if !pair.exists() {
                unused_sight.push(json!({"source": a, "target": b, "distance_m": pair.distance_m}));
            }
            continue;
        }
        let capacity: f64 = problem.pair_capacity(design)[p];
        links.push(json!({
            "source": a,
            "target": b,
            "cost": pair.routing_cost.unwrap_or(1.0),
            "properties": {
                "distance_m": pair.distance_m,
                "capacity_mbps": capacity,
                "radios": radios,
            }
        }));
    }
    let c = &net.constraints;
    let mut plan = Map::new();
    plan.insert(
        "channels".into(),
        Value::Object(
            c.channels
                .iter()
                .map(|(w, n)| (w.to_string(), json!(n)))
                .collect(),
        ),
    );
    plan.insert("angular_separation_deg".into(), json!(c.separation_deg));
    if let Some(m) = c.max_links_per_site {
        plan.insert("max_links_per_site".into(), json!(m));
    }
    plan.insert("max_parallel".into(), json!(c.max_parallel));
    plan.insert("line_of_sight".into(), Value::Array(unused_sight));
    let doc = json!({
        "type": "NetworkGraph",
        "protocol": "braid",
        "version": "0.1",
        "metric": "etx",
        "label": label,
        "nodes": nodes,
        "links": links,
        "plan": Value::Object(plan),
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// Where the rain falls in the fade scenario, and who notices.
#[derive(Debug, Clone, PartialEq)]
pub struct Fade {
    /// The pair that fades: of the links every compared design keeps,
    /// the one the most edge sites depend on today (losing it cuts them
    /// off), nearest the gateway on ties.
    pub pair: usize,
    /// The edge sites the flows go to: up to four of those cut off.
    pub flows_to: Vec<usize>,
}

/// Picks the fade among today's links that carry radios in every one of
/// `designs` (so each compared network has the link the rain falls on):
/// the one whose loss cuts off the most edge sites today. None when no
/// link is in all of them.
pub fn fade(problem: &Problem, designs: &[&Design]) -> Option<Fade> {
    let net = problem.net;
    let kept = |p: usize| designs.iter().all(|d| d.counts[p].iter().any(|&k| k > 0));
    let links: Vec<usize> = (0..net.pairs.len())
        .filter(|&p| net.pairs[p].exists() && kept(p))
        .collect();
    let depth = hops_from_gateway(net, None);
    let mut best = (0usize, usize::MAX, *links.first()?, Vec::new());
    for &p in &links {
        let reach = hops_from_gateway(net, Some(p));
        let cut: Vec<usize> = net
            .edges()
            .into_iter()
            .filter(|&k| reach[k].is_none())
            .collect();
        let pair = &net.pairs[p];
        let near = depth[pair.a].min(depth[pair.b]).unwrap_or(usize::MAX);
        if cut.len() > best.0 || (cut.len() == best.0 && near < best.1) {
            best = (cut.len(), near, p, cut);
        }
    }
    let mut flows_to = best.3;
    if flows_to.is_empty() {
        // Nothing is cut off by any single link: the far end's edge
        // sites nearest it still see the fade on their primary path.
        flows_to = net.edges();
    }
    flows_to.truncate(4);
    Some(Fade {
        pair: best.2,
        flows_to,
    })
}

/// Hops from the gateway over today's links, without pair `skip`.
fn hops_from_gateway(net: &Network, skip: Option<usize>) -> Vec<Option<usize>> {
    let n = net.sites.len();
    let mut adj = vec![Vec::new(); n];
    for (p, pair) in net.pairs.iter().enumerate() {
        if pair.exists() && Some(p) != skip {
            adj[pair.a].push(pair.b);
            adj[pair.b].push(pair.a);
        }
    }
    let mut hops = vec![None; n];
    hops[net.gateway] = Some(0);
    let mut queue = VecDeque::from([net.gateway]);
    while let Some(v) = queue.pop_front() {
        let h = hops[v].unwrap_or(0);
        for &w in &adj[v] {
            if hops[w].is_none() {
                hops[w] = Some(h + 1);
                queue.push_back(w);
            }
        }
    }
    hops
}

/// The rain-fade scenario (braid sim's TOML) on `topology_file` (a path
/// relative to the scenario): the fade pair's loss ramps 0 -> 60% -> 0
/// between 35 s and 65 s; VoIP from the gateway to each chosen edge site;
/// single path against mirroring over two disjoint paths.
pub fn fade_scenario(
    net: &Network,
    fade: &Fade,
    topology_file: &str,
    name: &str,
    runs: u32,
) -> String {
    let pair = &net.pairs[fade.pair];
    let (a, b) = (&net.sites[pair.a].id, &net.sites[pair.b].id);
    let mut s = format!(
        "# Written by braid plan: a rain fade on {a}-{b} (the link the most edge\n\
         # sites depend on today), VoIP from the gateway to edge sites behind it.\n\
         # Parallel radios on a pair fade together (the same rain), so the\n\
         # simulator models each pair as one link.\n\
         name = \"{name}\"\n\
         description = \"Rain fade on {a}-{b} (0 -> 60% -> 0 over 30 s), VoIP from the gateway\"\n\
         duration = \"80s\"\n\
         seed = 1\n\
         runs = {runs}\n\n\
         [topology]\n\
         kind = \"netjson\"\n\
         file = \"{topology_file}\"\n\n\
         [link]\n\
         delay = \"2ms\"\n\n\
         [[links]]\n\
         between = [\"{a}\", \"{b}\"]\n\
         fade = [[\"35s\", 0.0], [\"50s\", 0.6], [\"65s\", 0.0]]\n\n\
         [node]\n\
         paths = 2\n"
    );
    let gateway = &net.sites[net.gateway].id;
    for &k in &fade.flows_to {
        let to = &net.sites[k].id;
        s += &format!(
            "\n[[flows]]\nname = \"voip-{to}\"\nfrom = \"{gateway}\"\nto = \"{to}\"\nsize = 160\ninterval = \"20ms\"\ncount = 2000\nstart = \"30s\"\n"
        );
    }
    s += "\n[sweep]\nmodes = [\"single\", \"mirror:2\"]\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instances::{EXAMPLE_NETWORK as NET, EXAMPLE_PRICES as PRICES};
    use crate::network::parse;
    use crate::prices::parse_csv;

    #[test]
    fn a_design_written_out_reads_back_the_same() {
        let net = parse(NET).unwrap();
        let cat = parse_csv(PRICES).unwrap();
        let problem = Problem::new(&net, &cat, false).unwrap();
        let mut design = problem.today();
        // One m4 on the line-of-sight pair gw-e1.
        let m4 = problem.choices[3]
            .iter()
            .position(|c| c.equipment == Equipment::Model(1))
            .unwrap();
        design.counts[3][m4] = 1;
        // And an m1 beside r-e2's radio: two radios listed on one link.
        let m1 = problem.choices[2]
            .iter()
            .position(|c| c.equipment == Equipment::Model(0))
            .unwrap();
        design.counts[2][m1] = 1;
        let text = topology_json(&problem, &design, "proposed");
        let again = parse(&text).unwrap();
        assert_eq!(again.sites, net.sites);
        assert_eq!(again.pairs.len(), 4);
        let cat2 = parse_csv(PRICES).unwrap();
        let p2 = Problem::new(&again, &cat2, false).unwrap();
        let e1 = problem.evaluate(&design);
        let e2 = p2.evaluate(&p2.today());
        assert_eq!(e1.network_mbps, e2.network_mbps);
        assert_eq!(e1.per_edge_mbps, e2.per_edge_mbps);
        assert_eq!(e1.list_cost, e2.list_cost);
        assert!(
            again.pairs.iter().all(|p| p.exists()),
            "the sight pair became a link"
        );
    }

    #[test]
    fn the_fade_falls_on_the_link_most_edge_sites_need() {
        let net = parse(NET).unwrap();
        let cat = parse_csv(PRICES).unwrap();
        let problem = Problem::new(&net, &cat, false).unwrap();
        let today = problem.today();
        let f = fade(&problem, &[&today]).unwrap();
        assert_eq!(f.pair, 0, "gw-r cuts off both edge sites");
        assert_eq!(f.flows_to, vec![2, 3]);
        let toml = fade_scenario(&net, &f, "today.json", "fade-today", 2);
        assert!(toml.contains("between = [\"gw\", \"r\"]"));
        assert_eq!(toml.matches("[[flows]]").count(), 2);
        // A design without gw-r: the rain falls on a link every design has.
        let mut rerouted = today.clone();
        rerouted.counts[0].iter_mut().for_each(|k| *k = 0);
        let f = fade(&problem, &[&today, &rerouted]).unwrap();
        assert_ne!(f.pair, 0);
        assert!(net.pairs[f.pair].exists());
        // A design with none of today's links: no fade to compare.
        let mut elsewhere = problem.empty();
        let m1 = problem.choices[3]
            .iter()
            .position(|c| c.equipment == Equipment::Model(0))
            .unwrap();
        elsewhere.counts[3][m1] = 1;
        assert_eq!(fade(&problem, &[&today, &elsewhere]), None);
    }
}
