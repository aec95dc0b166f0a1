//! Tool calls as tasks, against scripted servers for the edges: a handshake-era server with
//! the experimental tasks of 2025-11-25 (a tool that requires a task runs as one and
//! returns its result; a call asks for a task and gets a handle; a task that fails, is
//! forgotten, outlives its ttl, races its cancellation, is polled with an interval of 0;
//! dropping a handle or passing the deadline cancels) and a stateless server with the
//! 2026-07-28 tasks extension (input requests inline, answered by `tasks/update`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use switchboard::client::{
    BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse,
};
use switchboard::task::{TaskOrResult, TaskShape, TaskStatus, MIN_POLL_INTERVAL};
use switchboard::ErrorKind;
use switchboard::{Protocol, ServerConfig, ServerHandle};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_stream::StreamExt;

use crate::support::{eventually, scripted};

/// Everything a scripted server received, in order.
type Seen = Arc<Mutex<Vec<Value>>>;

/// How a scripted task goes, chosen by the call's `script` argument.
#[derive(Debug, Clone)]
struct Script {
    /// `tasks/get` polls answered `working` before the task ends.
    polls: u32,
    /// How it ends: `completed`, `failed` (tasks/result answers a JSON-RPC error),
    /// `tool_error` (failed, tasks/result answers `isError`), `forgotten` (tasks/get says
    /// -32602), `never` (works forever), `expires` (works, and is forgotten after its ttl),
    /// `race` (completes the moment a cancel arrives, and refuses the cancel), `input`
    /// (asks the client with `elicitation/create` during tasks/result).
    end: String,
    poll_interval: Option<u64>,
    ttl: Option<u64>,
}

impl Script {
    fn of(arguments: &Value) -> Script {
        Script {
            polls: arguments["polls"].as_u64().unwrap_or(1) as u32,
            end: arguments["end"].as_str().unwrap_or("completed").to_owned(),
            poll_interval: arguments["interval"].as_u64(),
            ttl: arguments["ttl"].as_u64(),
        }
    }
}

/// One task of the scripted server.
struct Running {
    script: Script,
    polls: u32,
    status: &'static str,
    created: Instant,
    /// A `tasks/result` waiting for the task to end.
    waiting: Option<Value>,
    /// The id of our `elicitation/create`, while we wait for its answer.
    asking: Option<Value>,
}

impl Running {
    fn task(&self, id: &str) -> Value {
        let mut task = json!({
            "taskId": id, "status": self.status,
            "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:30:00Z",
            "ttl": self.script.ttl,
        });
        if let Some(interval) = self.script.poll_interval {
            task["pollInterval"] = json!(interval);
        }
        if self.status == "working" {
            task["statusMessage"] = json!(format!("poll {}", self.polls));
        }
        task
    }

    fn result(&self, id: &str) -> Value {
        match self.script.end.as_str() {
            "failed" => json!({"error": {"code": -32603, "message": "the job broke"}}),
            "tool_error" => json!({"result": {"content": [{"type": "text", "text": "bad input"}],
                "isError": true, "_meta": {"io.modelcontextprotocol/related-task": {"taskId": id}}}}),
            _ => json!({"result": {"content": [{"type": "text", "text": format!("done {id}")}],
                "_meta": {"io.modelcontextprotocol/related-task": {"taskId": id}}}}),
        }
    }

    fn forgotten(&self) -> bool {
        match self.script.end.as_str() {
            "forgotten" => true,
            "expires" => self
                .script
                .ttl
                .is_some_and(|ttl| self.created.elapsed() > Duration::from_millis(ttl)),
            _ => false,
        }
    }

    /// One poll: the task moves on.
    fn advance(&mut self) {
        if self.status != "working" {
            return;
        }
        self.polls += 1;
        if self.polls < self.script.polls {
            return;
        }
        self.status = match self.script.end.as_str() {
            "completed" | "race" => "completed",
            "failed" | "tool_error" => "failed",
            "input" => "input_required",
            _ => "working",
        };
    }
}

/// The tasks of a scripted server, and how many it made: kept across its connections (as a
/// server that keeps its tasks in a database would), so a runtime started later finds them.
type Kept = Arc<Mutex<(u32, HashMap<String, Running>)>>;

