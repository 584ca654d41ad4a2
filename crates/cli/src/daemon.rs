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
        // What the start would warn of on this host: valid all the same
        // (the interface may appear, the address be added later).
        let warnings = braid_daemon::daemon::host_warnings(&args.config, &config);
        println!(
            "{}: valid (node {}){}",
            args.config.display(),
            config.node.0,
            match warnings.len() {
                0 => String::new(),
                1 => ", with a warning for this host:".to_string(),
                n => format!(", with {n} warnings for this host:"),
            }
        );
        for w in &warnings {
            println!("warning: {w}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    braid_daemon::logging::init(&config.log, config.log_format);
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
    /// status, neighbors, links, routes (a routing table), paths (every
    /// path, with costs), topology (the link-state database), sessions,
    /// clients, stats, monitor (events as they come), reload (read the
    /// config again, as SIGHUP), ping NODE [COUNT] or traceroute NODE
    /// (echoes through the mesh, on the paths traffic takes).
    pub command: String,
    /// The command's arguments (ping, traceroute: a node id; ping: a count).
    pub args: Vec<String>,
}

pub fn run_ctl(args: CtlArgs) -> anyhow::Result<ExitCode> {
    match ctl(&args) {
        Ok(code) => Ok(code),
        // With --json every outcome is a JSON document, errors included
        // (`{"version":1,"error":...}`, as the daemon writes them), on
        // stdout, with exit code 1.
        Err(e) if args.json => {
            let doc = ctl::error_doc(&format!("{e:#}"));
            println!("{}", serde_json::to_string_pretty(&doc)?);
            Ok(ExitCode::FAILURE)
        }
        Err(e) => Err(e),
    }
}

fn ctl(args: &CtlArgs) -> anyhow::Result<ExitCode> {
    let known = braid_daemon::ctl::COMMANDS;
    if !known.contains(&args.command.as_str()) {
        bail!(
            "unknown command \"{}\"; commands: {}",
            args.command,
            known.join(", ")
        );
    }
    let socket = &args.socket;
    let cannot = || {
        format!(
            "cannot reach a braid daemon on {} (is it running? is this the socket its control_socket names? reading it needs root or its control_group)",
            socket.display()
        )
    };
    if args.command == "monitor" {
        let json = args.json;
        ctl::monitor(socket, |line| {
            if json {
                println!("{line}");
            } else {
                println!("{}", crate::ctl_text::event_line(line));
            }
            true
        })
        .with_context(cannot)?;
        return Ok(ExitCode::SUCCESS);
    }
    let line = std::iter::once(args.command.as_str())
        .chain(args.args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let reply = ctl::request(socket, &line).with_context(cannot)?;
    let doc: Value = serde_json::from_str(reply.trim())
        .with_context(|| format!("the daemon's reply is not JSON: {reply}"))?;
    if let Some(e) = doc.get("error") {
        if args.json {
            println!("{}", serde_json::to_string_pretty(&doc)?);
            return Ok(ExitCode::FAILURE);
        }
        bail!("{}", e.as_str().unwrap_or_default());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", crate::ctl_text::table(&args.command, &doc));
    }
    Ok(ExitCode::SUCCESS)
}

/// `braid keygen`.
#[derive(Args)]
pub struct KeygenArgs {
    /// The key's id (0-255): what `[auth] keys` names it by.
    #[arg(long, default_value_t = 1)]
    pub id: u8,
    /// Make this router's origin key instead (per-origin signatures,
    /// `[origin]`): prints its secret key file and its roster entry.
    #[arg(long)]
    pub origin: bool,
    /// With --origin: the router's node id, for its roster entry.
    #[arg(long, requires = "origin")]
    pub node: Option<u16>,
}

/// Prints a new key, as `[auth]` takes it: 32 bytes from the kernel's
/// random source (getrandom), in hex. With `--origin`, a router's origin
/// key: the secret key file and the roster line of its public key.
pub fn run_keygen(args: KeygenArgs) -> anyhow::Result<ExitCode> {
    use std::io::Read;
    let mut secret = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut secret))
        .context("reading /dev/urandom")?;
    let hex = braid_proto::origin::hex(&secret);
    if args.origin {
        let key = braid_proto::origin::OriginKey::from_secret(&secret)?;
        let node = args.node.map_or_else(|| "N".to_string(), |n| n.to_string());
        println!("# this router's origin key file ([origin] key_file; chmod 600, root only):");
        println!("secret = \"{hex}\"");
        println!("# its entry in the roster ([origin] roster_file, the same on every router):");
        println!("[[router]]");
        println!("node = {node}");
        println!("key = \"{}\"", braid_proto::origin::hex(&key.public()));
        return Ok(ExitCode::SUCCESS);
    }
    println!("# keep it secret: the same key on every router (docs/security.md)");
    println!("[auth]");
    println!("keys = [{{ id = {}, secret = \"{hex}\" }}]", args.id);
    Ok(ExitCode::SUCCESS)
}
