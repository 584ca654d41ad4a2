//! [`Lab::parse`] and [`Lab::load`]: a lab file read as its schema
//! (`raw.rs`), then its sections checked in a fixed order by small check
//! functions (`check_*.rs`) that note every problem they find rather than
//! stopping at the first (`problems.rs`); a file with problems is refused
//! with all of them, the first being the one met first. A section that
//! names what another defines (links name routers, events name links and
//! flows) is checked only when that one had no problem, so that one
//! mistake is not reported again through every name it breaks.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use braid_conf::Source;

use super::check_events::{check_events, check_roams};
use super::check_flows::{check_flows, Ends};
use super::check_topology::{check_links, check_name, check_routers, check_segments};
use super::check_variants::{check_mode, check_variants};
use super::model::{DaemonLog, Lab};
use braid_conf::Findings;

use super::raw::RawLab;
use super::LabFileErrors;

impl Lab {
    /// Checks a lab file's text (`file` names it in the problems).
    pub fn parse(file: &str, text: &str) -> Result<Lab, LabFileErrors> {
        let src = Source::new(file, text);
        let raw: RawLab = src.parse()?;
        let mut p = Findings::new(src);
        let name = p.keep(check_name(&src, &raw.name));
        let routers = p.clean(|p| check_routers(p, &raw.routers));
        let links = routers
            .as_ref()
            .and_then(|r| p.clean(|p| check_links(p, r, &raw.links)));
        let segments = routers
            .as_ref()
            .and_then(|r| p.clean(|p| check_segments(p, r, &raw.segments)));
        let flows = match (&routers, &links, &segments) {
            (Some(routers), Some(links), Some(segments)) => {
                let ends = Ends {
                    routers,
                    links,
                    clients: &segments.clients,
                };
                p.clean(|p| check_flows(p, &ends, &raw.flows))
            }
            _ => None,
        };
        let mode = p.keep(check_mode(&src, &raw.mode, "mode"));
        let events = match (&routers, &links, &flows) {
            (Some(routers), Some(links), Some(flows)) => {
                p.clean(|p| check_events(p, routers, links, flows, &raw.events))
            }
            _ => None,
        };
        let roams = match (&routers, &segments) {
            (Some(routers), Some(segments)) => {
                p.clean(|p| check_roams(p, routers, segments, &raw.roams))
            }
            _ => None,
        };
        let variants = match (&routers, &mode) {
            (Some(routers), Some(mode)) => {
                p.clean(|p| check_variants(p, routers, mode, &raw.variants))
            }
            _ => None,
        };
        let probe_interval = p.keep(src.duration(
            &raw.probe_interval,
            "probe_interval",
            Duration::from_millis(200),
        ));
        let settle = p.keep(src.duration(&raw.settle, "settle", Duration::from_secs(2)));
        let checked = (
            name,
            routers,
            links,
            segments,
            flows,
            events,
            roams,
            variants,
            probe_interval,
            settle,
        );
        let (
            Some(name),
            Some(routers),
            Some(links),
            Some(segments),
            Some(flows),
            Some(mut events),
            Some(roams),
            Some(variants),
            Some(probe_interval),
            Some(settle),
        ) = checked
        else {
            return Err(p.refusal());
        };
        if !p.is_clean() {
            return Err(p.refusal());
        }
        // A roam is carried out as events on its access points' ports,
        // in time order among the others.
        for r in &roams {
            events.extend(r.events(segments.clients[r.client].segment));
        }
        events.sort_by_key(|e| e.at);
        Ok(Lab {
            name,
            description: raw.description.unwrap_or_default(),
            paths: raw.paths.unwrap_or(3).clamp(1, 8),
            probe_interval,
            settle,
            dead_after: raw.dead_after,
            log: DaemonLog::default(),
            keep: false,
            auth: raw.auth.unwrap_or(true),
            routers: routers.list,
            links,
            flows,
            events,
            variants,
            segments: segments.segments,
            clients: segments.clients,
            roams,
        })
    }

