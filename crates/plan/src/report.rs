//! The planning report: table 2's comparison (today, least cost at a
//! capacity, most capacity at a budget) beside the paper's figures, the
//! links to add or replace, min cuts per edge site before and after, path
//! multiplicity (figure 8), the price fit (figures 6 and 7) and the rain
//! fade in the simulator; as one self-contained HTML page and as the short
//! text `braid plan` prints.

use std::fmt::Write;

use braid_sim::html::{self, escape, Series};

use crate::design::{Design, Equipment, Evaluation, Problem};
use crate::fit::{parallel_table, QuadraticFit};
use crate::optimize::Plan;
use crate::paths::{cdf, Addition, EdgePaths};
use crate::units::{self, money, thousands};

/// Paths counted for one kind and number of added links.
#[derive(Debug, Clone)]
pub struct Growth {
    /// What was added.
    pub kind: Addition,
    /// How many of each kind.
    pub added: usize,
    /// Per edge site.
    pub per_edge: Vec<EdgePaths>,
}

/// One flow's delivered fraction in the rain fade, per topology.
#[derive(Debug, Clone, PartialEq)]
pub struct FadeRow {
    /// The flow's name.
    pub flow: String,
    /// braid's mode.
    pub mode: String,
    /// Delivered fraction on each topology (today's first).
    pub delivered: Vec<f64>,
}

/// Everything the report shows.
#[derive(Debug, Clone)]
pub struct Report<'a> {
    /// The network's name (its file).
    pub title: String,
    /// The problem planned.
    pub problem: &'a Problem<'a>,
    /// Today's network.
    pub today: Evaluation,
    /// Today's paths per edge site.
    pub today_paths: Vec<EdgePaths>,
    /// Paths after random additions (figure 8).
    pub growth: Vec<Growth>,
    /// Additions that could not be made, and why.
    pub growth_skipped: Vec<String>,
    /// The cross links came from the line-of-sight pairs (else any pair).
    pub cross_from_line_of_sight: bool,
    /// Bound on the paths counted per edge site.
    pub path_cap: u64,
    /// The price fit, or why there is none.
    pub fit: Result<QuadraticFit, String>,
    /// Least cost at this network min cut (Mbit/s), and the plan.
    pub least_cost: Option<(f64, Plan)>,
    /// Most capacity at this budget, and the plan.
    pub most_capacity: Option<(f64, Plan)>,
    /// The faded pair, the topologies simulated (today's first) and the
    /// flows' delivery, if simulated.
    pub fade: Option<(String, Vec<String>, Vec<FadeRow>)>,
}

/// WISPR's table 2 (Mendocino, 64 nodes): base, least cost, most capacity.
pub const PAPER_TABLE_2: [(&str, f64, f64); 3] = [
    ("Base topology", 2_500.0, 27_565.0),
    ("Fixed capacity, min cost", 2_500.0, 19_133.0),
    ("Fixed cost, max capacity", 12_700.0, 27_353.0),
];

/// A change to one pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// `a-b`.
    pub pair: String,
    /// Metres.
    pub distance_m: f64,
    /// add link, add parallel, replace, remove, or change.
    pub action: &'static str,
    /// Today's radios, in words.
    pub today: String,
    /// The proposed radios, in words.
    pub proposed: String,
    /// Capacity today and proposed, Mbit/s.
    pub capacity_mbps: (f64, f64),
    /// What the new radios cost.
    pub buy: f64,
}

