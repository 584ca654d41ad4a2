//! `braid lab`: a lab scenario's topology built on this machine as network
//! namespaces joined by veth pairs, routed by braid daemons, babeld, plain
//! kernel routes or Linux MPTCP, with plain end hosts behind the routers,
//! impaired links (loss from braid's eBPF program on the receiving side,
//! rate from tbf, delay from `braid lab-delay`), the scenario's flows with
//! real kernel sockets (UDP probes, urgent bursts, iperf3 TCP and UDP) and
//! link events, reports in the simulator's format, and everything torn
//! down again, also after a failure or Ctrl-C.
//!
//! | module | owns |
//! |---|---|
//! | [`scenario`] | lab files: the schema, its checks, the names and addresses a lab derives |
//! | [`plan`] | what a scenario needs built, as steps (pure: testable without root) |
//! | [`programs`] | the programs a scenario runs besides braid, checked before building |
//! | [`exec`] | carrying a plan out on this machine, and tearing it down |
//! | [`routing`] | braid, babeld, kernel and MPTCP routing (a module each); convergence |
//! | [`link`] | loss (the embedded eBPF program, its parameters) and link events |
//! | [`delay`] | the delay and jitter emulator process |
//! | [`flood`] | the hostile stranger process (garbage, forgeries, replays) |
//! | [`flows`] | UDP probes, urgent bursts, iperf3, floods, the kernel's counters |
//! | [`report`] | tables, JSON and the HTML report |
//! | [`run`] | the commands: up, run, down |
//! | [`sweep`] | runs at each of several loss ratios |
//! | [`bench`] | the forwarding benchmark |
//! | [`soak`] | long runs at a fixed load: memory over time, bounded |
//! | [`tap`] | raw sockets on an interface (the emulator's, the flooder's) |

pub mod bench;
pub mod delay;
pub mod exec;
pub mod flood;
pub mod flows;
pub mod link;
pub mod plan;
pub mod programs;
pub mod report;
pub mod routing;
pub mod run;
pub mod scenario;
pub mod soak;
pub mod sweep;
pub mod tap;

pub use scenario::{DaemonLog, Lab};
