//! The human form of `braid ctl`'s documents and monitor events: tables
//! and sentences an operator reads, from the same JSON `--json` prints
//! (docs/operations.md lists every field).

use serde_json::Value;

/// A field as text: strings bare, null or absent as "-".
fn s(v: &Value, k: &str) -> String {
    match v.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "-".into(),
        Some(x) => x.to_string(),
    }
}

/// A number field with `digits` decimals, "-" when null.
fn num(v: &Value, k: &str, digits: usize) -> String {
    v.get(k)
        .and_then(Value::as_f64)
        .map_or("-".into(), |x| format!("{x:.digits$}"))
}

fn list(doc: &Value, key: &str) -> Vec<Value> {
    doc.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// A duration in milliseconds as "3d 2h 5m 7s" (largest units first).
pub fn duration_ms(ms: u64) -> String {
    let s = ms / 1000;
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    let mut out = Vec::new();
    if d > 0 {
        out.push(format!("{d}d"));
    }
    if d > 0 || h > 0 {
        out.push(format!("{h}h"));
    }
    if d > 0 || h > 0 || m > 0 {
        out.push(format!("{m}m"));
    }
    out.push(format!("{sec}s"));
    out.join(" ")
}

/// A session's class, with its `[[policy]]` name (the document's
/// `classes`); 255 is braid's own (the path reports an egress sends back
/// to the ingress).
fn class(doc: &Value, v: &Value) -> String {
    match v.get("class").and_then(Value::as_u64) {
        Some(255) => "255 (reports)".into(),
        Some(c) => match doc
            .get("classes")
            .and_then(|n| n.get(c.to_string()))
            .and_then(Value::as_str)
        {
            Some(name) => format!("{c} ({name})"),
            None => c.to_string(),
        },
        None => "-".into(),
    }
}

/// A router's `[labels]` name (the document's `names`), if it has one.
fn name_of<'a>(doc: &'a Value, id: &Value) -> Option<&'a str> {
    let key = match id {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => return None,
    };
    doc.get("names")?.get(key)?.as_str()
}

/// A node id as a table shows it: "3 (d)" when it has a name.
fn node(doc: &Value, id: Option<&Value>) -> String {
    let Some(id) = id.filter(|v| !v.is_null()) else {
        return "-".into();
    };
    let plain = id.as_str().map_or_else(|| id.to_string(), String::from);
    match name_of(doc, id) {
        Some(name) => format!("{plain} ({name})"),
        None => plain,
    }
}

/// A path as "1>3>4", each router by its name where it has one ("a>3>d").
fn hops(doc: &Value, p: &Value) -> String {
    p.as_array()
        .map(|h| {
            h.iter()
                .map(|x| name_of(doc, x).map_or_else(|| x.to_string(), String::from))
                .collect::<Vec<_>>()
                .join(">")
        })
        .unwrap_or_default()
}

/// The human form of the document `command` got.
pub fn table(command: &str, doc: &Value) -> String {
    match command {
        "status" => status(doc),
        "neighbors" => neighbors(doc),
        "links" => links(doc),
        "routes" => routes(doc),
        "paths" => paths(doc),
        "topology" => topology(doc),
        "sessions" => sessions(doc),
        "clients" => clients(doc),
        "stats" => stats(doc),
        "ping" => ping(doc),
        "traceroute" => traceroute(doc),
        "reload" => {
            let restart: Vec<String> = list(doc, "restart_needed")
                .iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect();
            if restart.is_empty() {
                "reloaded\n".into()
            } else {
                format!(
                    "reloaded; these changed but take effect at the next start: {}\n",
                    restart.join(", ")
                )
            }
        }
        _ => format!("{doc}\n"),
    }
}

fn rtt(v: &Value) -> String {
    match v.get("rtt_ms").and_then(Value::as_f64) {
        Some(ms) => format!("{ms:.2} ms"),
        None if v.get("unreachable") == Some(&Value::Bool(true)) => "no path".into(),
        None => "no reply".into(),
    }
}