    /// Reads and checks a lab file.
    pub fn load(path: &Path) -> anyhow::Result<Lab> {
        let text = braid_conf::read_text(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Ok(Lab::parse(&path.display().to_string(), &text)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{EventTarget, LinkAction, Software};

    const GOOD: &str = "name = \"t\"\n[[router]]\nname = \"a\"\nhost = true\n[[router]]\nname = \"b\"\nhost = true\n[[link]]\na = \"a\"\nb = \"b\"\nloss = 0.05\nburst = 3\ndelay = \"10ms\"\n[[flow]]\nfrom = \"a\"\nto = \"b\"\n[[event]]\nat = \"1s\"\nflow = \"a->b\"\naction = \"blackhole\"\n[[variant]]\nname = \"k\"\nsoftware = \"kernel\"\n";

    #[test]
    fn a_good_lab_file_reads_with_its_defaults() {
        let lab = Lab::parse("good.toml", GOOD).unwrap();
        assert_eq!(lab.routers.len(), 2);
        assert_eq!(lab.links[0].delay, Duration::from_millis(10));
        assert_eq!((lab.flows[0].count, lab.flows[0].size), (500, 160));
        assert_eq!(lab.events[0].target, EventTarget::FirstHopOf(0));
        assert_eq!(lab.variants[0].software, Software::Kernel);
        assert_eq!(lab.ns(1), "braid-t-b");
    }

    #[test]
    fn a_rate_event_changes_a_rate_limited_link_and_only_one() {
        let on_link = |action: &str| {
            GOOD.replace(
                "flow = \"a->b\"\naction = \"blackhole\"",
                &format!("a = \"a\"\nb = \"b\"\naction = \"{action}\""),
            )
        };
        let limited = on_link("rate 5Mbit")
            .replace("delay = \"10ms\"", "delay = \"10ms\"\nrate = \"10Mbit\"");
        let lab = Lab::parse("rate.toml", &limited).unwrap();
        assert_eq!(lab.events[0].action, LinkAction::Rate(5_000_000));
        assert_eq!(lab.events[0].target, EventTarget::Link(0));
        for (text, says) in [
            (on_link("rate 5Mbit"), "give the link a `rate`"),
            (
                on_link("rate fast")
                    .replace("delay = \"10ms\"", "delay = \"10ms\"\nrate = \"10Mbit\""),
                "is not a rate",
            ),
        ] {
            let errors = Lab::parse("bad.toml", &text).unwrap_err();
            let shown = errors.to_string();
            assert!(
                shown.contains("event[0].action") && shown.contains(says),
                "{shown}"
            );
        }
    }

    #[test]
    fn a_loss_event_sets_a_links_loss_between_0_and_1() {
        let on_link = |action: &str| {
            GOOD.replace(
                "flow = \"a->b\"\naction = \"blackhole\"",
                &format!("a = \"a\"\nb = \"b\"\naction = \"{action}\""),
            )
        };
        let lab = Lab::parse("loss.toml", &on_link("loss 0.1")).unwrap();
        assert_eq!(lab.events[0].action, LinkAction::Loss(100));
        assert_eq!(lab.events[0].target, EventTarget::Link(0));
        let lab = Lab::parse("loss.toml", &on_link("loss 0")).unwrap();
        assert_eq!(lab.events[0].action, LinkAction::Loss(0));
        for bad in ["loss 1", "loss -0.1", "loss lots"] {
            let shown = Lab::parse("bad.toml", &on_link(bad))
                .unwrap_err()
                .to_string();
            assert!(
                shown.contains("event[0].action") && shown.contains("is not a loss"),
                "{bad}: {shown}"
            );
        }
    }

    #[test]
    fn the_internet_is_a_flows_far_end_and_only_a_gateways_uplink_is_cut() {
        let base = "name = \"t\"\n[[router]]\nname = \"a\"\nhost = true\n[[router]]\nname = \"g\"\nuplink = true\n[[link]]\na = \"a\"\nb = \"g\"\n[[flow]]\nkind = \"connect\"\nfrom = \"a\"\nto = \"internet\"\n[[event]]\nat = \"1s\"\nrouter = \"g\"\naction = \"uplink cut\"\n";
        let lab = Lab::parse("t.toml", base).unwrap();
        assert_eq!(lab.flows[0].kind, crate::scenario::FlowKind::Connect);
        assert_eq!(lab.flows[0].to, 2);
        assert_eq!(lab.events[0].action, LinkAction::UplinkCut);
        for (text, field, says) in [
            (
                base.replace(
                    "from = \"a\"\nto = \"internet\"",
                    "from = \"internet\"\nto = \"a\"",
                ),
                "flow[0].from",
                "a flow's `to` only",
            ),
            (
                base.replace("kind = \"connect\"", "kind = \"urgent\""),
                "flow[0].to",
                "udp, tcp, iperf3-udp or connect",
            ),
            (
                base.replace("to = \"internet\"", "to = \"internet\"\ninterval = \"1ms\""),
                "flow[0].interval",
                "at least 10 ms apart",
            ),
            (
                base.replace("router = \"g\"", "router = \"a\""),
                "event[0].router",
                "uplink = true",
            ),
            (
                base.replace("uplink = true\n", "").replace(
                    "[[event]]\nat = \"1s\"\nrouter = \"g\"\naction = \"uplink cut\"\n",
                    "",
                ),
                "flow[0].to",
                "once a router has uplink = true",
            ),
        ] {
            let errors = Lab::parse("bad.toml", &text).unwrap_err();
            let shown = errors.to_string();
            assert!(shown.contains(field) && shown.contains(says), "{shown}");
        }
    }

    #[test]
    fn bad_lab_files_are_refused_with_line_and_field() {
        let cases = [
            (
                GOOD.replace("name = \"t\"", "name = \"has space\""),
                1,
                "name",
            ),
            (
                GOOD.replace("loss = 0.05", "loss = 1.5"),
                11,
                "link[0].loss",
            ),
            (
                GOOD.replace("b = \"b\"\nloss", "b = \"zz\"\nloss"),
                10,
                "link[0].b",
            ),
            (
                GOOD.replace("to = \"b\"", "to = \"b\"\ncount = 0"),
                17,
                "flow[0].count",
            ),
            (
                GOOD.replace("action = \"blackhole\"", "action = \"explode\""),
                20,
                "event[0].action",
            ),
            (
                GOOD.replace("software = \"kernel\"", "software = \"olsr\""),
                23,
                "variant[0].software",
            ),
            (
                GOOD.replace("delay = \"10ms\"", "delay = \"soon\""),
                13,
                "link[0].delay",
            ),
            (GOOD.replace("[[flow]]", "[[flw]]"), 14, "flw"),
        ];
        for (text, line, field) in cases {
            let errors = Lab::parse("bad.toml", &text).unwrap_err();
            let e = errors.first();
            assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
        }
    }

    #[test]
    fn every_problem_is_reported_one_per_line_the_first_first() {
        let text = GOOD
            .replace("loss = 0.05", "loss = 1.5")
            .replace("to = \"b\"", "to = \"b\"\ncount = 0")
            .replace("action = \"blackhole\"", "action = \"explode\"")
            .replace("software = \"kernel\"", "software = \"olsr\"");
        let errors = Lab::parse("bad.toml", &text).unwrap_err();
        let all: Vec<(usize, &str)> = errors.all().map(|e| (e.line, e.field.as_str())).collect();
        // The flows wait for the links (they may name them), and the
        // events for the flows: one mistake is reported once.
        assert_eq!(all, [(11, "link[0].loss"), (24, "variant[0].software")]);
        let shown = errors.to_string();
        assert_eq!(shown.lines().count(), 2, "{shown}");
        assert!(
            shown.starts_with("bad.toml:11: link[0].loss: a ratio in [0, 1)\n"),
            "{shown}"
        );
        // With the links right, the flow's and the event's own problems.
        let text = text.replace("loss = 1.5", "loss = 0.05");
        let errors = Lab::parse("bad.toml", &text).unwrap_err();
        let all: Vec<(usize, &str)> = errors.all().map(|e| (e.line, e.field.as_str())).collect();
        assert_eq!(all, [(17, "flow[0].count"), (24, "variant[0].software")]);
        // Independent fields of one item are each reported.
        let text = GOOD.replace(
            "loss = 0.05\nburst = 3\ndelay = \"10ms\"",
            "loss = 2.0\nburst = 0.5\ndelay = \"soon\"",
        );
        let errors = Lab::parse("bad.toml", &text).unwrap_err();
        let fields: Vec<&str> = errors.all().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["link[0].loss", "link[0].burst", "link[0].delay"]);
    }
}
