//! The kernel data path, loaded: the object from `bpf/datapath.c` in the
//! kernel, its programs attached by TCX links (which go when this value
//! is dropped, or the process dies: nothing stays attached to black-hole
//! traffic), and typed writes to its maps. What to write is the daemon's
//! to decide; this only carries it out.

use aya::maps::lpm_trie::{Key, LpmTrie};
use aya::maps::{Array, HashMap, MapData, MapError, PerCpuArray};
use aya::programs::tc::{SchedClassifierLinkId, TcAttachOptions};
use aya::programs::{LinkOrder, ProgramError, SchedClassifier, TcAttachType, TestRun};
use aya::{Ebpf, EbpfError, EbpfLoader, TestRunOptions};
use thiserror::Error;

use crate::maps::{
    Addr6, Neighbor, Prefix, Prefix6Addr, PrefixAddr, Ruleset, Sender, SenderKey, Seq, Session,
    SessionKey, Settings, Tree, TreeKey, Window, WindowKey, STATS,
};
use crate::objects;

/// One of the data path's programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// tc ingress of every braid interface.
    Rx,
    /// tc egress of the TUN device.
    Tx,
    /// tc ingress of the segmenter veth's far end.
    TxL2,
    /// tc egress of the TUN device, ahead of [`Program::Tx`]: tree mode's
    /// entry point.
    TreeTx,
    /// tc ingress of a LAN port: the encoder before the stack.
    LanRx,
}

impl Program {
    /// The side of an interface it attaches to.
    fn side(self) -> TcAttachType {
        match self {
            Program::Tx | Program::TreeTx => TcAttachType::Egress,
            Program::Rx | Program::TxL2 | Program::LanRx => TcAttachType::Ingress,
        }
    }

    /// The program's function name in the object.
    pub fn name(self) -> &'static str {
        match self {
            Program::Rx => "braid_rx",
            Program::Tx => "braid_tx",
            Program::TxL2 => "braid_tx_l2",
            Program::TreeTx => "braid_tree_tx",
            Program::LanRx => "braid_lan_rx",
        }
    }
}

/// One program attached to one interface (a TCX link), to take off
/// again with [`Datapath::detach`] (an interface that goes away while the
/// data path runs: a radio unplugged, a renamed device).
#[derive(Debug)]
pub struct Attachment {
    program: Program,
    id: SchedClassifierLinkId,
}