/// The pairs a design changes, in pair order.
pub fn changes(problem: &Problem, design: &Design) -> Vec<Change> {
    let today = problem.today();
    let caps_today = problem.pair_capacity(&today);
    let caps = problem.pair_capacity(design);
    let mut out = Vec::new();
    for (p, pair) in problem.net.pairs.iter().enumerate() {
        if design.counts[p] == today.counts[p]
            || same_radios(problem, p, &design.counts[p], &today.counts[p])
        {
            continue;
        }
        let words = |counts: &[u32]| -> String {
            let parts: Vec<String> = problem.choices[p]
                .iter()
                .zip(counts)
                .filter(|(_, &k)| k > 0)
                .map(|(c, &k)| format!("{k} x {}", c.name))
                .collect();
            if parts.is_empty() {
                "none".into()
            } else {
                parts.join(" + ")
            }
        };
        let mut kept_all = true;
        let mut kept_any = false;
        let mut buy = 0.0;
        for (c, (&now, &then)) in problem.choices[p]
            .iter()
            .zip(design.counts[p].iter().zip(&today.counts[p]))
        {
            match c.equipment {
                Equipment::Existing { .. } => {
                    kept_all &= now == then;
                    kept_any |= now > 0;
                }
                Equipment::Model(_) => buy += c.list_price * f64::from(now),
            }
        }
        let added = design.counts[p]
            .iter()
            .zip(&problem.choices[p])
            .any(|(&k, c)| k > 0 && matches!(c.equipment, Equipment::Model(_)));
        let action = match (pair.exists(), kept_all, kept_any, added) {
            (false, _, _, _) => "add link",
            (true, true, _, true) => "add parallel",
            (true, _, false, true) => "replace",
            (true, _, false, false) => "remove",
            _ => "change",
        };
        out.push(Change {
            pair: format!(
                "{}-{}",
                problem.net.sites[pair.a].id, problem.net.sites[pair.b].id
            ),
            distance_m: pair.distance_m,
            action,
            today: words(&today.counts[p]),
            proposed: words(&design.counts[p]),
            capacity_mbps: (caps_today[p], caps[p]),
            buy,
        });
    }
    out
}

/// True when two bundles on pair `p` are the same radios in all but
/// name: today's radio and the model it is priced as (same capacity,
/// channel width and price) are one change of paperwork, not of gear.
fn same_radios(problem: &Problem, p: usize, a: &[u32], b: &[u32]) -> bool {
    let radios = |counts: &[u32]| {
        let mut v: Vec<(u64, u32, u64)> = problem.choices[p]
            .iter()
            .zip(counts)
            .flat_map(|(c, &k)| {
                std::iter::repeat_n(
                    (
                        (c.capacity_mbps * 1000.0).round() as u64,
                        c.channel_mhz,
                        (c.list_price * 100.0).round() as u64,
                    ),
                    k as usize,
                )
            })
            .collect();
        v.sort_unstable();
        v
    };
    radios(a) == radios(b)
}

/// The sites a design leaves with no radio (relays no edge site needs).
pub fn unlinked_sites(problem: &Problem, design: &Design) -> Vec<String> {
    (0..problem.net.sites.len())
        .filter(|&s| problem.radios_at(design, s) == 0)
        .map(|s| problem.net.sites[s].id.clone())
        .collect()
}

fn mbps(x: f64) -> String {
    format!("{} Mbit/s", units::mbps(x))
}

/// A change as a signed percentage, with no "-0.0".
fn signed_percent(x: f64, of: &str) -> String {
    let p = (x * 1000.0).round() / 10.0;
    if p == 0.0 {
        format!("0.0% {of}")
    } else {
        format!("{p:+.1}% {of}")
    }
}

