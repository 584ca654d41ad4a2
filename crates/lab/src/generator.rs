//! The forwarding benchmark's isolated sender: the routers measured, not
//! the sender. The kernel's packet generator (`braid_bpf::gen`: XDP
//! frames sent from inside the kernel, this kernel has no pktgen) sends
//! from the sending host, on one CPU; the routers' work is steered to
//! another CPU (RPS on the first router's host port), the routing daemons
//! pinned there too; the receiving host counts and drops what arrives at
//! its port (nftables, before its stack). The routers' CPU time per
//! packet is that CPU's busy time (wall time less its idle time, from
//! cpuidle to the microsecond) over what arrived. The generator
//! spins on its CPU (it paces from the kernel's clock); how far it ever
//! fell behind its schedule is reported beside, so a run where the
//! sender was the limit says so.
//!
//! While it runs, `net.core.netdev_max_backlog` is 10,000 (see
//! [`BACKLOG`]); it is put back after.
//!
//! On a veth pair everything a packet causes on its way down a chain of
//! namespaces runs on the CPU that received it: without this steering the
//! sender and every router share one CPU, and the highest rate is that
//! CPU's worth of sender plus routers (what the socket sender measured).

use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use braid_bpf::gen::Generator;
use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::pthread::{pthread_kill, pthread_self};
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::unistd::Pid;

use crate::ns::{in_ns, read_in_ns};
use crate::scenario::{Lab, LabFlow};

/// The nftables table that counts and drops at the receiving host.
const TABLE: &str = "braid_bench";

/// The UDP port the frames are sent to.
const PORT: u16 = 9000;

/// What one trial of the isolated sender measured.
#[derive(Debug, Clone, Copy)]
pub struct IsolatedTrial {
    /// Frames asked for (one second's worth).
    pub asked: u64,
    pub sent: u64,
    pub delivered: u64,
    /// The routers' CPU busy time per delivered packet, microseconds.
    pub router_cpu_us: f64,
    /// The routers' CPU load while the packets flowed, 0-1.
    pub router_load: f64,
    /// The rate the generator sent at, packets/s.
    pub sender_rate: f64,
    /// The most frames the generator was ever behind its schedule.
    pub sender_lag: u64,
    /// Frames the generator skipped, being too far behind (the sender
    /// was the limit of this trial).
    pub skipped: u64,
}

/// The backlog the routers' CPU queues packets in while the bench runs
/// (`net.core.netdev_max_backlog`, 1,000 by default; restored after):
/// on a veth chain every hop's packets queue there, and this VM takes the
/// CPU away for milliseconds at a time (the generator was seen up to
/// 1,772 frames behind): 1,000 packets lost 0.1-0.5% at 40% of the CPU's
/// capacity, which a router's NIC ring of a few thousand would have held.
const BACKLOG: &str = "10000";
const BACKLOG_SYSCTL: &str = "/proc/sys/net/core/netdev_max_backlog";

/// The isolated sender, set up for one built variant.
pub struct Isolated {
    /// `netdev_max_backlog` before, put back when dropped.
    backlog_before: String,
    generator: Generator,
    sender_ns: String,
    receiver_ns: String,
    ifindex: u32,
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: std::net::IpAddr,
    dst: std::net::IpAddr,
    sender_cpu: usize,
    router_cpu: usize,
}

/// Why the isolated sender cannot be used on this machine or scenario,
/// if so (the benchmark then says so and sends from a socket).
pub fn unavailable(lab: &Lab, flow: &LabFlow) -> Option<String> {
    if let Some(why) = braid_bpf::missing() {
        return Some(format!("braid carries no eBPF objects ({why})"));
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        return Some("one CPU: the sender and the routers cannot be kept apart".into());
    }
    for end in [flow.from, flow.to] {
        if lab.client_of(end).is_some() || end == lab.internet_end() {
            return Some("the first flow must run between two routers' hosts".into());
        }
    }
    None
}