/// Why the kernel data path could not do something.
#[derive(Debug, Error)]
pub enum DatapathError {
    /// braid was built without clang: there is no object to load.
    #[error("braid was built without its eBPF objects ({0})")]
    NotBuilt(&'static str),
    /// The kernel refused the object (no BPF, no CAP_BPF, verifier).
    #[error("loading the eBPF data path: {0}")]
    Load(#[from] EbpfError),
    /// The kernel refused a program (verifier) or an attachment.
    #[error("{what} {program}: {source}")]
    Program {
        what: &'static str,
        program: &'static str,
        source: ProgramError,
    },
    /// A map the object should have is missing or of another type.
    #[error("map {0}: missing or of an unexpected type")]
    Map(&'static str),
    /// The lab's generator was given a frame shorter than it rewrites.
    #[error("the packet generator sends frames of 64 bytes or more, not {0}")]
    ShortFrame(usize),
    /// A map refused a write or a read (full, or the entry is gone).
    #[error("map {map}: {source}")]
    Access { map: &'static str, source: MapError },
}

fn access(map: &'static str) -> impl FnOnce(MapError) -> DatapathError {
    move |source| DatapathError::Access { map, source }
}

/// Whether a map error says the entry was not there.
fn not_found(e: &MapError) -> bool {
    matches!(e, MapError::KeyNotFound)
}

/// The loaded data path.
pub struct Datapath {
    ebpf: Ebpf,
    /// Double-buffered (see bpf/datapath_maps.h): `settings_slot` names the slot
    /// in use, `active` mirrors it.
    settings: Array<MapData, Settings>,
    settings_slot: Array<MapData, u32>,
    active: u32,
    neighbors: HashMap<MapData, u16, Neighbor>,
    locals: HashMap<MapData, u32, u32>,
    copy_sources: HashMap<MapData, u32, u8>,
    copy_sources6: HashMap<MapData, Addr6, u8>,
    prefixes: LpmTrie<MapData, PrefixAddr, Prefix>,
    prefixes6: LpmTrie<MapData, Prefix6Addr, Prefix>,
    ruleset: HashMap<MapData, u32, Ruleset>,
    sessions: HashMap<MapData, SessionKey, Session>,
    seqs: HashMap<MapData, SessionKey, Seq>,
    windows: HashMap<MapData, WindowKey, Window>,
    trees: HashMap<MapData, TreeKey, Tree>,
    senders: HashMap<MapData, SenderKey, Sender>,
    stats: PerCpuArray<MapData, u64>,
}

impl std::fmt::Debug for Datapath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Datapath").finish_non_exhaustive()
    }
}

/// An IPv6 address as the kernel's four network-order words (each word's
/// bytes as in the packet).
fn words_be(addr: [u8; 16]) -> [u32; 4] {
    let mut w = [0u32; 4];
    for (i, word) in w.iter_mut().enumerate() {
        *word = u32::from_ne_bytes([
            addr[4 * i],
            addr[4 * i + 1],
            addr[4 * i + 2],
            addr[4 * i + 3],
        ]);
    }
    w
}

fn prefix6_key(addr: [u8; 16], len: u8) -> Key<Prefix6Addr> {
    Key::new(
        u32::from(len.min(128)),
        Prefix6Addr {
            addr_be: words_be(addr),
        },
    )
}

/// `BPF_F_LOCK`: read a value with a spin lock consistently.
const F_LOCK: u64 = 4;

macro_rules! take {
    ($ebpf:expr, $name:literal) => {
        $ebpf
            .take_map($name)
            .ok_or(DatapathError::Map($name))?
            .try_into()
            .map_err(|_| DatapathError::Map($name))?
    };
}

impl Datapath {
    /// Loads the object into the kernel for node `me`, whose braid port is
    /// `port`, with room for `max_sessions` sessions each side and
    /// `max_neighbors` neighbors. `braid_rx` is verified here, the other
    /// programs when first attached or run. Nothing is attached yet, and
    /// every program lets everything through until [`Self::set_settings`]
    /// turns it on.
    pub fn load(
        me: u16,
        port: u16,
        max_sessions: u32,
        max_neighbors: u32,
    ) -> Result<Datapath, DatapathError> {
        if let Some(why) = objects::missing() {
            return Err(DatapathError::NotBuilt(why));
        }
        let max_sessions = max_sessions.max(1);
        let mut ebpf = EbpfLoader::new()
            .override_global("me", &me, true)
            .override_global("port", &port, true)
            .map_max_entries("sessions", max_sessions)
            .map_max_entries("seqs", max_sessions)
            .map_max_entries("windows", max_sessions)
            .map_max_entries("neighbors", max_neighbors.max(1))
            .load(objects::DATAPATH)?;
        let mut dp = Datapath {
            settings: take!(ebpf, "settings"),
            settings_slot: take!(ebpf, "settings_slot"),
            active: 0,
            neighbors: take!(ebpf, "neighbors"),
            locals: take!(ebpf, "locals"),
            copy_sources: take!(ebpf, "copy_sources"),
            copy_sources6: take!(ebpf, "copy_sources6"),
            prefixes: take!(ebpf, "prefixes"),
            prefixes6: take!(ebpf, "prefixes6"),
            ruleset: take!(ebpf, "ruleset"),
            sessions: take!(ebpf, "sessions"),
            seqs: take!(ebpf, "seqs"),
            windows: take!(ebpf, "windows"),
            trees: take!(ebpf, "trees"),
            senders: take!(ebpf, "senders"),
            stats: take!(ebpf, "stats"),
            ebpf,
        };
        dp.program(Program::Rx)?;
        Ok(dp)
    }

    /// `p`, verified by the kernel the first time it is asked for: the
    /// ingress's programs take about a second each to verify (measured:
    /// 1.1 s and 0.8 s), which a router that does not encode in the
    /// kernel never pays.
    fn program(&mut self, p: Program) -> Result<&mut SchedClassifier, DatapathError> {
        let prog: &mut SchedClassifier = self
            .ebpf
            .program_mut(p.name())
            .and_then(|x| x.try_into().ok())
            .ok_or(DatapathError::Map(p.name()))?;
        if prog.fd().is_err() {
            verify(|| prog.load()).map_err(|source| DatapathError::Program {
                what: "verifying",
                program: p.name(),
                source,
            })?;
        }
        Ok(prog)
    }

    /// Attaches `program` to `interface` (a TCX link, last in order): on
    /// the interface's receive side for [`Program::Rx`] and
    /// [`Program::TxL2`], its transmit side for [`Program::Tx`]. It stays
    /// attached as long as this value lives, or until
    /// [`Self::detach`] is given what this returns.
    pub fn attach(
        &mut self,
        program: Program,
        interface: &str,
    ) -> Result<Attachment, DatapathError> {
        let side = program.side();
        // The tree entry goes ahead of the encoder on the same side.
        let order = if program == Program::TreeTx {
            LinkOrder::first()
        } else {
            LinkOrder::default()
        };
        self.program(program)?
            .attach_with_options(interface, side, TcAttachOptions::TcxOrder(order))
            .map(|id| Attachment { program, id })
            .map_err(|source| DatapathError::Program {
                what: "attaching",
                program: program.name(),
                source,
            })
    }

    /// Takes an attachment off (closes its TCX link). Its interface may
    /// be gone already: the kernel keeps the link, defunct, until then.
    pub fn detach(&mut self, a: Attachment) -> Result<(), DatapathError> {
        self.program(a.program)?
            .detach(a.id)
            .map_err(|source| DatapathError::Program {
                what: "detaching",
                program: a.program.name(),
                source,
            })
    }

    /// Attaches `program` first on `interface`'s receive side (a TCX
    /// link, ahead of anything there): the tree entry on the segmenter's
    /// far end, ahead of the encoder.
    pub fn attach_ingress_first(
        &mut self,
        program: Program,
        interface: &str,
    ) -> Result<(), DatapathError> {
        self.program(program)?
            .attach_with_options(
                interface,
                TcAttachType::Ingress,
                TcAttachOptions::TcxOrder(LinkOrder::first()),
            )
            .map(|_| ())
            .map_err(|source| DatapathError::Program {
                what: "attaching",
                program: program.name(),
                source,
            })
    }

    /// The names of the programs attached by TCX on `interface` on the
    /// side `program` attaches to, in the kernel's order (any loader's).
    pub fn attached(program: Program, interface: &str) -> Result<Vec<String>, DatapathError> {
        let side = program.side();
        let (_, programs) = SchedClassifier::query_tcx(interface, side).map_err(|source| {
            DatapathError::Program {
                what: "querying the attachments of",
                program: program.name(),
                source,
            }
        })?;
        Ok(programs
            .iter()
            .map(|p| p.name_as_str().unwrap_or("?").to_string())
            .collect())
    }

    /// Runs `program` once on `frame` (an Ethernet frame) with
    /// `BPF_PROG_TEST_RUN`; `ctx` is a `struct __sk_buff` prefix (or
    /// empty). Returns the verdict and the frame as the program left it.
    pub fn test_run(
        &mut self,
        program: Program,
        frame: &[u8],
        ctx: &[u8],
    ) -> Result<(u32, Vec<u8>), DatapathError> {
        let mut out = vec![0u8; frame.len() + 512];
        let opts = TestRunOptions {
            data_in: Some(frame),
            data_out: Some(&mut out),
            ctx_in: (!ctx.is_empty()).then_some(ctx),
            ..Default::default()
        };
        let r = self
            .program(program)?
            .test_run(opts)
            .map_err(|source| DatapathError::Program {
                what: "test-running",
                program: program.name(),
                source,
            })?;
        out.truncate(r.data_size_out as usize);
        Ok((r.return_value, out))
    }

    /// Sets this router's part of `key.entry`'s tree toward `key`'s client
    /// (one entry replaced whole).
    pub fn set_tree(&mut self, key: TreeKey, t: Tree) -> Result<(), DatapathError> {
        self.trees.insert(key, t, 0).map_err(access("trees"))
    }

    /// Forgets a tree entry (fine if unknown).
    pub fn remove_tree(&mut self, key: TreeKey) -> Result<(), DatapathError> {
        remove(&mut self.trees, &key, "trees")
    }

    /// Replaces the settings: written into the slot not in use, which is
    /// then named (programs see the old settings or the new, whole).
    pub fn set_settings(&mut self, s: Settings) -> Result<(), DatapathError> {
        let next = 1 - self.active;
        self.settings.set(next, s, 0).map_err(access("settings"))?;
        self.settings_slot
            .set(0, next, 0)
            .map_err(access("settings_slot"))?;
        self.active = next;
        Ok(())
    }

    /// Sets where neighbor `id` is.
    pub fn set_neighbor(&mut self, id: u16, n: Neighbor) -> Result<(), DatapathError> {
        self.neighbors.insert(id, n, 0).map_err(access("neighbors"))
    }

    /// Forgets neighbor `id` (fine if unknown).
    pub fn remove_neighbor(&mut self, id: u16) -> Result<(), DatapathError> {
        remove(&mut self.neighbors, &id, "neighbors")
    }

    /// Notes that authenticated neighbor `id` sends from `key`.
    pub fn set_sender(&mut self, key: SenderKey, id: u16) -> Result<(), DatapathError> {
        self.senders
            .insert(key, Sender { id, pad: 0 }, 0)
            .map_err(access("senders"))
    }

    /// Forgets a sender's place (fine if unknown).
    pub fn remove_sender(&mut self, key: SenderKey) -> Result<(), DatapathError> {
        remove(&mut self.senders, &key, "senders")
    }

    /// Notes `addr_be` as ours, on interface `ifindex`.
    pub fn set_local(&mut self, addr_be: u32, ifindex: u32) -> Result<(), DatapathError> {
        self.locals
            .insert(addr_be, ifindex, 0)
            .map_err(access("locals"))
    }

    /// Forgets our address `addr_be` (fine if unknown).
    pub fn remove_local(&mut self, addr_be: u32) -> Result<(), DatapathError> {
        remove(&mut self.locals, &addr_be, "locals")
    }

    /// Leaves the packets from client `addr_be` (an IPv4 address an
    /// access point advertises) to user space at this egress, or
    /// (`false`) no longer.
    pub fn set_copy_source(&mut self, addr_be: u32, on: bool) -> Result<(), DatapathError> {
        if on {
            self.copy_sources
                .insert(addr_be, 1, 0)
                .map_err(access("copy_sources"))
        } else {
            remove(&mut self.copy_sources, &addr_be, "copy_sources")
        }
    }

    /// Routes the IPv4 prefix `addr_be/len` to `egress`.
    pub fn set_prefix(&mut self, addr_be: u32, len: u8, egress: u16) -> Result<(), DatapathError> {
        let key = Key::new(u32::from(len.min(32)), PrefixAddr { addr_be });
        let value = Prefix { egress, pad: 0 };
        self.prefixes
            .insert(&key, value, 0)
            .map_err(access("prefixes"))
    }

    /// Forgets the prefix `addr_be/len` (fine if unknown).
    pub fn remove_prefix(&mut self, addr_be: u32, len: u8) -> Result<(), DatapathError> {
        let key = Key::new(u32::from(len.min(32)), PrefixAddr { addr_be });
        match self.prefixes.remove(&key) {
            Err(e) if !not_found(&e) => Err(access("prefixes")(e)),
            _ => Ok(()),
        }
    }

    /// Leaves the packets from IPv6 client `addr` to user space at this
    /// egress, or (`false`) no longer.
    pub fn set_copy_source6(&mut self, addr: [u8; 16], on: bool) -> Result<(), DatapathError> {
        let key = Addr6 {
            addr_be: words_be(addr),
        };
        if on {
            self.copy_sources6
                .insert(key, 1, 0)
                .map_err(access("copy_sources6"))
        } else {
            remove(&mut self.copy_sources6, &key, "copy_sources6")
        }
    }

    /// Routes the IPv6 prefix `addr/len` to `egress`.
    pub fn set_prefix6(
        &mut self,
        addr: [u8; 16],
        len: u8,
        egress: u16,
    ) -> Result<(), DatapathError> {
        let key = prefix6_key(addr, len);
        let value = Prefix { egress, pad: 0 };
        self.prefixes6
            .insert(&key, value, 0)
            .map_err(access("prefixes6"))
    }

    /// Forgets the IPv6 prefix `addr/len` (fine if unknown).
    pub fn remove_prefix6(&mut self, addr: [u8; 16], len: u8) -> Result<(), DatapathError> {
        match self.prefixes6.remove(&prefix6_key(addr, len)) {
            Err(e) if !not_found(&e) => Err(access("prefixes6")(e)),
            _ => Ok(()),
        }
    }

    /// Replaces the classifier (one atomic write).
    pub fn set_ruleset(&mut self, r: &Ruleset) -> Result<(), DatapathError> {
        self.ruleset.insert(0, r, 0).map_err(access("ruleset"))
    }

    /// Starts session `key`'s counter at `next` (before the session itself
    /// is written: the kernel needs both).
    pub fn start_seq(&mut self, key: SessionKey, next: u32) -> Result<(), DatapathError> {
        let s = Seq {
            next,
            ..Seq::default()
        };
        self.seqs.insert(key, s, 0).map_err(access("seqs"))
    }

    /// Session `key`'s counter and what it sent, if the kernel has it.
    pub fn seq(&self, key: SessionKey) -> Result<Option<Seq>, DatapathError> {
        match self.seqs.get(&key, 0) {
            Ok(s) => Ok(Some(s)),
            Err(e) if not_found(&e) => Ok(None),
            Err(e) => Err(access("seqs")(e)),
        }
    }

    /// Writes (or replaces, atomically) how the kernel encodes `key`.
    pub fn set_session(&mut self, key: SessionKey, s: &Session) -> Result<(), DatapathError> {
        self.sessions.insert(key, s, 0).map_err(access("sessions"))
    }

    /// Stops encoding `key` in the kernel; returns its counter as it was
    /// left (the next number, what it sent). The session is removed
    /// first, so no packet takes a number after the one returned.
    pub fn remove_session(&mut self, key: SessionKey) -> Result<Option<Seq>, DatapathError> {
        remove(&mut self.sessions, &key, "sessions")?;
        let seq = self.seq(key)?;
        remove(&mut self.seqs, &key, "seqs")?;
        Ok(seq)
    }

    /// Every egress window with its state (read under its lock).
    pub fn windows(&self) -> Vec<(WindowKey, Window)> {
        self.windows
            .keys()
            .filter_map(Result::ok)
            .filter_map(|k| Some((k, self.windows.get(&k, F_LOCK).ok()?)))
            .collect()
    }

    /// Egress window `key`, read under its lock, if the kernel has it.
    pub fn window(&self, key: WindowKey) -> Result<Option<Window>, DatapathError> {
        match self.windows.get(&key, F_LOCK) {
            Ok(w) => Ok(Some(w)),
            Err(e) if not_found(&e) => Ok(None),
            Err(e) => Err(access("windows")(e)),
        }
    }

    /// Replaces egress window `key` (under its lock): a window the
    /// ingress's proof moved (see [`crate::handover`]).
    pub fn set_window(&mut self, key: WindowKey, w: &Window) -> Result<(), DatapathError> {
        self.windows
            .insert(key, w, F_LOCK)
            .map_err(access("windows"))
    }

    /// Forgets an egress window (an idle session).
    pub fn remove_window(&mut self, key: WindowKey) -> Result<(), DatapathError> {
        remove(&mut self.windows, &key, "windows")
    }

    /// The programs' counters, summed over CPUs, in [`STATS`] order.
    pub fn stats(&self) -> Vec<(&'static str, u64)> {
        STATS
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let total = self
                    .stats
                    .get(&(i as u32), 0)
                    .map(|v| v.iter().sum())
                    .unwrap_or(0);
                (*name, total)
            })
            .collect()
    }
}

