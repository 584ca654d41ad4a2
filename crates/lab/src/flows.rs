//! The lab's traffic, with real kernel sockets in the hosts' namespaces:
//! braid's UDP probe (numbered, timestamped datagrams: loss, duplicates,
//! one-way delay, gaps), urgent bursts (an urgent datagram behind bulk,
//! the late-binding seed's figure 7), and iperf3 (kernel TCP with its
//! retransmission counter, or iperf3's UDP test), and floods (the hostile
//! stranger of `flood.rs`, with the flooded daemon's memory). Results are the
//! simulator's [`FlowResult`], so both report the same way.

use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use braid_sim::FlowResult;

use crate::ns::{in_ns, socket_in};
use crate::scenario::{IperfFlow, Lab, LabFlow, Software, URGENT_ROUNDS};

/// Hands every datagram of at least `min_len` bytes that `rx` receives
/// before `end` to `each`.
pub(crate) fn receive_until(
    rx: &UdpSocket,
    end: Instant,
    min_len: usize,
    mut each: impl FnMut(&[u8]),
) {
    let mut buf = [0u8; 2048];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let _ = rx.set_read_timeout(Some(left));
        match rx.recv(&mut buf) {
            Ok(n) if n >= min_len => each(&buf[..n]),
            Ok(_) => {}
            Err(_) => return,
        }
    }
}

/// Runs one urgent flow: each round, a marker, `count` bulk datagrams as
/// fast as the sender's socket takes them, then one urgent datagram with
/// DSCP EF (which braid schedules ahead of bulk; plain Linux queues it
/// behind). The delay figures are the urgent datagram's arrival after the
/// marker's, per round (the seed's measure); sent and lost count every
/// datagram.
pub fn urgent_flow(
    lab: &Lab,
    mode: &str,
    i: usize,
    f: &LabFlow,
    origin: Instant,
    stop: &AtomicBool,
) -> anyhow::Result<FlowResult> {
    const MARKER: u32 = 0;
    const URGENT: u32 = u32::MAX;
    let port = 9000 + i as u16;
    let dst = SocketAddrV4::new(lab.end_addr(f.to), port);
    let rx = socket_in(&lab.end_ns(f.to), dst)?;
    let _ = socket2::SockRef::from(&rx).set_recv_buffer_size(8 << 20);
    let bulk = socket_in(
        &lab.end_ns(f.from),
        SocketAddrV4::new(lab.end_addr(f.from), 0),
    )?;
    let urgent = socket_in(
        &lab.end_ns(f.from),
        SocketAddrV4::new(lab.end_addr(f.from), 0),
    )?;
    // DSCP EF (46) in the upper six bits of the TOS byte.
    socket2::SockRef::from(&urgent).set_tos_v4(46 << 2)?;
    let (count, interval, size) = (f.count, f.interval, f.size);
    let end = origin + interval * URGENT_ROUNDS + Duration::from_secs(2);
    let receiver = std::thread::spawn(move || {
        // Per round: (marker arrived, urgent arrived), and datagrams seen.
        let mut rounds = vec![(None::<Instant>, None::<Instant>); URGENT_ROUNDS as usize];
        let mut received = 0u64;
        receive_until(&rx, end, 8, |d| {
            let round = u32::from_be_bytes(d[..4].try_into().unwrap_or_default()) as usize;
            let seq = u32::from_be_bytes(d[4..8].try_into().unwrap_or_default());
            if let Some(r) = rounds.get_mut(round) {
                received += 1;
                match seq {
                    MARKER => r.0 = Some(Instant::now()),
                    URGENT => r.1 = Some(Instant::now()),
                    _ => {}
                }
            }
        });
        (rounds, received)
    });
    let mut payload = vec![0u8; size];
    let mut sent = 0u64;
    for round in 0..URGENT_ROUNDS {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(wait) = (origin + interval * round).checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        payload[..4].copy_from_slice(&round.to_be_bytes());
        for seq in (0..=count).chain([URGENT]) {
            payload[4..8].copy_from_slice(&seq.to_be_bytes());
            let socket = if seq == URGENT { &urgent } else { &bulk };
            if socket.send_to(&payload, dst).is_ok() {
                sent += 1;
            }
        }
    }
    let (rounds, received) = receiver
        .join()
        .map_err(|_| anyhow!("receiver thread failed"))?;
    let mut delays: Vec<u64> = rounds
        .iter()
        .filter_map(|(m, u)| {
            Some(
                u.as_ref()?
                    .saturating_duration_since(*m.as_ref()?)
                    .as_micros() as u64,
            )
        })
        .collect();
    let (mean, p50, p99) = braid_sim::delay_stats(&mut delays);
    Ok(FlowResult {
        name: f.name.clone(),
        mode: mode.to_string(),
        sent,
        delivered: received,
        lost: sent.saturating_sub(received),
        loss_ratio: 1.0 - received as f64 / sent.max(1) as f64,
        delay_mean_ms: mean,
        delay_p50_ms: p50,
        delay_p99_ms: p99,
        ..FlowResult::default()
    })
}

