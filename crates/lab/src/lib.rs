//! `braid lab`: a lab scenario's topology built on this machine as network
//! namespaces joined by veth pairs, routed by braid daemons, babeld, FRR's
//! OSPF (with BFD), plain kernel routes or Linux MPTCP, with plain end
//! hosts and unmodified clients behind the routers, gateways with an ISP
//! and NAT each and the internet beyond, impaired links (loss from
//! braid's eBPF program on the receiving side, rate from tbf, delay from
//! `braid lab-delay`), the scenario's flows with real kernel sockets (UDP
//! probes, urgent bursts, iperf3 TCP and UDP, new TCP connections,
//! floods) and events,
//! reports in the simulator's format, and everything torn down again, also
//! after a failure or Ctrl-C.
//!
//! The modules, each using only modules above it in this table (no
//! import cycles: `scripts/structure.py cycles`):
//!
//! | module | owns |
//! |---|---|
//! | [`scenario`] | lab files: the schema, its checks, the checked lab, the names and addresses it derives |
//! | [`ns`] | running a command and opening a socket inside a namespace |
//! | [`tap`] | raw sockets on an interface (the emulator's, the flooder's) |
//! | [`delay`] | the delay and jitter emulator process; what it lost |
//! | [`link`] | a link's loss: the embedded eBPF program, its parameters, attached and replaced; the rate limiter's counters |
//! | [`step`] | the plan's vocabulary: one thing to set up |
//! | [`routing`] | braid, babeld, FRR (OSPF, BFD), kernel and MPTCP routing as steps (a module each); asking routers, convergence |
//! | [`plan`] | what a scenario needs built, as steps (pure: testable without root) |
//! | [`teardown`] | stopping a lab's processes, deleting its namespaces and files |
//! | [`exec`] | carrying a plan out on this machine; what it built, torn down when dropped |
//! | [`events`] | link, port, client and router events while the flows run |
//! | [`programs`] | the programs a scenario runs besides braid, checked before building |
//! | [`flows`] | UDP probes, urgent bursts, iperf3, floods, the kernel's counters |
//! | [`connect`] | new TCP connections, one after another: whether and how soon they work |
//! | [`report`] | tables, JSON and the HTML report |
//! | [`run`] | the commands: up, run, down |
//! | [`sweep`] | runs at each of several loss ratios |
//! | [`generator`] | the benchmark's isolated sender: the kernel's generator on one CPU, the routers measured on another |
//! | [`bench`] | the forwarding benchmark |
//! | [`soak`] | long runs at a fixed load: memory over time, bounded |
//! | [`flood`] | the hostile stranger process (garbage, forgeries, replays) |
//! | [`spoof`] | the spoofer process (forged data as a neighbor: epochs, far numbers) |

pub mod bench;
pub mod connect;
pub mod delay;
pub mod events;
pub mod exec;
pub mod flood;
pub mod flows;
pub mod generator;
pub mod link;
pub mod ns;
pub mod plan;
pub mod programs;
pub mod report;
pub mod routing;
pub mod run;
pub mod scenario;
pub mod soak;
pub mod spoof;
pub mod step;
pub mod sweep;
pub mod tap;
pub mod teardown;

pub use scenario::{DaemonLog, Lab, LabFileErrors};
