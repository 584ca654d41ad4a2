//! Shared by the daemon's root-only test binaries (their own harness,
//! libtest-mimic): the one test of a binary, listed as ignored, and why,
//! when it does not run as root; `ip` and the named network namespaces
//! they make.
#![allow(dead_code)] // not every test binary uses every helper

use std::process::Command;

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
