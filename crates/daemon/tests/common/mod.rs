//! Shared by the daemon's root-only test binaries (their own harness,
//! libtest-mimic): the one test of a binary, listed as ignored, and why,
//! when it does not run as root.

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