/// Table 2's rows for this network, beside the paper's: description,
/// capacity, cost, radios, against today, and the paper's row.
pub fn table_2(r: &Report) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let header = vec![
        "design",
        "network min cut",
        "cost",
        "radios",
        "against today",
        "WISPR table 2",
        "paper against base",
    ];
    let base = &r.today;
    let base_cost = if r.problem.sunk { 0.0 } else { base.cost };
    let mut rows = vec![vec![
        "Today".to_string(),
        mbps(base.network_mbps),
        money(base_cost),
        base.radios.to_string(),
        "-".into(),
        format!(
            "{}, {}",
            mbps(PAPER_TABLE_2[0].1),
            money(PAPER_TABLE_2[0].2)
        ),
        "-".into(),
    ]];
    if let Some((target, plan)) = &r.least_cost {
        let saving = 1.0 - plan.eval.cost / base.cost.max(1e-9);
        let paper_saving = 1.0 - PAPER_TABLE_2[1].2 / PAPER_TABLE_2[0].2;
        rows.push(vec![
            format!("Least cost at {}", mbps(*target)),
            mbps(plan.eval.network_mbps),
            money(plan.eval.cost),
            plan.eval.radios.to_string(),
            if r.problem.sunk {
                format!("{} spent", money(plan.eval.cost))
            } else {
                signed_percent(-saving, "cost")
            },
            format!(
                "{}, {}",
                mbps(PAPER_TABLE_2[1].1),
                money(PAPER_TABLE_2[1].2)
            ),
            signed_percent(-paper_saving, "cost"),
        ]);
    }
    if let Some((budget, plan)) = &r.most_capacity {
        let gain = plan.eval.network_mbps / base.network_mbps.max(1e-9);
        rows.push(vec![
            format!("Most capacity for {}", money(*budget)),
            mbps(plan.eval.network_mbps),
            money(plan.eval.cost),
            plan.eval.radios.to_string(),
            format!("{gain:.2}x capacity"),
            format!(
                "{}, {}",
                mbps(PAPER_TABLE_2[2].1),
                money(PAPER_TABLE_2[2].2)
            ),
            format!("{:.2}x capacity", PAPER_TABLE_2[2].1 / PAPER_TABLE_2[0].1),
        ]);
    }
    (header, rows)
}

/// The short text `braid plan` prints: table 2's rows and each plan's
/// method.
pub fn text(r: &Report) -> String {
    let (header, rows) = table_2(r);
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut s = String::new();
    let line = |cells: Vec<String>| -> String {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, &w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    s += &line(header.iter().map(|h| h.to_string()).collect());
    s.push('\n');
    for row in rows {
        s += &line(row);
        s.push('\n');
    }
    for (what, plan) in [
        ("least cost", r.least_cost.as_ref().map(|p| &p.1)),
        ("most capacity", r.most_capacity.as_ref().map(|p| &p.1)),
    ] {
        if let Some(plan) = plan {
            let n = changes(r.problem, &plan.design).len();
            let pairs = if n == 1 { "pair" } else { "pairs" };
            let _ = writeln!(s, "{what}: {n} {pairs} changed; {}", plan.note);
        }
    }
    s
}

fn plan_section(r: &Report, title: &str, plan: &Plan) -> String {
    let mut s = format!(
        "<h2>{}</h2><p class=\"note\">{}</p>",
        escape(title),
        escape(&plan.note)
    );
    let rows: Vec<Vec<String>> = changes(r.problem, &plan.design)
        .into_iter()
        .map(|c| {
            vec![
                c.pair,
                format!("{:.1} km", c.distance_m / 1000.0),
                c.action.to_string(),
                c.today,
                c.proposed,
                format!(
                    "{} -> {}",
                    thousands(c.capacity_mbps.0),
                    thousands(c.capacity_mbps.1)
                ),
                money(c.buy),
            ]
        })
        .collect();
    let alone = unlinked_sites(r.problem, &plan.design);
    if !alone.is_empty() {
        s += &format!(
            "<p class=\"note\">Left with no links (no edge site needs them): {}.</p>",
            escape(&alone.join(", "))
        );
    }
    if rows.is_empty() {
        s += "<p>No change: today's network is already the answer.</p>";
    } else {
        s += &html::table(
            &[
                "pair",
                "distance",
                "action",
                "today",
                "proposed",
                "capacity (Mbit/s)",
                "new radios cost",
            ],
            &rows,
        );
    }
    s
}

fn edge_table(r: &Report) -> String {
    let net = r.problem.net;
    let mut header = vec![
        "edge site",
        "min cut today (Mbit/s)",
        "paths today",
        "node-disjoint today",
    ];
    if r.least_cost.is_some() {
        header.push("least-cost plan");
    }
    if r.most_capacity.is_some() {
        header.push("most-capacity plan");
    }
    let plans: Vec<&Plan> = [r.least_cost.as_ref(), r.most_capacity.as_ref()]
        .into_iter()
        .flatten()
        .map(|p| &p.1)
        .collect();
    let rows: Vec<Vec<String>> = r
        .today_paths
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut row = vec![
                net.sites[e.site].id.clone(),
                thousands(r.today.per_edge_mbps.get(i).copied().unwrap_or(0.0)),
                format!(
                    "{}{}",
                    if e.paths.capped { ">=" } else { "" },
                    e.paths.count
                ),
                e.disjoint.to_string(),
            ];
            for p in &plans {
                row.push(thousands(
                    p.eval.per_edge_mbps.get(i).copied().unwrap_or(0.0),
                ));
            }
            row
        })
        .collect();
    html::table(&header, &rows)
}

