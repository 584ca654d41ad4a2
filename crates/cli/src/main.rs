//! The `braid` command line. Each subcommand lives in its own module; this
//! file only parses arguments and turns errors into exit codes.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod daemon;
mod demo;
mod lab;
mod paths;
mod sim;

/// Resilient multipath routing for wireless mesh networks and WISP backhaul.
#[derive(Parser)]
#[command(name = "braid", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compute paths (or an entry-point tree) on a NetJSON topology; prints JSON.
    Paths(paths::PathsArgs),
    /// Run a simulator scenario (TOML) and report per flow.
    Sim(sim::SimArgs),
    /// Run the default experiments and write an HTML report.
    Demo(demo::DemoArgs),
    /// Run the braid daemon on this router (TUN, UDP underlay, control socket).
    Daemon(daemon::DaemonArgs),
    /// Build a lab scenario in network namespaces with real daemons: up, run, down.
    Lab(lab::LabArgs),
    /// The lab's link emulator (delay, jitter) between two interfaces; `braid lab` runs it.
    #[command(name = "lab-delay", hide = true)]
    LabDelay(lab::DelayArgs),
    /// The lab's hostile stranger (a flood flow); `braid lab` runs it.
    #[command(name = "lab-flood", hide = true)]
    LabFlood(lab::FloodArgs),
    /// Ask a running daemon: status, neighbors, links, routes, paths, sessions, stats, monitor.
    Ctl(daemon::CtlArgs),
    /// Make a new authentication key (32 random bytes from the kernel) for `[auth] keys`.
    Keygen(daemon::KeygenArgs),
}

/// Exit code for bad input (unreadable files, malformed topologies, unknown
/// nodes): the same code clap uses for bad arguments.
const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Paths(args) => paths::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Demo(args) => demo::run_demo(args),
        Command::Daemon(args) => daemon::run_daemon(args),
        Command::Ctl(args) => daemon::run_ctl(args),
        Command::Keygen(args) => daemon::run_keygen(args),
        Command::Lab(args) => lab::run_lab(args),
        Command::LabDelay(args) => lab::run_delay(args),
        Command::LabFlood(args) => lab::run_flood(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("braid: error: {e:#}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}