/// Runs one UDP probe flow: `count` datagrams of `size` bytes every
/// `interval`, each carrying its number and send time; the receiver notes
/// arrival, one-way delay (both ends share this machine's clock) and
/// duplicates.
pub fn probe_flow(
    lab: &Lab,
    mode: &str,
    i: usize,
    f: &LabFlow,
    origin: Instant,
    tail: Duration,
    stop: &AtomicBool,
) -> anyhow::Result<FlowResult> {
    let port = 9000 + i as u16;
    let rx = socket_in(
        &lab.end_ns(f.to),
        SocketAddr::new(lab.flow_addr(f, f.to), port),
    )?;
    let tx = socket_in(
        &lab.end_ns(f.from),
        SocketAddr::new(lab.flow_addr(f, f.from), 0),
    )?;
    // Bursts at benchmark rates must not overflow the receiver's socket.
    let _ = socket2::SockRef::from(&rx).set_recv_buffer_size(8 << 20);
    if f.dscp != 0 {
        let tos = u32::from(f.dscp) << 2;
        if f.ipv6 {
            socket2::SockRef::from(&tx).set_tclass_v6(tos)?;
        } else {
            socket2::SockRef::from(&tx).set_tos_v4(tos)?;
        }
    }
    let dst = SocketAddr::new(lab.flow_addr(f, f.to), port);
    let (count, interval, size) = (f.count, f.interval, f.size);
    let receiver = std::thread::spawn(move || {
        let mut got = vec![None::<u64>; count as usize];
        let mut duplicates = 0u64;
        receive_until(&rx, origin + interval * count + tail, 12, |d| {
            let seq = u32::from_be_bytes(d[..4].try_into().unwrap_or_default()) as usize;
            let sent_us = u64::from_be_bytes(d[4..12].try_into().unwrap_or_default());
            let now_us = origin.elapsed().as_micros() as u64;
            match got.get_mut(seq) {
                Some(slot @ None) => *slot = Some(now_us.saturating_sub(sent_us)),
                Some(Some(_)) => duplicates += 1,
                None => {}
            }
        });
        (got, duplicates)
    });
    let mut payload = vec![0u8; size];
    let mut sent = 0u32;
    for seq in 0..count {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let due = origin + interval * seq;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        payload[..4].copy_from_slice(&seq.to_be_bytes());
        payload[4..12].copy_from_slice(&(origin.elapsed().as_micros() as u64).to_be_bytes());
        if tx.send_to(&payload, dst).is_ok() {
            sent += 1;
        }
    }
    let (got, duplicates) = receiver
        .join()
        .map_err(|_| anyhow!("receiver thread failed"))?;
    Ok(slots_result(f, mode, &got, sent, interval, duplicates))
}

