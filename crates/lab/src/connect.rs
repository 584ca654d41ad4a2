//! The lab's connect flow: does a new TCP connection work, and how soon?
//! `count` connections from the sender's namespace, `interval` apart,
//! each opened afresh (its own SYN, through whatever route and gateway
//! holds at that moment) and carrying its number and send time; a
//! listener in the receiver's namespace notes when each arrives. An
//! attempt whose handshake does not complete within [`CONNECT_TIMEOUT`]
//! is lost; attempts are at least 10 ms apart (the checks), so at most
//! 200 are under way at once. Reported as a probe flow is
//! (`flows::slots_result`): the longest gap between connections that
//! arrived is how long new connections did not work.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use braid_sim::FlowResult;

use crate::flows::slots_result;
use crate::ns::made_in;
use crate::scenario::{Lab, LabFlow};

/// How long an attempt waits for its handshake (a lost SYN is not
/// retried: the kernel's first retry comes after a second).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The bytes each connection carries: its number, its send time (µs
/// after `origin`).
const HELLO: usize = 12;

/// Runs connect flow `i` (`f`): see the module comment. `tail` is how long
/// the listener waits after the last attempt.
pub fn connect_flow(
    lab: &Lab,
    mode: &str,
    i: usize,
    f: &LabFlow,
    origin: Instant,
    tail: Duration,
    stop: &AtomicBool,
) -> anyhow::Result<FlowResult> {
    let dst = SocketAddr::new(lab.flow_addr(f, f.to), 9000 + i as u16);
    let listener = made_in(&lab.end_ns(f.to), || TcpListener::bind(dst))?;
    // accept() honours the receive timeout: the listener checks the
    // deadline between connections.
    socket2::SockRef::from(&listener).set_read_timeout(Some(Duration::from_millis(100)))?;
    let from_ns = lab.end_ns(f.from);
    let (count, interval) = (f.count, f.interval);
    let end = origin + interval * count + tail;
    let (heard_tx, heard) = mpsc::channel::<(usize, u64)>();
    let receiver = std::thread::spawn(move || {
        std::thread::scope(|s| {
            while Instant::now() < end {
                let stream = match listener.accept() {
                    Ok((stream, _)) => stream,
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock
                                | std::io::ErrorKind::TimedOut
                                | std::io::ErrorKind::Interrupted
                        ) =>
                    {
                        continue
                    }
                    Err(e) => {
                        eprintln!("connect flow: the listener failed: {e}");
                        break;
                    }
                };
                let heard_tx = heard_tx.clone();
                s.spawn(move || {
                    if let Some(x) = read_hello(stream, end, origin) {
                        let _ = heard_tx.send(x);
                    }
                });
            }
        });
    });
    let mut attempts = Vec::new();
    let mut sent = 0u32;
    for seq in 0..count {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(wait) = (origin + interval * seq).checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        // The socket is made in the sender's namespace; the handshake
        // waits in a thread of its own, so that a lost SYN does not hold
        // the next attempt back.
        let socket = made_in(&from_ns, || {
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        })?;
        sent += 1;
        attempts.push(std::thread::spawn(move || {
            if socket
                .connect_timeout(&dst.into(), CONNECT_TIMEOUT)
                .is_err()
            {
                return;
            }
            let mut hello = [0u8; HELLO];
            hello[..4].copy_from_slice(&seq.to_be_bytes());
            hello[4..].copy_from_slice(&(origin.elapsed().as_micros() as u64).to_be_bytes());
            let mut stream = TcpStream::from(socket);
            let _ = stream.set_write_timeout(Some(CONNECT_TIMEOUT));
            let _ = stream.write_all(&hello);
            // Closing sends the FIN behind the hello.
        }));
    }
    for a in attempts {
        let _ = a.join();
    }
    receiver
        .join()
        .map_err(|_| anyhow!("listener thread failed"))?;
    let mut got = vec![None::<u64>; count as usize];
    let mut duplicates = 0;
    for (seq, delay) in heard.try_iter() {
        match got.get_mut(seq) {
            Some(slot @ None) => *slot = Some(delay),
            Some(Some(_)) => duplicates += 1,
            None => {}
        }
    }
    Ok(slots_result(f, mode, &got, sent, interval, duplicates))
}

/// Reads a connection's hello (until `end` at most): its number and how
/// long after it was sent it arrived, µs.
fn read_hello(mut stream: TcpStream, end: Instant, origin: Instant) -> Option<(usize, u64)> {
    let left = end.saturating_duration_since(Instant::now());
    stream
        .set_read_timeout(Some(left.max(Duration::from_millis(1))))
        .ok()?;
    let mut hello = [0u8; HELLO];
    stream.read_exact(&mut hello).ok()?;
    let now_us = origin.elapsed().as_micros() as u64;
    let seq = u32::from_be_bytes(hello[..4].try_into().ok()?) as usize;
    let sent_us = u64::from_be_bytes(hello[4..].try_into().ok()?);
    Some((seq, now_us.saturating_sub(sent_us)))
}
