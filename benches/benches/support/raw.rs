//! An MCP client with no framework: `std::process`, a `BufWriter` and a `BufReader`, one
//! line out and one line in. The physical floor every ratio is taken against.
//!
//! It does the real handshake (`initialize`, `notifications/initialized`) and then sends the
//! same `tools/call` frame Switchboard sends (`echo`, with a `_meta.progressToken`).

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, TrySendError};
use std::time::{Duration, Instant};

use super::measure::{usage, Profile};

/// A server child (the demo server, or the blocking echo server) and the raw pipes to it.
#[derive(Debug)]
pub(crate) struct RawClient {
    child: Child,
    stdin: Option<BufWriter<ChildStdin>>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
}

impl RawClient {
    /// Starts the server `command` names (`support::demo_command`, `support::echo_command`)
    /// and does the MCP handshake.
    pub(crate) fn spawn(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the server");
        let stdin = BufWriter::new(child.stdin.take().expect("stdin"));
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut client = RawClient {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 1,
            line: String::new(),
        };
        client.handshake();
        client
    }

    /// CPU time the server child has used so far: the sum over its live threads of their
    /// time on a CPU (`/proc/<pid>/task/*/schedstat`, in ns); threads that have exited are
    /// not counted.
    pub(crate) fn server_cpu(&self) -> Duration {
        let tasks = format!("/proc/{}/task", self.child.id());
        let Ok(entries) = std::fs::read_dir(tasks) else {
            return Duration::ZERO;
        };
        let ns: u64 = entries
            .flatten()
            .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
            .filter_map(|line| line.split_whitespace().next()?.parse::<u64>().ok())
            .sum();
        Duration::from_nanos(ns)
    }

    fn stdin(&mut self) -> &mut BufWriter<ChildStdin> {
        self.stdin.as_mut().expect("stdin is open")
    }

    fn handshake(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        let init = format!(
            concat!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"initialize","params":{{"#,
                r#""protocolVersion":"2025-06-18","capabilities":{{}},"#,
                r#""clientInfo":{{"name":"raw-bench","version":"0.1.0"}}}}}}"#,
                "\n"
            ),
            id
        );
        self.stdin().write_all(init.as_bytes()).expect("write");
        self.stdin().flush().expect("flush");
        self.line.clear();
        self.stdout.read_line(&mut self.line).expect("read");
        assert!(
            self.line.contains("\"protocolVersion\""),
            "initialize answer: {}",
            self.line
        );
        let stdin = self.stdin();
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .expect("write");
        stdin.flush().expect("flush");
    }

    /// One `tools/call echo`, blocking: write a line, flush, read a line.
    pub(crate) fn call(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        write_echo(self.stdin.as_mut().expect("stdin is open"), id);
        self.stdin().flush().expect("flush");
        self.line.clear();
        let n = self.stdout.read_line(&mut self.line).expect("read");
        assert!(n > 0, "the server closed its output");
        debug_assert_eq!(response_id(&self.line), Some(id));
    }

    /// `total` calls with at most `window` outstanding: a writer thread writes requests
    /// (flushing only when the window is full or it is done), a reader thread reads answers.
    /// Returns the wall time, and each call's latency if `timed`.
    pub(crate) fn pipelined(
        &mut self,
        total: u64,
        window: usize,
        timed: bool,
    ) -> (Duration, Vec<Duration>) {
        let first = self.next_id;
        self.next_id += total;
        let sent: Vec<AtomicU64> = if timed {
            (0..total).map(|_| AtomicU64::new(0)).collect()
        } else {
            Vec::new()
        };
        // A token per outstanding request: the writer blocks when `window` are queued.
        let (slots, freed) = sync_channel::<()>(window);
        let started = Instant::now();
        let stdin = self.stdin.as_mut().expect("stdin is open");
        let stdout = &mut self.stdout;
        let sent = &sent;
        let latencies = std::thread::scope(|s| {
            s.spawn(move || {
                for i in 0..total {
                    match slots.try_send(()) {
                        Ok(()) => {}
                        Err(TrySendError::Full(())) => {
                            stdin.flush().expect("flush");
                            slots.send(()).expect("the reader is alive");
                        }
                        Err(TrySendError::Disconnected(())) => panic!("the reader stopped"),
                    }
                    if timed {
                        sent[i as usize]
                            .store(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    }
                    write_echo(stdin, first + i);
                }
                stdin.flush().expect("flush");
            });
            let reader = s.spawn(move || {
                let mut line = String::new();
                let mut latencies = Vec::with_capacity(if timed { total as usize } else { 0 });
                for _ in 0..total {
                    line.clear();
                    let n = stdout.read_line(&mut line).expect("read");
                    assert!(n > 0, "the server closed its output");
                    if timed {
                        let id = response_id(&line).expect("an answer with an id");
                        let at = sent[(id - first) as usize].load(Ordering::Relaxed);
                        let now = started.elapsed().as_nanos() as u64;
                        latencies.push(Duration::from_nanos(now.saturating_sub(at)));
                    }
                    freed.recv().expect("the writer sent as much");
                }
                latencies
            });
            reader.join().expect("reader")
        });
        (started.elapsed(), latencies)
    }

    /// Profiles `total` sequential calls.
    pub(crate) fn profile_sequential(&mut self, name: &str, total: u64) -> Profile {
        let mut latencies = Vec::with_capacity(total as usize);
        let used = usage();
        let started = Instant::now();
        for _ in 0..total {
            let t = Instant::now();
            self.call();
            latencies.push(t.elapsed());
        }
        let wall = started.elapsed();
        Profile::new(name, latencies, wall, usage() - used)
    }

    /// Profiles `total` pipelined calls, `window` outstanding.
    pub(crate) fn profile_pipelined(&mut self, name: &str, total: u64, window: usize) -> Profile {
        let used = usage();
        let (wall, latencies) = self.pipelined(total, window, true);
        Profile::new(name, latencies, wall, usage() - used)
    }
}

impl Drop for RawClient {
    fn drop(&mut self) {
        // Closing stdin is the server's cue to exit.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes the `tools/call echo` request Switchboard would send for this id.
fn write_echo(out: &mut impl Write, id: u64) {
    write!(
        out,
        concat!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"#,
            r#""name":"echo","arguments":{{"text":"ping"}},"_meta":{{"progressToken":{id}}}}}}}"#,
            "\n"
        ),
        id = id
    )
    .expect("write");
}

/// The numeric id of an answer line, found without parsing the JSON.
fn response_id(line: &str) -> Option<u64> {
    let at = line.find("\"id\":")? + 5;
    let digits = line[at..].trim_start();
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().ok()
}
