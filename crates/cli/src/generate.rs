//! `braid generate` (hidden): the man pages and shell completions, made
//! from the command line's own definition, for packages (scripts/deb.sh,
//! docs/operations.md "Installing").

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use clap_complete::Shell;

#[derive(Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    /// Write braid.1 and a page per subcommand (braid-daemon.1, ...) into DIR.
    Man {
        /// The directory (created if missing).
        dir: PathBuf,
    },
    /// Print the completion script for SHELL (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: Shell,
    },
}

/// What the daemon's page says beyond its options.
const DAEMON_NOTES: &str = "\
Files:
  /etc/braid/braid.toml   the config file (docs/operations.md, \"Config file\")
  /run/braid/braid.sock   the control socket `braid ctl` talks to (`control_socket`)

Signals:
  SIGHUP           read the config again (an invalid file is refused and the running one kept)
  SIGTERM, SIGINT  flush this router's advertisement, remove the control socket, exit 0

Exit status: 0 stopped cleanly or the config is valid (--check); 2 the config is invalid or the daemon cannot start.";

/// `braid generate`: `cli` is the whole command line (`Cli::command()`).
pub fn run(args: GenerateArgs, cli: clap::Command) -> anyhow::Result<ExitCode> {
    let cli = cli.mut_subcommand("daemon", |d| d.after_long_help(DAEMON_NOTES));
    match args.what {
        What::Man { dir } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            // braid.1, then one page per visible subcommand, nested ones
            // too (braid-lab-run.1); hidden ones (this one) get none.
            clap_mangen::generate_to(cli, &dir)
                .with_context(|| format!("writing man pages into {}", dir.display()))?;
        }
        What::Completions { shell } => {
            let mut cli = cli;
            clap_complete::generate(shell, &mut cli, "braid", &mut std::io::stdout());
        }
    }
    Ok(ExitCode::SUCCESS)
}
