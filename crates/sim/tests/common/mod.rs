//! What the simulator's scenario tests share: loading a bundled scenario
//! and running all its seeds.

use std::path::PathBuf;

use braid_sim::{run_once, RunResult, Scenario};

/// A scenario from the repository's `scenarios/` folder.
pub fn scenario(name: &str) -> Scenario {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name);
    Scenario::load(&p).unwrap()
}

/// Every run the scenario asks for (seeds `seed`, `seed + 1`, ...).
pub fn runs(s: &Scenario) -> Vec<RunResult> {
    (0..s.runs as u64)
        .map(|i| run_once(s, s.seed + i, |_| {}).unwrap())
        .collect()
}