impl Isolated {
    /// Prepares `built`'s lab for the generator: the first router's host
    /// port runs NAPI (GRO on: a veth takes XDP frames only then) and
    /// steers what it receives to the last CPU, where the daemons are
    /// pinned; the receiving host counts and drops the frames.
    pub fn prepare(lab: &Lab, flow: &LabFlow, daemons: &[(usize, Child)]) -> anyhow::Result<Self> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (sender_cpu, router_cpu) = (0, cpus - 1);
        let (sender_ns, receiver_ns) = (lab.end_ns(flow.from), lab.end_ns(flow.to));
        let router_ns = lab.ns(flow.from);
        in_ns(&router_ns, &["ethtool", "-K", "host0", "gro", "on"])
            .context("the first router's host port must run NAPI for the generator's frames")?;
        let mask = format!("{:x}", 1u64 << router_cpu);
        in_ns(
            &router_ns,
            &[
                "sh",
                "-c",
                &format!("echo {mask} > /sys/class/net/host0/queues/rx-0/rps_cpus"),
            ],
        )
        .context("steering the routers' work to one CPU (RPS)")?;
        for (_, child) in daemons {
            pin_process(child.id(), router_cpu)?;
        }
        let chain = "{ type filter hook ingress device \"eth0\" priority 0; }";
        let port = PORT.to_string();
        for cmd in [
            &["add", "table", "netdev", TABLE][..],
            &["add", "chain", "netdev", TABLE, "in", chain],
            &[
                "add", "rule", "netdev", TABLE, "in", "udp", "dport", &port, "counter", "drop",
            ],
        ] {
            let mut args = vec!["nft"];
            args.extend_from_slice(cmd);
            in_ns(&receiver_ns, &args).context("counting at the receiving host (nftables)")?;
        }
        let mac = |ns: &str, dev: &str| -> anyhow::Result<[u8; 6]> {
            let text = read_in_ns(ns, &["cat", &format!("/sys/class/net/{dev}/address")])?;
            parse_mac(text.trim())
                .ok_or_else(|| anyhow!("{dev} in {ns}: no MAC address in {text:?}"))
        };
        let ifindex = read_in_ns(&sender_ns, &["cat", "/sys/class/net/eth0/ifindex"])?
            .trim()
            .parse()
            .context("the sending host's eth0 ifindex")?;
        let generator = Generator::load().context("loading the packet generator")?;
        let (src_mac, dst_mac) = (mac(&sender_ns, "eth0")?, mac(&router_ns, "host0")?);
        // Last, once nothing can fail before Drop puts it back.
        let backlog_before = std::fs::read_to_string(BACKLOG_SYSCTL)
            .context("reading net.core.netdev_max_backlog")?;
        std::fs::write(BACKLOG_SYSCTL, BACKLOG).context("raising net.core.netdev_max_backlog")?;
        Ok(Isolated {
            backlog_before,
            generator,
            src_mac,
            dst_mac,
            sender_ns,
            receiver_ns,
            ifindex,
            src: lab.flow_addr(flow, flow.from),
            dst: lab.flow_addr(flow, flow.to),
            sender_cpu,
            router_cpu,
        })
    }

    /// Packets counted at the receiving host so far.
    fn counted(&self) -> anyhow::Result<u64> {
        let text = read_in_ns(
            &self.receiver_ns,
            &["nft", "-j", "list", "table", "netdev", TABLE],
        )?;
        let json: serde_json::Value = serde_json::from_str(&text).context("nft -j output")?;
        counter_packets(&json).ok_or_else(|| anyhow!("no counter in the receiver's {TABLE} table"))
    }

    /// Sends `rate` frames of `size` bytes of UDP payload over one second,
    /// paced by the generator, and measures what arrived and what the
    /// routers' CPU spent.
    pub fn trial(
        &mut self,
        size: usize,
        rate: u64,
        stop: &AtomicBool,
    ) -> anyhow::Result<IsolatedTrial> {
        let frame = frame(self.src_mac, self.dst_mac, self.src, self.dst, size);
        self.generator.pace(&frame, rate, rate)?;
        interrupt_handler()?;
        let before = self.counted()?;
        let (idle0, t0) = (idle_us(self.router_cpu)?, Instant::now());
        let (gen, ns, ifindex, cpu) = (
            &self.generator,
            &self.sender_ns,
            self.ifindex,
            self.sender_cpu,
        );
        std::thread::scope(|s| -> anyhow::Result<()> {
            let (started, thread) = std::sync::mpsc::channel();
            let (ended, end) = std::sync::mpsc::channel();
            let frame = &frame;
            let sender = s.spawn(move || -> anyhow::Result<()> {
                pin_thread(cpu)?;
                enter(ns)?;
                let _ = started.send(pthread_self());
                let sent = gen.run(ifindex, frame);
                let _ = ended.send(());
                Ok(sent?)
            });
            // The frames take a second; then the run is interrupted (it
            // sends nothing more), again until it has returned: a signal
            // that came before the run began interrupts nothing.
            if let Ok(thread) = thread.recv() {
                let deadline = Instant::now() + Duration::from_millis(1100);
                let mut ended = false;
                while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
                    if end.recv_timeout(Duration::from_millis(50)).is_ok() {
                        ended = true;
                        break;
                    }
                }
                while !ended && pthread_kill(thread, Signal::SIGUSR1).is_ok() {
                    ended = end.recv_timeout(Duration::from_millis(50)).is_ok();
                }
            }
            sender
                .join()
                .map_err(|_| anyhow!("the sender thread panicked"))?
        })?;
        let (idle1, wall) = (idle_us(self.router_cpu)?, t0.elapsed());
        let paced = self.generator.paced()?;
        // What is still on its way arrives within milliseconds: wait until
        // the count stops moving (at most a second).
        let mut delivered = self.counted()? - before;
        let deadline = Instant::now() + Duration::from_secs(1);
        while delivered < paced.sent && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            let now = self.counted()? - before;
            if now == delivered {
                break;
            }
            delivered = now;
        }
        // Busy is what was not idle: the idle time is measured, where the
        // busy columns are sampled by a tick that an idle CPU stops (time
        // spent in the routers' softirqs between idle periods is missing
        // from them).
        let idle = idle1.saturating_sub(idle0) as f64;
        let wall_us = wall.as_secs_f64() * 1e6;
        let busy_us = (wall_us - idle).max(0.0);
        Ok(IsolatedTrial {
            asked: rate,
            sent: paced.sent,
            delivered,
            router_cpu_us: busy_us / delivered.max(1) as f64,
            router_load: busy_us / wall_us.max(1.0),
            sender_rate: paced.sent as f64 / paced.took.as_secs_f64().max(1e-9),
            sender_lag: paced.max_lag,
            skipped: paced.skipped,
        })
    }
}