/// `ping`: a line per echo, then the count and the round trips.
fn ping(doc: &Value) -> String {
    let probes = list(doc, "probes");
    let mut out = String::new();
    for p in &probes {
        out.push_str(&format!(
            "echo to {} seq {}: {}\n",
            node(doc, doc.get("target")),
            s(p, "seq"),
            rtt(p)
        ));
    }
    let rtts: Vec<f64> = probes
        .iter()
        .filter_map(|p| p.get("rtt_ms").and_then(Value::as_f64))
        .collect();
    let (sent, received) = (s(doc, "sent"), s(doc, "received"));
    out.push_str(&format!("{sent} sent, {received} received"));
    if !rtts.is_empty() {
        let min = rtts.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = rtts.iter().cloned().fold(0.0, f64::max);
        let avg = rtts.iter().sum::<f64>() / rtts.len() as f64;
        out.push_str(&format!(
            ", round trip min/avg/max {min:.2}/{avg:.2}/{max:.2} ms"
        ));
    }
    out.push('\n');
    out
}

/// `traceroute`: the path, then each router of it and its round trip.
fn traceroute(doc: &Value) -> String {
    let mut out = format!(
        "path to {}: {}\n",
        node(doc, doc.get("target")),
        doc.get("path").map(|p| hops(doc, p)).unwrap_or_default()
    );
    for h in list(doc, "hops") {
        out.push_str(&format!(
            "{:>3}  {:<14} {}\n",
            s(&h, "hop"),
            node(doc, h.get("node")),
            rtt(&h)
        ));
    }
    out
}

fn status(doc: &Value) -> String {
    let mut out = String::new();
    let up = doc.get("uptime_ms").and_then(Value::as_u64).unwrap_or(0);
    let interfaces: Vec<String> = list(doc, "interfaces")
        .iter()
        .filter_map(|x| x.as_str().map(String::from))
        .collect();
    out.push_str(&format!("node          {}\n", s(doc, "node")));
    out.push_str(&format!("up            {}\n", duration_ms(up)));
    out.push_str(&format!("interfaces    {}\n", interfaces.join(", ")));
    out.push_str(&format!("neighbors     {}\n", s(doc, "neighbors")));
    out.push_str(&format!(
        "routers known {} (in the link-state database)\n",
        s(doc, "origins_known")
    ));
    out.push_str(&format!(
        "routed to     {} egresses (traffic goes there)\n",
        s(doc, "egresses_routed")
    ));
    out.push_str(&format!(
        "sessions      {} entering the mesh here, {} leaving it here\n",
        s(doc, "ingress_sessions"),
        s(doc, "egress_sessions")
    ));
    let a = doc.get("authentication").cloned().unwrap_or(Value::Null);
    if a.get("enabled").and_then(Value::as_bool) == Some(true) {
        out.push_str(&format!(
            "auth          on: key {} signs, keys {} accepted, {} neighbors verified\n",
            s(&a, "signing_key"),
            a.get("accepted_keys").map_or("-".into(), |k| k.to_string()),
            s(&a, "verified_senders")
        ));
        for f in a
            .get("failing")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let says = f
                .get("says_node")
                .filter(|n| !n.is_null())
                .map_or(String::new(), |n| format!(" (says node {n})"));
            out.push_str(&format!(
                "AUTH FAILING  {} on {}{}: {} messages refused ({}), last {} ms ago: another [auth] key there?\n",
                s(f, "address"),
                s(f, "interface"),
                says,
                s(f, "messages"),
                s(f, "reason"),
                s(f, "last_ms_ago")
            ));
        }
    } else {
        out.push_str("auth          OFF: anyone on these links can change the routes ([auth] keys; docs/security.md)\n");
    }
    match doc.get("duplicate_id") {
        Some(d) if !d.is_null() => out.push_str(&format!(
            "DUPLICATE ID  {} ({} ms ago): {}\n",
            s(d, "sign"),
            s(d, "ms_ago"),
            s(d, "fix")
        )),
        _ => {}
    }
    if let Some(u) = doc.get("uplink").filter(|u| !u.is_null()) {
        out.push_str(&uplink(u));
    }
    out
}

