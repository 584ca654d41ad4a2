//! `braid daemon` (run a router's daemon) and `braid ctl` (ask a running
//! daemon over its control socket).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use braid_daemon::config::{Config, DEFAULT_SOCKET};
use braid_daemon::ctl;
use braid_daemon::daemon::Daemon;
use clap::Args;
use serde_json::Value;

#[derive(Args)]
pub struct DaemonArgs {
    /// The config file (TOML; see docs/operations.md).
    #[arg(long)]
    pub config: PathBuf,
    /// Check the config and exit (0 when valid).
    #[arg(long)]
    pub check: bool,
}

pub fn run_daemon(args: DaemonArgs) -> anyhow::Result<ExitCode> {
    let config = Config::load(&args.config)?;
    if args.check {
        println!("{}: valid (node {})", args.config.display(), config.node.0);
        return Ok(ExitCode::SUCCESS);
    }
    let level: tracing::Level = config.log.parse().unwrap_or(tracing::Level::WARN);
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal, not in a log file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
    let d = Daemon::start(&args.config)?;
    d.run()?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct CtlArgs {
    /// Print the daemon's JSON document as it is (versioned; see
    /// docs/operations.md) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The daemon's control socket.
    #[arg(long, default_value = DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// status, neighbors, links, routes, paths, sessions, stats or monitor.
    pub command: String,
}

pub fn run_ctl(args: CtlArgs) -> anyhow::Result<ExitCode> {
    let known = braid_daemon::ctl::COMMANDS;
    if !known.contains(&args.command.as_str()) {
        bail!(
            "unknown command \"{}\"; commands: {}",
            args.command,
            known.join(", ")
        );
    }
    let socket = &args.socket;
    let cannot = || format!("cannot reach a braid daemon on {}", socket.display());
    if args.command == "monitor" {
        ctl::monitor(socket, |line| {
            println!("{line}");
            true
        })
        .with_context(cannot)?;
        return Ok(ExitCode::SUCCESS);
    }
    let reply = ctl::request(socket, &args.command).with_context(cannot)?;
    let doc: Value = serde_json::from_str(reply.trim())
        .with_context(|| format!("the daemon's reply is not JSON: {reply}"))?;
    if let Some(e) = doc.get("error") {
        bail!("{}", e.as_str().unwrap_or_default());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", table(&args.command, &doc));
    }
    Ok(ExitCode::SUCCESS)
}

/// The human form of a document: one line per entry.
fn table(command: &str, doc: &Value) -> String {
    let mut out = String::new();
    let list = |key: &str| {
        doc.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let s = |v: &Value, k: &str| match v.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "-".into(),
        Some(x) => x.to_string(),
    };
    match command {
        "neighbors" => {
            out.push_str("neighbor  interface        address                 last heard\n");
            for n in list("neighbors") {
                out.push_str(&format!(
                    "{:<9} {:<16} {:<23} {} ms ago\n",
                    s(&n, "id"),
                    s(&n, "interface"),
                    s(&n, "address"),
                    s(&n, "last_heard_ms_ago")
                ));
            }
        }
        "links" => {
            out.push_str("neighbor  df     dr     ETX    metric out  metric in\n");
            for l in list("links") {
                let f = |k| {
                    l.get(k)
                        .and_then(Value::as_f64)
                        .map_or("-".into(), |x| format!("{x:.2}"))
                };
                out.push_str(&format!(
                    "{:<9} {:<6} {:<6} {:<6} {:<11} {}\n",
                    s(&l, "neighbor"),
                    f("df"),
                    f("dr"),
                    f("etx"),
                    s(&l, "metric_out"),
                    s(&l, "metric_in")
                ));
            }
        }
        "clients" => {
            if list("interfaces").is_empty() {
                out.push_str("no access interfaces here ([[access]] in the config)\n");
            }
            for i in list("interfaces") {
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
            out.push_str(
                "client           quality  serving  last heard   served by (node:quality)\n",
            );
            for c in list("clients") {
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
        }
        "routes" | "paths" => {
            if list("routes").is_empty() {
                out.push_str(&format!(
                    "no routes yet: paths are computed for the destinations traffic goes to ({} origins known; --json lists them)\n",
                    list("origins").len()
                ));
                return out;
            }
            out.push_str("egress  prefixes                 paths\n");
            for r in list("routes") {
                let prefixes: Vec<String> = r["prefixes"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|p| p.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
                let paths: Vec<String> = r["paths"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|p| {
                                p.as_array()
                                    .map(|h| {
                                        h.iter()
                                            .map(|x| x.to_string())
                                            .collect::<Vec<_>>()
                                            .join(">")
                                    })
                                    .unwrap_or_default()
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                out.push_str(&format!(
                    "{:<7} {:<24} {}\n",
                    s(&r, "egress"),
                    prefixes.join(","),
                    paths.join("  ")
                ));
            }
        }
        _ => {
            // status, sessions, stats: key: value, nested objects flattened.
            fn walk(prefix: &str, v: &Value, out: &mut String) {
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
                    _ => out.push_str(&format!("{prefix}: {v}\n")),
                }
            }
            walk("", doc, &mut out);
        }
    }
    out
}

/// `braid keygen`.
#[derive(Args)]
pub struct KeygenArgs {
    /// The key's id (0-255): what `[auth] keys` names it by.
    #[arg(long, default_value_t = 1)]
    pub id: u8,
}

/// Prints a new key, as `[auth]` takes it: 32 bytes from the kernel's
/// random source (getrandom), in hex.
pub fn run_keygen(args: KeygenArgs) -> anyhow::Result<ExitCode> {
    use std::io::Read;
    let mut secret = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut secret))
        .context("reading /dev/urandom")?;
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    println!("# keep it secret: the same key on every router (docs/security.md)");
    println!("[auth]");
    println!("keys = [{{ id = {}, secret = \"{hex}\" }}]", args.id);
    Ok(ExitCode::SUCCESS)
}