fn log_paths(e: &[EdgePaths]) -> Vec<f64> {
    e.iter()
        .map(|p| (p.paths.count.max(1) as f64).log10())
        .collect()
}

fn growth_charts(r: &Report) -> String {
    let mut s = String::new();
    let today = cdf(&log_paths(&r.today_paths));
    let max_x = (r.path_cap.max(10) as f64).log10();
    for (kind, name) in [
        (Addition::Cross, "cross"),
        (Addition::Parallel, "parallel"),
        (Addition::Both, "parallel and cross"),
    ] {
        let mut series = vec![Series {
            label: "today".into(),
            points: today.clone(),
            dashed: false,
            scatter: false,
            color: 0,
            spread: Vec::new(),
        }];
        for (i, g) in r.growth.iter().filter(|g| g.kind == kind).enumerate() {
            series.push(Series {
                label: format!("+{} {name}", g.added),
                points: cdf(&log_paths(&g.per_edge)),
                dashed: false,
                scatter: false,
                color: i + 1,
                spread: Vec::new(),
            });
        }
        if series.len() > 1 {
            s += &html::line_chart(
                &format!("Paths from edge sites to the gateway, {name} links added"),
                "log10(paths)",
                "fraction of edge sites",
                (0.0, max_x),
                (0.0, 1.0),
                &series,
            );
        }
    }
    let disjoint = |e: &[EdgePaths]| cdf(&e.iter().map(|p| p.disjoint as f64).collect::<Vec<_>>());
    let mut series = vec![Series {
        label: "today".into(),
        points: disjoint(&r.today_paths),
        dashed: false,
        scatter: false,
        color: 0,
        spread: Vec::new(),
    }];
    let most = r.growth.iter().map(|g| g.added).max().unwrap_or(0);
    for (i, g) in r.growth.iter().filter(|g| g.added == most).enumerate() {
        series.push(Series {
            label: format!("+{most} {}", kind_word(g.kind)),
            points: disjoint(&g.per_edge),
            dashed: false,
            scatter: false,
            color: i + 1,
            spread: Vec::new(),
        });
    }
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0, f64::max);
    s += &html::line_chart(
        "Node-disjoint paths from edge sites to the gateway",
        "node-disjoint paths",
        "fraction of edge sites",
        (0.0, top),
        (0.0, 1.0),
        &series,
    );
    s
}

fn kind_word(kind: Addition) -> &'static str {
    match kind {
        Addition::Cross => "cross",
        Addition::Parallel => "parallel",
        Addition::Both => "of both",
    }
}