/// A gateway's uplink: its state, what it serves, each target.
fn uplink(u: &Value) -> String {
    let healthy = u.get("healthy").and_then(Value::as_bool) == Some(true);
    let prefixes: Vec<String> = list(u, "prefixes")
        .iter()
        .filter_map(|x| x.as_str().map(String::from))
        .collect();
    let since = duration_ms(u.get("for_ms").and_then(Value::as_u64).unwrap_or(0));
    let mut out = if healthy {
        format!(
            "uplink        healthy for {since}: {} advertised ({} probes every {} ms; {} failed rounds in a row withdraw it)\n",
            prefixes.join(", "),
            s(u, "method"),
            s(u, "interval_ms"),
            s(u, "down")
        )
    } else {
        format!(
            "UPLINK DOWN   for {since}: {} withdrawn ({} probes; back after {} good rounds in a row, {} so far)\n",
            prefixes.join(", "),
            s(u, "method"),
            s(u, "up"),
            s(u, "streak")
        )
    };
    for t in list(u, "targets") {
        let rtt = t
            .get("last_rtt_ms")
            .and_then(Value::as_f64)
            .map_or("-".into(), |r| format!("{r:.1} ms"));
        let last = if t.get("answered_last").and_then(Value::as_bool) == Some(true) {
            "answered"
        } else {
            "silent"
        };
        out.push_str(&format!(
            "  target      {:<23} {last:<9} {}/{} answered, last round trip {rtt}\n",
            s(&t, "address"),
            s(&t, "answered"),
            s(&t, "sent")
        ));
    }
    if let Some(e) = u.get("last_error").and_then(Value::as_str) {
        out.push_str(&format!("  last error  {e}\n"));
    }
    out
}

fn neighbors(doc: &Value) -> String {
    let mut out =
        String::from("neighbor       interface        address                 last heard\n");
    for n in list(doc, "neighbors") {
        out.push_str(&format!(
            "{:<14} {:<16} {:<23} {} ms ago\n",
            node(doc, n.get("id")),
            s(&n, "interface"),
            s(&n, "address"),
            s(&n, "last_heard_ms_ago")
        ));
    }
    out
}

fn links(doc: &Value) -> String {
    let mut out = String::from(
        "neighbor       interface        address            df     dr     ETX    cost out  cost in   factor\n",
    );
    for l in list(doc, "links") {
        let cost = |k| {
            l.get(k)
                .and_then(Value::as_f64)
                .map_or("-".into(), |x| format!("{:.3}", x / 1000.0))
        };
        out.push_str(&format!(
            "{:<14} {:<16} {:<18} {:<6} {:<6} {:<6} {:<9} {:<9} {}\n",
            node(doc, l.get("neighbor")),
            s(&l, "interface"),
            s(&l, "address"),
            num(&l, "df", 2),
            num(&l, "dr", 2),
            num(&l, "etx", 2),
            cost("metric_out"),
            cost("metric_in"),
            num(&l, "cost_factor", 1)
        ));
    }
    out
}

fn prefixes(r: &Value) -> String {
    let p: Vec<String> = list(r, "prefixes")
        .iter()
        .filter_map(|p| p.as_str().map(String::from))
        .collect();
    if p.is_empty() {
        "-".into()
    } else {
        p.join(",")
    }
}

fn cost_at(r: &Value, i: usize) -> String {
    r.get("costs")
        .and_then(|c| c.get(i))
        .and_then(Value::as_f64)
        .map_or("-".into(), |c| format!("{c:.3}"))
}

fn in_use(r: &Value) -> bool {
    r.get("in_use").and_then(Value::as_bool).unwrap_or(true)
}

/// `routes`: one line per destination, as a routing table: the
/// prefixes, the egress, the next hop and cost of the primary path.
fn routes(doc: &Value) -> String {
    let routes = list(doc, "routes");
    if routes.is_empty() {
        return routes_empty(doc);
    }
    let mut out = String::from(
        "prefixes                   egress         next hop       cost    paths  state\n",
    );
    for r in routes {
        let paths = list(&r, "paths");
        let next = node(doc, paths.first().and_then(|p| p.get(1)));
        // Prefixes wider than their column (an access point's clients,
        // one /32 each) get a line of their own, the row below them.
        let prefixes = prefixes(&r);
        let column = if prefixes.len() > 26 {
            out.push_str(&prefixes);
            out.push('\n');
            String::new()
        } else {
            prefixes
        };
        out.push_str(&format!(
            "{:<26} {:<14} {:<14} {:<7} {:<6} {}\n",
            column,
            node(doc, r.get("egress")),
            next,
            cost_at(&r, 0),
            paths.len(),
            if paths.is_empty() {
                "unreachable"
            } else if in_use(&r) {
                "in use"
            } else {
                "idle (no traffic yet)"
            }
        ));
    }
    out
}

