//! Attacks on connections: slow heads under and past the cap, half-sent requests past
//! it (held, and reconnecting), stalled bodies beside a slow steady one.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::harness::{
    attacker, descriptors, Gateway, ATTACKER, FDS_SLACK, ONE_AT_A_TIME, SLACK, WAIT,
};
use crate::gateway_support::{answer_of, closed, modern_call, PARTIAL};

/// A request head, to be sent a byte a second.
const HEAD: &[u8] = b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n";

/// Sends [`HEAD`] a byte a second on `stream` until the gateway closes it; how long after
/// `opened` that was.
async fn drip(mut stream: TcpStream, opened: Instant) -> Duration {
    let (mut reader, mut writer) = stream.split();
    let mut sink = [0u8; 1024];
    for byte in HEAD.iter().cycle() {
        if writer.write_all(&[*byte]).await.is_err() {
            break;
        }
        tokio::select! {
            read = reader.read(&mut sink) => if let Ok(0) | Err(_) = read { break },
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
    opened.elapsed()
}

/// `connections` slow heads, each sending a byte a second, beside a well-behaved client:
/// each is cut after the head timeout (the oldest sooner, to make room, past the cap).
async fn slow_heads(connections: usize, head_timeout: Option<&str>) {
    const CAP: usize = 4096;
    let _one = ONE_AT_A_TIME.lock().await;
    descriptors(2 * connections as u64 + 1024);
    let args: Vec<&str> = head_timeout.map_or(vec![], |t| vec!["--head-timeout", t]);
    let head = head_timeout.map_or(Duration::from_secs(10), |t| {
        Duration::from_secs(t.trim_end_matches('s').parse().unwrap())
    });
    let mut gateway = Gateway::start(&args).await;
    let attack = gateway.attack().await;

    let started = Instant::now();
    let mut drips = Vec::with_capacity(connections);
    let mut opened_at = Vec::with_capacity(connections);
    for _ in 0..connections {
        let stream = attacker(ATTACKER, gateway.addr, true).await;
        let now = Instant::now();
        opened_at.push(now);
        drips.push(tokio::spawn(drip(stream, now)));
    }
    let all_open = Instant::now();
    let opened = all_open - started;
    let mut lasted = Vec::with_capacity(connections);
    for drip in drips {
        lasted.push(
            tokio::time::timeout(head + WAIT, drip)
                .await
                .expect("a slow head outlived its timeout by 20 s")
                .unwrap(),
        );
    }
    // Opening is serial and, on a loaded machine, can take most of a short head timeout,
    // so the first are cut before the last are open. What the gateway must have held is
    // what was still open, on this side, a while after the last one opened: the sampler
    // reads at least four times in that while.
    let still_open = all_open + Duration::from_millis(250);
    let held_together = opened_at
        .iter()
        .zip(&lasted)
        .filter(|(at, lasted)| **at + **lasted > still_open)
        .count();
    let measured = attack.end(&gateway).await;
    let after = gateway.after().await;

    // The head timeout runs from the first byte, sent once the connection was open: a
    // slow head cut sooner was evicted for a newcomer past the cap.
    let early = lasted.iter().filter(|d| **d < head).count();
    let longest = lasted.iter().max().copied().unwrap_or_default();
    gateway.report(
        &format!("{connections} slow heads, head timeout {head:?}"),
        &measured,
        after,
    );
    eprintln!(
        "  opened in {opened:.1?}; {held_together} open together; {early} cut before the \
         head timeout (evicted); the longest lasted {longest:.1?}"
    );
    measured.seen.assert_served();
    assert!(
        longest < head + Duration::from_secs(5),
        "a slow head lasted {longest:?}"
    );
    // Past the cap a newcomer closes an idle connection or, while the connections cut
    // for earlier ones are still closing, is shed.
    let evicted = measured.scrape.rejected("connection_evicted");
    let shed = measured.scrape.rejected("connection_shed");
    let timed_out = measured.scrape.rejected("head_timeout");
    assert!(
        early as u64 <= evicted + shed && timed_out + evicted + shed >= connections as u64,
        "{connections} slow heads, {early} cut before their timeout: {timed_out} head \
         timeouts, {evicted} evictions and {shed} shed counted"
    );
    if connections < CAP - 64 {
        assert_eq!(evicted, 0, "connections evicted under the cap");
        assert!(
            measured.peak.fds >= gateway.baseline.fds + held_together * 9 / 10,
            "the gateway never held the {held_together} slow heads open together: {} fds \
             at most",
            measured.peak.fds
        );
    } else {
        // Each newcomer past the cap closed another connection, or was shed while those
        // cut before it were closing.
        assert!(
            evicted + shed >= (connections - CAP) as u64,
            "past the cap of {CAP}: {evicted} evictions and {shed} shed counted"
        );
        assert!(
            measured.peak.fds <= gateway.baseline.fds + CAP + 64 + 64 + FDS_SLACK,
            "past the cap: {} fds",
            measured.peak.fds
        );
    }
    // Each open connection costs its task, its socket and hyper's read buffer (8 KiB,
    // growing only with the head, which stays short here).
    let held = connections.min(CAP) as u64;
    gateway.assert_memory(
        measured.peak,
        held * 32 * 1024 + SLACK,
        "32 KiB per connection held",
    );
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_slow_heads_are_cut_at_the_head_timeout_and_serve_on() {
    slow_heads(500, Some("4s")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_slow_heads_past_the_default_cap_evict_each_other_and_serve_on() {
    slow_heads(5_000, None).await;
}

/// 400 connections that send half a head each past a cap of 200, beside a well-behaved
/// client and the probes; each holds its connection until the gateway closes it, and then,
/// `reconnecting`, opens another.
async fn half_sent_heads(reconnecting: bool) {
    const CAP: usize = 200;
    const ATTACKERS: usize = 400;
    let _one = ONE_AT_A_TIME.lock().await;
    descriptors(4 * ATTACKERS as u64);
    let mut gateway = Gateway::start(&["--max-connections", &CAP.to_string()]).await;
    let attack = gateway.attack().await;

    let attacking = Arc::new(AtomicBool::new(true));
    let (open, closes) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut holders = Vec::with_capacity(ATTACKERS);
    for _ in 0..ATTACKERS {
        let (attacking, addr) = (attacking.clone(), gateway.addr);
        let (open, closes) = (open.clone(), closes.clone());
        holders.push(tokio::spawn(async move {
            loop {
                let mut stream = attacker(ATTACKER, addr, true).await;
                let _ = stream.write_all(&HEAD[..HEAD.len() / 2]).await;
                open.fetch_add(1, Ordering::Relaxed);
                closed(&mut stream).await;
                open.fetch_sub(1, Ordering::Relaxed);
                closes.fetch_add(1, Ordering::Relaxed);
                if !reconnecting || !attacking.load(Ordering::Relaxed) {
                    return;
                }
            }
        }));
    }
    // The gateway is at its cap with the holders, for thirty calls and twelve probes.
    attack.for_at_least(30, 12).await;
    let mut holding = open.load(Ordering::Relaxed);
    // Read before the gateway's counts are scraped: reconnecting holders go on closing
    // until they are stopped.
    let mut closes_seen = closes.load(Ordering::Relaxed);
    let measured = attack.end(&gateway).await;
    if !reconnecting {
        // Held ones past the cap are closed at once, or answered on the shed lane within its
        // head timeout (2 s): every one beyond the cap, in the end.
        let deadline = tokio::time::Instant::now() + WAIT;
        while closes.load(Ordering::Relaxed) < ATTACKERS - CAP
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        closes_seen = closes.load(Ordering::Relaxed);
        holding = open.load(Ordering::Relaxed);
    }
    let closes = closes_seen;
    attacking.store(false, Ordering::Relaxed);
    for holder in &holders {
        holder.abort();
    }
    let after = gateway.after().await;

    let how = if reconnecting { "reconnecting" } else { "held" };
    gateway.report(
        &format!("{ATTACKERS} half-sent heads, {how}, --max-connections {CAP}"),
        &measured,
        after,
    );
    eprintln!("  {holding} holders open at the end; the gateway closed {closes} of them");
    measured.seen.assert_served();
    // Each newcomer past the cap (a holder, a probe, the client's reconnection) closed an
    // idle connection of the client holding the most, or was shed while the ones cut
    // before it were closing: at least every holder beyond the cap was closed.
    let evicted = measured.scrape.rejected("connection_evicted");
    let shed = measured.scrape.rejected("connection_shed");
    assert!(
        closes >= ATTACKERS - CAP && evicted + shed >= closes as u64,
        "{closes} holders closed, {evicted} evictions and {shed} shed counted"
    );
    if !reconnecting {
        assert!(
            holding <= CAP,
            "{holding} half-sent heads held past the cap of {CAP}"
        );
    }
    // The cap, the connections cut and still closing (64 at most before newcomers are shed
    // instead), and the lane that answers the shed (64).
    assert!(
        measured.peak.fds <= gateway.baseline.fds + CAP + 64 + 64 + FDS_SLACK,
        "past the cap: {} fds",
        measured.peak.fds
    );
    gateway.assert_memory(
        measured.peak,
        CAP as u64 * 32 * 1024 + SLACK,
        "32 KiB per connection held",
    );
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_heads_past_the_connection_cap_leave_the_probes_and_a_client_served() {
    half_sent_heads(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_heads_reconnecting_past_the_cap_leave_the_probes_and_a_client_served() {
    half_sent_heads(true).await;
}

/// Writes `body` in `pieces`, `every` apart, after `head`; the gateway's answer.
async fn slowly(
    mut stream: TcpStream,
    head: String,
    body: String,
    pieces: usize,
    every: Duration,
) -> String {
    stream.write_all(head.as_bytes()).await.unwrap();
    let size = body.len().div_ceil(pieces);
    for piece in body.as_bytes().chunks(size) {
        tokio::time::sleep(every).await;
        stream.write_all(piece).await.unwrap();
    }
    let mut answer = String::new();
    tokio::time::timeout(WAIT, stream.read_to_string(&mut answer))
        .await
        .expect("no answer to the slow body")
        .unwrap();
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_bodies_are_cut_at_the_body_timeout_and_a_slow_steady_one_is_served() {
    const STALLED: usize = 100;
    const BODY_TIMEOUT: Duration = Duration::from_secs(2);
    let _one = ONE_AT_A_TIME.lock().await;
    descriptors(1024);
    let mut gateway = Gateway::start(&["--body-timeout", "2s"]).await;
    let attack = gateway.attack().await;

    // A call whose body comes in six pieces a second apart: 5 s in all, each gap well
    // under the timeout.
    let call = modern_call(1, "echo", json!({"text": "slow but steady"}), None).replacen(
        "\r\n",
        "\r\nconnection: close\r\n",
        1,
    );
    let (head, body) = call.split_at(call.find("\r\n\r\n").unwrap() + 4);
    let stream = attacker(ATTACKER, gateway.addr, true).await;
    let steady = tokio::spawn(slowly(
        stream,
        head.to_owned(),
        body.to_owned(),
        6,
        Duration::from_secs(1),
    ));
    // Headers and 4 of the 100 bytes they promise, then nothing.
    let mut stalled = Vec::with_capacity(STALLED);
    for _ in 0..STALLED {
        let mut stream = attacker(ATTACKER, gateway.addr, true).await;
        stream.write_all(PARTIAL).await.unwrap();
        let sent = Instant::now();
        stalled.push(tokio::spawn(async move {
            closed(&mut stream).await;
            sent.elapsed()
        }));
    }
    let mut lasted = Vec::with_capacity(STALLED);
    for stalled in stalled {
        lasted.push(
            tokio::time::timeout(WAIT, stalled)
                .await
                .expect("a stalled body outlived its timeout by 20 s")
                .unwrap(),
        );
    }
    let answer = steady.await.unwrap();
    let measured = attack.end(&gateway).await;
    let after = gateway.after().await;

    let (shortest, longest) = (lasted.iter().min().unwrap(), lasted.iter().max().unwrap());
    gateway.report(
        &format!("{STALLED} stalled bodies and a slow one, body timeout {BODY_TIMEOUT:?}"),
        &measured,
        after,
    );
    eprintln!("  the stalled bodies were cut after {shortest:.1?} to {longest:.1?}");
    measured.seen.assert_served();
    assert!(
        *shortest >= BODY_TIMEOUT && *longest < BODY_TIMEOUT + Duration::from_secs(3),
        "stalled bodies cut after {shortest:?} to {longest:?}, for a timeout of {BODY_TIMEOUT:?}"
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    assert_eq!(
        answer_of(body)["result"]["content"][0]["text"],
        "slow but steady",
        "{answer}"
    );
    assert_eq!(measured.scrape.rejected("body_timeout"), STALLED as u64);
    gateway.assert_memory(
        measured.peak,
        STALLED as u64 * 32 * 1024 + SLACK,
        "32 KiB per connection held",
    );
    gateway.stop();
}
