//! braid's deterministic discrete-event simulator. It runs the real
//! `braid_proto::node::Node` state machines (no simulator-only protocol
//! code) over modelled links, in simulated time, from one seeded RNG: the
//! same scenario and seed give the same results, byte for byte.
//!
//! | module | owns |
//! |---|---|
//! | [`event`] | the event queue, ordered by (time, insertion) |
//! | [`html`] | the self-contained HTML report: tables and inline SVG charts |
//! | [`link`] | link models: loss (Bernoulli, netem Gilbert-Elliott, time-based), delay, jitter, rate and queue, down intervals |
//! | [`scenario`] | scenario files (TOML): the checked scenario, its checks, and its errors (every problem, each file:line: field) |
//! | [`topology`] | the topologies a scenario names, and each run's nodes and links |
//! | [`tcp`] | real TCP ends (smoltcp) in simulated time |
//! | [`world`] | one run: nodes over links and radios, hosts sending CBR UDP or TCP, the event loop |
//! | [`results`] | what a run measured: per flow and per link (the lab fills the same types) |
//! | [`radio`] | radios: bit-rates with per-rate loss, retries, one transmitter per node, a shared medium |
//! | [`pcap`] | captures of a simulated link for tcpdump and Wireshark; braid's one pcap writer and IPv4/UDP framing (smoltcp's), which the tests' captures use too |
//! | [`stranger`] | hostile strangers near some nodes: garbage, forged and replayed datagrams |
//! | [`report`] | a scenario's variants and runs, summarized (with theory for sweeps) |

#![forbid(unsafe_code)]

pub mod event;
pub mod html;
pub mod link;
pub mod pcap;
pub mod radio;
pub mod report;
pub mod results;
pub mod scenario;
pub mod stranger;
pub mod tcp;
pub mod topology;
pub mod world;

pub use report::{
    run_scenario, run_scenario_capturing, FlowSummary, ScenarioReport, VariantReport,
};
pub use results::{
    delay_cdf, delay_stats, quantile, CutResult, FloodStats, FlowResult, Outage, RouterStats,
    RunResult, CDF_QUANTILES, MAX_OUTAGES,
};
pub use scenario::{Scenario, ScenarioError};
pub use world::{run_once, World};