/// A 2025-11-25 server with tasks: `job` requires a task, `maybe` allows one, `plain` does
/// not; a task goes as its call's arguments script it (see [`Script`]).
fn task_server(seen: Seen) -> ServerConfig<switchboard::transport::Memory> {
    task_server_keeping(seen, Kept::default())
}

fn task_server_keeping(seen: Seen, kept: Kept) -> ServerConfig<switchboard::transport::Memory> {
    ServerConfig::memory(move |io| {
        let seen = seen.clone();
        let kept = kept.clone();
        async move {
            let (reader, mut writer) = tokio::io::split(io);
            let mut lines = BufReader::new(reader).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                seen.lock().unwrap().push(msg.clone());
                let id = msg["id"].clone();
                let reply = |body: Value| {
                    let mut m = json!({"jsonrpc": "2.0", "id": id});
                    m.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
                    m
                };
                let unknown = || {
                    reply(json!({"error": {"code": -32602, "message": "Failed to retrieve task: Task not found"}}))
                };
                let task_id = msg["params"]["taskId"].as_str().unwrap_or("").to_owned();
                let out = {
                let mut out = Vec::new();
                let mut guard = kept.lock().unwrap();
                let (next_task, tasks) = &mut *guard;
                match msg["method"].as_str() {
                    Some("initialize") => out.push(reply(json!({"result": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {},
                            "requests": {"tools": {"call": {}}}}},
                        "serverInfo": {"name": "tasks", "version": "1"}
                    }}))),
                    Some("tools/list") => out.push(reply(json!({"result": {"tools": [
                        {"name": "job", "inputSchema": {"type": "object"},
                         "execution": {"taskSupport": "required"}},
                        {"name": "maybe", "inputSchema": {"type": "object"},
                         "execution": {"taskSupport": "optional"}},
                        {"name": "plain", "inputSchema": {"type": "object"}}
                    ]}}))),
                    Some("tools/call") if msg["params"].get("task").is_some() => {
                        *next_task += 1;
                        let tid = format!("t{next_task}");
                        let mut script = Script::of(&msg["params"]["arguments"]);
                        // The server keeps a task as long as asked, unless scripted shorter.
                        if script.ttl.is_none() {
                            script.ttl = msg["params"]["task"]["ttl"].as_u64();
                        }
                        let running = Running {
                            script,
                            polls: 0,
                            status: "working",
                            created: Instant::now(),
                            waiting: None,
                            asking: None,
                        };
                        out.push(reply(json!({"result": {"task": running.task(&tid)}})));
                        tasks.insert(tid, running);
                    }
                    Some("tools/call") => out.push(reply(json!({"result": {
                        "content": [{"type": "text", "text": "at once"}]}}))),
                    Some("tasks/get") => match tasks.get_mut(&task_id) {
                        Some(task) if !task.forgotten() => {
                            task.advance();
                            out.push(reply(json!({"result": task.task(&task_id)})));
                            if task.status != "working" && task.status != "input_required" {
                                if let Some(waiting) = task.waiting.take() {
                                    let mut answer = task.result(&task_id);
                                    answer["jsonrpc"] = json!("2.0");
                                    answer["id"] = waiting;
                                    out.push(answer);
                                }
                            }
                        }
                        _ => out.push(unknown()),
                    },
                    Some("tasks/result") => match tasks.get_mut(&task_id) {
                        Some(task) if !task.forgotten() => match task.status {
                            "completed" | "failed" => out.push(reply(task.result(&task_id))),
                            "input_required" => {
                                task.waiting = Some(id.clone());
                                let ask = json!(format!("ask-{task_id}"));
                                task.asking = Some(ask.clone());
                                out.push(json!({"jsonrpc": "2.0", "id": ask,
                                    "method": "elicitation/create", "params": {
                                        "message": "Which one?",
                                        "requestedSchema": {"type": "object", "properties": {
                                            "choice": {"type": "string"}}},
                                        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
                                }}));
                            }
                            _ => task.waiting = Some(id.clone()),
                        },
                        _ => out.push(unknown()),
                    },
                    Some("tasks/cancel") => match tasks.get_mut(&task_id) {
                        Some(task) if task.script.end == "race" || task.status == "completed" => {
                            task.status = "completed";
                            out.push(reply(json!({"error": {"code": -32602,
                                "message": "Cannot cancel task: already in terminal status 'completed'"}})));
                        }
                        Some(task) => {
                            task.status = "cancelled";
                            out.push(reply(json!({"result": task.task(&task_id)})));
                        }
                        None => out.push(unknown()),
                    },
                    None if msg.get("result").is_some() => {
                        // Our elicitation's answer: the task goes on, and ends.
                        if let Some((tid, task)) =
                            tasks.iter_mut().find(|(_, t)| t.asking.as_ref() == Some(&id))
                        {
                            task.asking = None;
                            task.status = "completed";
                            let choice = msg["result"]["content"]["choice"].clone();
                            if let Some(waiting) = task.waiting.take() {
                                out.push(json!({"jsonrpc": "2.0", "id": waiting, "result": {
                                    "content": [{"type": "text", "text": format!("chose {choice}")}]}}));
                            }
                            let _ = tid;
                        }
                    }
                    _ => {}
                }
                out
                };
                for message in out {
                    let mut bytes = message.to_string().into_bytes();
                    bytes.push(b'\n');
                    if writer.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
            }
        }
    })
    .protocol(Protocol::Legacy)
}