/// A flow's result from what arrived of each numbered packet sent
/// `interval` apart (`got[seq]`: its one-way delay in µs, if it arrived;
/// the first `sent` were sent): loss, delay, the longest gap between
/// arrivals (a loss to the end a gap until one interval after the last
/// packet sent), and what was lost of each second's packets.
pub(crate) fn slots_result(
    f: &LabFlow,
    mode: &str,
    got: &[Option<u64>],
    sent: u32,
    interval: Duration,
    duplicates: u64,
) -> FlowResult {
    let mut delays: Vec<u64> = got.iter().flatten().copied().collect();
    let delivered = delays.len() as u64;
    let mut max_gap_us = 0u64;
    let mut last_ok: Option<usize> = None;
    for (s, d) in got.iter().enumerate() {
        if d.is_some() {
            if let Some(l) = last_ok {
                max_gap_us = max_gap_us.max(((s - l) as u64) * interval.as_micros() as u64);
            }
            last_ok = Some(s);
        }
    }
    // Lost to the end counts too (as if the next arrival were one
    // interval after the last packet sent): a flow that never recovers
    // has a gap as long as its outage, not none.
    let sent_n = sent as usize;
    let tail = match last_ok {
        Some(l) if l + 1 < sent_n => sent_n - l,
        None => sent_n,
        _ => 0,
    };
    max_gap_us = max_gap_us.max(tail as u64 * interval.as_micros() as u64);
    let (mean, p50, p99) = braid_sim::delay_stats(&mut delays);
    // Per second of sending: what was lost of what was sent then.
    let per_second = (1_000_000 / interval.as_micros().max(1)).max(1) as usize;
    let lost_series: Vec<u64> = got[..sent as usize]
        .chunks(per_second)
        .map(|c| c.iter().filter(|d| d.is_none()).count() as u64)
        .collect();
    FlowResult {
        lost_series,
        delay_cdf_ms: braid_sim::delay_cdf(&delays),
        name: f.name.clone(),
        mode: mode.to_string(),
        sent: sent as u64,
        delivered,
        duplicates,
        lost: sent as u64 - delivered.min(sent as u64),
        loss_ratio: if sent == 0 {
            0.0
        } else {
            1.0 - delivered as f64 / sent as f64
        },
        delay_mean_ms: mean,
        delay_p50_ms: p50,
        delay_p99_ms: p99,
        max_gap_ms: max_gap_us as f64 / 1000.0,
        ..FlowResult::default()
    }
}

