//! What can be built, and what a given build is worth: the equipment
//! choices on every site pair (today's radios, and each price-table model
//! that reaches), a design (how many of each choice), its cost, its min
//! cuts, and whether it keeps within spectrum and site limits. The
//! optimiser searches designs; the analyses and the report evaluate them.

use thiserror::Error;

use crate::flow::{self, Edge};
use crate::network::{Network, Radio};
use crate::prices::Catalogue;

/// What a choice installs.
#[derive(Debug, Clone, PartialEq)]
pub enum Equipment {
    /// Radios on the pair today (identical ones grouped).
    Existing {
        /// The first of the pair's radios this choice stands for.
        radio: usize,
    },
    /// A new link of this price-table model.
    Model(usize),
}

/// One kind of radio a pair can carry.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// What it is.
    pub equipment: Equipment,
    /// Display name: the model, or "today's 300 Mbit/s link".
    pub name: String,
    /// Capacity of one, Mbit/s.
    pub capacity_mbps: f64,
    /// Price of one in this problem (0 for kept radios when sunk).
    pub price: f64,
    /// Price of one bought new (what today's network is valued at).
    pub list_price: f64,
    /// Channel width, MHz.
    pub channel_mhz: u32,
    /// Share of a site's band one takes (1 / channels of its width).
    pub band_share: f64,
    /// At most this many on the pair.
    pub max_count: u32,
}

/// How many of each choice each pair carries (`counts[pair][choice]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Design {
    /// Per pair, per choice (aligned with [`Problem::choices`]).
    pub counts: Vec<Vec<u32>>,
}

/// Why a problem cannot be set up.
#[derive(Debug, Error, PartialEq)]
pub enum ProblemError {
    /// Today's link has no price and no model in the table can stand in.
    #[error("{at}: {message}")]
    Unpriced {
        /// The link (`links[3] (a-b)`).
        at: String,
        /// Why.
        message: String,
    },
    /// A model's channel width has no channel count in the constraints.
    #[error("price table: {model}: channel_mhz {width} has no channel count in plan.channels (known: {known})")]
    UnknownWidth {
        /// The model.
        model: String,
        /// Its width, MHz.
        width: u32,
        /// The widths the constraints count.
        known: String,
    },
    /// Today's network already breaks the constraints.
    #[error("site {site}: {message}")]
    OverLimit {
        /// The site's id.
        site: String,
        /// Which limit, by how much.
        message: String,
    },
}

/// The optimisation's fixed parts: choices per pair, limits, and the
/// capacity each edge site must keep.
#[derive(Debug, Clone)]
pub struct Problem<'a> {
    /// The network.
    pub net: &'a Network,
    /// The price table.
    pub catalogue: &'a Catalogue,
    /// Per pair, what it can carry.
    pub choices: Vec<Vec<Choice>>,
    /// Per site and pair at it: the pairs whose radios there share its
    /// band (`sharing[s]` lists `(p, pairs)` for every pair p at s).
    pub sharing: Vec<Vec<(usize, Vec<usize>)>>,
    /// Each edge site and the capacity to the gateway it must keep
    /// (today's min cut: no customer is worse off).
    pub required: Vec<(usize, f64)>,
    /// Today's radios cost nothing to keep (already paid for).
    pub sunk: bool,
}

/// A design's worth.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// What it costs (with [`Problem::sunk`] pricing).
    pub cost: f64,
    /// Every radio at list price (today's network valued new).
    pub list_cost: f64,
    /// Min cut from the gateway to all edge sites at once, Mbit/s.
    pub network_mbps: f64,
    /// Per edge site (as in [`Problem::required`]): its own min cut.
    pub per_edge_mbps: Vec<f64>,
    /// Radios in the design.
    pub radios: u32,
}

/// A limit a design breaks (described only when reported).
#[derive(Debug, Clone, Copy)]
enum Broken {
    /// More of choice `c` on pair `p` than it allows.
    Count { p: usize, c: usize, k: u32 },
    /// More radios on pair `p` than max_parallel (or today's, if more).
    Parallel { p: usize, on_pair: u32 },
    /// More radios at site `s` than its limit.
    Radios { s: usize, n: u32, limit: u32 },
    /// The radios at site `s` pointing near pair `p` need more than the band.
    Band { s: usize, p: usize, used: f64 },
}