/// `paths`: every path toward each egress, in full, with its cost; the
/// first is the primary.
fn paths(doc: &Value) -> String {
    let routes = list(doc, "routes");
    if routes.is_empty() {
        return routes_empty(doc);
    }
    let mut out = String::new();
    for r in routes {
        out.push_str(&format!(
            "to {} ({}){}\n",
            node(doc, r.get("egress")),
            prefixes(&r),
            if in_use(&r) {
                ""
            } else {
                ": not in use, what traffic would take"
            }
        ));
        let paths = list(&r, "paths");
        if paths.is_empty() {
            out.push_str("  no path\n");
        }
        for (i, p) in paths.iter().enumerate() {
            out.push_str(&format!(
                "  {:<8} cost {:<8} {}\n",
                if i == 0 { "primary" } else { "" },
                cost_at(&r, i),
                hops(doc, p)
            ));
        }
    }
    out
}

fn routes_empty(doc: &Value) -> String {
    format!(
        "no other router known yet ({} in the link-state database): see `braid ctl neighbors`\n",
        list(doc, "origins").len()
    )
}

/// `topology`: the link-state database, one origin per block.
fn topology(doc: &Value) -> String {
    let mut out = String::from("origin         seq         prefixes / links (cost out/in)\n");
    for o in list(doc, "origins") {
        out.push_str(&format!(
            "{:<14} {:<11} {}\n",
            node(doc, o.get("origin")),
            s(&o, "seq"),
            prefixes(&o)
        ));
        let costs = list(&o, "link_costs");
        for (i, n) in list(&o, "links").iter().enumerate() {
            let c = costs.get(i);
            let f = |j: usize| {
                c.and_then(|c| c.get(j))
                    .and_then(Value::as_f64)
                    .map_or("-".into(), |x| format!("{x:.3}"))
            };
            out.push_str(&format!(
                "{:<27}-> {:<14} {}/{}\n",
                "",
                node(doc, Some(n)),
                f(0),
                f(1)
            ));
        }
    }
    out
}