/// An iperf3 test (real kernel TCP end to end, or iperf3's UDP test):
/// the server in the receiver's namespace, the client in the sender's for
/// `duration`. Goodput as the receiver counted it; for TCP,
/// retransmissions from the sender's kernel (its namespace's counter): in
/// all, and in the 2 s after the lab's first event (the counter read every
/// 100 ms while the client runs); for UDP, datagrams sent and lost.
/// `origin` is when the lab's events are timed from.
#[allow(clippy::too_many_arguments)]
pub fn iperf_flow(
    lab: &Lab,
    software: &Software,
    mode: &str,
    i: usize,
    f: &LabFlow,
    test: IperfFlow,
    origin: Instant,
) -> anyhow::Result<FlowResult> {
    if let Some(wait) = (origin + f.start).checked_duration_since(Instant::now()) {
        std::thread::sleep(wait);
    }
    let port = (5201 + i).to_string();
    let dst = lab.flow_addr(f, f.to).to_string();
    // Under MPTCP both iperf3s open MPTCP sockets (mptcpize, from the
    // Debian package mptcpd) and the client binds to its first path's
    // address; its endpoints add the other subflows.
    let mptcp = *software == Software::Mptcp;
    let wrap: &[&str] = if mptcp {
        &["mptcpize", "run", "iperf3"]
    } else {
        &["iperf3"]
    };
    let mut server = iperf_server(&lab.end_ns(f.to), wrap, &dst, &port)?;
    // The receiving host's UDP drops before the test (for no open port,
    // for a full socket buffer): what they count during and after it is
    // the test's (below).
    let udp_drops_before = if test.udp {
        let ns = lab.end_ns(f.to);
        (
            snmp_counter(&ns, "Udp", "NoPorts")?,
            snmp_counter(&ns, "Udp", "RcvbufErrors")?,
        )
    } else {
        (0, 0)
    };
    let args = iperf_client_args(f, test, &dst, &port, mptcp);
    // Retransmissions from the sending host's kernel (every subflow of
    // an MPTCP connection included); one TCP flow per sending host keeps
    // the count the flow's own.
    let retrans_before = snmp_counter(&lab.end_ns(f.from), "Tcp", "RetransSegs")?;
    // ICMP "destination unreachable" the sending host hears: where every
    // route exists, "fragmentation needed" (a packet too big for the
    // path: at the tunnel, an MSS the hosts agreed above its MTU).
    let unreachable_before = snmp_counter(&lab.end_ns(f.from), "Icmp", "InDestUnreachs")?;
    // The counter around the first event: (when to read it, value).
    let mut marks: Vec<(Instant, Option<u64>)> = lab
        .events
        .first()
        .map(|e| {
            let at = origin + e.at;
            vec![(at, None), (at + Duration::from_secs(2), None)]
        })
        .unwrap_or_default();
    // The client is given its duration and 20 s more (a connection cut
    // by a link event can leave iperf3 unable to finish), then stopped.
    let deadline = Instant::now() + test.duration + Duration::from_secs(20);
    let out = iperf_client(&lab.end_ns(f.from), wrap, &args, deadline, &mut marks);
    let _ = server.kill();
    let _ = server.wait();
    let out = out?;
    let retransmits =
        snmp_counter(&lab.end_ns(f.from), "Tcp", "RetransSegs")?.saturating_sub(retrans_before);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("iperf3 output: {}", String::from_utf8_lossy(&out.stderr)))?;
    if let Some(e) = doc.get("error") {
        bail!("iperf3: {e}");
    }
    let mut result = if test.udp {
        // Two losses iperf3 counts that the receiving host counts too,
        // reported beside the loss: datagrams still in flight on a slower
        // path when the sender's end of the test overtook them on a
        // faster one (they come after iperf3's server closed the test:
        // for no open port), and those its socket had no room for.
        let late = arrived_after_close(&lab.end_ns(f.to), udp_drops_before.0)?;
        let full = snmp_counter(&lab.end_ns(f.to), "Udp", "RcvbufErrors")?
            .saturating_sub(udp_drops_before.1);
        let counted = iperf_udp_result(&doc);
        FlowResult {
            arrived_late: late.min(counted.lost),
            receiver_dropped: full.min(counted.lost),
            ..counted
        }
    } else {
        let retransmits_after_event = match marks.as_slice() {
            [(_, Some(a)), (_, Some(b))] => Some(b.saturating_sub(*a)),
            _ => None,
        };
        let unreachable = snmp_counter(&lab.end_ns(f.from), "Icmp", "InDestUnreachs")?
            .saturating_sub(unreachable_before);
        FlowResult {
            unreachable_heard: Some(unreachable),
            ..iperf_tcp_result(&doc, retransmits, retransmits_after_event)
        }
    };
    result.name = f.name.clone();
    result.mode = mode.to_string();
    Ok(result)
}

/// Starts iperf3's server in namespace `ns` on `dst`:`port` and waits (at
/// most 5 s) until it says it listens.
fn iperf_server(ns: &str, wrap: &[&str], dst: &str, port: &str) -> anyhow::Result<Child> {
    let mut server = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(wrap)
        .args(["-s", "-B", dst, "-p", port, "--forceflush"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting iperf3 (Debian packages iperf3, and mptcpd for MPTCP)")?;
    // iperf3 says "Server listening" once it listens: wait (at most 5 s)
    // for that line, then run the client once. The server's output is
    // read to its end, so that it never blocks on a full pipe.
    let (tx, rx) = std::sync::mpsc::channel();
    if let Some(out) = server.stdout.take() {
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(out)).map_while(Result::ok)
            {
                if line.contains("Server listening") {
                    let _ = tx.send(());
                }
            }
        });
    }
    if rx.recv_timeout(Duration::from_secs(5)).is_err() {
        // Exited (say, a program under it missing), or still silent.
        let exited = server.try_wait().ok().flatten();
        let _ = server.kill();
        let _ = server.wait();
        match exited {
            Some(status) => bail!("iperf3 server in {ns} exited ({status}) before listening"),
            None => bail!("iperf3 server did not start listening in {ns}"),
        }
    }
    Ok(server)
}

