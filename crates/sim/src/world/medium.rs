//! The medium between nodes: every link direction's model (loss, delay,
//! rate, queue, down intervals) and, with `[radio]`, the radios: one
//! transmitter per node on a shared medium, a bit-rate per frame chosen by
//! the rate control, link-layer retries and hand-overs. It decides what
//! becomes of a frame; the world schedules its arrival.

use std::collections::HashMap;
use std::time::Duration;

use braid_proto::time::Instant;
use rand_chacha::ChaCha8Rng;

use super::links::Links;
use crate::link::{Fate, LinkDir, LinkSpec, LossModel, Outcome};
use crate::radio::{FirmwareRate, Radio, RadioSpec, RateControl};
use crate::scenario::Scenario;
use crate::topology::TopologySpec;

/// The links of one run and the radios that send over them.
pub(super) struct Medium {
    /// Each direction of each link, by (sender, receiver), and each
    /// node's neighbors.
    pub(super) links: Links,
    radio: Option<RadioSpec>,
    radios: Vec<Radio>,
    /// How radios pick unicast rates, and the firmware's state per
    /// (sender, neighbor) when the firmware picks.
    rate_control: RateControl,
    firmware: HashMap<(u32, u32), FirmwareRate>,
    /// Times a failed frame is handed to the radio.
    persistence: u32,
}

impl Medium {
    /// The links of `edges` among `nodes` nodes, each direction with the
    /// scenario's `[link]` model; a city mesh's links (with a length) lose
    /// more the longer they are, per rate with radios (drawn from `rng`).
    pub(super) fn new(
        scenario: &Scenario,
        nodes: usize,
        edges: &[(u32, u32)],
        edge_length: &[Option<f64>],
        rng: &mut ChaCha8Rng,
    ) -> Medium {
        let mut links = Links::new(nodes);
        for (&(a, b), length) in edges.iter().zip(edge_length) {
            for (x, y) in [(a, b), (b, a)] {
                let mut spec = scenario.link.clone();
                match (length, &scenario.radio, &scenario.topology) {
                    (Some(d), Some(radio), _) => spec.rate_loss = radio.citymesh_loss(*d, rng),
                    (Some(d), None, TopologySpec::CityMesh { max_loss, .. }) => {
                        spec.loss = LossModel::Bernoulli(max_loss * d * d)
                    }
                    _ => {}
                }
                links.insert((x, y), LinkDir::new(spec));
            }
        }
        Medium {
            links,
            radio: scenario.radio.clone(),
            radios: vec![Radio::default(); nodes],
            rate_control: scenario.rate_control,
            firmware: HashMap::new(),
            persistence: scenario.persistence.max(1),
        }
    }

    /// Gives both directions of the link between `a` and `b` their own
    /// model; false when they are not linked.
    pub(super) fn set_link(&mut self, a: u32, b: u32, spec: &LinkSpec) -> bool {
        for key in [(a, b), (b, a)] {
            match self.links.get_mut(&key) {
                Some(l) => *l = LinkDir::new(spec.clone()),
                None => return false,
            }
        }
        true
    }

    /// Offers a raw IP packet to the access link `from` -> `to` (an
    /// access point and its unmodified client): its fate, None when they
    /// are not linked.
    pub(super) fn access_send(
        &mut self,
        now: Instant,
        from: u32,
        to: u32,
        len: usize,
        rng: &mut ChaCha8Rng,
    ) -> Option<Fate> {
        let link = self.links.get_mut(&(from, to))?;
        Some(link.transmit(now, len, true, rng).fate)
    }