/// Tolerance for spectrum sums (shares like 1/24 add up inexactly).
const SHARE_EPS: f64 = 1e-9;

impl<'a> Problem<'a> {
    /// Sets up the choices; today's network must fit its own limits.
    pub fn new(
        net: &'a Network,
        catalogue: &'a Catalogue,
        sunk: bool,
    ) -> Result<Self, ProblemError> {
        let mut choices = Vec::with_capacity(net.pairs.len());
        for (i, p) in net.pairs.iter().enumerate() {
            let at = || format!("links[{i}] ({}-{})", net.sites[p.a].id, net.sites[p.b].id);
            let mut here: Vec<Choice> = Vec::new();
            for (r, radio) in p.radios.iter().enumerate() {
                if let Some(c) = here.iter_mut().find(|c| match c.equipment {
                    Equipment::Existing { radio: first } => p.radios[first] == *radio,
                    Equipment::Model(_) => false,
                }) {
                    c.max_count += 1;
                    continue;
                }
                let list_price = list_price(radio, catalogue, p.distance_m).ok_or_else(|| ProblemError::Unpriced {
                    at: at(),
                    message: format!(
                        "{} Mbit/s over {:.1} km has no price, and no model in the price table reaches {:.1} km with that capacity",
                        radio.capacity_mbps,
                        p.distance_m / 1000.0,
                        p.distance_m / 1000.0
                    ),
                })?;
                let band_share = net.band_share(radio.channel_mhz).unwrap_or(1.0);
                here.push(Choice {
                    equipment: Equipment::Existing { radio: r },
                    name: match &radio.model {
                        Some(m) => format!("{m} (today's)"),
                        None => format!("today's {} Mbit/s link", radio.capacity_mbps),
                    },
                    capacity_mbps: radio.capacity_mbps,
                    price: if sunk { 0.0 } else { list_price },
                    list_price,
                    channel_mhz: radio.channel_mhz,
                    band_share,
                    max_count: 1,
                });
            }
            for m in catalogue.reaching(p.distance_m) {
                let model = &catalogue.models[m];
                let Some(band_share) = net.band_share(model.channel_mhz) else {
                    return Err(ProblemError::UnknownWidth {
                        model: model.name.clone(),
                        width: model.channel_mhz,
                        known: net
                            .constraints
                            .channels
                            .keys()
                            .map(|w| w.to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                    });
                };
                let by_band = (1.0 / band_share + SHARE_EPS).floor() as u32;
                here.push(Choice {
                    equipment: Equipment::Model(m),
                    name: model.name.clone(),
                    capacity_mbps: model.capacity_mbps,
                    price: model.price,
                    list_price: model.price,
                    channel_mhz: model.channel_mhz,
                    band_share,
                    max_count: by_band.min(net.constraints.max_parallel),
                });
            }
            drop_dominated_models(&mut here);
            choices.push(here);
        }
        let sharing = (0..net.sites.len())
            .map(|s| {
                (0..net.pairs.len())
                    .filter(|&p| net.pairs[p].a == s || net.pairs[p].b == s)
                    .map(|p| (p, net.sharing_spectrum(s, p)))
                    .collect()
            })
            .collect();
        let mut problem = Problem {
            net,
            catalogue,
            choices,
            sharing,
            required: Vec::new(),
            sunk,
        };
        let today = problem.today();
        if let Some(why) = problem.violation(&today) {
            return Err(why);
        }
        let eval = problem.evaluate(&today);
        problem.required = net.edges().into_iter().zip(eval.per_edge_mbps).collect();
        Ok(problem)
    }

    /// Today's network: every existing radio kept, nothing added.
    pub fn today(&self) -> Design {
        Design {
            counts: self
                .choices
                .iter()
                .map(|cs| {
                    cs.iter()
                        .map(|c| match c.equipment {
                            Equipment::Existing { .. } => c.max_count,
                            Equipment::Model(_) => 0,
                        })
                        .collect()
                })
                .collect(),
        }
    }

    /// A design with nothing on any pair.
    pub fn empty(&self) -> Design {
        Design {
            counts: self.choices.iter().map(|cs| vec![0; cs.len()]).collect(),
        }
    }

    /// Capacity of each pair in a design, Mbit/s.
    pub fn pair_capacity(&self, d: &Design) -> Vec<f64> {
        self.choices
            .iter()
            .zip(&d.counts)
            .map(|(cs, ns)| {
                cs.iter()
                    .zip(ns)
                    .map(|(c, &n)| c.capacity_mbps * f64::from(n))
                    .sum()
            })
            .collect()
    }

    /// The design's pairs with capacity, as flow edges.
    pub fn edges(&self, d: &Design) -> Vec<Edge> {
        self.pair_capacity(d)
            .into_iter()
            .enumerate()
            .filter(|&(_, c)| c > 0.0)
            .map(|(p, c)| (self.net.pairs[p].a, self.net.pairs[p].b, c))
            .collect()
    }

    /// Min cut from the gateway to all edge sites at once.
    pub fn network_cut(&self, d: &Design) -> flow::Cut {
        let edges = self.edges(d);
        flow::max_flow(
            self.net.sites.len(),
            &edges,
            self.net.gateway,
            &self.net.edges(),
        )
    }

    /// Cost, capacity and radios of a design.
    pub fn evaluate(&self, d: &Design) -> Evaluation {
        let edges = self.edges(d);
        let n = self.net.sites.len();
        let g = self.net.gateway;
        let edge_sites = self.net.edges();
        let mut cost = 0.0;
        let mut list_cost = 0.0;
        let mut radios = 0;
        for (cs, ns) in self.choices.iter().zip(&d.counts) {
            for (c, &k) in cs.iter().zip(ns) {
                cost += c.price * f64::from(k);
                list_cost += c.list_price * f64::from(k);
                radios += k;
            }
        }
        let mut graph = flow::FlowGraph::new(n, &edges, &edge_sites);
        Evaluation {
            cost,
            list_cost,
            network_mbps: graph.max_flow(g, &edge_sites).value_mbps,
            per_edge_mbps: edge_sites
                .iter()
                .map(|&k| graph.max_flow(g, &[k]).value_mbps)
                .collect(),
            radios,
        }
    }

    /// Spectrum use at site `s` in the direction of pair `p` (1.0: the
    /// whole band).
    pub fn band_use(&self, d: &Design, sharing: &[usize]) -> f64 {
        sharing
            .iter()
            .map(|&q| {
                self.choices[q]
                    .iter()
                    .zip(&d.counts[q])
                    .map(|(c, &k)| c.band_share * f64::from(k))
                    .sum::<f64>()
            })
            .sum()
    }

    /// Radios a design puts at site `s`.
    pub fn radios_at(&self, d: &Design, s: usize) -> u32 {
        self.sharing[s]
            .iter()
            .map(|&(p, _)| d.counts[p].iter().sum::<u32>())
            .sum()
    }

    /// The first limit a design breaks, if any: per-choice counts, radios
    /// per pair and per site, spectrum per antenna direction.
    pub fn violation(&self, d: &Design) -> Option<ProblemError> {
        (0..self.net.pairs.len())
            .find_map(|p| self.broken_pair(d, p))
            .or_else(|| (0..self.net.sites.len()).find_map(|s| self.broken_site(d, s)))
            .map(|b| self.describe(b))
    }

    /// True when the limits that involve `pairs` hold: theirs, and those
    /// of the sites at their ends. For a design that kept every limit
    /// before only `pairs` changed, this is [`Problem::violation`] being
    /// None, at a fraction of the work (the optimiser's inner loop).
    pub fn keeps_limits_near(&self, d: &Design, pairs: &[usize]) -> bool {
        pairs.iter().all(|&p| {
            let pair = &self.net.pairs[p];
            self.broken_pair(d, p).is_none()
                && self.broken_site(d, pair.a).is_none()
                && self.broken_site(d, pair.b).is_none()
        })
    }

    fn broken_pair(&self, d: &Design, p: usize) -> Option<Broken> {
        let (cs, ns) = (&self.choices[p], &d.counts[p]);
        if let Some(c) = (0..cs.len()).find(|&c| ns[c] > cs[c].max_count) {
            return Some(Broken::Count { p, c, k: ns[c] });
        }
        let on_pair: u32 = ns.iter().sum();
        let kept: u32 = cs
            .iter()
            .zip(ns)
            .filter(|(c, _)| matches!(c.equipment, Equipment::Existing { .. }))
            .map(|(_, &k)| k)
            .sum();
        (on_pair > self.net.constraints.max_parallel.max(kept))
            .then_some(Broken::Parallel { p, on_pair })
    }

    fn broken_site(&self, d: &Design, s: usize) -> Option<Broken> {
        if let Some(limit) = self.net.max_links(s) {
            let n = self.radios_at(d, s);
            if n > limit {
                return Some(Broken::Radios { s, n, limit });
            }
        }
        self.sharing[s].iter().find_map(|(p, sharing)| {
            let used = self.band_use(d, sharing);
            (used > 1.0 + SHARE_EPS).then_some(Broken::Band { s, p: *p, used })
        })
    }

    fn describe(&self, b: Broken) -> ProblemError {
        let net = self.net;
        let over = |s: usize, message: String| ProblemError::OverLimit {
            site: net.sites[s].id.clone(),
            message,
        };
        match b {
            Broken::Count { p, c, k } => {
                let (pair, choice) = (&net.pairs[p], &self.choices[p][c]);
                over(
                    pair.a,
                    format!(
                        "{k} x {} toward {} (at most {})",
                        choice.name, net.sites[pair.b].id, choice.max_count
                    ),
                )
            }
            Broken::Parallel { p, on_pair } => {
                let pair = &net.pairs[p];
                over(
                    pair.a,
                    format!(
                        "{on_pair} parallel radios toward {} (plan.max_parallel is {})",
                        net.sites[pair.b].id, net.constraints.max_parallel
                    ),
                )
            }
            Broken::Radios { s, n, limit } => over(s, format!("{n} radios (at most {limit})")),
            Broken::Band { s, p, used } => over(
                s,
                format!(
                    "the radios pointing within {} degrees of {} need {:.0}% of the band's channels",
                    net.constraints.separation_deg,
                    net.sites[net.pairs[p].other(s)].id,
                    used * 100.0
                ),
            ),
        }
    }

    /// True when the design keeps every limit and every edge site's
    /// required capacity, and its network min cut is at least `network`.
    pub fn feasible(&self, d: &Design, network_mbps: f64) -> bool {
        if self.violation(d).is_some() {
            return false;
        }
        let e = self.evaluate(d);
        e.network_mbps + 1e-6 >= network_mbps
            && e.per_edge_mbps
                .iter()
                .zip(&self.required)
                .all(|(&have, &(_, need))| have + 1e-6 >= need)
    }
}

/// Removes the models another model on the same pair beats: at least its
/// capacity, at most its price and its share of the band (so at least as
/// many fit), better in one. Any design using the beaten model does as
/// well with the other in its place, so no optimum is lost, and the
/// search has fewer choices. Today's radios are always kept.
fn drop_dominated_models(choices: &mut Vec<Choice>) {
    let beats = |a: &Choice, b: &Choice| {
        a.capacity_mbps >= b.capacity_mbps
            && a.price <= b.price
            && a.band_share <= b.band_share
            && a.max_count >= b.max_count
            && (a.capacity_mbps > b.capacity_mbps
                || a.price < b.price
                || a.band_share < b.band_share
                || a.max_count > b.max_count)
    };
    let is_model = |c: &Choice| matches!(c.equipment, Equipment::Model(_));
    let keep: Vec<bool> = choices
        .iter()
        .map(|b| !is_model(b) || !choices.iter().any(|a| is_model(a) && beats(a, b)))
        .collect();
    let mut i = 0;
    choices.retain(|_| {
        i += 1;
        keep[i - 1]
    });
}

/// What one of today's radios is worth new: its own price, its model's,
/// or the cheapest model that matches its capacity and reaches.
fn list_price(radio: &Radio, catalogue: &Catalogue, distance_m: f64) -> Option<f64> {
    if let Some(p) = radio.price {
        return Some(p);
    }
    if let Some(m) = radio.model.as_deref().and_then(|m| catalogue.model(m)) {
        return Some(m.price);
    }
    catalogue
        .reaching(distance_m)
        .into_iter()
        .map(|m| &catalogue.models[m])
        .filter(|m| m.capacity_mbps >= radio.capacity_mbps)
        .map(|m| m.price)
        .min_by(f64::total_cmp)
}