impl Drop for Isolated {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(BACKLOG_SYSCTL, self.backlog_before.trim()) {
            eprintln!(
                "braid lab bench: could not put net.core.netdev_max_backlog back to {}: {e}",
                self.backlog_before.trim()
            );
        }
    }
}

/// SIGUSR1 interrupts the generator's run and does nothing else.
fn interrupt_handler() -> anyhow::Result<()> {
    extern "C" fn nothing(_: nix::libc::c_int) {}
    let action = SigAction::new(
        SigHandler::Handler(nothing),
        SaFlags::empty(),
        SigSet::empty(),
    );
    // SAFETY: the handler does nothing, so it is async-signal-safe.
    unsafe { sigaction(Signal::SIGUSR1, &action) }.context("a handler for SIGUSR1")?;
    Ok(())
}

/// Moves the calling thread into network namespace `ns` for good (the
/// thread is the sender's and ends with the trial).
fn enter(ns: &str) -> anyhow::Result<()> {
    let there = std::fs::File::open(format!("/var/run/netns/{ns}"))
        .with_context(|| format!("namespace {ns}"))?;
    nix::sched::setns(
        std::os::fd::AsFd::as_fd(&there),
        nix::sched::CloneFlags::CLONE_NEWNET,
    )?;
    Ok(())
}

fn cpu_set(cpu: usize) -> anyhow::Result<CpuSet> {
    let mut set = CpuSet::new();
    set.set(cpu)?;
    Ok(set)
}

/// Pins the calling thread to `cpu`.
fn pin_thread(cpu: usize) -> anyhow::Result<()> {
    sched_setaffinity(Pid::from_raw(0), &cpu_set(cpu)?).context("pinning the sender")
}

