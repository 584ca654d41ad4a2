//! WISPR's planning analysis on an operator's own network (seed 002,
//! sections 2.3-2.5): how much capacity each edge site has to the gateway
//! (min cuts), how many paths and disjoint paths it has today and after
//! adding links, what radios cost against their throughput, and which
//! links to add or replace for the least cost at a capacity or the most
//! capacity at a budget, within spectrum and site limits.
//!
//! Pure functions over the input; no clocks or files. `braid plan` (the
//! command line) reads the files, shows progress and writes the report.
//!
//! | module | owns |
//! |---|---|
//! | [`network`] | the input: sites, pairs, radios, constraints (NetJSON) |
//! | [`prices`] | the price table (CSV) |
//! | [`flow`] | max flow and min cut (Dinic), the flow on each edge, node-disjoint path counts |
//! | [`design`] | equipment choices per pair, designs, their cost, cuts and limits |
//! | [`paths`] | path counts per edge site, and their growth as links are added (figure 8) |
//! | [`fit`] | the price/throughput fit (figure 6) and the cost of parallel links (figure 7) |
//! | [`instances`] | seeded random small planning instances and a fixed example (tests, the optimiser's gap) |
//! | [`optimize`] | least cost at a capacity, most capacity at a budget (table 2): the exact MILP and the heuristic, each its own module |
//! | [`synth`] | the synthetic WISP shipped in scenarios/ |
//! | [`export`] | a design as NetJSON (for plan, sim and paths) and its rain-fade scenario |
//! | [`report`] | the HTML report and the text summary |
//! | [`units`] | dollars and Mbit/s as people read them |

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod design;
pub mod export;
pub mod fit;
pub mod flow;
pub mod instances;
pub mod network;
pub mod optimize;
pub mod paths;
pub mod prices;
pub mod report;
pub mod synth;
pub mod units;
