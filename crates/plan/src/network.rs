//! The operator's network as planning sees it: sites with roles, the site
//! pairs that carry radios today, the pairs with line of sight for new
//! links, and the spectrum and site limits; read from a NetJSON
//! NetworkGraph with a few braid members (docs/planning.md has the format).
//! Every problem is an [`InputError`] that names where it is.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

/// What a site is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The upstream gateway (exactly one).
    Gateway,
    /// A relay: carries traffic, serves no customers.
    Backhaul,
    /// A base station for customers: its capacity to the gateway is what
    /// planning protects.
    Edge,
}

impl Role {
    /// The word the NetJSON uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Gateway => "gateway",
            Role::Backhaul => "backhaul",
            Role::Edge => "edge",
        }
    }
}

/// A site (a tower, a roof): where radios are mounted.
#[derive(Debug, Clone, PartialEq)]
pub struct Site {
    /// The NetJSON node id.
    pub id: String,
    /// The NetJSON node label, if any.
    pub label: Option<String>,
    /// What the site is for.
    pub role: Role,
    /// Latitude and longitude in degrees, if given.
    pub position: Option<(f64, f64)>,
    /// At most this many radios at the site (overrides the network's).
    pub max_links: Option<u32>,
}

/// One point-to-point radio link (both ends) on a site pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Radio {
    /// The price table's model, if known.
    pub model: Option<String>,
    /// Capacity in Mbit/s.
    pub capacity_mbps: f64,
    /// Channel width in MHz.
    pub channel_mhz: u32,
    /// What the link cost (both ends), if the operator says.
    pub price: Option<f64>,
}

/// A site pair: one that carries radios today, or one with line of sight
/// where new links may go.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// One end (index into [`Network::sites`]).
    pub a: usize,
    /// The other end.
    pub b: usize,
    /// Length of the link in metres.
    pub distance_m: f64,
    /// The radios on it today (empty: a line-of-sight pair, no link yet).
    pub radios: Vec<Radio>,
    /// The NetJSON link's routing cost, kept for the proposed topology.
    pub routing_cost: Option<f64>,
}

impl Pair {
    /// True when the pair carries a link today.
    pub fn exists(&self) -> bool {
        !self.radios.is_empty()
    }

    /// Capacity today, Mbit/s (sum of its radios).
    pub fn capacity_mbps(&self) -> f64 {
        self.radios.iter().map(|r| r.capacity_mbps).sum()
    }

    /// The end that is not `s`.
    pub fn other(&self, s: usize) -> usize {
        if s == self.a {
            self.b
        } else {
            self.a
        }
    }
}

/// Spectrum and site limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraints {
    /// Non-overlapping channels per channel width (MHz -> count) at a site:
    /// radios whose antennas point within `separation_deg` of each other
    /// need distinct channels, so together they use at most the whole
    /// band (24 x 20 MHz or 11 x 40 MHz in 5 GHz).
    pub channels: BTreeMap<u32, u32>,
    /// Co-located directional antennas at least this far apart (degrees)
    /// may reuse a channel; closer ones share the band. Used where both
    /// sites have coordinates; without them a site's radios all share it.
    pub separation_deg: f64,
    /// At most this many radios at any site (None: only spectrum limits).
    pub max_links_per_site: Option<u32>,
    /// At most this many parallel radios on one pair.
    pub max_parallel: u32,
}

impl Default for Constraints {
    fn default() -> Self {
        Constraints {
            channels: BTreeMap::from([(20, 24), (40, 11), (80, 5)]),
            separation_deg: 30.0,
            max_links_per_site: None,
            max_parallel: 8,
        }
    }
}

/// The whole input.
#[derive(Debug, Clone, PartialEq)]
pub struct Network {
    /// The NetJSON label, if any.
    pub label: Option<String>,
    /// Every site, in the document's order.
    pub sites: Vec<Site>,
    /// Existing pairs first (document order), then line-of-sight pairs.
    pub pairs: Vec<Pair>,
    /// Index of the gateway in `sites`.
    pub gateway: usize,
    /// Spectrum and site limits.
    pub constraints: Constraints,
}