    /// A broadcast from node `i` to its neighbors (not to unmodified
    /// clients, which hear no braid control message): each neighbor's
    /// fate, in neighbor order. With radios, one transmission on the air
    /// that every neighbor hears (or not) and defers to.
    pub(super) fn broadcast(
        &mut self,
        now: Instant,
        i: u32,
        len: usize,
        rate: Option<u16>,
        unmodified: &[bool],
        rng: &mut ChaCha8Rng,
    ) -> Vec<(u32, Fate)> {
        let count = self.links.neighbors(i).len();
        let mut fates = Vec::with_capacity(count);
        let Some(radio) = &self.radio else {
            for j in 0..count {
                let (to, link) = self.links.out(i, j);
                if unmodified[to as usize] {
                    continue; // hears no braid control message
                }
                fates.push((to, link.send(now, len, rng)));
            }
            return fates;
        };
        let k = rate.map_or(0, |r| radio.index_of(r));
        let air = radio.airtime(len, radio.rates_bps[k], 1, false);
        let Some(end) = self.radios[i as usize].reserve(now, air, radio.queue) else {
            for j in 0..count {
                let (_, link) = self.links.out(i, j);
                link.stats.offered += 1;
                link.stats.queue_drops += 1;
            }
            return fates;
        };
        for &to in self.links.neighbors(i) {
            self.radios[to as usize].defer_until(end);
        }
        for j in 0..count {
            let (to, link) = self.links.out(i, j);
            if unmodified[to as usize] {
                continue;
            }
            let loss = link.spec.rate_loss.get(k).copied().unwrap_or(0.0);
            let (_, ok) = link.attempts(now, loss, false, rng);
            let fate = link.settle(now, end, len, ok, rng);
            fates.push((to, fate));
        }
        fates
    }

    /// A unicast frame from `i` to `to`: what became of it and when it
    /// left the driver. `rate` is the sender's choice, if it made one;
    /// `probed` the best rate its probes measured (asked only when the
    /// rate control goes by probes).
    pub(super) fn unicast(
        &mut self,
        now: Instant,
        (i, to): (u32, u32),
        len: usize,
        rate: Option<u16>,
        probed: impl Fn() -> Option<u16>,
        rng: &mut ChaCha8Rng,
    ) -> Outcome {
        let Some(link) = self.links.get_mut(&(i, to)) else {
            return Outcome {
                fate: Fate::Down,
                departure: now,
                failed: false,
            };
        };
        let Some(radio) = &self.radio else {
            return link.transmit(now, len, true, rng);
        };
        if link.is_down(now) {
            let fate = link.settle(now, now, len, false, rng);
            return Outcome {
                fate,
                departure: now,
                failed: false,
            };
        }
        // Each hand-over to the radio is tried up to 1 + retries times at
        // the rate the controller picks then; the next starts where it
        // ended.
        let rates = radio.rates_bps.len();
        let mut air = Duration::ZERO;
        let mut ok = false;
        // The driver reports every hand-over that failed all its attempts
        // (SrcRR: the route error of a node without IGNORE-FAIL follows
        // the first).
        let mut handover_failed = false;
        for _ in 0..self.persistence {
            let at = now + air;
            let k = match (rate, self.rate_control) {
                (Some(r), _) => radio.index_of(r),
                (None, RateControl::Ideal) => radio.best_rate(&link.spec.rate_loss),
                (None, RateControl::Probes) => probed().map_or(0, |r| radio.index_of(r)),
                (None, RateControl::Firmware) => {
                    self.firmware.entry((i, to)).or_default().rate(at, rates)
                }
            };
            let loss = link.spec.rate_loss.get(k).copied().unwrap_or(0.0);
            let (tries, delivered) = link.attempts(at, loss, true, rng);
            air += radio.airtime(len, radio.rates_bps[k], tries, true);
            if delivered {
                ok = true;
                break;
            }
            handover_failed = true;
            if rate.is_none() && self.rate_control == RateControl::Firmware {
                self.firmware.entry((i, to)).or_default().failed(at, rates);
            }
        }
        match self.radios[i as usize].reserve(now, air, radio.queue) {
            None => {
                link.stats.offered += 1;
                link.stats.queue_drops += 1;
                Outcome {
                    fate: Fate::QueueFull,
                    departure: now,
                    failed: false,
                }
            }
            Some(end) => {
                let fate = link.settle(now, end, len, ok, rng);
                for &n in self.links.neighbors(i) {
                    self.radios[n as usize].defer_until(end);
                }
                Outcome {
                    fate,
                    departure: end,
                    failed: handover_failed && fate != Fate::Down,
                }
            }
        }
    }
}
