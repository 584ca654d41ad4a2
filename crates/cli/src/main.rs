//! The `braid` command line. Each subcommand lives in its own module; this
//! file only parses arguments and turns errors into exit codes.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod ctl_text;
mod daemon;
mod demo;
mod generate;
mod lab;
mod paths;
#[cfg(feature = "plan")]
mod plan;
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
    /// Plan a WISP's links for least cost or most capacity (WISPR's analysis): report, proposed topology, rain fade.
    #[cfg(feature = "plan")]
    Plan(plan::PlanArgs),
    /// Plan a WISP's links: not in this build (built without the `plan` feature).
    #[cfg(not(feature = "plan"))]
    Plan {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        args: Vec<String>,
    },
    /// Run the braid daemon on this router (TUN, UDP underlay, control socket).
    Daemon(daemon::DaemonArgs),
    /// A lab of real daemons in network namespaces: up, run, down, soak, sweep, bench.
    Lab(lab::LabArgs),
    /// The lab's link emulator (delay, jitter) between two interfaces; `braid lab` runs it.
    #[command(name = "lab-delay", hide = true)]
    LabDelay(lab::DelayArgs),
    /// The lab's hostile stranger (a flood flow); `braid lab` runs it.
    #[command(name = "lab-flood", hide = true)]
    LabFlood(lab::FloodArgs),
    #[command(name = "lab-spoof", hide = true)]
    LabSpoof(lab::SpoofArgs),
    /// Ask a running daemon: status, neighbors, links, routes, paths, topology, sessions, clients, stats, monitor, reload.
    Ctl(daemon::CtlArgs),
    /// Make a new authentication key (32 random bytes from the kernel) for `[auth] keys`.
    Keygen(daemon::KeygenArgs),
    /// Write the man pages or print shell completions (for packages).
    #[command(hide = true)]
    Generate(generate::GenerateArgs),
}

/// Exit code for bad input (unreadable files, malformed topologies, unknown
/// nodes): the same code clap uses for bad arguments.
const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Daemon(_)) {
        // A command whose output goes to a pipe that closes (`| head`)
        // ends quietly, as Unix tools do, instead of panicking on the
        // next write. The daemon keeps ignoring SIGPIPE: a control client
        // that goes away must not stop it.
        // SAFETY: setting a signal's disposition to the default action
        // before any other thread runs.
        let _ = unsafe {
            nix::sys::signal::signal(
                nix::sys::signal::Signal::SIGPIPE,
                nix::sys::signal::SigHandler::SigDfl,
            )
        };
    }
    let result = match cli.command {
        Command::Paths(args) => paths::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Demo(args) => demo::run_demo(args),
        #[cfg(feature = "plan")]
        Command::Plan(args) => plan::run(args),
        #[cfg(not(feature = "plan"))]
        Command::Plan { .. } => Err(anyhow::anyhow!(
            "this braid was built without the planner (cargo's --no-default-features, as for a \
             router); build it with the `plan` feature for `braid plan`"
        )),
        Command::Daemon(args) => daemon::run_daemon(args),
        Command::Ctl(args) => daemon::run_ctl(args),
        Command::Keygen(args) => daemon::run_keygen(args),
        Command::Lab(args) => lab::run_lab(args),
        Command::LabDelay(args) => lab::run_delay(args),
        Command::LabFlood(args) => lab::run_flood(args),
        Command::LabSpoof(args) => lab::run_spoof(args),
        Command::Generate(args) => generate::run(args, <Cli as clap::CommandFactory>::command()),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // A file refused for several problems says each on a line
            // of its own, each a whole error message.
            for line in one_line(&e).lines() {
                eprintln!("braid: error: {line}");
            }
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// An error and its causes on one line, each said once: many errors name
/// their cause in their own text (`TUN device braid0: Device or resource
/// busy`), and the cause itself then adds nothing.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn a_cause_already_named_is_not_said_twice() {
        let os = std::io::Error::from_raw_os_error(16);
        let e = anyhow::Error::new(std::io::Error::new(
            os.kind(),
            format!("TUN device braid0: {os}"),
        ))
        .context("starting");
        let busy = os.to_string();
        let inner = anyhow::anyhow!("{busy}").context(format!("TUN device braid0: {busy}"));
        assert_eq!(one_line(&inner), format!("TUN device braid0: {busy}"));
        assert_eq!(one_line(&e), format!("starting: TUN device braid0: {busy}"));
        let plain = anyhow::anyhow!("no such file").context("reading x.toml");
        assert_eq!(one_line(&plain), "reading x.toml: no such file");
    }
}