impl Network {
    /// Indices of the edge sites, in document order.
    pub fn edges(&self) -> Vec<usize> {
        (0..self.sites.len())
            .filter(|&i| self.sites[i].role == Role::Edge)
            .collect()
    }

    /// Index of the site with this id.
    pub fn site(&self, id: &str) -> Option<usize> {
        self.sites.iter().position(|s| s.id == id)
    }

    /// The radio limit at site `s`, if any.
    pub fn max_links(&self, s: usize) -> Option<u32> {
        self.sites[s]
            .max_links
            .or(self.constraints.max_links_per_site)
    }

    /// Bearing (degrees from north, clockwise) from site `from` toward
    /// `to`, when both have coordinates.
    pub fn bearing(&self, from: usize, to: usize) -> Option<f64> {
        let (lat1, lon1) = self.sites[from].position?;
        let (lat2, lon2) = self.sites[to].position?;
        let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
        let dl = (lon2 - lon1).to_radians();
        let y = dl.sin() * p2.cos();
        let x = p1.cos() * p2.sin() - p1.sin() * p2.cos() * dl.cos();
        Some((y.atan2(x).to_degrees() + 360.0) % 360.0)
    }

    /// The pairs at site `s` whose antennas there point within the
    /// separation angle of pair `p`'s (p itself included): the radios
    /// that must use distinct channels with p's. All pairs at the site
    /// where either bearing is unknown.
    pub fn sharing_spectrum(&self, s: usize, p: usize) -> Vec<usize> {
        let here = self.pairs[p].other(s);
        let toward = self.bearing(s, here);
        (0..self.pairs.len())
            .filter(|&q| self.pairs[q].a == s || self.pairs[q].b == s)
            .filter(|&q| {
                let there = self.pairs[q].other(s);
                match (toward, self.bearing(s, there)) {
                    (Some(x), Some(y)) => {
                        let d = (x - y).abs() % 360.0;
                        d.min(360.0 - d) < self.constraints.separation_deg
                    }
                    _ => true,
                }
            })
            .collect()
    }

    /// Share of a site's band one radio of this width takes (1 / channels).
    pub fn band_share(&self, channel_mhz: u32) -> Option<f64> {
        self.constraints
            .channels
            .get(&channel_mhz)
            .filter(|&&n| n > 0)
            .map(|&n| 1.0 / f64::from(n))
    }
}

/// Why the input is not a network planning can use.
#[derive(Debug, Error, PartialEq)]
pub enum InputError {
    /// The text is not JSON, or not shaped like a NetworkGraph.
    #[error("malformed NetJSON at line {line}, column {column}: {message}")]
    Json {
        /// Line where the parser stopped.
        line: usize,
        /// Column where the parser stopped.
        column: usize,
        /// What the parser said, without its position.
        message: String,
    },
    /// A value is missing or wrong; `at` names it (`links[3] (a-b)`).
    #[error("{at}: {message}")]
    Invalid {
        /// Where: the JSON path and, for links, the pair.
        at: String,
        /// What is wrong.
        message: String,
    },
}

fn invalid(at: impl Into<String>, message: impl Into<String>) -> InputError {
    InputError::Invalid {
        at: at.into(),
        message: message.into(),
    }
}

#[derive(Deserialize)]
struct Document {
    #[serde(rename = "type")]
    kind: Option<String>,
    label: Option<String>,
    nodes: Vec<NodeEntry>,
    links: Vec<LinkEntry>,
    #[serde(default)]
    plan: Option<PlanEntry>,
}

#[derive(Deserialize)]
struct NodeEntry {
    id: String,
    label: Option<String>,
    #[serde(default)]
    properties: serde_json::Map<String, Value>,
}