/// Pins every thread of process `pid` to `cpu`.
fn pin_process(pid: u32, cpu: usize) -> anyhow::Result<()> {
    let set = cpu_set(cpu)?;
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .with_context(|| format!("the threads of process {pid}"))?;
    for task in tasks.flatten() {
        if let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) {
            sched_setaffinity(Pid::from_raw(tid), &set)
                .with_context(|| format!("pinning thread {tid} of process {pid}"))?;
        }
    }
    Ok(())
}

/// CPU `cpu`'s idle time so far, in microseconds: the sum of its cpuidle
/// states' times, read from a thread on that CPU (a state's time grows
/// when the CPU leaves it: read from elsewhere, an idle period under way
/// is missing, and lands in the next reading, whole); where the kernel
/// has no cpuidle, /proc/stat's idle and iowait (to the clock tick, 10
/// ms: at 20,000 packets/s in a one-second trial, 0.5 µs per packet).
fn idle_us(cpu: usize) -> anyhow::Result<u64> {
    let on_it = std::thread::spawn(move || -> anyhow::Result<Option<u64>> {
        pin_thread(cpu)?;
        Ok(cpuidle_us(cpu))
    })
    .join()
    .map_err(|_| anyhow!("the thread reading CPU {cpu}'s idle time panicked"))??;
    if let Some(us) = on_it {
        return Ok(us);
    }
    let stat = std::fs::read_to_string("/proc/stat").context("/proc/stat")?;
    let line = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&format!("cpu{cpu}")))
        .ok_or_else(|| anyhow!("/proc/stat has no line for CPU {cpu}"))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    Ok((v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0)) * 10_000)
}

