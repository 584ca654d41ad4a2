//! Prints the synthetic WISP's NetJSON (scenarios/plan/wisp64.json is
//! this program's output with the default seed):
//! `cargo run -p braid-plan --example synth_wisp [SEED] > wisp64.json`.

use braid_plan::synth::{synthetic_wisp, SYNTHETIC_WISP_SEED};

fn main() {
    let seed = match std::env::args().nth(1) {
        None => SYNTHETIC_WISP_SEED,
        Some(s) => match s.parse() {
            Ok(seed) => seed,
            Err(_) => {
                eprintln!("usage: synth_wisp [SEED]  (SEED a whole number; default {SYNTHETIC_WISP_SEED})");
                std::process::exit(2);
            }
        },
    };
    print!("{}", synthetic_wisp(seed));
}
