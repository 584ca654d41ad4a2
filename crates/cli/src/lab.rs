//! `braid lab up|run|down|soak|sweep|bench SCENARIO`, `braid lab-delay`
//! and `braid lab-flood`, `braid lab-spoof`: the arguments; the lab itself is the
//! `braid-lab` crate.

use std::path::PathBuf;
use std::process::ExitCode;

use braid_lab::scenario::Congestion;
use braid_lab::sweep::SweepPlan;
use braid_lab::DaemonLog;
use clap::{Args, Subcommand};

#[derive(Args)]
pub struct LabArgs {
    #[command(subcommand)]
    action: LabAction,
}

/// What the lab's commands that build share: keeping the lab's files.
#[derive(Args)]
struct Keep {
    /// Keep the lab's directory (/tmp/braid-lab-NAME: logs, configs)
    /// after tearing down, for a post-mortem. Without it the directory
    /// is removed, unless the run failed or was interrupted; the next
    /// build of the lab, or `braid lab down`, removes a kept one.
    #[arg(long)]
    keep: bool,
}

// Each command's first paragraph is its one line in `braid lab --help`;
// the rest shows in its own --help.
#[derive(Subcommand)]
enum LabAction {
    /// Build the first variant, start its daemons and leave them running.
    ///
    /// The lab's files (configs, control sockets, logs, pid files) are in
    /// /tmp/braid-lab-NAME; `braid lab down FILE` tears it down.
    Up {
        scenario: PathBuf,
        /// The braid daemons' log level (error, warn, info, debug, trace);
        /// their logs are written to the lab's directory.
        #[arg(long, default_value = "warn")]
        log: DaemonLog,
    },
    /// Build each variant, run its flows, report, and tear down.
    ///
    /// Tearing down stops every process and waits for it, deletes the
    /// namespaces and removes the lab's directory (kept after a failure
    /// or Ctrl-C, or with --keep).
    Run {
        scenario: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Also write report.json and report.html (tables and SVG charts,
        /// viewable offline) into this directory.
        #[arg(long)]
        out: Option<PathBuf>,
        /// The braid daemons' log level (error, warn, info, debug, trace);
        /// their logs are written to the lab's directory.
        #[arg(long, default_value = "warn")]
        log: DaemonLog,
        #[command(flatten)]
        keep: Keep,
    },
    /// Stop the lab's processes, delete its namespaces and its files.
    ///
    /// Every process the lab started, and whatever else runs inside its
    /// namespaces, gets SIGTERM, then SIGKILL after 5 s; `down` returns
    /// once all have exited (fails, naming them, if one is still there 5 s
    /// after SIGKILL). Then the namespaces are deleted and
    /// /tmp/braid-lab-NAME is removed.
    Down {
        scenario: PathBuf,
        /// Keep the lab's directory (logs, configs; not its pid files).
        #[arg(long)]
        keep: bool,
    },
    /// Run the first variant for hours at a fixed load; bound daemon memory.
    ///
    /// Sends the first udp flow without end (the same size and spacing),
    /// sampling every braid daemon's memory every 10 s; fails (exit 1) if
    /// one grew past the bound after the first minute. Progress every
    /// minute; the report as JSON on stdout.
    Soak {
        scenario: PathBuf,
        /// How long, e.g. "30m".
        #[arg(long, default_value = "30m")]
        duration: humantime::Duration,
        /// Most growth of a daemon's resident memory, kB, from its largest
        /// in the first minute to the end.
        #[arg(long, default_value_t = 4096)]
        bound_kb: u64,
        /// Also write the report (report.json) into this directory.
        #[arg(long)]
        out: Option<PathBuf>,
        /// The braid daemons' log level.
        #[arg(long, default_value = "warn")]
        log: DaemonLog,
        #[command(flatten)]
        keep: Keep,
    },
    /// Run each file's variants over losses, bursts, congestion controls.
    ///
    /// At each point (loss ratio and mean burst on every link the file
    /// makes lossy, each congestion control asked for), several runs
    /// each: per variant TCP goodput (mean and spread), Jain's fairness
    /// index between the TCP flows, retransmissions, the udp flows' loss
    /// and delay, packets on the wire per packet, beside the ceilings of
    /// an erasure channel and of the cheapest code meeting 0.1% residual
    /// loss.
    Sweep {
        /// Lab files, swept one after the other.
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
        /// Loss ratios, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "0,0.05,0.1,0.2,0.3")]
        loss: Vec<f64>,
        /// Mean loss bursts in packets, comma-separated (1: independent
        /// loss).
        #[arg(long, value_delimiter = ',', default_value = "1")]
        burst: Vec<f64>,
        /// Congestion controls every TCP flow runs under in turn,
        /// comma-separated (cubic, reno, bbr; default: each flow's own).
        #[arg(long, value_delimiter = ',', value_parser = parse_congestion)]
        congestion: Vec<Congestion>,
        /// Runs per point.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Also write sweep.json and sweep.html (the goodput chart with
        /// the ceilings) into this directory.
        #[arg(long)]
        out: Option<PathBuf>,
        /// The braid daemons' log level.
        #[arg(long, default_value = "warn")]
        log: DaemonLog,
        #[command(flatten)]
        keep: Keep,
    },
    /// Forwarding benchmark per variant: packet rates, CPU, latency.
    ///
    /// On the scenario's first flow, per variant: the highest rate of UDP
    /// of each size delivered with under 0.1% loss and the CPU per packet
    /// there and at a common rate (with the isolated sender, the routers'
    /// CPU: the kernel's packet generator sends from another), one-way
    /// latency at 1,000 packets/s, and CPU load and loss against offered
    /// rate of 160-byte packets (the kernel-path seed's figures 4 and 5).
    Bench {
        scenario: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Also write report.json and report.html (tables and the VoIP
        /// sweep's charts) into this directory.
        #[arg(long)]
        out: Option<PathBuf>,
        /// How to send: `isolated` (the kernel's packet generator on one
        /// CPU, the routers measured on another; falls back to `socket`,
        /// saying why, where it cannot be used) or `socket` (this
        /// process's UDP socket, the whole machine measured).
        #[arg(long, default_value = "isolated", value_parser = ["isolated", "socket"])]
        sender: String,
        /// UDP payload sizes of the max-rate search, in bytes.
        #[arg(long, value_delimiter = ',', default_value = "64,512,1400")]
        sizes: Vec<usize>,
        /// Runs of the max-rate search per variant (mean and spread
        /// reported; the latency and VoIP sweeps run once).
        #[arg(long, default_value_t = 1)]
        runs: usize,
        /// The rate, packets/s, at which every variant's CPU per packet
        /// is also measured alike (a variant whose highest rate is lower
        /// gets none).
        #[arg(long, default_value_t = 20_000)]
        common_rate: u64,
        #[command(flatten)]
        keep: Keep,
    },
}

pub fn run_lab(args: LabArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        LabAction::Up { scenario, log } => braid_lab::run::up(&scenario, log),
        LabAction::Down { scenario, keep } => braid_lab::run::down(&scenario, keep),
        LabAction::Soak {
            scenario,
            duration,
            bound_kb,
            out,
            log,
            keep,
        } => {
            let (report, ok) =
                braid_lab::soak::soak(&scenario, duration.into(), bound_kb, log, keep.keep)?;
            let text = serde_json::to_string_pretty(&report)?;
            if let Some(dir) = out {
                std::fs::create_dir_all(&dir)?;
                std::fs::write(dir.join("report.json"), &text)?;
            }
            println!("{text}");
            if !ok {
                eprintln!(
                    "soak failed: memory grew past {} kB on {:?} (or it was stopped)",
                    bound_kb, report.grew_past_bound
                );
            }
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        LabAction::Bench {
            scenario,
            json,
            out,
            sender,
            sizes,
            runs,
            common_rate,
            keep,
        } => braid_lab::bench::bench(
            &scenario,
            &braid_lab::bench::BenchPlan {
                sender: if sender == "socket" {
                    braid_lab::bench::Sender::Socket
                } else {
                    braid_lab::bench::Sender::Isolated
                },
                sizes,
                runs,
                common_rate,
            },
            json,
            out.as_deref(),
            keep.keep,
        ),
        LabAction::Run {
            scenario,
            json,
            out,
            log,
            keep,
        } => braid_lab::run::run(&scenario, json, out, log, keep.keep),
        LabAction::Sweep {
            scenarios,
            loss,
            burst,
            congestion,
            runs,
            json,
            out,
            log,
            keep,
        } => braid_lab::sweep::sweep(
            &scenarios,
            &SweepPlan {
                losses: loss,
                bursts: burst,
                congestion,
                runs,
            },
            json,
            out.as_deref(),
            log,
            keep.keep,
        ),
    }
}

/// A congestion control named on the command line.
fn parse_congestion(name: &str) -> Result<Congestion, String> {
    Congestion::parse(name).ok_or_else(|| format!("\"{name}\" is not cubic, reno or bbr"))
}

#[derive(Args)]
pub struct DelayArgs {
    /// The two interfaces to join.
    #[arg(long)]
    pub a: String,
    #[arg(long)]
    pub b: String,
    /// One-way delay, each direction (e.g. "250ms").
    #[arg(long)]
    pub delay: humantime::Duration,
    /// Uniform jitter added to each frame's delay, 0 to this.
    #[arg(long, default_value = "0ms")]
    pub jitter: humantime::Duration,
    /// Most frames held per direction.
    #[arg(long, default_value_t = 10_000)]
    pub queue: usize,
}

pub fn run_delay(args: DelayArgs) -> anyhow::Result<ExitCode> {
    braid_lab::delay::run(braid_lab::delay::DelayArgs {
        a: args.a,
        b: args.b,
        delay: args.delay.into(),
        jitter: args.jitter.into(),
        queue: args.queue,
    })
}

/// `braid lab-flood`: what a lab's flood flow runs in a namespace.
#[derive(Args)]
pub struct FloodArgs {
    /// Our address (and port, 0: any) on the link.
    #[arg(long)]
    pub from: std::net::SocketAddr,
    /// The flooded router's underlay address and braid port.
    #[arg(long)]
    pub to: std::net::SocketAddr,
    /// The interface to hear real control messages on, for replays.
    #[arg(long)]
    pub listen: String,
    /// The flooded router's node id.
    #[arg(long)]
    pub target: u16,
    /// How long to flood (at most a minute).
    #[arg(long)]
    pub duration: humantime::Duration,
}

/// `braid lab-spoof`: what a lab's spoof flow runs in a namespace.
#[derive(Args)]
pub struct SpoofArgs {
    /// The link toward the router attacked (in the spoofed router's
    /// namespace).
    #[arg(long)]
    pub listen: String,
    /// braid's port.
    #[arg(long)]
    pub port: u16,
    /// The attacked router's node id (the egress of the session forged).
    #[arg(long)]
    pub target: u16,
}

pub fn run_spoof(args: SpoofArgs) -> anyhow::Result<ExitCode> {
    let report = braid_lab::spoof::run(braid_lab::spoof::SpoofArgs {
        listen: args.listen,
        port: args.port,
        target: args.target,
    })?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}

pub fn run_flood(args: FloodArgs) -> anyhow::Result<ExitCode> {
    let duration: std::time::Duration = args.duration.into();
    if duration > std::time::Duration::from_secs(60) {
        anyhow::bail!("a flood lasts at most 60 s");
    }
    let report = braid_lab::flood::run(braid_lab::flood::FloodArgs {
        from: args.from,
        to: args.to,
        listen: args.listen,
        duration,
        target: args.target,
    })?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}