/// The sum of CPU `cpu`'s cpuidle states' times, microseconds.
fn cpuidle_us(cpu: usize) -> Option<u64> {
    let dir = std::fs::read_dir(format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle")).ok()?;
    let mut total = None;
    for state in dir.flatten() {
        if let Some(t) = std::fs::read_to_string(state.path().join("time"))
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
        {
            total = Some(total.unwrap_or(0) + t);
        }
    }
    total
}

/// `aa:bb:cc:dd:ee:ff` as bytes.
fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = text.split(':');
    for byte in &mut mac {
        *byte = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// The first counter's packets anywhere in `nft -j` output.
fn counter_packets(json: &serde_json::Value) -> Option<u64> {
    match json {
        serde_json::Value::Object(map) => map
            .get("counter")
            .and_then(|c| c.get("packets"))
            .and_then(serde_json::Value::as_u64)
            .or_else(|| map.values().find_map(counter_packets)),
        serde_json::Value::Array(items) => items.iter().find_map(counter_packets),
        _ => None,
    }
}

/// An Ethernet frame carrying a UDP datagram (over IPv4 or IPv6, as the
/// addresses are) of `size` bytes of payload to [`PORT`], its checksums
/// finished.
fn frame(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: std::net::IpAddr,
    dst: std::net::IpAddr,
    size: usize,
) -> Vec<u8> {
    use smoltcp::wire::{
        EthernetAddress, EthernetFrame, EthernetProtocol, IpAddress, IpProtocol, Ipv4Packet,
        Ipv6Packet, UdpPacket,
    };
    use std::net::IpAddr;
    let ip_header = if src.is_ipv4() { 20 } else { 40 };
    let ip_len = ip_header + 8 + size;
    let mut bytes = vec![0u8; 14 + ip_len];
    let mut eth = EthernetFrame::new_unchecked(&mut bytes[..]);
    eth.set_dst_addr(EthernetAddress(dst_mac));
    eth.set_src_addr(EthernetAddress(src_mac));
    let (src, dst) = match (src, dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => {
            eth.set_ethertype(EthernetProtocol::Ipv4);
            let mut ip = Ipv4Packet::new_unchecked(&mut bytes[14..]);
            ip.set_version(4);
            ip.set_header_len(20);
            ip.set_total_len(ip_len as u16);
            ip.set_hop_limit(64);
            ip.set_next_header(IpProtocol::Udp);
            ip.set_src_addr(src);
            ip.set_dst_addr(dst);
            ip.fill_checksum();
            (IpAddress::Ipv4(src), IpAddress::Ipv4(dst))
        }
        (src, dst) => {
            let (src, dst) = (to_v6(src), to_v6(dst));
            eth.set_ethertype(EthernetProtocol::Ipv6);
            let mut ip = Ipv6Packet::new_unchecked(&mut bytes[14..]);
            ip.set_version(6);
            ip.set_payload_len((8 + size) as u16);
            ip.set_hop_limit(64);
            ip.set_next_header(IpProtocol::Udp);
            ip.set_src_addr(src);
            ip.set_dst_addr(dst);
            (IpAddress::Ipv6(src), IpAddress::Ipv6(dst))
        }
    };
    let mut udp = UdpPacket::new_unchecked(&mut bytes[14 + ip_header..]);
    udp.set_src_port(PORT + 1);
    udp.set_dst_port(PORT);
    udp.set_len((8 + size) as u16);
    udp.fill_checksum(&src, &dst);
    bytes
}

/// An address as IPv6 (an IPv4 one mapped).
fn to_v6(a: std::net::IpAddr) -> std::net::Ipv6Addr {
    match a {
        std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        std::net::IpAddr::V6(v6) => v6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frame_is_a_valid_udp_datagram_of_the_asked_size() {
        use smoltcp::wire::{IpAddress, Ipv4Packet, Ipv6Packet, UdpPacket};
        let (src, dst): (std::net::Ipv4Addr, std::net::Ipv4Addr) =
            ("198.18.1.2".parse().unwrap(), "198.18.3.2".parse().unwrap());
        let (src6, dst6): (std::net::Ipv6Addr, std::net::Ipv6Addr) = (
            "2001:2:0:1::2".parse().unwrap(),
            "2001:2:0:3::2".parse().unwrap(),
        );
        let macs = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        for size in [64, 512, 1400] {
            let f = frame(macs.0, macs.1, src.into(), dst.into(), size);
            assert_eq!(f.len(), 14 + 20 + 8 + size);
            assert_eq!(&f[12..14], &[8, 0]);
            let ip = Ipv4Packet::new_checked(&f[14..]).expect("an IPv4 header");
            assert!(ip.verify_checksum(), "IPv4 checksum at {size} B");
            assert_eq!((ip.src_addr(), ip.dst_addr()), (src, dst));
            let udp = UdpPacket::new_checked(ip.payload()).expect("a UDP header");
            assert!(udp.verify_checksum(&IpAddress::Ipv4(src), &IpAddress::Ipv4(dst)));
            assert_eq!((udp.dst_port(), udp.payload().len()), (PORT, size));
            let f = frame(macs.0, macs.1, src6.into(), dst6.into(), size);
            assert_eq!(f.len(), 14 + 40 + 8 + size);
            assert_eq!(&f[12..14], &[0x86, 0xdd]);
            let ip = Ipv6Packet::new_checked(&f[14..]).expect("an IPv6 header");
            assert_eq!((ip.src_addr(), ip.dst_addr()), (src6, dst6));
            assert_eq!(ip.payload_len() as usize, 8 + size);
            let udp = UdpPacket::new_checked(ip.payload()).expect("a UDP header");
            assert!(udp.verify_checksum(&IpAddress::Ipv6(src6), &IpAddress::Ipv6(dst6)));
            assert_eq!((udp.dst_port(), udp.payload().len()), (PORT, size));
        }
    }

    #[test]
    fn macs_and_counters_are_read_or_refused() {
        assert_eq!(parse_mac("02:00:0a:ff:00:01"), Some([2, 0, 10, 255, 0, 1]));
        assert_eq!(parse_mac("02:00:0a:ff:00"), None);
        assert_eq!(parse_mac("02:00:0a:ff:00:01:07"), None);
        assert_eq!(parse_mac("02:00:0a:ff:00:zz"), None);
        let nft = r#"{"nftables":[{"metainfo":{"version":"1.0.6"}},{"table":{"family":"netdev","name":"braid_bench"}},
            {"rule":{"chain":"in","expr":[{"match":{"op":"==","left":{"payload":{"protocol":"udp","field":"dport"}},"right":9000}},
            {"counter":{"packets":1234,"bytes":56789}},{"drop":null}]}}]}"#;
        let json: serde_json::Value = serde_json::from_str(nft).unwrap();
        assert_eq!(counter_packets(&json), Some(1234));
        assert_eq!(counter_packets(&serde_json::json!({"nftables": []})), None);
    }
}