#[derive(Deserialize)]
struct LinkEntry {
    source: String,
    target: String,
    cost: Option<f64>,
    #[serde(default)]
    properties: serde_json::Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanEntry {
    channels: Option<BTreeMap<String, u32>>,
    angular_separation_deg: Option<f64>,
    max_links_per_site: Option<u32>,
    max_parallel: Option<u32>,
    #[serde(default)]
    line_of_sight: Vec<SightEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SightEntry {
    source: String,
    target: String,
    distance_m: Option<f64>,
}

/// Reads a NetJSON NetworkGraph with braid's planning members.
pub fn parse(text: &str) -> Result<Network, InputError> {
    let doc: Document = serde_json::from_str(text).map_err(|e| {
        let message = e.to_string();
        let message = match message.rfind(" at line ") {
            Some(i) => message[..i].to_string(),
            None => message,
        };
        InputError::Json {
            line: e.line(),
            column: e.column(),
            message,
        }
    })?;
    if let Some(kind) = &doc.kind {
        if kind != "NetworkGraph" {
            return Err(invalid(
                "type",
                format!("\"{kind}\": expected \"NetworkGraph\""),
            ));
        }
    }
    let constraints = constraints(doc.plan.as_ref())?;
    let mut sites = Vec::with_capacity(doc.nodes.len());
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, n) in doc.nodes.iter().enumerate() {
        let at = format!("nodes[{i}] ({})", n.id);
        if index.insert(n.id.clone(), i).is_some() {
            return Err(invalid(at, "node id listed twice"));
        }
        sites.push(site(n, &at)?);
    }
    let gateways: Vec<usize> = (0..sites.len())
        .filter(|&i| sites[i].role == Role::Gateway)
        .collect();
    let gateway = match gateways[..] {
        [g] => g,
        [] => {
            return Err(invalid(
                "nodes",
                "no node has properties.role = \"gateway\" (exactly one is needed)",
            ))
        }
        [_, g, ..] => {
            return Err(invalid(
                format!("nodes[{g}] ({})", sites[g].id),
                format!(
                    "a second gateway (the first is {}); exactly one is needed",
                    sites[gateways[0]].id
                ),
            ))
        }
    };
    if !sites.iter().any(|s| s.role == Role::Edge) {
        return Err(invalid(
            "nodes",
            "no node has properties.role = \"edge\": planning protects the edge sites' capacity",
        ));
    }
    let ends = |at: &str, source: &str, target: &str| -> Result<(usize, usize), InputError> {
        let a = *index
            .get(source)
            .ok_or_else(|| invalid(at, format!("source: unknown node \"{source}\"")))?;
        let b = *index
            .get(target)
            .ok_or_else(|| invalid(at, format!("target: unknown node \"{target}\"")))?;
        if a == b {
            return Err(invalid(at, "a link from a node to itself"));
        }
        Ok((a, b))
    };
    let mut pairs: Vec<Pair> = Vec::new();
    let mut seen: HashMap<(usize, usize), String> = HashMap::new();
    for (i, l) in doc.links.iter().enumerate() {
        let at = format!("links[{i}] ({}-{})", l.source, l.target);
        let (a, b) = ends(&at, &l.source, &l.target)?;
        if let Some(first) = seen.insert((a.min(b), a.max(b)), format!("links[{i}]")) {
            return Err(invalid(
                at,
                format!("the pair is already {first}; list a pair once and give parallel radios as properties.radios"),
            ));
        }
        let radios = radios(&l.properties, &at)?;
        let distance_m = distance(&sites, a, b, l.properties.get("distance_m"), &at)?;
        if let Some(c) = l.cost {
            if !(c.is_finite() && c > 0.0) {
                return Err(invalid(at, format!("cost {c} is not a positive number")));
            }
        }
        pairs.push(Pair {
            a,
            b,
            distance_m,
            radios,
            routing_cost: l.cost,
        });
    }
    for (i, s) in doc
        .plan
        .as_ref()
        .map_or(&[][..], |p| &p.line_of_sight[..])
        .iter()
        .enumerate()
    {
        let at = format!("plan.line_of_sight[{i}] ({}-{})", s.source, s.target);
        let (a, b) = ends(&at, &s.source, &s.target)?;
        let d = s.distance_m.map(Value::from);
        let distance_m = distance(&sites, a, b, d.as_ref(), &at)?;
        // A pair with a link today takes parallel radios anyway.
        if seen
            .insert((a.min(b), a.max(b)), format!("plan.line_of_sight[{i}]"))
            .is_some()
        {
            continue;
        }
        pairs.push(Pair {
            a,
            b,
            distance_m,
            radios: Vec::new(),
            routing_cost: None,
        });
    }
    let net = Network {
        label: doc.label,
        sites,
        pairs,
        gateway,
        constraints,
    };
    check_connected(&net)?;
    check_spectrum_today(&net)?;
    Ok(net)
}

fn constraints(plan: Option<&PlanEntry>) -> Result<Constraints, InputError> {
    let mut c = Constraints::default();
    let Some(p) = plan else { return Ok(c) };
    if let Some(ch) = &p.channels {
        c.channels.clear();
        for (w, &n) in ch {
            let mhz: u32 = w.parse().ok().filter(|&m| m > 0).ok_or_else(|| {
                invalid(
                    format!("plan.channels.\"{w}\""),
                    "a channel width in MHz, e.g. \"20\"",
                )
            })?;
            c.channels.insert(mhz, n);
        }
    }
    if let Some(s) = p.angular_separation_deg {
        if !(0.0..=180.0).contains(&s) {
            return Err(invalid(
                "plan.angular_separation_deg",
                format!("{s} is not an angle from 0 to 180 degrees"),
            ));
        }
        c.separation_deg = s;
    }
    c.max_links_per_site = p.max_links_per_site;
    if let Some(m) = p.max_parallel {
        if m == 0 {
            return Err(invalid("plan.max_parallel", "must be at least 1"));
        }
        c.max_parallel = m;
    }
    Ok(c)
}

fn site(n: &NodeEntry, at: &str) -> Result<Site, InputError> {
    let p = &n.properties;
    let role = match p.get("role") {
        None => Role::Backhaul,
        Some(Value::String(r)) => match r.as_str() {
            "gateway" => Role::Gateway,
            "backhaul" => Role::Backhaul,
            "edge" => Role::Edge,
            other => {
                return Err(invalid(
                    at,
                    format!("properties.role \"{other}\" (expected gateway, backhaul or edge)"),
                ))
            }
        },
        Some(v) => {
            return Err(invalid(
                at,
                format!("properties.role: expected text, found {v}"),
            ))
        }
    };
    let position = match (p.get("lat"), p.get("lon")) {
        (None, None) => None,
        (Some(la), Some(lo)) => {
            let lat = number(la, at, "properties.lat")?;
            let lon = number(lo, at, "properties.lon")?;
            if !(-90.0..=90.0).contains(&lat) || !(-180.0..=180.0).contains(&lon) {
                return Err(invalid(
                    at,
                    format!("position {lat}, {lon} is not a latitude and longitude in degrees"),
                ));
            }
            Some((lat, lon))
        }
        _ => {
            return Err(invalid(
                at,
                "give both properties.lat and properties.lon, or neither",
            ))
        }
    };
    let max_links = match p.get("max_links") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    invalid(
                        at,
                        format!("properties.max_links: expected a whole number, found {v}"),
                    )
                })?,
        ),
    };
    Ok(Site {
        id: n.id.clone(),
        label: n.label.clone(),
        role,
        position,
        max_links,
    })
}