/// The iperf3 client's arguments for flow `f` to `dst`:`port`.
fn iperf_client_args(
    f: &LabFlow,
    test: IperfFlow,
    dst: &str,
    port: &str,
    mptcp: bool,
) -> Vec<String> {
    let secs = format!("{}", test.duration.as_secs_f64());
    let mut args: Vec<String> = [
        "-c",
        dst,
        "-p",
        port,
        "-t",
        &secs,
        "-J",
        "--get-server-output",
    ]
    .map(String::from)
    .to_vec();
    if test.udp {
        let rate = test.bitrate.unwrap_or(1_000_000).to_string();
        args.extend([
            "-u".into(),
            "-b".into(),
            rate,
            "-l".into(),
            f.size.to_string(),
        ]);
    } else {
        // A ceiling is kept by the sender's kernel pacing the socket
        // (SO_MAX_PACING_RATE), not by iperf3 writing 128 KB blocks at
        // line rate when behind (`-b`): those bursts overflow the links'
        // queues. 0: no ceiling.
        let bitrate = test.bitrate.unwrap_or(0).to_string();
        args.extend([
            "--fq-rate".into(),
            bitrate,
            "-C".into(),
            test.congestion.as_str().into(),
        ]);
    }
    if mptcp {
        args.extend(["-B".into(), Lab::subflow_addr(f.from, 0).to_string()]);
    }
    args
}

/// Runs iperf3's client in namespace `ns` until it ends, or kills it at
/// `deadline`; meanwhile reads its kernel's retransmission counter at
/// each of `marks`' times that has come.
fn iperf_client(
    ns: &str,
    wrap: &[&str],
    args: &[String],
    deadline: Instant,
    marks: &mut [(Instant, Option<u64>)],
) -> anyhow::Result<std::process::Output> {
    let child = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(wrap)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running iperf3")?;
    let pid = child.id();
    let snmp = format!("/proc/{pid}/net/snmp");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(out) => return out.context("running iperf3"),
            Err(_) if Instant::now() > deadline => {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
                bail!("iperf3 did not finish by its deadline (duration + 20 s)")
            }
            Err(_) => {
                let now = Instant::now();
                for (at, value) in marks.iter_mut() {
                    if value.is_none() && now >= *at {
                        *value = std::fs::read_to_string(&snmp)
                            .ok()
                            .and_then(|t| snmp_field(&t, "Tcp", "RetransSegs"));
                    }
                }
            }
        }
    }
}

/// An iperf3 UDP test's result: the receiver's count, as the server
/// reported it back.
fn iperf_udp_result(doc: &serde_json::Value) -> FlowResult {
    let sum = &doc["end"]["sum"];
    let sent = sum["packets"].as_u64().unwrap_or(0);
    let lost = sum["lost_packets"].as_u64().unwrap_or(0).min(sent);
    FlowResult {
        sent,
        delivered: sent - lost,
        lost,
        loss_ratio: lost as f64 / sent.max(1) as f64,
        goodput_mbps: sum["bits_per_second"].as_f64().unwrap_or(0.0) / 1e6
            * (1.0 - lost as f64 / sent.max(1) as f64),
        ..FlowResult::default()
    }
}

