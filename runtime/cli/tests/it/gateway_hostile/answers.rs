//! Clients that ask for large answers and never read them: the answer budget holds, the
//! gateway cuts the rest.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::harness::{
    attacker, descriptors, Gateway, Scrape, MIB, ONE_AT_A_TIME, SLACK, WAIT, WELL_BEHAVED,
};
use crate::gateway_support::{modern_call, Sample, Session};

/// The address of the `n`th of many clients: 127.0.1.1, 127.0.1.2, …, 250 to a /24.
fn client_address(n: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(
        127,
        0,
        1 + (n / 250) as u8,
        1 + (n % 250) as u8,
    ))
}

/// Reads `stream`'s answer until it is whole (its head and `Content-Length` bytes) or the
/// gateway closes it: whether it was whole.
async fn whole(stream: &mut TcpStream) -> bool {
    let mut answer = Vec::new();
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let text = String::from_utf8_lossy(&answer[..answer.len().min(4096)]);
        if let Some((head, _)) = text.split_once("\r\n\r\n") {
            let length: Option<usize> = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().to_owned())
                })
                .and_then(|v| v.parse().ok());
            if length.is_some_and(|length| answer.len() >= head.len() + 4 + length) {
                return true;
            }
        }
        match tokio::time::timeout(WAIT, stream.read(&mut buffer)).await {
            Ok(Ok(0) | Err(_)) => return false,
            Ok(Ok(n)) => answer.extend_from_slice(&buffer[..n]),
            Err(_) => panic!("an answer neither finished nor was cut in {WAIT:?}"),
        }
    }
}

/// `clients` clients, each from its own address, ask for an answer of `size` bytes and
/// never read it, beside a well-behaved client (and one that reads answers as large): the
/// gateway holds no more than its answer budget of them, cutting the others.
async fn unread_answers(clients: usize, size: usize) {
    const BUDGET: u64 = 64 * MIB;
    let _one = ONE_AT_A_TIME.lock().await;
    descriptors(4 * clients as u64 + 1024);
    // The large answers come from a server of their own: the well-behaved client's calls
    // do not wait behind them in one upstream's pipe. No answer waits for the send timeout
    // here: what is cut is cut for the budget.
    let args = ["--answer-budget", "64MiB", "--send-timeout", "5m"];
    let mut gateway = Gateway::start_with(&["demo", "bulk"], &args).await;
    let attack = gateway.attack().await;
    let large_calls = |scrape: &Scrape| {
        scrape.sum(r#"switchboard_requests_total{server="bulk",method="tools/call",tool="large""#)
    };
    let before = large_calls(&gateway.scrape().await);

    let started = Instant::now();
    let mut stalled = Vec::with_capacity(clients);
    for n in 0..clients {
        let mut stream = attacker(client_address(n), gateway.addr, false).await;
        let call = modern_call(n as u64, "bulk__large", json!({"bytes": size}), None);
        stream.write_all(call.as_bytes()).await.unwrap();
        stalled.push(stream);
    }
    // Every call answered upstream (or cancelled with its connection): the gateway holds
    // what it kept of the answers.
    let deadline = Instant::now() + 3 * WAIT;
    while large_calls(&gateway.scrape().await) < before + clients as u64 {
        assert!(
            Instant::now() < deadline,
            "the upstream did not answer every call"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let answered = started.elapsed();
    let holding = Sample::of(gateway.pid);
    // A client that reads is served answers as large meanwhile.
    let reader = Session::open(gateway.url(), WELL_BEHAVED).await.unwrap();
    for n in 0..3 {
        let result = reader
            .call(n, "bulk__large", json!({"bytes": size}))
            .await
            .unwrap();
        assert_eq!(
            result["content"][0]["text"].as_str().map(str::len),
            Some(size)
        );
    }
    drop(reader);
    let measured = attack.end(&gateway).await;
    let mut kept = 0;
    for stream in &mut stalled {
        kept += usize::from(whole(stream).await);
    }
    drop(stalled);
    let after = gateway.after().await;

    gateway.report(
        &format!("{clients} clients not reading {size}-byte answers, --answer-budget 64MiB"),
        &measured,
        after,
    );
    eprintln!(
        "  answered upstream in {answered:.1?}, the gateway then holding {holding}; {kept} \
         answers kept whole, {} cut",
        clients - kept
    );
    measured.seen.assert_served();
    // What it keeps fits the budget: one answer more at most, whose charge found the
    // others' writes not yet waiting.
    let fit = (BUDGET / size as u64) as usize;
    assert!(
        kept <= fit + 1,
        "{kept} answers of {size} bytes kept, over the budget"
    );
    let cut = (clients - kept) as u64;
    assert!(
        cut > 0,
        "nothing cut: the answers fit the budget, the test attacked nothing"
    );
    assert_eq!(
        measured.scrape.rejected("answer_budget"),
        cut,
        "every cut counted"
    );
    // Beyond the budget: the answers being read from the upstream and built (a few
    // copies of one answer at a time), and each connection's buffers.
    gateway.assert_memory(
        measured.peak,
        BUDGET + 4 * size as u64 + clients as u64 * 32 * 1024 + SLACK,
        "the budget, a few copies of the answer being built, 32 KiB per connection",
    );
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_clients_not_reading_3_mib_answers_are_cut_at_the_answer_budget() {
    unread_answers(50, 3 * 1024 * 1024).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_clients_not_reading_half_mib_answers_are_cut_at_the_answer_budget() {
    unread_answers(500, 512 * 1024).await;
}