fn price_section(r: &Report) -> String {
    let cat = r.problem.catalogue;
    let mut s = String::from("<h2>Radio prices (WISPR figures 6 and 7)</h2>");
    let fit = match &r.fit {
        Ok(f) => f,
        Err(why) => {
            s += &format!("<p>No price fit: {}.</p>", escape(why));
            return s;
        }
    };
    let top = cat
        .models
        .iter()
        .map(|m| m.capacity_mbps)
        .fold(0.0, f64::max);
    let curve: Vec<(f64, f64)> = (0..=40)
        .map(|i| {
            let x = top * f64::from(i) / 40.0;
            (x, fit.price(x))
        })
        .collect();
    let points: Vec<(f64, f64)> = cat
        .models
        .iter()
        .map(|m| (m.capacity_mbps, m.price))
        .collect();
    let most = points.iter().chain(&curve).map(|p| p.1).fold(1.0, f64::max);
    s += &format!(
        "<p>Least-squares fit over {} models: price = {:.1} + {:.4} x + {:.7} x<sup>2</sup> (x in Mbit/s), R<sup>2</sup> = {:.3} (WISPR: roughly quadratic, R<sup>2</sup> 0.870 for two vendors).</p>",
        fit.points, fit.a, fit.b, fit.c, fit.r_squared
    );
    s += &html::line_chart(
        "Price against throughput (both ends of a link)",
        "capacity (Mbit/s)",
        "price ($)",
        (0.0, top),
        (0.0, most),
        &[
            Series {
                label: "price table".into(),
                points,
                dashed: false,
                scatter: true,
                color: 0,
                spread: Vec::new(),
            },
            Series {
                label: format!("quadratic fit, R2 {:.2}", fit.r_squared),
                points: curve,
                dashed: true,
                scatter: false,
                color: 1,
                spread: Vec::new(),
            },
        ],
    );
    let table = parallel_table(fit);
    let series: Vec<Series> = table
        .targets_mbps
        .iter()
        .zip(&table.cost)
        .enumerate()
        .map(|(i, (&target, costs))| Series {
            label: format!(
                "{} Gbit/s, least at {}",
                target / 1000.0,
                table.best_links[i]
            ),
            points: table
                .links
                .iter()
                .zip(costs)
                .map(|(&k, &c)| (f64::from(k), c))
                .collect(),
            dashed: false,
            scatter: false,
            color: i,
            spread: Vec::new(),
        })
        .collect();
    let most = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(1.0, f64::max);
    s += &html::line_chart(
        "Cost of a capacity built from parallel links (from the fit)",
        "parallel component links",
        "cost ($)",
        (1.0, f64::from(table.links.last().copied().unwrap_or(1))),
        (0.0, most),
        &series,
    );
    s
}

fn fade_section(r: &Report) -> String {
    let Some((pair, columns, rows)) = &r.fade else {
        return String::new();
    };
    let mut s = format!(
        "<h2>A rain fade, today and on the proposed network</h2><p>braid's simulator runs the same scenario on both topologies: the loss of {} ramps from 0 to 60% and back between 35 s and 65 s, and VoIP flows from the gateway go to edge sites that depend on that link today. Delivered fraction per flow and mode (single path against mirroring over two disjoint paths), on each topology; the scenario files are beside this report (<code>braid sim fade-NAME.toml</code>). Parallel radios on a pair fade together (the same rain), so only new paths around the faded link help.</p>",
        escape(pair)
    );
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|f| {
            let mut row = vec![f.flow.clone(), f.mode.clone()];
            row.extend(f.delivered.iter().map(|d| format!("{:.1}%", d * 100.0)));
            row
        })
        .collect();
    let mut header = vec!["flow", "mode"];
    header.extend(columns.iter().map(String::as_str));
    s += &html::table(&header, &table);
    s
}