fn number(v: &Value, at: &str, field: &str) -> Result<f64, InputError> {
    v.as_f64()
        .filter(|x| x.is_finite())
        .ok_or_else(|| invalid(at, format!("{field}: expected a number, found {v}")))
}

fn radios(p: &serde_json::Map<String, Value>, at: &str) -> Result<Vec<Radio>, InputError> {
    if let Some(list) = p.get("radios") {
        let list = list
            .as_array()
            .filter(|l| !l.is_empty())
            .ok_or_else(|| invalid(at, "properties.radios: expected a non-empty list of radios"))?;
        return list
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let fields = r.as_object().ok_or_else(|| {
                    invalid(at, format!("properties.radios[{i}]: expected an object"))
                })?;
                radio(fields, &format!("{at}: properties.radios[{i}]"))
            })
            .collect();
    }
    Ok(vec![radio(p, &format!("{at}: properties"))?])
}

fn radio(p: &serde_json::Map<String, Value>, at: &str) -> Result<Radio, InputError> {
    let capacity_mbps = match p.get("capacity_mbps") {
        None => {
            return Err(invalid(
                at,
                "capacity_mbps is missing (the link's capacity in Mbit/s)",
            ))
        }
        Some(v) => number(v, at, "capacity_mbps")?,
    };
    if capacity_mbps <= 0.0 {
        return Err(invalid(
            at,
            format!("capacity_mbps {capacity_mbps} is not positive"),
        ));
    }
    let channel_mhz = match p.get("channel_mhz") {
        None => 20,
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                invalid(
                    at,
                    format!("channel_mhz: expected a width in MHz, found {v}"),
                )
            })?,
    };
    let price = match p.get("price") {
        None => None,
        Some(v) => {
            let x = number(v, at, "price")?;
            if x < 0.0 {
                return Err(invalid(at, format!("price {x} is negative")));
            }
            Some(x)
        }
    };
    let model = match p.get("model") {
        None => None,
        Some(Value::String(m)) => Some(m.clone()),
        Some(v) => return Err(invalid(at, format!("model: expected text, found {v}"))),
    };
    Ok(Radio {
        model,
        capacity_mbps,
        channel_mhz,
        price,
    })
}