async fn start_tasks(timeout: Duration) -> (switchboard::Runtime, ServerHandle, Seen) {
    let seen = Seen::default();
    let (rt, server) = scripted(task_server(seen.clone()), timeout).await;
    (rt, server, seen)
}

fn methods(seen: &Seen) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .filter_map(|m| m["method"].as_str().map(str::to_owned))
        .collect()
}

fn cancels(seen: &Seen) -> usize {
    methods(seen)
        .iter()
        .filter(|m| *m == "tasks/cancel")
        .count()
}

#[tokio::test]
async fn a_tool_that_requires_a_task_runs_as_one_and_returns_its_result() {
    let (rt, server, seen) = start_tasks(Duration::from_secs(10)).await;
    assert_eq!(server.task_shape(), Some(TaskShape::Experimental));
    let result = server
        .call_tool("job", json!({"polls": 2, "interval": 60}))
        .await
        .unwrap();
    assert_eq!(result.text(), "done t1");
    let seen_methods = methods(&seen);
    let calls: Vec<&str> = seen_methods
        .iter()
        .map(String::as_str)
        .filter(|m| m.starts_with("tasks/") || *m == "tools/call")
        .collect();
    assert_eq!(
        calls,
        ["tools/call", "tasks/get", "tasks/get", "tasks/result"]
    );
    // The call asked for a task kept as long as it waits.
    let asked = seen
        .lock()
        .unwrap()
        .iter()
        .find(|m| m["method"] == "tools/call")
        .map(|m| m["params"]["task"].clone())
        .unwrap();
    assert_eq!(asked, json!({"ttl": 10_000}));
    assert!(
        server.tasks().is_empty(),
        "no task is watched once it ended"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn a_call_asked_as_a_task_gives_a_handle_with_its_states_and_result() {
    let (rt, server, _seen) = start_tasks(Duration::from_secs(10)).await;
    let TaskOrResult::Task(task) = server
        .call_tool("maybe", json!({"polls": 3, "interval": 50}))
        .task_ttl(Duration::from_secs(60))
        .as_task()
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    assert_eq!(&*task.id(), "t1");
    assert_eq!(task.tool(), "maybe");
    assert_eq!(task.state().ttl, Some(Duration::from_secs(60)));
    assert_eq!(server.tasks().len(), 1);
    let mut updates = task.updates();
    let mut statuses = Vec::new();
    while let Some(state) = updates.next().await {
        statuses.push((state.status, state.message));
    }
    assert_eq!(statuses.first().map(|s| s.0), Some(TaskStatus::Working));
    assert_eq!(statuses.last().map(|s| s.0), Some(TaskStatus::Completed));
    // The server's words come with the states (`poll N` while it works).
    assert!(
        statuses
            .iter()
            .any(|s| s.1.as_deref().is_some_and(|m| m.starts_with("poll "))),
        "{statuses:?}"
    );
    assert_eq!(task.result().await.unwrap().text(), "done t1");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_call_of_a_tool_that_forbids_tasks_is_not_sent_as_one() {
    let (rt, server, seen) = start_tasks(Duration::from_secs(10)).await;
    match server.call_tool("plain", json!({})).as_task().await {
        Err(e) if matches!(e.kind(), ErrorKind::TaskNotAllowed { .. }) => {
            assert_eq!(e.tool(), Some("plain"))
        }
        other => panic!("expected TaskNotAllowed, got {other:?}"),
    }
    assert!(!methods(&seen).contains(&"tools/call".to_owned()));
    // A tool that allows a task still runs plainly when no task is asked for.
    let plain = server.call_tool("maybe", json!({})).await.unwrap();
    assert_eq!(plain.text(), "at once");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_task_that_fails_gives_its_error_or_its_error_result() {
    let (rt, server, _seen) = start_tasks(Duration::from_secs(10)).await;
    match server
        .call_tool("job", json!({"end": "failed", "interval": 50}))
        .await
    {
        Err(e) if matches!(e.kind(), ErrorKind::Rpc { .. }) => {
            let ErrorKind::Rpc { code, message, .. } = e.kind() else {
                unreachable!()
            };
            assert_eq!(*code, -32603);
            assert_eq!(message, "the job broke");
        }
        other => panic!("expected the task's error, got {other:?}"),
    }
    let result = server
        .call_tool("job", json!({"end": "tool_error", "interval": 50}))
        .await
        .unwrap();
    assert!(result.is_error());
    assert_eq!(result.text(), "bad input");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_server_that_forgets_a_task_gives_task_lost() {
    let (rt, server, _seen) = start_tasks(Duration::from_secs(10)).await;
    match server
        .call_tool("job", json!({"end": "forgotten", "interval": 50}))
        .await
    {
        Err(e) if matches!(e.kind(), ErrorKind::TaskLost { task, .. } if &**task == "t1") => {
            assert_eq!(e.tool(), Some("job"));
        }
        other => panic!("expected TaskLost, got {other:?}"),
    }
    rt.shutdown().await;
}

#[tokio::test]
async fn a_ttl_shorter_than_the_deadline_ends_the_wait_with_task_lost() {
    let (rt, server, _seen) = start_tasks(Duration::from_secs(30)).await;
    let started = Instant::now();
    match server
        .call_tool(
            "job",
            json!({"end": "expires", "ttl": 300, "interval": 100}),
        )
        .await
    {
        Err(e) if matches!(e.kind(), ErrorKind::TaskLost { .. }) => {}
        other => panic!("expected TaskLost, got {other:?}"),
    }
    // The ttl ended the wait, not the 30 s deadline (a wide margin).
    assert!(started.elapsed() < Duration::from_secs(15));
    rt.shutdown().await;
}

#[tokio::test]
async fn the_deadline_bounds_the_whole_task_and_cancels_it() {
    let (rt, server, seen) = start_tasks(Duration::from_secs(10)).await;
    match server
        .call_tool("job", json!({"end": "never", "interval": 50}))
        .timeout(Duration::from_millis(400))
        .await
    {
        Err(e) if e.is_timeout() => assert_eq!(e.tool(), Some("job")),
        other => panic!("expected Timeout, got {other:?}"),
    }
    assert_eq!(cancels(&seen), 1, "{:?}", methods(&seen));
    rt.shutdown().await;
}

#[tokio::test]
async fn dropping_a_handle_cancels_its_task_and_detaching_does_not() {
    let (rt, server, seen) = start_tasks(Duration::from_secs(10)).await;
    let TaskOrResult::Task(task) = server
        .call_tool("maybe", json!({"end": "never", "interval": 50}))
        .as_task()
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    drop(task);
    assert!(eventually(Duration::from_secs(5), || cancels(&seen) == 1).await);
    assert!(eventually(Duration::from_secs(5), || server.tasks().is_empty()).await);

    let TaskOrResult::Task(task) = server
        .call_tool("maybe", json!({"end": "never", "interval": 50}))
        .as_task()
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    let id = task.detach();
    assert_eq!(&*id, "t2");
    assert!(eventually(Duration::from_secs(5), || server.tasks().is_empty()).await);
    // Watched again, and cancelled on purpose this time.
    let task = server.resume_task(&id, "maybe").await.unwrap();
    assert_eq!(task.state().status, TaskStatus::Working);
    task.cancel().await.unwrap();
    match task.result().await {
        Err(e) if matches!(e.kind(), ErrorKind::TaskCancelled { task, .. } if &**task == "t2") => {}
        other => panic!("expected TaskCancelled, got {other:?}"),
    }
    assert_eq!(cancels(&seen), 2, "{:?}", methods(&seen));
    rt.shutdown().await;
}

#[tokio::test]
async fn a_cancel_that_loses_the_race_to_completion_still_gives_the_result() {
    let (rt, server, _seen) = start_tasks(Duration::from_secs(10)).await;
    let TaskOrResult::Task(task) = server
        .call_tool(
            "maybe",
            json!({"end": "race", "polls": 1000, "interval": 50}),
        )
        .as_task()
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    // The server completes the task as the cancel arrives, and refuses the cancel.
    task.cancel().await.unwrap();
    assert_eq!(task.result().await.unwrap().text(), "done t1");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_poll_interval_of_zero_is_polled_no_closer_than_the_floor() {
    let (rt, server, seen) = start_tasks(Duration::from_secs(10)).await;
    let started = Instant::now();
    let result = server
        .call_tool("job", json!({"polls": 4, "interval": 0}))
        .await
        .unwrap();
    assert_eq!(result.text(), "done t1");
    let polls = methods(&seen).iter().filter(|m| *m == "tasks/get").count();
    assert_eq!(polls, 4);
    // Four polls, each at least the floor after the one before (timers never fire early).
    assert!(started.elapsed() >= MIN_POLL_INTERVAL * 4);
    rt.shutdown().await;
}

/// Answers every form with `{"choice": "second"}` and records the questions.
#[derive(Debug, Default, Clone)]
struct Choose {
    asked: Arc<Mutex<Vec<String>>>,
}

impl ElicitationHandler for Choose {
    fn elicit(
        &self,
        _server: &str,
        request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        self.asked.lock().unwrap().push(request.message);
        let mut content = serde_json::Map::new();
        content.insert("choice".into(), json!("second"));
        Box::pin(async move { Ok(ElicitationResponse::accept(content)) })
    }
}

#[tokio::test]
async fn input_a_task_needs_goes_to_the_elicitation_handler() {
    let seen = Seen::default();
    let choose = Choose::default();
    let config = task_server(seen.clone())
        .client_handlers(ClientHandlers::new().elicitation(choose.clone()));
    let (rt, server) = scripted(config, Duration::from_secs(10)).await;
    let result = server
        .call_tool("job", json!({"end": "input", "interval": 50}))
        .await
        .unwrap();
    assert_eq!(result.text(), "chose \"second\"");
    assert_eq!(*choose.asked.lock().unwrap(), ["Which one?"]);
    rt.shutdown().await;
}

/// A 2026-07-28 server with the tasks extension: `research` becomes a task that asks the
/// client which interpretation it means (inline in `tasks/get`), and completes once
/// `tasks/update` brings the answer; `broken` becomes a task that fails with an error.
fn extension_server(seen: Seen) -> ServerConfig<switchboard::transport::Memory> {
    ServerConfig::memory(move |io| {
        let seen = seen.clone();
        async move {
            let (reader, mut writer) = tokio::io::split(io);
            let mut lines = BufReader::new(reader).lines();
            let mut answer: Option<Value> = None;
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                seen.lock().unwrap().push(msg.clone());
                let id = msg["id"].clone();
                let result = |r: Value| json!({"jsonrpc": "2.0", "id": id, "result": r});
                let task = |tid: &str, status: &str| {
                    json!({"taskId": tid, "status": status, "ttlMs": 60_000, "pollIntervalMs": 0,
                        "createdAt": "2026-07-28T10:30:00Z", "lastUpdatedAt": "2026-07-28T10:30:00Z"})
                };
                let merged = |mut a: Value, b: Value| {
                    a.as_object_mut().unwrap().extend(b.as_object().unwrap().clone());
                    a
                };
                let reply = match msg["method"].as_str() {
                    Some("server/discover") => result(json!({
                        "resultType": "complete", "supportedVersions": ["2026-07-28"],
                        "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
                        "ttlMs": 0, "cacheScope": "private"
                    })),
                    Some("tools/list") => result(json!({"resultType": "complete", "ttlMs": 60_000,
                        "tools": [{"name": "research", "inputSchema": {"type": "object"}},
                                  {"name": "broken", "inputSchema": {"type": "object"}}]})),
                    Some("tools/call") => {
                        let declared = &msg["params"]["_meta"]
                            ["io.modelcontextprotocol/clientCapabilities"]["extensions"]
                            ["io.modelcontextprotocol/tasks"];
                        if declared.is_null() {
                            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32021,
                                "message": "Missing required client capability"}})
                        } else if msg["params"]["name"] == "broken" {
                            result(merged(json!({"resultType": "task"}), task("b1", "working")))
                        } else {
                            result(merged(json!({"resultType": "task"}), task("m1", "working")))
                        }
                    }
                    Some("tasks/get") if msg["params"]["taskId"] == "b1" => result(merged(
                        json!({"resultType": "complete",
                               "error": {"code": -32000, "message": "upstream refused"}}),
                        task("b1", "failed"),
                    )),
                    Some("tasks/get") => match &answer {
                        None => result(merged(json!({"resultType": "complete", "inputRequests": {
                            "q1": {"method": "elicitation/create", "params": {
                                "mode": "form", "message": "Which one?",
                                "requestedSchema": {"type": "object", "properties": {
                                    "choice": {"type": "string"}}}}}}}),
                            task("m1", "input_required"))),
                        Some(choice) => result(merged(json!({"resultType": "complete", "result": {
                            "resultType": "complete",
                            "content": [{"type": "text", "text": format!("chose {choice}")}]}}),
                            task("m1", "completed"))),
                    },
                    Some("tasks/update") => {
                        answer = Some(msg["params"]["inputResponses"]["q1"]["content"]["choice"].clone());
                        result(json!({"resultType": "complete"}))
                    }
                    Some("tasks/cancel") => result(json!({"resultType": "complete"})),
                    _ => continue,
                };
                let mut bytes = reply.to_string().into_bytes();
                bytes.push(b'\n');
                if writer.write_all(&bytes).await.is_err() {
                    return;
                }
            }
        }
    })
    .protocol(Protocol::Modern)
}

#[tokio::test]
async fn a_stateless_servers_task_is_driven_and_its_input_answered_by_tasks_update() {
    let seen = Seen::default();
    let choose = Choose::default();
    let config = extension_server(seen.clone())
        .client_handlers(ClientHandlers::new().elicitation(choose.clone()));
    let (rt, server) = scripted(config, Duration::from_secs(10)).await;
    assert_eq!(server.task_shape(), Some(TaskShape::Extension));
    let result = server.call_tool("research", json!({})).await.unwrap();
    assert_eq!(result.text(), "chose \"second\"");
    assert_eq!(*choose.asked.lock().unwrap(), ["Which one?"]);
    let seen_methods = methods(&seen);
    let task_methods: Vec<&str> = seen_methods
        .iter()
        .map(String::as_str)
        .filter(|m| m.starts_with("tasks/"))
        .collect();
    // Answered once, though a poll may see the request again before the update lands.
    assert_eq!(
        task_methods
            .iter()
            .filter(|m| **m == "tasks/update")
            .count(),
        1
    );
    assert_eq!(task_methods.last(), Some(&"tasks/get"));
    assert!(!task_methods.contains(&"tasks/result"));
    // Every request of the task carries the stateless `_meta`, as any request does.
    for msg in seen
        .lock()
        .unwrap()
        .iter()
        .filter(|m| m["method"] == "tasks/get")
    {
        assert_eq!(
            msg["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
    }
    match server.call_tool("broken", json!({})).await {
        Err(e) if matches!(e.kind(), ErrorKind::Rpc { .. }) => {
            let ErrorKind::Rpc { code, message, .. } = e.kind() else {
                unreachable!()
            };
            assert_eq!(*code, -32000);
            assert_eq!(message, "upstream refused");
        }
        other => panic!("expected the task's error, got {other:?}"),
    }
    rt.shutdown().await;
}

#[tokio::test]
async fn a_detached_task_stays_in_the_store_and_a_later_runtime_watches_it_to_its_end() {
    use switchboard::task::{MemoryTaskStore, TaskRecord};
    let store = Arc::new(MemoryTaskStore::new());
    let kept = Kept::default();
    let build = |seen: Seen| {
        switchboard::Runtime::builder()
            .task_store(store.clone())
            .server(
                "s",
                task_server_keeping(seen, kept.clone())
                    .restart(switchboard::RestartPolicy::off())
                    .liveness(switchboard::Liveness::off())
                    .timeout(Duration::from_secs(10)),
            )
            .build()
    };
    let first = build(Seen::default()).await.unwrap();
    let TaskOrResult::Task(task) = first
        .server("s")
        .unwrap()
        .call_tool("maybe", json!({"polls": 3, "interval": 50}))
        .as_task()
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    assert_eq!(
        first.stored_tasks().unwrap(),
        [TaskRecord::new("s", "maybe", "t1")]
    );
    task.detach();
    first.shutdown().await;

    // A new runtime, the same store: the task is still there, and is watched to its end.
    let second = build(Seen::default()).await.unwrap();
    let stored = second.stored_tasks().unwrap();
    assert_eq!(stored, [TaskRecord::new("s", "maybe", "t1")]);
    let task = second.resume_task(&stored[0]).await.unwrap();
    assert_eq!(task.result().await.unwrap().text(), "done t1");
    assert!(second.stored_tasks().unwrap().is_empty());
    second.shutdown().await;
}

#[tokio::test]
async fn task_metrics_count_starts_outcomes_and_polls() {
    use crate::metrics::{scrape, value};
    let seen = Seen::default();
    let rt = switchboard::Runtime::builder()
        .server(
            "s",
            task_server(seen.clone())
                .restart(switchboard::RestartPolicy::off())
                .liveness(switchboard::Liveness::off()),
        )
        .metrics_listener(([127, 0, 0, 1], 0).into())
        .build()
        .await
        .unwrap();
    let server = rt.server("s").unwrap();
    server
        .call_tool("job", json!({"polls": 2, "interval": 50}))
        .await
        .unwrap();
    server
        .call_tool("job", json!({"end": "forgotten", "interval": 50}))
        .await
        .unwrap_err();
    // Counted once the watcher ends, just after the call's answer.
    let body = || scrape(rt.metrics_addr().unwrap());
    let series = |name: &str| format!("switchboard_{name}{{server=\"s\"}}");
    let outcome =
        |o: &str| format!("switchboard_tasks_finished_total{{server=\"s\",outcome=\"{o}\"}}");
    assert!(
        eventually(Duration::from_secs(5), || value(&body(), &outcome("lost"))
            == Some(1.0))
        .await,
        "{}",
        body()
    );
    let body = body();
    assert_eq!(
        value(&body, &series("tasks_started_total")),
        Some(2.0),
        "{body}"
    );
    assert_eq!(value(&body, &outcome("completed")), Some(1.0), "{body}");
    assert_eq!(
        value(&body, &series("tasks_in_flight")),
        Some(0.0),
        "{body}"
    );
    let polls = methods(&seen).iter().filter(|m| *m == "tasks/get").count();
    assert_eq!(
        value(&body, &series("task_polls_total")),
        Some(polls as f64),
        "{body}"
    );
    rt.shutdown().await;
}

/// Samples with a fixed answer.
#[derive(Debug)]
struct Sampler;

impl switchboard::client::SamplingHandler for Sampler {
    fn create_message(
        &self,
        _server: &str,
        _request: switchboard::client::SamplingRequest,
    ) -> BoxFuture<Result<switchboard::client::SamplingResponse, String>> {
        Box::pin(async {
            Ok(switchboard::client::SamplingResponse::new(
                "m",
                [switchboard::model::Content::text("sampled")],
            ))
        })
    }
}

/// A 2025-11-25 server that, on a call of `ask`, sends `sampling/createMessage` as a task
/// (`params.task`), polls the client's `tasks/get` until the task completes, fetches it with
/// `tasks/result`, lists the client's tasks, and answers the call with what it learnt.
fn requesting_server(seen: Seen) -> ServerConfig<switchboard::transport::Memory> {
    ServerConfig::memory(move |io| {
        let seen = seen.clone();
        async move {
            let (reader, mut writer) = tokio::io::split(io);
            let mut lines = BufReader::new(reader).lines();
            let mut call_id = Value::Null;
            let mut task_id = String::new();
            let mut polls = 0;
            let mut fetched = Value::Null;
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                seen.lock().unwrap().push(msg.clone());
                let id = msg["id"].clone();
                let request = |id: &str, method: &str, params: Value| {
                    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
                };
                let reply = match (msg["method"].as_str(), id.as_str()) {
                    (Some("initialize"), _) => json!({"jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "asker", "version": "1"}}}),
                    (Some("tools/list"), _) => json!({"jsonrpc": "2.0", "id": id, "result": {
                        "tools": [{"name": "ask", "inputSchema": {"type": "object"}}]}}),
                    (Some("tools/call"), _) => {
                        call_id = id.clone();
                        request("s1", "sampling/createMessage", json!({
                            "task": {"ttl": 60_000}, "maxTokens": 10,
                            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}))
                    }
                    (None, Some("s1")) => {
                        task_id = msg["result"]["task"]["taskId"].as_str().unwrap_or("").to_owned();
                        request("g", "tasks/get", json!({"taskId": task_id}))
                    }
                    (None, Some("g")) if msg["result"]["status"] == "completed" => {
                        request("r", "tasks/result", json!({"taskId": task_id}))
                    }
                    (None, Some("g")) if polls < 1000 => {
                        polls += 1;
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        request("g", "tasks/get", json!({"taskId": task_id}))
                    }
                    (None, Some("r")) => {
                        fetched = msg["result"].clone();
                        request("l", "tasks/list", json!({}))
                    }
                    (None, Some("l")) => {
                        let listed = msg["result"]["tasks"].as_array().map_or(0, Vec::len);
                        json!({"jsonrpc": "2.0", "id": call_id, "result": {"content": [{
                            "type": "text",
                            "text": format!("{} {} {} {listed}",
                                fetched["content"]["text"].as_str().unwrap_or("?"),
                                fetched["model"].as_str().unwrap_or("?"),
                                fetched["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == json!(task_id))
                        }]}})
                    }
                    _ => continue,
                };
                let mut bytes = reply.to_string().into_bytes();
                bytes.push(b'\n');
                if writer.write_all(&bytes).await.is_err() {
                    return;
                }
            }
        }
    })
    .protocol(Protocol::Legacy)
}

#[tokio::test]
async fn a_sampling_request_a_server_sends_as_a_task_is_run_as_one_and_served() {
    let seen = Seen::default();
    let config =
        requesting_server(seen.clone()).client_handlers(ClientHandlers::new().sampling(Sampler));
    let (rt, server) = scripted(config, Duration::from_secs(10)).await;
    // `initialize` declared the client's task support for what its handlers answer.
    let declared = seen
        .lock()
        .unwrap()
        .iter()
        .find(|m| m["method"] == "initialize")
        .map(|m| m["params"]["capabilities"]["tasks"].clone())
        .unwrap();
    assert_eq!(
        declared,
        json!({"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}}})
    );
    let result = server.call_tool("ask", json!({})).await.unwrap();
    // The result of the task, tied to it, and one task listed.
    assert_eq!(result.text(), "sampled m true 1");
    // The sampling request was answered at once with its task, not with the sample.
    let created = seen
        .lock()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "s1")
        .cloned()
        .unwrap();
    assert_eq!(created["result"]["task"]["status"], "working");
    assert!(created["result"].get("model").is_none(), "{created}");
    rt.shutdown().await;
}

#[tokio::test]
async fn dropping_the_call_of_a_task_tool_cancels_its_task() {
    let (rt, server, seen) = start_tasks(Duration::from_secs(10)).await;
    let call = tokio::spawn(server.call_tool("job", json!({"end": "never", "interval": 50})));
    assert!(eventually(Duration::from_secs(5), || server.tasks().len() == 1).await);
    call.abort();
    assert!(eventually(Duration::from_secs(5), || cancels(&seen) == 1).await);
    assert!(eventually(Duration::from_secs(5), || server.tasks().is_empty()).await);
    rt.shutdown().await;
}
