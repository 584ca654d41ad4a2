//! FRR (Debian's `frr` package) as the lab's routing: OSPFv2 on every
//! link (point-to-point, the scenario's hello interval and dead interval),
//! with or without BFD (FRR's bfdd: 50 ms x 3 by default), announcing the
//! host subnets: what WISPs run today, the peer braid's failover is
//! compared with. Each router runs zebra (as the router's daemon: its log
//! and pid file are the router's), ospfd and bfdd (daemonised, their pid
//! files in the lab's directory, which teardown kills), every path of
//! theirs (configs, sockets, logs) in the lab's directory so that
//! namespaces never share one.

use std::path::PathBuf;

use crate::scenario::{Lab, Ospf};
use crate::step::Step;

/// FRR's daemons (Debian installs them here).
pub const FRR_DIR: &str = "/usr/lib/frr";

/// Whether FRR's daemons are installed.
pub fn missing() -> Option<String> {
    ["zebra", "ospfd", "bfdd"]
        .iter()
        .find(|d| !PathBuf::from(FRR_DIR).join(d).exists())
        .map(|d| format!("FRR's {d} is not installed (Debian: apt-get install frr)"))
}

/// Router `i`'s FRR configs and daemons.
pub fn start(lab: &Lab, i: usize, ospf: Ospf) -> Vec<Step> {
    let dir = lab.dir();
    let name = &lab.routers[i].name;
    // FRR drops root for its `frr` user (which Debian's package puts in
    // the vty group it insists on): its sockets, pid files and logs go to
    // a directory of the lab's that user owns.
    let run = frr_dir(lab);
    let path = |what: &str| run.join(format!("{name}.{what}")).display().to_string();
    let _ = &dir;
    let zserv = path("zserv");
    let bfdctl = path("bfdctl");
    let mut ospfd = format!(
        "frr defaults traditional\nhostname {name}\nlog file {}\n!\n",
        path("ospfd.log")
    );
    for dev in lab.interfaces_of(i) {
        ospfd += &format!(
            "interface {dev}\n ip ospf network point-to-point\n ip ospf hello-interval {}\n ip ospf dead-interval {}\n",
            ospf.hello.as_secs().max(1),
            ospf.dead.as_secs().max(1)
        );
        if ospf.bfd.is_some() {
            ospfd += " ip ospf bfd\n ip ospf bfd profile lab\n";
        }
        ospfd += "!\n";
    }
    ospfd += &format!(
        "router ospf\n ospf router-id 10.255.0.{}\n network 198.19.0.0/16 area 0\n network 198.18.0.0/16 area 0\n passive-interface host0\n log-adjacency-changes\n timers throttle spf 0 50 1000\n!\n",
        i + 1
    );
    let mut bfdd = format!(
        "frr defaults traditional\nhostname {name}\nlog file {}\n!\n",
        path("bfdd.log")
    );
    if let Some((interval, mult)) = ospf.bfd {
        let ms = interval.as_millis().max(10);
        bfdd += &format!(
            "bfd\n profile lab\n  detect-multiplier {mult}\n  receive-interval {ms}\n  transmit-interval {ms}\n !\n!\n"
        );
    }
    let zebra = format!(
        "frr defaults traditional\nhostname {name}\nlog file {}\n!\n",
        path("zebra.log")
    );
    let common = |conf: &str, pid: &str| -> Vec<String> {
        vec![
            "-N".into(),
            format!("braid-lab-{}-{name}", lab.name),
            "-f".into(),
            path(conf),
            "-i".into(),
            path(pid),
            "-z".into(),
            zserv.clone(),
            "--vty_socket".into(),
            run.join(name.as_str()).display().to_string(),
        ]
    };
    let frr = |d: &str| PathBuf::from(FRR_DIR).join(d);
    let ns = lab.ns(i);
    // ospfd and bfdd daemonise (their pid files are in the lab's
    // directory); zebra stays the router's daemon.
    let background = |d: &str, conf: &str, pid: &str, extra: &[String]| {
        let mut args = vec![frr(d).display().to_string(), "-d".to_string()];
        args.extend(common(conf, pid));
        args.extend(extra.iter().cloned());
        Step::Command {
            ns: ns.clone(),
            args,
        }
    };
    let in_run = |f: &str| format!("frr/{name}.{f}");
    let mut steps = Vec::new();
    if i == 0 {
        steps.push(Step::Command {
            ns: ns.clone(),
            args: vec!["mkdir".into(), "-p".into(), run.display().to_string()],
        });
    }
    steps.extend([
        Step::File {
            name: in_run("zebra.conf"),
            contents: zebra,
        },
        Step::File {
            name: in_run("ospfd.conf"),
            contents: ospfd,
        },
        Step::File {
            name: in_run("bfdd.conf"),
            contents: bfdd,
        },
        Step::Command {
            ns: ns.clone(),
            args: vec![
                "mkdir".into(),
                "-p".into(),
                run.join(name.as_str()).display().to_string(),
            ],
        },
        Step::Command {
            ns: ns.clone(),
            args: vec![
                "chown".into(),
                "-R".into(),
                "frr:frr".into(),
                run.display().to_string(),
            ],
        },
        Step::Daemon {
            router: i,
            program: frr("zebra"),
            args: common("zebra.conf", "zebra.pid"),
        },
        background(
            "bfdd",
            "bfdd.conf",
            "bfdd.pid",
            &["--bfdctl".to_string(), bfdctl.clone()],
        ),
        background("ospfd", "ospfd.conf", "ospfd.pid", &[]),
    ]);
    steps
}

/// OSPF adjacencies that left the Full state, over every router's ospfd
/// log (`log-adjacency-changes`): each one moves routes.
pub fn adjacencies_lost(lab: &Lab) -> u64 {
    (0..lab.routers.len())
        .map(|i| {
            let log = frr_dir(lab).join(format!("{}.ospfd.log", lab.routers[i].name));
            std::fs::read_to_string(log).map_or(0, |t| {
                t.lines()
                    .filter(|l| l.contains("AdjChg") && l.contains("Full ->"))
                    .count() as u64
            })
        })
        .sum()
}

/// Where a lab's FRR daemons keep what they write.
pub fn frr_dir(lab: &Lab) -> PathBuf {
    lab.dir().join("frr")
}