fn distance(
    sites: &[Site],
    a: usize,
    b: usize,
    given: Option<&Value>,
    at: &str,
) -> Result<f64, InputError> {
    if let Some(v) = given {
        let d = number(v, at, "distance_m")?;
        if d <= 0.0 {
            return Err(invalid(at, format!("distance_m {d} is not positive")));
        }
        return Ok(d);
    }
    match (sites[a].position, sites[b].position) {
        (Some(p), Some(q)) => Ok(haversine_m(p, q).max(1.0)),
        _ => Err(invalid(
            at,
            "no distance_m, and the two sites have no coordinates to compute it from",
        )),
    }
}

/// Great-circle distance in metres between two (lat, lon) in degrees.
pub fn haversine_m(p: (f64, f64), q: (f64, f64)) -> f64 {
    const EARTH_RADIUS_M: f64 = 6_371_000.0;
    let (p1, p2) = (p.0.to_radians(), q.0.to_radians());
    let dp = p2 - p1;
    let dl = (q.1 - p.1).to_radians();
    let h = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_M * h.sqrt().asin()
}

fn check_connected(net: &Network) -> Result<(), InputError> {
    let n = net.sites.len();
    let mut adj = vec![Vec::new(); n];
    for p in net.pairs.iter().filter(|p| p.exists()) {
        adj[p.a].push(p.b);
        adj[p.b].push(p.a);
    }
    let mut seen = vec![false; n];
    let mut stack = vec![net.gateway];
    seen[net.gateway] = true;
    while let Some(v) = stack.pop() {
        for &w in &adj[v] {
            if !seen[w] {
                seen[w] = true;
                stack.push(w);
            }
        }
    }
    match (0..n).find(|&i| !seen[i] && net.sites[i].role == Role::Edge) {
        Some(i) => Err(invalid(
            format!("nodes[{i}] ({})", net.sites[i].id),
            format!(
                "an edge site with no links to the gateway {}",
                net.sites[net.gateway].id
            ),
        )),
        None => Ok(()),
    }
}