/// The whole report as one HTML page.
pub fn html(r: &Report) -> String {
    let net = r.problem.net;
    let (header, rows) = table_2(r);
    let mut sections = Vec::new();
    let c = &net.constraints;
    sections.push(format!(
        "<h2>Cost and capacity (WISPR table 2)</h2>{}<p class=\"note\">Capacity is the network's min cut: the most the gateway can carry to all edge sites at once. Every plan also keeps each edge site's own min cut at least what it is today. Costs are {}. Limits: channels per site {}, antennas closer than {} degrees share them, {} radios per site, at most {} parallel radios per pair. The paper's figures are for its Mendocino network, not this one: compare the shape (the saving, the gain), not the dollars.</p>",
        html::table(&header, &rows),
        if r.problem.sunk {
            "what new radios cost: today's radios are already paid for"
        } else {
            "every radio at list price, today's included (the paper's comparison)"
        },
        c.channels
            .iter()
            .map(|(w, n)| format!("{n} x {w} MHz"))
            .collect::<Vec<_>>()
            .join(" or "),
        c.separation_deg,
        c.max_links_per_site.map_or("any number of".to_string(), |m| format!("at most {m}")),
        c.max_parallel
    ));
    if let Some((target, plan)) = &r.least_cost {
        sections.push(plan_section(
            r,
            &format!("Least cost at {}", mbps(*target)),
            plan,
        ));
    }
    if let Some((budget, plan)) = &r.most_capacity {
        sections.push(plan_section(
            r,
            &format!("Most capacity for {}", money(*budget)),
            plan,
        ));
    }
    sections.push(format!(
        "<h2>Edge sites: capacity and paths</h2><p>Min cut from the gateway to each edge site (Mbit/s), today and in each plan; simple paths (parallel radios count as separate paths; counting stops at {}) and node-disjoint paths today. Network min cut today: {}.</p>{}",
        thousands(r.path_cap as f64),
        mbps(r.today.network_mbps),
        edge_table(r)
    ));
    sections.push(format!(
        "<h2>Path multiplicity as links are added (WISPR figure 8)</h2><p>Links added at random (seeded): parallel links join a site to its upstream neighbour; cross links join sites not linked today, drawn from {}.</p>{}",
        if r.cross_from_line_of_sight {
            "the line-of-sight pairs"
        } else {
            "any such pair (the network lists too few line-of-sight pairs), as the paper does"
        },
        growth_charts(r)
    ));
    if !r.growth_skipped.is_empty() {
        let last = sections.len() - 1;
        sections[last] += &format!(
            "<p class=\"note\">Not drawn: {}.</p>",
            escape(&r.growth_skipped.join("; "))
        );
    }
    sections.push(price_section(r));
    sections.push(fade_section(r));
    html::page(
        &format!("braid plan: {}", r.title),
        &format!(
            "{} sites ({} edge), {} links today, {} line-of-sight pairs for new links, {} models in the price table.",
            net.sites.len(),
            net.edges().len(),
            net.pairs.iter().filter(|p| p.exists()).count(),
            net.pairs.iter().filter(|p| !p.exists()).count(),
            r.problem.catalogue.models.len()
        ),
        &sections,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instances::{EXAMPLE_NETWORK as NET, EXAMPLE_PRICES as PRICES};
    use crate::network::parse;
    use crate::prices::parse_csv;

    #[test]
    fn each_changed_pair_is_named_with_what_it_gets() {
        let net = parse(NET).unwrap();
        let cat = parse_csv(PRICES).unwrap();
        let problem = Problem::new(&net, &cat, false).unwrap();
        let mut d = problem.today();
        let model = |p: usize, m: usize| {
            problem.choices[p]
                .iter()
                .position(|c| c.equipment == Equipment::Model(m))
                .unwrap()
        };
        d.counts[0][0] = 0; // gw-r: today's 400 replaced by an m4
        d.counts[0][model(0, 1)] = 1;
        d.counts[1][model(1, 0)] = 1; // r-e1: an m1 beside today's
        d.counts[2][0] = 0; // r-e2: removed
        d.counts[3][model(3, 0)] = 2; // gw-e1: new, two m1
        let c = changes(&problem, &d);
        let actions: Vec<(&str, &str)> = c.iter().map(|c| (c.pair.as_str(), c.action)).collect();
        assert_eq!(
            actions,
            [
                ("gw-r", "replace"),
                ("r-e1", "add parallel"),
                ("r-e2", "remove"),
                ("gw-e1", "add link")
            ]
        );
        assert_eq!(c[3].proposed, "2 x m1");
        assert_eq!(c[3].buy, 300.0);
        assert_eq!(c[0].capacity_mbps, (400.0, 450.0));
        assert!(changes(&problem, &problem.today()).is_empty());
    }
}