/// An iperf3 TCP test's result: the receiver's goodput (in all and per
/// second), the sender's retransmissions and mean RTT.
fn iperf_tcp_result(
    doc: &serde_json::Value,
    retransmits: u64,
    retransmits_after_event: Option<u64>,
) -> FlowResult {
    FlowResult {
        goodput_mbps: doc["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap_or(0.0)
            / 1e6,
        retransmits,
        retransmits_after_event,
        goodput_series_mbps: receiver_series(doc),
        rtt_ms: doc["end"]["streams"][0]["sender"]["mean_rtt"]
            .as_f64()
            .map(|us| us / 1000.0),
        ..FlowResult::default()
    }
}

/// The receiver's goodput in each interval (a second) of an iperf3 test,
/// Mbit/s, from the server's report the client fetched
/// (`--get-server-output`: the server's text, its interval lines before
/// the summary; a last interval shorter than half a second is left out).
fn receiver_series(doc: &serde_json::Value) -> Vec<f64> {
    let text = doc["server_output_text"].as_str().unwrap_or_default();
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("- -") {
            break;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| w.ends_with("bits/sec")) else {
            continue;
        };
        let span = words
            .iter()
            .find_map(|w| {
                let (a, b) = w.split_once('-')?;
                Some(b.parse::<f64>().ok()? - a.parse::<f64>().ok()?)
            })
            .unwrap_or(0.0);
        let scale = match words[at].chars().next() {
            Some('K') => 1e-3,
            Some('M') => 1.0,
            Some('G') => 1e3,
            Some('b') => 1e-6,
            _ => continue,
        };
        let value = at.checked_sub(1).and_then(|i| words[i].parse::<f64>().ok());
        if let (Some(v), true) = (value, span >= 0.5) {
            out.push(v * scale);
        }
    }
    out
}

/// Counter `name` of table `table` (`Tcp`, `Udp`, `Icmp`) of namespace
/// `ns`'s /proc/net/snmp.
fn snmp_counter(ns: &str, table: &str, name: &str) -> anyhow::Result<u64> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "cat", "/proc/net/snmp"])
        .output()
        .context("reading /proc/net/snmp")?;
    snmp_field(&String::from_utf8_lossy(&out.stdout), table, name)
        .ok_or_else(|| anyhow!("no {table}: {name} in {ns}'s /proc/net/snmp"))
}

/// Field `name` of the `table:` lines (names, then values) of the text
/// of /proc/net/snmp.
fn snmp_field(snmp: &str, table: &str, name: &str) -> Option<u64> {
    let mut lines = snmp
        .lines()
        .filter(|l| l.split_once(':').is_some_and(|(t, _)| t == table));
    let (names, values) = (lines.next()?, lines.next()?);
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == name)
        .and_then(|(_, v)| v.parse().ok())
}