/// Every channel width in use must be one the constraints know.
fn check_spectrum_today(net: &Network) -> Result<(), InputError> {
    for (i, p) in net.pairs.iter().enumerate() {
        for r in &p.radios {
            if net.band_share(r.channel_mhz).is_none() {
                return Err(invalid(
                    format!("links[{i}] ({}-{})", net.sites[p.a].id, net.sites[p.b].id),
                    format!(
                        "channel_mhz {} has no channel count in plan.channels (known: {})",
                        r.channel_mhz,
                        net.constraints
                            .channels
                            .keys()
                            .map(|k| k.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"{"type":"NetworkGraph","nodes":[
        {"id":"gw","properties":{"role":"gateway","lat":39.30,"lon":-123.70}},
        {"id":"r","properties":{"lat":39.31,"lon":-123.70}},
        {"id":"e","properties":{"role":"edge","lat":39.31,"lon":-123.69}}],
      "links":[{"source":"gw","target":"r","properties":{"capacity_mbps":400}},
               {"source":"r","target":"e","properties":{"radios":[{"capacity_mbps":100},{"capacity_mbps":100,"channel_mhz":40}]}}],
      "plan":{"line_of_sight":[{"source":"gw","target":"e"}],"max_links_per_site":6}}"#;

    #[test]
    fn a_small_network_is_read_with_distances_from_coordinates() {
        let net = parse(SMALL).unwrap();
        assert_eq!(net.sites.len(), 3);
        assert_eq!(net.gateway, 0);
        assert_eq!(net.edges(), vec![2]);
        assert_eq!(net.pairs.len(), 3);
        assert!(
            (net.pairs[0].distance_m - 1112.0).abs() < 5.0,
            "{}",
            net.pairs[0].distance_m
        );
        assert_eq!(net.pairs[1].capacity_mbps(), 200.0);
        assert!(!net.pairs[2].exists());
        assert_eq!(net.max_links(1), Some(6));
        let north = net.bearing(0, 1).unwrap();
        assert!(!(1.0..=359.0).contains(&north), "{north}");
    }

    #[test]
    fn antennas_more_than_the_separation_apart_do_not_share_spectrum() {
        let net = parse(SMALL).unwrap();
        // At r: toward gw is south (180), toward e is east (~90): apart.
        assert_eq!(net.sharing_spectrum(1, 0), vec![0]);
        // At gw: toward r is north, toward e north-east (~38): apart.
        assert_eq!(net.sharing_spectrum(0, 0), vec![0]);
    }

    #[test]
    fn bad_input_is_named() {
        let cases = [
            (SMALL.replace("\"target\":\"r\",", "\"target\":\"x\","), "unknown node \"x\""),
            (SMALL.replace("\"role\":\"gateway\",", ""), "no node has properties.role = \"gateway\""),
            (SMALL.replace("\"capacity_mbps\":400", "\"capacity_mbps\":-4"), "capacity_mbps -4 is not positive"),
            (SMALL.replace("\"capacity_mbps\":400", "\"capacity_mbps\":400,\"price\":-1"), "price -1 is negative"),
            (SMALL.replace("\"channel_mhz\":40", "\"channel_mhz\":30"), "channel_mhz 30 has no channel count"),
            (SMALL.replace("\"lat\":39.31,\"lon\":-123.69", "\"lat\":39.31"), "give both properties.lat"),
            (SMALL.replace("{\"id\":\"r\",", "{\"id\":\"gw\","), "node id listed twice"),
            (SMALL.replace("\"max_links_per_site\":6", "\"max_link_per_site\":6"), "unknown field"),
            (
                SMALL
                    .replace("\"source\":\"r\",\"target\":\"e\"", "\"source\":\"r\",\"target\":\"r2\"")
                    .replace("{\"id\":\"r\",", "{\"id\":\"r2\",\"properties\":{\"lat\":39.32,\"lon\":-123.7}},{\"id\":\"r\","),
                "an edge site with no links",
            ),
            ("{\"nodes\":[".to_string(), "malformed NetJSON at line 1"),
        ];
        for (text, want) in cases {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} should say {want:?}");
            assert!(!e.contains('\n'));
        }
    }
}
