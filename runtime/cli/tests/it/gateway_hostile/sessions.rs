//! Attacks on requests and sessions: an oversized `initialize`, an `initialize` flood
//! beside an active session, a client holding streams, a rate flood.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::harness::{
    descriptors, flood, Answered, Attack, Gateway, Measured, Tally, ATTACKER, MIB, ONE_AT_A_TIME,
    SLACK, WAIT, WELL_BEHAVED,
};
use crate::gateway_support::{
    answer_of, http_from, initialize, mib, modern_call_body, post, Session,
};

/// An `initialize` whose `capabilities.experimental` holds 300,000 small keys: 3.9 MB of
/// JSON, under the 4 MiB body limit.
fn oversized_initialize() -> String {
    let keys: Vec<String> = (0..300_000).map(|n| format!("\"k{n:06}\":{{}}")).collect();
    let experimental = format!("{{{}}}", keys.join(","));
    let body = initialize(json!({"experimental": "EXPERIMENTAL"}));
    body.replace("\"EXPERIMENTAL\"", &experimental)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_initialize_is_refused_naming_the_limit_and_keeps_no_memory() {
    const SENT: usize = 12;
    let _one = ONE_AT_A_TIME.lock().await;
    descriptors(1024);
    let mut gateway = Gateway::start(&[]).await;
    let attack = gateway.attack().await;
    let body = oversized_initialize();
    assert!(
        (3_800_000..4 * 1024 * 1024).contains(&body.len()),
        "{} bytes",
        body.len()
    );

    let http = http_from(ATTACKER);
    let mut answers = Vec::with_capacity(SENT);
    for _ in 0..SENT {
        let answer = post(&http, gateway.url(), body.clone(), None)
            .send()
            .await
            .unwrap();
        let session = answer.headers().get("mcp-session-id").cloned();
        let status = answer.status().as_u16();
        answers.push((status, session, answer_of(&answer.text().await.unwrap())));
    }
    drop(http);
    let measured = attack.end(&gateway).await;
    let after = gateway.after().await;

    gateway.report(
        &format!("{SENT} initialize of {} bytes", body.len()),
        &measured,
        after,
    );
    measured.seen.assert_served();
    for (status, session, answer) in &answers {
        let message = answer["error"]["message"].as_str().unwrap_or("");
        assert!(
            answer["error"]["code"] == -32602
                && ["64 KiB", "65536", "65,536"]
                    .iter()
                    .any(|limit| message.contains(limit)),
            "an oversized initialize was answered {status} {answer}"
        );
        assert!(
            session.is_none(),
            "an oversized initialize opened a session"
        );
    }
    // Refused by the protocol, not by an admission bound: nothing counted as one.
    assert_eq!(measured.scrape.rejections(), vec![]);
    // One request at a time: what it may leave is the allocator's hold on one body's
    // buffers (the body, and its bytes gathered in one piece).
    let kept = after.rss.saturating_sub(gateway.baseline.rss);
    assert!(
        kept <= 8 * MIB,
        "{SENT} refused initialize left {:.1} MiB resident",
        mib(kept)
    );
    gateway.stop();
}

/// Ends the attack of a flood that was answered `answers` in `took`: prints it as `what`;
/// the well-behaved client was served, and every request of the flood was served or told
/// when to come back (429 with `Retry-After`).
async fn flooded(
    gateway: &mut Gateway,
    attack: Attack,
    what: &str,
    answers: &[Answered],
    took: Duration,
) -> (Measured, Tally) {
    let measured = attack.end(gateway).await;
    let after = gateway.after().await;
    let tally = Answered::tally(answers);
    gateway.report(what, &measured, after);
    eprintln!(
        "  the flood took {took:.1?} ({:.0}/s): {:?}",
        answers.len() as f64 / took.as_secs_f64(),
        tally.counts
    );
    measured.seen.assert_served();
    assert_eq!(
        tally.ok + tally.limited,
        answers.len() as u64,
        "each served, or 429 with Retry-After: {:?}",
        tally.counts
    );
    (measured, tally)
}

/// 10,000 `initialize` from one client as fast as it can, beside another client's session
/// calling every 100 ms: the session is never ended (no 404), the flooder gets 429 past
/// its share of sessions (128 of 1,024) or its rate.
async fn initialize_flood(session_keys: bool) {
    const FLOOD: usize = 10_000;
    const SHARE: u64 = 1024 / 8;
    let _one = ONE_AT_A_TIME.lock().await;
    descriptors(1024);
    let keys =
        std::env::temp_dir().join(format!("switchboard-hostile-keys-{}", std::process::id()));
    let mut args = vec![];
    if session_keys {
        std::fs::write(
            &keys,
            "a secret of thirty-two bytes or more, for the test\n",
        )
        .unwrap();
        args = vec!["--session-keys", keys.to_str().unwrap()];
    }
    let mut gateway = Gateway::start(&args).await;
    let attack = gateway.attack().await;

    let (http, url) = (http_from(ATTACKER), gateway.url().to_owned());
    let started = Instant::now();
    let answers = flood(
        16,
        |n| n < FLOOD,
        move |_| {
            let request = post(&http, &url, initialize(json!({})), None);
            async move { Answered::of(&request.send().await) }
        },
    )
    .await;
    let took = started.elapsed();
    let _ = std::fs::remove_file(&keys);
    let keys = if session_keys { "with" } else { "without" };
    let what = format!("{FLOOD} initialize from one client, {keys} session keys");
    let (measured, Tally { ok, limited, .. }) =
        flooded(&mut gateway, attack, &what, &answers, took).await;
    // Its share, and past it as many as ended one of its own (once unused for 10 s).
    let evicted = measured.scrape.rejected("session_evicted");
    assert_eq!(
        ok,
        SHARE + evicted,
        "{ok} sessions opened, {evicted} evicted, for a share of {SHARE}"
    );
    assert_eq!(
        measured.scrape.rejected("client_sessions") + measured.scrape.rejected("rate"),
        limited,
        "every 429 counted as the client's sessions or rate"
    );
    // What the flooder holds is its share of sessions: a few KiB each.
    gateway.assert_memory(measured.peak, SLACK, "the flooder's 128 sessions");
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialize_flood_ends_no_other_clients_session_and_gets_429() {
    initialize_flood(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialize_flood_with_sealed_sessions_ends_no_other_clients_session_and_gets_429() {
    initialize_flood(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_holding_a_thousand_streams_gets_429_past_its_share_and_others_are_served() {
    const SESSIONS: u64 = 1024;
    const STREAMS: u64 = 64;
    let _one = ONE_AT_A_TIME.lock().await;
    descriptors(4096);
    // Room for the holder's 1,024 sessions, so that what it meets is its share of streams.
    let mut gateway = Gateway::start(&[
        "--max-sessions",
        "2048",
        "--client-sessions",
        "1024",
        "--client-streams",
        &STREAMS.to_string(),
    ])
    .await;
    let attack = gateway.attack().await;

    // A session each, then a GET stream on each, held open and never read.
    let url = gateway.url().to_owned();
    let holder = reqwest::Client::builder()
        .local_address(ATTACKER)
        .build()
        .unwrap();
    let (http, at) = (holder.clone(), url.clone());
    let sessions = flood(
        16,
        |n| (n as u64) < SESSIONS,
        move |_| {
            let request = post(&http, &at, initialize(json!({})), None);
            async move {
                let answer = request.send().await.unwrap();
                assert_eq!(answer.status(), 200, "the holder's initialize");
                answer.headers()["mcp-session-id"]
                    .to_str()
                    .unwrap()
                    .to_owned()
            }
        },
    )
    .await;
    let sessions = Arc::new(sessions);
    let (http, at, ids) = (holder.clone(), url.clone(), sessions.clone());
    let streams = flood(
        32,
        |n| (n as u64) < SESSIONS,
        move |n| {
            let request = http
                .get(&at)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &ids[n])
                .header("mcp-protocol-version", "2025-11-25");
            async move {
                let answer = tokio::time::timeout(WAIT, request.send()).await;
                let answer = answer.expect("no answer to a GET").unwrap();
                (Answered::of_response(&answer), answer)
            }
        },
    )
    .await;
    let answered: Vec<Answered> = streams.iter().map(|(answered, _)| *answered).collect();
    let tally = Answered::tally(&answered);

    // Meanwhile another client opens a session with its stream, and calls.
    let newcomer = Session::open(&url, WELL_BEHAVED).await.unwrap();
    let stream = newcomer
        .http
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &newcomer.id)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200, "the newcomer's stream");
    newcomer.echo(&gateway.echo, 1).await.unwrap();
    attack.for_at_least(20, 8).await;
    let measured = attack.end(&gateway).await;
    drop((stream, newcomer, streams, holder));
    let after = gateway.after().await;

    gateway.report(
        &format!("{SESSIONS} sessions of one client each asking a GET stream, --client-streams {STREAMS}"),
        &measured,
        after,
    );
    eprintln!("  the holder's GETs: {:?}", tally.counts);
    measured.seen.assert_served();
    assert_eq!(
        (tally.ok, tally.limited),
        (STREAMS, SESSIONS - STREAMS),
        "streams held, and refused with Retry-After: {:?}",
        tally.counts
    );
    assert_eq!(
        measured.scrape.rejected("client_streams"),
        SESSIONS - STREAMS
    );
    // A session is a few KiB; a held stream its connection's buffers.
    gateway.assert_memory(
        measured.peak,
        SESSIONS * 16 * 1024 + STREAMS * 32 * 1024 + SLACK,
        "16 KiB per session, 32 KiB per held stream",
    );
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_far_above_its_rate_gets_429_with_retry_after_and_another_gets_none() {
    const RATE: u64 = 100;
    let _one = ONE_AT_A_TIME.lock().await;
    descriptors(1024);
    let mut gateway = Gateway::start(&[
        "--client-rate",
        &RATE.to_string(),
        "--client-burst",
        &RATE.to_string(),
    ])
    .await;
    let attack = gateway.attack().await;

    let (http, url) = (http_from(ATTACKER), gateway.url().to_owned());
    let body = modern_call_body(1, &gateway.echo, json!({"text": "flood"}), None);
    let tool = gateway.echo.clone();
    // As fast as it can, for as long as the well-behaved client takes to make 30 calls.
    let flooding = Arc::new(AtomicBool::new(true));
    let started = Instant::now();
    let more = {
        let flooding = flooding.clone();
        move |_| flooding.load(Ordering::Relaxed)
    };
    let flooder = tokio::spawn(flood(16, more, move |_| {
        let request = post(&http, &url, body.clone(), None)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", &tool);
        async move { Answered::of(&request.send().await) }
    }));
    attack.for_at_least(30, 12).await;
    flooding.store(false, Ordering::Relaxed);
    let answers = flooder.await.unwrap();
    let took = started.elapsed();
    let what = format!(
        "{} calls from one client, --client-rate {RATE}",
        answers.len()
    );
    let (measured, Tally { ok, limited, .. }) =
        flooded(&mut gateway, attack, &what, &answers, took).await;
    // A burst, then the rate: what the token bucket let through, and a few for the clock.
    let allowed = RATE + (RATE as f64 * took.as_secs_f64()).ceil() as u64 + 5;
    assert!(
        ok <= allowed && limited > 0,
        "{ok} calls served in {took:?}, for a rate of {RATE}/s"
    );
    assert_eq!(
        measured.scrape.rejected("rate"),
        limited,
        "every 429 counted"
    );
    gateway.assert_memory(
        measured.peak,
        SLACK,
        "nothing held: a refusal costs its answer",
    );
    gateway.stop();
}