fn sessions(doc: &Value) -> String {
    let mut out = String::new();
    let ingress = list(doc, "ingress");
    out.push_str(&format!("entering the mesh here: {}\n", ingress.len()));
    if !ingress.is_empty() {
        out.push_str(
            "  egress         class         mode            in force        where   packets   sent      no path\n",
        );
    }
    for i in &ingress {
        let c = i.get("counters").cloned().unwrap_or(Value::Null);
        let sent: u64 = c
            .get("sent_per_path")
            .and_then(Value::as_array)
            .map_or(0, |a| a.iter().filter_map(Value::as_u64).sum());
        out.push_str(&format!(
            "  {:<14} {:<13} {:<15} {:<15} {:<7} {:<9} {:<9} {}\n",
            node(doc, i.get("egress")),
            class(doc, i),
            s(i, "mode"),
            s(i, "active_mode"),
            s(i, "datapath"),
            s(&c, "data_packets"),
            sent,
            s(&c, "no_path")
        ));
        for p in list(i, "paths") {
            out.push_str(&format!(
                "          path {} ({}): loss {}%, mean burst {}, {} packets/s ({} now), delay {} ms (spread {} ms, queue {} ms), share {}%, hold {} ms, {} waiting here{}\n",
                s(&p, "path"),
                s(&p, "route"),
                p.get("loss")
                    .and_then(Value::as_f64)
                    .map_or("-".into(), |l| format!("{:.2}", l * 100.0)),
                num(&p, "burst", 1),
                num(&p, "delivered_per_s", 0),
                num(&p, "carried_per_s", 0),
                num(&p, "delay_ms", 1),
                num(&p, "delay_spread_ms", 1),
                num(&p, "queue_ms", 1),
                p.get("share")
                    .and_then(Value::as_f64)
                    .map_or("-".into(), |s| format!("{:.0}", s * 100.0)),
                num(&p, "hold_ms", 1),
                s(&p, "waiting"),
                p.get("pace_mbit")
                    .and_then(Value::as_f64)
                    .map_or(String::new(), |r| format!(", paced at {r:.2} Mbit/s"))
            ));
        }
    }
    let egress = list(doc, "egress");
    out.push_str(&format!("leaving the mesh here: {}\n", egress.len()));
    if !egress.is_empty() {
        out.push_str(
            "  ingress        class         where   delivered  duplicates  rebuilt  too old\n",
        );
    }
    for e in &egress {
        let c = e.get("counters").cloned().unwrap_or(Value::Null);
        out.push_str(&format!(
            "  {:<14} {:<13} {:<7} {:<10} {:<11} {:<8} {}\n",
            node(doc, e.get("ingress")),
            class(doc, e),
            s(e, "datapath"),
            s(&c, "delivered"),
            s(&c, "duplicates"),
            s(&c, "rebuilt"),
            s(&c, "too_old")
        ));
        if let Some(r) = e.get("reorder").filter(|r| r.is_object()) {
            out.push_str(&format!(
                "          re-order: {} held, {} gaps given up, {} late (out of order), wait {} ms\n",
                s(r, "held"),
                s(r, "gaps_skipped"),
                s(r, "late"),
                num(r, "wait_ms", 1)
            ));
        }
    }
    out
}

fn clients(doc: &Value) -> String {
    let mut out = String::new();
    if list(doc, "interfaces").is_empty() {
        out.push_str("no access interfaces here ([[access]] in the config)\n");
    }
    for i in list(doc, "interfaces") {
        out.push_str(&format!(
            "interface {} (gateway {}): {} probed, {} probes sent, {} replies, {} DHCP and {} neighbor discovery messages naming clients, {} router advertisements, {} malformed, {} refused\n",
            s(&i, "interface"),
            s(&i, "gateway"),
            s(&i, "probed"),
            s(&i, "probes_sent"),
            s(&i, "replies"),
            s(&i, "dhcp"),
            s(&i, "neighbor_discovery"),
            s(&i, "router_advertisements"),
            s(&i, "malformed"),
            s(&i, "refused")
        ));
    }
    out.push_str("client           quality  serving  last heard   served by (node:quality)\n");
    for c in list(doc, "clients") {
        let by: Vec<String> = c
            .get("served_by")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|p| format!("{}:{}", p[0], p[1])).collect())
            .unwrap_or_default();
        out.push_str(&format!(
            "{:<16} {:<8} {:<8} {:>6} ms ago  {}\n",
            s(&c, "client"),
            s(&c, "quality"),
            s(&c, "serving"),
            s(&c, "last_heard_ms_ago"),
            by.join(" ")
        ));
    }
    out
}

/// `stats`: one section per part, only the counters that are not zero
/// (lists by index: `per_path[1]`), so that what happened stands out.
fn stats(doc: &Value) -> String {
    fn walk(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, x, out);
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(&format!("{prefix}[{i}]"), x, out);
                }
            }
            Value::Number(n) if n.as_f64() == Some(0.0) => {}
            Value::Null | Value::Bool(false) => {}
            Value::String(s) if s.is_empty() => {}
            Value::String(s) => out.push((prefix.to_string(), s.clone())),
            x => out.push((prefix.to_string(), x.to_string())),
        }
    }
    let mut out = String::new();
    let body = doc.get("stats").cloned().unwrap_or(Value::Null);
    let Value::Object(parts) = body else {
        return format!("{doc}\n");
    };
    for (part, v) in parts {
        let mut lines = Vec::new();
        walk("", &v, &mut lines);
        out.push_str(&format!("{part}:"));
        if lines.is_empty() {
            out.push_str(" all zero\n");
            continue;
        }
        out.push('\n');
        let width = lines.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (k, v) in lines {
            out.push_str(&format!("  {k:<width$}  {v}\n"));
        }
    }
    out
}

