//! The demo server as a [`Handler`]: its lists, its calls, and the bookkeeping its fault
//! tools report (cancellations, calls and methods received, the frozen state).
//!
//! One `Demo` serves one connection on stdio (every [`serve`](crate::serve) makes its own,
//! so the counts are per connection) and every session of an HTTP server.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{json, Value};
use switchboard_server::{Arguments, BoxFuture, Context, Handler, HandlerError, Info, Reply, Seen};

use super::{completion, conformance, prompts, resources, skills, tools, Options};

/// How many of the latest `tools/call` requests the `calls` fault tool remembers.
const MAX_RECORDED_CALLS: usize = 1000;

/// How many `notifications/cancelled` the `cancellations` fault tool remembers.
const MAX_RECORDED_CANCELS: usize = 1000;

/// How many distinct methods the `stats` fault tool counts: a client that sends made-up
/// method names does not grow the server's memory without end.
const MAX_COUNTED_METHODS: usize = 256;

/// FNV-1a, for the method counts: their keys are a few short names, counted on every
/// message, where std's SipHash (made to resist keys chosen against it, which the bound
/// above makes harmless) cost more than the rest of the count.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

type MethodCounts = HashMap<String, u64, BuildHasherDefault<Fnv>>;

/// Locks a mutex, ignoring poisoning: every critical section here leaves its data consistent.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Logs to stderr, the demo server's only log channel (stdout is reserved for MCP).
pub(super) fn log(args: std::fmt::Arguments<'_>) {
    eprintln!("switchboard-demo: {args}");
}

pub(super) struct Demo {
    pub(super) options: Options,
    cancellations: Mutex<VecDeque<Value>>,
    calls: Mutex<VecDeque<Value>>,
    methods: Mutex<MethodCounts>,
    pub(super) frozen: AtomicBool,
}

impl Demo {
    pub(super) fn new(options: Options) -> Self {
        Demo {
            options,
            cancellations: Mutex::default(),
            calls: Mutex::default(),
            methods: Mutex::default(),
            frozen: AtomicBool::new(false),
        }
    }

    pub(super) fn cancellations(&self) -> Vec<Value> {
        lock(&self.cancellations).iter().cloned().collect()
    }

    /// The latest `tools/call` requests received, oldest first: `{"id", "name"}` each.
    pub(super) fn calls(&self) -> Vec<Value> {
        lock(&self.calls).iter().cloned().collect()
    }

    /// Requests and notifications received so far, by method.
    pub(super) fn method_counts(&self) -> HashMap<String, u64> {
        lock(&self.methods)
            .iter()
            .map(|(method, count)| (method.clone(), *count))
            .collect()
    }

    fn count(&self, method: &str) {
        let mut methods = lock(&self.methods);
        // Most methods are counted before: no key to allocate for them.
        let room = methods.len() < MAX_COUNTED_METHODS;
        match methods.get_mut(method) {
            Some(count) => *count += 1,
            None if room => {
                methods.insert(method.to_owned(), 1);
            }
            None => {}
        }
    }
}

fn params(raw: Option<&serde_json::value::RawValue>) -> Value {
    raw.and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or(Value::Null)
}

fn push_bounded(queue: &Mutex<VecDeque<Value>>, value: Value, max: usize) {
    let mut queue = lock(queue);
    if queue.len() == max {
        queue.pop_front();
    }
    queue.push_back(value);
}

impl Handler for Demo {
    fn info(&self) -> Info {
        let mut info = Info::new(self.options.name.clone(), env!("CARGO_PKG_VERSION"))
            .with_instructions(self.options.instructions.clone());
        if self.options.server_features {
            info = info
                .with_resources()
                .with_prompts()
                .with_completions()
                .with_skills(true);
            info.resources_list_changed = true;
            info.prompts_list_changed = true;
        }
        // The conformance fixture announces tool changes on listen streams.
        info.tools_list_changed = self.options.conformance;
        info
    }

    fn tools(&self) -> Cow<'_, [Value]> {
        tools::definitions(self.options.faults, self.options.conformance)
    }

    fn call_tool(
        self: Arc<Self>,
        name: String,
        arguments: Arguments,
        ctx: Context,
    ) -> BoxFuture<Result<Reply, HandlerError>> {
        Box::pin(async move { tools::call(&self, &name, arguments, &ctx).await })
    }

    fn resources(&self) -> Cow<'_, [Value]> {
        resources::definitions(self.options.conformance)
    }

    fn resource_templates(&self) -> Cow<'_, [Value]> {
        resources::templates(self.options.conformance)
    }

    fn read_resource(
        self: Arc<Self>,
        uri: String,
        _: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        Box::pin(async move { resources::read(&self, &uri) })
    }

    fn skills(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(skills::catalogue().entries())
    }

    fn read_directory(
        self: Arc<Self>,
        uri: String,
        _: Context,
    ) -> BoxFuture<Result<Vec<Value>, HandlerError>> {
        let children = skills::catalogue()
            .read_directory(&uri)
            .ok_or_else(|| HandlerError::not_a_directory(&uri));
        Box::pin(std::future::ready(children))
    }

    fn check_subscription(&self, uri: &str) -> Result<(), HandlerError> {
        resources::read(self, uri).map(drop)
    }

    fn prompts(&self) -> Cow<'_, [Value]> {
        prompts::definitions(self.options.conformance)
    }

    fn get_prompt(
        self: Arc<Self>,
        name: String,
        arguments: Value,
        ctx: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        Box::pin(async move {
            if self.options.conformance {
                if let Some(result) = conformance::get_prompt(&name, &arguments, &ctx).await {
                    return result;
                }
            }
            prompts::get(&name, &arguments)
        })
    }

    fn complete(
        self: Arc<Self>,
        params: Value,
        _: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        Box::pin(async move {
            match completion::complete(&params) {
                // The fixture answers any reference, with no suggestions for ones it lacks.
                Err(_) if self.options.conformance => {
                    Ok(json!({"completion": {"values": [], "total": 0, "hasMore": false}}))
                }
                answered => answered,
            }
        })
    }

    fn observe(&self, message: Seen<'_>) -> bool {
        if self.frozen.load(Ordering::Relaxed) {
            return false;
        }
        match message {
            Seen::Request(request) => {
                self.count(&request.method);
                if self.options.faults && request.method == "tools/call" {
                    let params = params(request.params.as_deref());
                    push_bounded(
                        &self.calls,
                        json!({"id": request.id, "name": params["name"]}),
                        MAX_RECORDED_CALLS,
                    );
                }
            }
            Seen::Call { id, name, .. } => {
                self.count("tools/call");
                if self.options.faults {
                    push_bounded(
                        &self.calls,
                        json!({"id": id, "name": name}),
                        MAX_RECORDED_CALLS,
                    );
                }
            }
            Seen::Notification(notification) => {
                self.count(&notification.method);
                if notification.method == "notifications/cancelled" {
                    let params = params(notification.params.as_deref());
                    push_bounded(&self.cancellations, params, MAX_RECORDED_CANCELS);
                }
            }
            _ => {}
        }
        true
    }

    fn unknown_method(&self, method: &str) {
        if self.options.exit_on_unknown_method {
            log(format_args!(
                "exiting: {method} is not a method this server knows"
            ));
            std::process::exit(1);
        }
    }
}