/// A router's resident memory, kB (`VmRSS` of its daemon).
pub fn rss_kb(lab: &Lab, router: usize) -> Option<u64> {
    let pid = std::fs::read_to_string(lab.dir().join(format!("{}.pid", lab.routers[router].name)))
        .ok()?;
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Datagrams namespace `ns` got for a closed port since its `NoPorts`
/// counter read `before`: read every 50 ms until it stays still for
/// 500 ms (what was in flight has arrived), at most 3 s.
fn arrived_after_close(ns: &str, before: u64) -> anyhow::Result<u64> {
    let give_up = Instant::now() + Duration::from_secs(3);
    let mut last = snmp_counter(ns, "Udp", "NoPorts")?;
    let mut still_since = Instant::now();
    while Instant::now() < give_up && still_since.elapsed() < Duration::from_millis(500) {
        std::thread::sleep(Duration::from_millis(50));
        let now = snmp_counter(ns, "Udp", "NoPorts")?;
        if now != last {
            (last, still_since) = (now, Instant::now());
        }
    }
    Ok(last.saturating_sub(before))
}

/// A stranger on the link between `f.from` and `f.to` floods `f.to`'s
/// braid port for `duration` from `origin` (`braid lab-flood`, at an
/// address of the link no router uses). Reports what it sent, and the
/// flooded daemon's memory before, at most during, and after (sampled
/// every 100 ms), and the datagrams its kernel dropped for a full socket.
pub fn flood_flow(
    lab: &Lab,
    f: &LabFlow,
    duration: Duration,
    origin: Instant,
) -> anyhow::Result<FlowResult> {
    let link = lab
        .links
        .iter()
        .position(|l| (l.a, l.b) == (f.from, f.to) || (l.a, l.b) == (f.to, f.from))
        .ok_or_else(|| anyhow!("flood {}: no link joins its routers", f.name))?;
    let ns = lab.ns(f.from);
    let dev = Lab::link_dev(link);
    let stranger = std::net::Ipv4Addr::new(198, 19, link as u8, 99);
    let target = lab.link_addr(link, f.to);
    in_ns(
        &ns,
        &["ip", "addr", "add", &format!("{stranger}/24"), "dev", &dev],
    )?;
    let result = (|| {
        if let Some(wait) = origin.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let rss_before = rss_kb(lab, f.to);
        let drops_before = snmp_counter(&lab.ns(f.to), "Udp", "RcvbufErrors")?;
        let child = Command::new("ip")
            .args(["netns", "exec", &ns])
            .arg(std::env::current_exe()?)
            .args(["lab-flood", "--from", &format!("{stranger}:0")])
            .args([
                "--to",
                &format!("{target}:{}", braid_daemon::config::DEFAULT_PORT),
            ])
            .args(["--listen", &dev, "--target", &(f.to + 1).to_string()])
            .arg("--duration")
            .arg(format!("{}ms", duration.as_millis()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting the flooder")?;
        let mut rss_max = rss_before.unwrap_or(0);
        let wait_end = Instant::now() + duration + Duration::from_secs(4);
        let mut child = child;
        while Instant::now() < wait_end && child.try_wait()?.is_none() {
            rss_max = rss_max.max(rss_kb(lab, f.to).unwrap_or(0));
            std::thread::sleep(Duration::from_millis(100));
        }
        if child.try_wait()?.is_none() {
            let _ = child.kill();
        }
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!(
                "the flooder failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        // What the daemon holds once the flood is over.
        std::thread::sleep(Duration::from_secs(1));
        let rss_after = rss_kb(lab, f.to);
        let drops =
            snmp_counter(&lab.ns(f.to), "Udp", "RcvbufErrors")?.saturating_sub(drops_before);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).with_context(|| {
            format!(
                "the flooder's report: {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })?;
        let sent = ["garbage", "forged", "replayed", "data"]
            .iter()
            .map(|k| report[k].as_u64().unwrap_or(0))
            .sum();
        Ok(FlowResult {
            name: f.name.clone(),
            mode: "flood".to_string(),
            sent,
            details: Some(serde_json::json!({
                "flooder": report,
                "target": lab.routers[f.to].name,
                "rss_before_kb": rss_before,
                "rss_max_kb": rss_max,
                "rss_after_kb": rss_after,
                "udp_receive_buffer_drops": drops,
            })),
            ..FlowResult::default()
        })
    })();
    let _ = in_ns(
        &ns,
        &["ip", "addr", "del", &format!("{stranger}/24"), "dev", &dev],
    );
    result
}

/// A spoofer on the link between `f.from` and `f.to`, as `f.from`, from
/// `origin` (`braid lab-spoof`, in `f.from`'s namespace): reports what
/// it heard and sent.
pub fn spoof_flow(lab: &Lab, f: &LabFlow, origin: Instant) -> anyhow::Result<FlowResult> {
    let link = lab
        .links
        .iter()
        .position(|l| (l.a, l.b) == (f.from, f.to) || (l.a, l.b) == (f.to, f.from))
        .ok_or_else(|| anyhow!("spoof {}: no link joins its routers", f.name))?;
    if let Some(wait) = origin.checked_duration_since(Instant::now()) {
        std::thread::sleep(wait);
    }
    let out = Command::new("ip")
        .args(["netns", "exec", &lab.ns(f.from)])
        .arg(std::env::current_exe()?)
        .args(["lab-spoof", "--listen", &Lab::link_dev(link)])
        .args(["--port", &braid_daemon::config::DEFAULT_PORT.to_string()])
        .args(["--target", &(f.to + 1).to_string()])
        .stdin(Stdio::null())
        .output()
        .context("running the spoofer")?;
    if !out.status.success() {
        bail!(
            "the spoofer failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "the spoofer's report: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })?;
    let sent = ["new_epoch", "far_ahead", "mixed"]
        .iter()
        .map(|k| report[k].as_u64().unwrap_or(0))
        .sum();
    Ok(FlowResult {
        name: f.name.clone(),
        mode: "spoof".to_string(),
        sent,
        details: Some(serde_json::json!({
            "spoofer": report,
            "target": lab.routers[f.to].name,
        })),
        ..FlowResult::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_counts_between_arrivals_and_to_the_end() {
        let f = crate::scenario::Lab::parse(
            "g.toml",
            "name = \"g\"\n[[router]]\nname = \"a\"\nhost = true\n[[router]]\nname = \"b\"\nhost = true\n[[link]]\na = \"a\"\nb = \"b\"\n[[flow]]\nfrom = \"a\"\nto = \"b\"\n",
        )
        .unwrap()
        .flows[0]
            .clone();
        let ms = Duration::from_millis(20);
        let gap =
            |got: &[Option<u64>]| slots_result(&f, "m", got, got.len() as u32, ms, 0).max_gap_ms;
        // Two lost between arrivals: 3 intervals from arrival to arrival.
        assert_eq!(gap(&[Some(1), None, None, Some(1)]), 60.0);
        // Lost from the second on, never back: to one interval past the end.
        assert_eq!(gap(&[Some(1), Some(1), None, None, None]), 80.0);
        assert_eq!(gap(&[None, None]), 40.0);
        assert_eq!(gap(&[Some(1), Some(1)]), 20.0);
    }

    #[test]
    fn the_receivers_intervals_are_read_from_the_servers_text() {
        let text = "Accepted connection from 127.0.0.1, port 50934\n\
            [ ID] Interval           Transfer     Bitrate\n\
            [  5]   0.00-1.00   sec  12.3 MBytes   103 Mbits/sec\n\
            [  5]   1.00-2.00   sec   117 KBytes   958 Kbits/sec\n\
            [  5]   2.00-3.00   sec  0.00 Bytes  0.00 bits/sec\n\
            [  5]   3.00-3.01   sec   128 KBytes  1.72 Gbits/sec\n\
            - - - - - - - - - - - - -\n\
            [  5]   0.00-3.01   sec  24.3 MBytes   102 Mbits/sec  receiver\n";
        let doc = serde_json::json!({ "server_output_text": text });
        let got = receiver_series(&doc);
        assert_eq!(got.len(), 3, "{got:?}");
        for (g, want) in got.iter().zip([103.0, 0.958, 0.0]) {
            assert!((g - want).abs() < 1e-9, "{got:?}");
        }
        assert!(receiver_series(&serde_json::json!({})).is_empty());
    }

    #[test]
    fn counters_are_read_by_table_and_name_from_the_kernels_snmp_table() {
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
            Icmp: InMsgs InErrors InCsumErrors InDestUnreachs\nIcmp: 9 0 0 5\n\
            IcmpMsg: InType3 OutType3\nIcmpMsg: 6 1\n\
            Tcp: RtoAlgorithm RtoMin ActiveOpens RetransSegs InErrs\n\
            Tcp: 1 200 7 42 0\n\
            Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\n\
            Udp: 21632 135 0 4 7\n\
            UdpLite: InDatagrams NoPorts\nUdpLite: 0 0\n";
        assert_eq!(snmp_field(snmp, "Udp", "NoPorts"), Some(135));
        assert_eq!(snmp_field(snmp, "Udp", "RcvbufErrors"), Some(7));
        assert_eq!(snmp_field(snmp, "UdpLite", "NoPorts"), Some(0));
        assert_eq!(snmp_field(snmp, "Tcp", "RetransSegs"), Some(42));
        // `Icmp` is not `IcmpMsg`, though one's name begins the other's.
        assert_eq!(snmp_field(snmp, "Icmp", "InDestUnreachs"), Some(5));
        assert_eq!(snmp_field(snmp, "Icmp", "InType3"), None);
        assert_eq!(snmp_field(snmp, "Udp", "SndbufErrors"), None);
        assert_eq!(snmp_field("Ip: 1 64\n", "Udp", "NoPorts"), None);
    }
}