fn remove<K: aya::Pod, V: aya::Pod>(
    map: &mut HashMap<MapData, K, V>,
    key: &K,
    name: &'static str,
) -> Result<(), DatapathError> {
    match map.remove(key) {
        Err(e) if !not_found(&e) => Err(access(name)(e)),
        _ => Ok(()),
    }
}

/// The kernel's clock as the programs read it (`bpf_ktime_get_ns`:
/// CLOCK_MONOTONIC), for telling how long ago a window or session was
/// last used.
pub fn kernel_now_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// Most times a program's verification is started when the kernel stops
/// it with EAGAIN.
const VERIFY_ATTEMPTS: usize = 5;

/// Loads a program (`load`, which runs the kernel's verifier) with every
/// signal blocked in this thread, and again when the verifier gave up
/// with EAGAIN. The verifier stops with EAGAIN when a signal is pending
/// for the loading thread, and a verification of seconds (the ingress's
/// programs on a busy machine) meets one now and then: seventy daemons
/// starting together in the lab lost some to it. Blocked here, a
/// signal for the process goes to another thread; a signal for this
/// thread waits until the load returns. libbpf retries the same way, up
/// to 5 times (aya does not).
pub(crate) fn verify(
    mut load: impl FnMut() -> Result<(), ProgramError>,
) -> Result<(), ProgramError> {
    use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow};
    let mut before = SigSet::empty();
    let blocked = pthread_sigmask(
        SigmaskHow::SIG_BLOCK,
        Some(&SigSet::all()),
        Some(&mut before),
    )
    .is_ok();
    let loaded = verify_again_on_eagain(&mut load);
    if blocked {
        // Restoring a mask read a moment ago cannot fail.
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&before), None);
    }
    loaded
}

