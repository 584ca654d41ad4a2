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
                    continue;
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
        Evaluation {
            cost,
            list_cost,
            network_mbps: flow::max_flow(n, &edges, g, &edge_sites).value_mbps,
            per_edge_mbps: edge_sites
                .iter()
                .map(|&k| flow::max_flow(n, &edges, g, &[k]).value_mbps)
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
        let net = self.net;
        for (p, (cs, ns)) in self.choices.iter().zip(&d.counts).enumerate() {
            let pair = &net.pairs[p];
            let name = || net.sites[pair.a].id.clone();
            for (c, &k) in cs.iter().zip(ns) {
                if k > c.max_count {
                    return Some(ProblemError::OverLimit {
                        site: name(),
                        message: format!(
                            "{k} x {} toward {} (at most {})",
                            c.name, net.sites[pair.b].id, c.max_count
                        ),
                    });
                }
            }
            let on_pair: u32 = ns.iter().sum();
            let kept: u32 = cs
                .iter()
                .zip(ns)
                .filter(|(c, _)| matches!(c.equipment, Equipment::Existing { .. }))
                .map(|(_, &k)| k)
                .sum();
            if on_pair > net.constraints.max_parallel.max(kept) {
                return Some(ProblemError::OverLimit {
                    site: name(),
                    message: format!(
                        "{on_pair} parallel radios toward {} (plan.max_parallel is {})",
                        net.sites[pair.b].id, net.constraints.max_parallel
                    ),
                });
            }
        }
        for s in 0..net.sites.len() {
            if let Some(limit) = net.max_links(s) {
                let n = self.radios_at(d, s);
                if n > limit {
                    return Some(ProblemError::OverLimit {
                        site: net.sites[s].id.clone(),
                        message: format!("{n} radios (at most {limit})"),
                    });
                }
            }
            for (p, sharing) in &self.sharing[s] {
                let used = self.band_use(d, sharing);
                if used > 1.0 + SHARE_EPS {
                    let toward = net.sites[net.pairs[*p].other(s)].id.clone();
                    return Some(ProblemError::OverLimit {
                        site: net.sites[s].id.clone(),
                        message: format!(
                            "the radios pointing within {} degrees of {toward} need {:.0}% of the band's channels",
                            net.constraints.separation_deg,
                            used * 100.0
                        ),
                    });
                }
            }
        }
        None
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
