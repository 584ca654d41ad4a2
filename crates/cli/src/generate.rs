//! `braid generate` (hidden): the man pages and shell completions, made
//! from the command line's own definition, for packages (scripts/deb.sh,
//! docs/operations.md "Installing").

use std::path::{Path, PathBuf};
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

/// What the daemon's page says beyond its options (roff).
const DAEMON_SECTIONS: &str = r#".SH FILES
.TP
.I /etc/braid/braid.toml
The config file; every field is in docs/operations.md, "Config file".
.TP
.I /run/braid/braid.sock
The control socket \fBbraid ctl\fR talks to (\fBcontrol_socket\fR).
.SH SIGNALS
.TP
.B SIGHUP
Read the config again; an invalid file is refused and the running one kept.
.TP
.B SIGTERM\fR, \fBSIGINT
Flush this router's advertisement, remove the control socket, exit 0.
.SH EXIT STATUS
0 when the daemon stopped cleanly, or the config is valid (\fB\-\-check\fR);
2 when the config is invalid or the daemon cannot start.
"#;

/// `braid generate`: `cli` is the whole command line (`Cli::command()`).
pub fn run(args: GenerateArgs, cli: clap::Command) -> anyhow::Result<ExitCode> {
    match args.what {
        What::Man { dir } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            let mut cli = cli.disable_help_subcommand(true);
            cli.build();
            let source = format!("braid {}", cli.get_version().unwrap_or_default());
            write_pages(&cli, &dir, &source)?;
        }
        What::Completions { shell } => {
            // clap_complete offers hidden commands too (the lab's helpers,
            // this one): complete a copy of the command line without them.
            let mut visible = clap::Command::new("braid")
                .version(env!("CARGO_PKG_VERSION"))
                .args(cli.get_arguments().cloned())
                .subcommands(cli.get_subcommands().filter(|c| !c.is_hide_set()).cloned());
            if let Some(about) = cli.get_about() {
                visible = visible.about(about.clone());
            }
            clap_complete::generate(shell, &mut visible, "braid", &mut std::io::stdout());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `cmd`'s page and, recursively, one per visible subcommand
/// (braid-lab-run.1); hidden commands (this one) get none.
fn write_pages(cmd: &clap::Command, dir: &Path, source: &str) -> anyhow::Result<()> {
    let man = clap_mangen::Man::new(cmd.clone())
        .source(source)
        .manual("braid manual");
    let path = dir.join(man.get_filename());
    let mut page = Vec::new();
    man.render(&mut page)?;
    let name = cmd.get_display_name().unwrap_or(cmd.get_name());
    if name == "braid-daemon" {
        page.extend_from_slice(DAEMON_SECTIONS.as_bytes());
    }
    let visible: Vec<&clap::Command> = cmd.get_subcommands().filter(|c| !c.is_hide_set()).collect();
    let mut see_also: Vec<String> = visible
        .iter()
        .map(|c| format!("{name}-{}(1)", c.get_name()))
        .collect();
    if name != "braid" {
        see_also.insert(0, "braid(1)".into());
    }
    page.extend_from_slice(format!(".SH \"SEE ALSO\"\n{}\n", see_also.join(", ")).as_bytes());
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    for sub in visible {
        write_pages(sub, dir, source)?;
    }
    Ok(())
}