fn verify_again_on_eagain(
    load: &mut impl FnMut() -> Result<(), ProgramError>,
) -> Result<(), ProgramError> {
    let mut attempt = 1;
    loop {
        match load() {
            Err(ProgramError::LoadError { io_error, .. })
                if io_error.raw_os_error() == Some(nix::libc::EAGAIN)
                    && attempt < VERIFY_ATTEMPTS =>
            {
                attempt += 1;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod verify_tests {
    use super::*;

    fn load_error(errno: i32) -> ProgramError {
        ProgramError::LoadError {
            io_error: std::io::Error::from_raw_os_error(errno),
            verifier_log: aya_obj::VerifierLog::new(String::new()),
        }
    }

    #[test]
    fn a_verification_stopped_by_a_signal_is_started_again_up_to_five_times() {
        // Stopped twice (EAGAIN), then verified.
        let mut calls = 0;
        let r = verify(|| {
            calls += 1;
            if calls < 3 {
                Err(load_error(nix::libc::EAGAIN))
            } else {
                Ok(())
            }
        });
        assert!(r.is_ok());
        assert_eq!(calls, 3);
        // Stopped every time: the fifth EAGAIN is the answer.
        let mut calls = 0;
        let r = verify(|| {
            calls += 1;
            Err(load_error(nix::libc::EAGAIN))
        });
        assert!(matches!(r, Err(ProgramError::LoadError { .. })));
        assert_eq!(calls, VERIFY_ATTEMPTS);
        // Refused for another reason: at once.
        let mut calls = 0;
        let r = verify(|| {
            calls += 1;
            Err(load_error(nix::libc::EACCES))
        });
        assert!(r.is_err());
        assert_eq!(calls, 1);
    }
}