/// One monitor event as a line of text: its time, kind and fields
/// (`routes` as paths).
pub fn event_line(line: &str) -> String {
    let Ok(Value::Object(m)) = serde_json::from_str::<Value>(line) else {
        return line.to_string();
    };
    // The wall clock (UTC) when the daemon gives it; else the daemon's
    // seconds since it started.
    let time = match m.get("unix_ms").and_then(Value::as_u64) {
        Some(ms) => humantime::format_rfc3339_millis(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms),
        )
        .to_string(),
        None => m
            .get("time_ms")
            .and_then(Value::as_u64)
            .map_or("-".into(), |t| format!("{:.3}", t as f64 / 1000.0)),
    };
    let kind = m.get("event").and_then(Value::as_str).unwrap_or("?");
    let mut fields = Vec::new();
    for (k, v) in &m {
        if matches!(k.as_str(), "version" | "time_ms" | "unix_ms" | "event") {
            continue;
        }
        let text = if k == "changed" {
            // A route change: each egress's primary path, before and now.
            v.as_array()
                .map(|cs| {
                    cs.iter()
                        .map(|c| {
                            let path = |k: &str| match c.get(k) {
                                Some(p) if !p.is_null() => hops(&Value::Null, p),
                                _ => "none".into(),
                            };
                            format!("{}: {} -> {}", s(c, "egress"), path("from"), path("to"))
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .unwrap_or_default()
        } else if k == "routes" {
            v.as_array()
                .map(|rs| {
                    rs.iter()
                        .map(|r| {
                            let ps: Vec<String> = list(r, "paths")
                                .iter()
                                .map(|p| hops(&Value::Null, p))
                                .collect();
                            format!("{}: {}", s(r, "egress"), ps.join(" "))
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .unwrap_or_default()
        } else {
            match v {
                Value::String(s) => s.clone(),
                x => x.to_string(),
            }
        };
        fields.push(format!("{k}={text}"));
    }
    format!("{time:>12}  {kind:<15} {}", fields.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uptime_reads_as_days_hours_minutes_seconds() {
        assert_eq!(duration_ms(999), "0s");
        assert_eq!(duration_ms(61_000), "1m 1s");
        assert_eq!(duration_ms(3_600_000), "1h 0m 0s");
        assert_eq!(duration_ms(90_061_000), "1d 1h 1m 1s");
    }

    #[test]
    fn stats_show_what_is_not_zero_by_name_and_index() {
        let doc = json!({"version": 1, "node": 2, "stats": {
            "io": {"udp_rx": 5, "udp_tx": 0},
            "ingress": {"per_path": [0, 7, 0]},
            "lsdb": {"installed": 0}
        }});
        let t = stats(&doc);
        assert!(t.contains("io:\n  udp_rx  5\n"), "{t}");
        assert!(t.contains("per_path[1]  7"), "{t}");
        assert!(!t.contains("per_path[0]"), "{t}");
        assert!(t.contains("lsdb: all zero"), "{t}");
        assert!(!t.contains("udp_tx"), "{t}");
    }

    #[test]
    fn routes_and_paths_say_different_things() {
        let doc = json!({"version": 1, "node": 1, "origins": [], "routes": [
            {"egress": 4, "prefixes": ["198.18.4.0/24"], "paths": [[1, 2, 4], [1, 3, 4]],
             "costs": [2.1, 2.5], "in_use": true},
            {"egress": 5, "prefixes": [], "paths": [[1, 5]], "costs": [1.0], "in_use": false}
        ]});
        let r = routes(&doc);
        assert!(
            r.contains(
                "198.18.4.0/24              4              2              2.100   2      in use"
            ),
            "{r}"
        );
        assert!(r.contains("idle (no traffic yet)"), "{r}");
        let p = paths(&doc);
        assert!(p.contains("primary  cost 2.100    1>2>4"), "{p}");
        assert!(p.contains("cost 2.500    1>3>4"), "{p}");
        assert!(p.contains("not in use"), "{p}");
    }

    #[test]
    fn ping_and_traceroute_read_as_ping_and_traceroute_do() {
        let doc = json!({"version": 1, "node": 1, "target": 4, "sent": 3, "received": 2, "probes": [
            {"seq": 1, "rtt_ms": 0.5, "unreachable": false},
            {"seq": 2, "rtt_ms": null, "unreachable": false},
            {"seq": 3, "rtt_ms": 1.5, "unreachable": false}]});
        let t = ping(&doc);
        assert!(t.contains("echo to 4 seq 2: no reply"), "{t}");
        assert!(
            t.ends_with("3 sent, 2 received, round trip min/avg/max 0.50/1.00/1.50 ms\n"),
            "{t}"
        );
        let doc = json!({"version": 1, "node": 1, "target": 4, "path": [1, 2, 4], "hops": [
            {"hop": 1, "node": 2, "rtt_ms": 0.3, "unreachable": false},
            {"hop": 2, "node": 4, "rtt_ms": null, "unreachable": true}]});
        let t = traceroute(&doc);
        assert_eq!(
            t,
            "path to 4: 1>2>4\n  1  2              0.30 ms\n  2  4              no path\n"
        );
    }

    /// Issue 32: `[labels]` and class names were on the dashboard only,
    /// and client entries broke the routes table's columns.
    #[test]
    fn routers_and_classes_go_by_their_names_and_long_prefixes_keep_the_columns() {
        let doc = json!({"version": 1, "node": 1, "names": {"1": "a", "4": "d"},
            "classes": {"1": "voip"}, "origins": [], "routes": [
            {"egress": 4, "prefixes": ["198.18.4.0/24"], "paths": [[1, 2, 4]],
             "costs": [2.1], "in_use": true},
            {"egress": 2, "prefixes": ["198.18.9.10/32", "198.18.9.11/32", "198.18.9.12/32"],
             "paths": [[1, 2]], "costs": [1.0], "in_use": true}
        ]});
        let r = routes(&doc);
        assert!(
            r.contains("198.18.4.0/24              4 (d)          2              2.100"),
            "{r}"
        );
        assert!(
            r.contains("198.18.9.10/32,198.18.9.11/32,198.18.9.12/32\n                           2              2              1.000"),
            "{r}"
        );
        assert!(paths(&doc).contains("a>2>d"), "{}", paths(&doc));
        let sessions_doc = json!({"names": {"4": "d"}, "classes": {"1": "voip"},
            "ingress": [{"egress": 4, "class": 1, "mode": "mirror:2", "active_mode": "mirror:2",
                "datapath": "user", "counters": {}, "paths": []}], "egress": []});
        let t = sessions(&sessions_doc);
        assert!(t.contains("  4 (d)          1 (voip)"), "{t}");
        // A route change says what changed.
        let line = event_line(
            r#"{"version":1,"event":"route_change","time_ms":5,"changed":[{"egress":4,"from":[1,2,4],"to":[1,3,4]},{"egress":5,"from":[1,5],"to":null}],"routes":[]}"#,
        );
        assert!(
            line.contains("changed=4: 1>2>4 -> 1>3>4; 5: 1>5 -> none"),
            "{line}"
        );
        // Monitor lines carry the wall clock.
        let line = event_line(
            r#"{"version":1,"event":"neighbor_up","time_ms":5,"unix_ms":1795000000123,"neighbor":2}"#,
        );
        assert!(line.starts_with("2026-11-18T"), "{line}");
        assert!(
            line.contains(".123Z") && line.contains("neighbor_up"),
            "{line}"
        );
    }

    #[test]
    fn monitor_events_read_as_text() {
        let l = event_line(
            r#"{"version":1,"event":"neighbor_down","time_ms":12345,"neighbor":3,"why":"unheard"}"#,
        );
        assert_eq!(l, "      12.345  neighbor_down   neighbor=3 why=unheard");
        let r = event_line(
            r#"{"version":1,"event":"route_change","time_ms":1,"routes":[{"egress":4,"paths":[[1,2,4]]}]}"#,
        );
        assert!(r.ends_with("routes=4: 1>2>4"), "{r}");
        assert_eq!(event_line("not json"), "not json");
    }
}
