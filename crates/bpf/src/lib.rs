//! braid's eBPF programs, compiled from `bpf/*.c` when braid is built
//! (`build.rs`) and carried here as bytes, and the kernel data
//! path's user-space side: the numbers it shares with the C programs
//! ([`constants`], written into a C header at build time together with
//! `braid-wire`'s offsets), its map layouts ([`maps`], mirroring
//! `bpf/datapath.h`) and its loader ([`datapath`]). Nothing is compiled
//! at run time. When braid was built without clang the objects are empty
//! and [`missing`] says why.
//!
//! | module | owns |
//! |---|---|
//! | [`objects`] | the compiled objects as bytes, or why they are missing |
//! | [`constants`] | flags, limits and map sizes shared with the C programs |
//! | [`maps`] | the byte layout of every map the kernel data path shares with the daemon |
//! | [`loss`] | the lab's loss program, attached ahead of everything on a link's receiving side |
//! | [`gen`] | the lab benchmark's packet generator, sending frames from inside the kernel |
//! | [`compile`] | the node's classifier and sessions in the kernel's terms, or why not |
//! | [`datapath`] | loading the data path, attaching it (TCX links), typed map writes, counters |
//! | [`handover`] | an egress window rewritten from the node's after the ingress's proof |

pub mod compile;
pub mod constants;
pub mod datapath;
pub mod gen;
pub mod handover;
pub mod loss;
pub mod maps;
pub mod objects;

pub use datapath::{Attachment, Datapath, DatapathError, Program};
pub use objects::{missing, DATAPATH, GEN, LOSS};
