//! A handler holds up nothing but its own request. One that computes before its first
//! `.await` does not delay the echo calls that arrive behind it on the same connection; one
//! that panics loses its own request (no answer: its task is gone), and the connection reads
//! and answers the requests after it.
//!
//! The computing test writes, in one write per round, a burst of 64 echo calls; in every
//! other round a call of `compute` (10 ms of blocking work before its first await) goes
//! first. Were a handler's first poll run on the connection's reader, every echo of such a
//! round would wait the whole 10 ms behind it. The runtime has two workers, as CI has two
//! cores: the computing handler takes one, the reader, the writer and the echoes share the
//! other.
//!
//! The work is `std::thread::sleep`: it blocks its worker as computing would, without
//! taking a core from whatever else shares the machine. A stall of the shared machine
//! delays a whole round, so the test compares the median over rounds of each round's p99
//! (the rounds with and without the computing call taken in turns), not one pooled p99 that
//! a single slow round of 64 echoes would decide.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard_server::{
    Arguments, BoxFuture, Context, Handler, HandlerError, Info, Reply, Server,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::support::WAIT;

/// How long `compute` blocks before its first await.
const COMPUTE: Duration = Duration::from_millis(10);
/// Echo calls in flight in each round.
const ECHOES: usize = 64;
/// Rounds of each kind, taken in turns.
const ROUNDS: usize = 15;

struct Tools;

impl Handler for Tools {
    fn info(&self) -> Info {
        Info::new("compute", "1.0")
    }

    fn tools(&self) -> Cow<'_, [Value]> {
        let object = json!({"type": "object"});
        Cow::Owned(vec![
            json!({"name": "echo", "inputSchema": object}),
            json!({"name": "compute", "inputSchema": object}),
            json!({"name": "panic_at_once", "inputSchema": object}),
            json!({"name": "panic_after_waiting", "inputSchema": object}),
        ])
    }

    fn call_tool(
        self: Arc<Self>,
        name: String,
        _: Arguments,
        _: Context,
    ) -> BoxFuture<Result<Reply, HandlerError>> {
        Box::pin(async move {
            match name.as_str() {
                "compute" => {
                    // Blocking work before the first await, as a handler that computes does.
                    std::thread::sleep(COMPUTE);
                    tokio::task::yield_now().await;
                    Ok(Reply::text("computed"))
                }
                "panic_at_once" => panic!("a handler's bug, before it waits"),
                "panic_after_waiting" => {
                    tokio::task::yield_now().await;
                    panic!("a handler's bug, after it waited")
                }
                _ => Ok(Reply::text("echo")),
            }
        })
    }
}

fn call(id: usize, tool: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}}}}}"#
    ) + "\n"
}

/// The `q` quantile of `samples` (sorted in place).
fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort_unstable();
    let at = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
    samples[at]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echoes_beside_a_computing_handler_are_not_held_up() {
    let server = Server::new(Tools);
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (their_reader, their_writer) = tokio::io::split(theirs);
    let served = tokio::spawn(async move { server.serve(their_reader, their_writer).await });
    let (reader, mut writer) = tokio::io::split(ours);

    // Answers are timed where they are read, on a task of their own.
    let (answers, mut answered) = mpsc::unbounded_channel::<(u64, Instant)>();
    let reading = tokio::spawn(async move {
        let mut lines = BufReader::new(reader).lines();
        while let Some(line) = lines.next_line().await.expect("the server's output reads") {
            let at = Instant::now();
            let answer: Value = serde_json::from_str(&line).expect("an answer is JSON");
            assert!(answer.get("result").is_some(), "{answer}");
            let id = answer["id"].as_u64().expect("a numeric id");
            if answers.send((id, at)).is_err() {
                break;
            }
        }
    });

    let mut with = Vec::new();
    let mut without = Vec::new();
    let mut pooled_with = Vec::new();
    let mut next_id = 1;
    for round in 0..2 * ROUNDS {
        let computing = round % 2 == 0;
        let mut burst = String::new();
        let mut expected = 0;
        let compute_id = next_id;
        if computing {
            burst.push_str(&call(compute_id, "compute"));
            next_id += 1;
            expected += 1;
        }
        let echoes = next_id..next_id + ECHOES;
        for id in echoes.clone() {
            burst.push_str(&call(id, "echo"));
        }
        next_id += ECHOES;
        expected += ECHOES;

        let sent = Instant::now();
        writer.write_all(burst.as_bytes()).await.unwrap();
        let mut at = HashMap::new();
        while at.len() < expected {
            let (id, when) = tokio::time::timeout(WAIT, answered.recv())
                .await
                .expect("every call is answered in time")
                .expect("the server's output is open");
            at.insert(id as usize, when);
        }
        let mut latencies: Vec<Duration> = echoes.map(|id| at[&id] - sent).collect();
        if computing {
            pooled_with.extend_from_slice(&latencies);
            with.push(quantile(&mut latencies, 0.99));
        } else {
            without.push(quantile(&mut latencies, 0.99));
        }
    }
    writer.shutdown().await.unwrap();
    let served = tokio::time::timeout(WAIT, served)
        .await
        .expect("serve returns at EOF");
    assert!(served.unwrap().is_ok());
    reading.await.unwrap();

    let with_p99 = quantile(&mut with, 0.5);
    let without_p99 = quantile(&mut without, 0.5);
    let pooled = quantile(&mut pooled_with, 0.99);
    // Held up, the echoes of a round with the computing call would each wait its whole
    // 10 ms; beside it, they take what they take without it. Half of it is the margin.
    assert!(
        with_p99 < without_p99 + COMPUTE / 2,
        "the echoes' p99 beside a handler computing {COMPUTE:?} is {with_p99:?} (median over \
         {ROUNDS} rounds; pooled {pooled:?}), against {without_p99:?} without it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_requests_after_a_panicking_handler_are_answered() {
    after_a_panicking_handler().await;
}

/// On one thread a request's first poll is on the reader (`Session::spawn`): a handler that
/// panics there must not take the reader with it.
#[tokio::test]
async fn the_requests_after_a_panicking_handler_are_answered_on_one_thread() {
    after_a_panicking_handler().await;
}

async fn after_a_panicking_handler() {
    let mut client = crate::support::LineClient::start(Server::new(Tools));
    let call = |id: i64, name: &str| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name}});
    client.send(call(1, "panic_at_once")).await;
    client.send(call(2, "panic_after_waiting")).await;
    client.send(call(3, "echo")).await;
    let answer = client.recv().await;
    assert_eq!(answer["id"], 3, "only the echo is answered: {answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "echo");
    let list = client.request(4, "tools/list", json!({})).await;
    assert_eq!(list["result"]["tools"].as_array().map(Vec::len), Some(4));
    client.close().await;
}
