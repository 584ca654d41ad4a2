//! Shared by the daemon's root-only test binaries (their own harness,
//! libtest-mimic): the one test of a binary, listed as ignored, and why,
//! when it does not run as root; `ip` and the named network namespaces
//! they make; daemons run on threads inside them, and what they log.
#![allow(dead_code)] // not every test binary uses every helper

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use braid_daemon::daemon::Daemon;

/// Runs `ip ARGS`, which must succeed; its output.
pub fn ip(args: &[&str]) -> String {
    let out = Command::new("ip").args(args).output().expect("ip runs");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A named network namespace with its loopback up (one left by an
/// earlier run of the same name is deleted first), deleted when dropped
/// (also when the test fails).
pub struct Netns(pub String);

impl Netns {
    pub fn new(name: String) -> Netns {
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        ip(&["netns", "add", &name]);
        ip(&["-n", &name, "link", "set", "lo", "up"]);
        Netns(name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

/// Runs `test` as `name`; without root the runner's output lists it as
/// ignored, with `needs` (what root gives it) as the reason.
pub fn run_as_root(name: &str, needs: &str, test: fn()) -> std::process::ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let trial = libtest_mimic::Trial::test(name, move || {
        test();
        Ok(())
    });
    let trial = if nix::unistd::geteuid().is_root() {
        trial
    } else {
        trial
            .with_ignored_flag(true)
            .with_kind(format!("skipped: not root ({needs})"))
    };
    libtest_mimic::run(&args, vec![trial]).exit_code()
}

/// Runs `f` on a thread inside the named namespace `name`, and what that
/// thread starts too.
pub fn spawn_in<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = format!("/run/netns/{name}");
    std::thread::spawn(move || {
        let ns = std::fs::File::open(&path).expect("the namespace");
        nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns (root)");
        f()
    })
}

/// Everything the daemons log, kept to look for lines in (and shown
/// when the test fails).
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<u8>>>);

impl Log {
    /// A log that everything this process logs (tracing) goes to.
    pub fn capture() -> Log {
        let log = Log::default();
        let writer = log.clone();
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .init();
        log
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    pub fn count(&self, needle: &str) -> usize {
        self.text().matches(needle).count()
    }
}

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The daemons running, stopped (SIGTERM: each daemon's handler takes it)
/// when dropped; the log is shown if the test failed.
pub struct Daemons {
    threads: Vec<std::thread::JoinHandle<()>>,
    /// Whether any daemon started (registered its SIGTERM handler:
    /// without one, SIGTERM would end the test).
    started: bool,
    log: Log,
    dir: PathBuf,
}

impl Daemons {
    /// None running yet; their configs and sockets go into `dir`
    /// (removed when dropped).
    pub fn new(log: Log, dir: PathBuf) -> Daemons {
        Daemons {
            threads: Vec::new(),
            started: false,
            log,
            dir,
        }
    }

    /// Starts a daemon with `config` in namespace `ns`; returns its
    /// control socket once it answers.
    pub fn start(&mut self, ns: &str, name: &str, config: String) -> PathBuf {
        let path = self.dir.join(format!("{name}.toml"));
        let socket = self.dir.join(format!("{name}.sock"));
        let config = format!("control_socket = \"{}\"\n{config}", socket.display());
        std::fs::write(&path, config).unwrap();
        let (started, ok) = mpsc::channel();
        self.threads.push(spawn_in(ns, move || {
            let d = match Daemon::start(&path) {
                Ok(d) => d,
                Err(e) => {
                    let _ = started.send(Err(e.to_string()));
                    return;
                }
            };
            let _ = started.send(Ok(()));
            d.run().expect("the daemon runs until stopped");
        }));
        ok.recv_timeout(Duration::from_secs(30))
            .expect("the daemon starts within 30 s")
            .unwrap_or_else(|e| panic!("daemon {name} refused to start: {e}"));
        self.started = true;
        socket
    }
}

impl Drop for Daemons {
    fn drop(&mut self) {
        if self.started {
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(10);
            for t in self.threads.drain(..) {
                while !t.is_finished() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
                if t.is_finished() {
                    let _ = t.join();
                }
            }
        }
        if std::thread::panicking() {
            eprintln!("--- what the daemons logged:\n{}", self.log.text());
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Waits (at most `within`) until `what` holds, asking again every 50 ms.
pub fn wait_for(what: &str, within: Duration, mut f: impl FnMut() -> bool) -> Duration {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < within, "{what} within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    t0.elapsed()
}
