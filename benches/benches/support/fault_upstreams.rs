//! Two upstreams for the gateway's fault benches, both this bench binary re-executed (as the
//! blocking echo server is) and both blocking std I/O over stdio:
//!
//! - the *waiter* ([`WAITER_VAR`], set to a Unix socket's path): lists one tool, `wait`,
//!   never answers a call of it, and writes one byte to the socket the moment it reads
//!   something the bench times: `c` for a `tools/call` of `wait`, `x` for a
//!   `notifications/cancelled`. The bench takes `Instant::now()` when the byte arrives (the
//!   socket hop costs some microseconds).
//! - the *crash looper* ([`CRASH_AFTER_VAR`], set to milliseconds): the echo server, which
//!   exits (code 1) that long after its handshake, every time it is started.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::time::Duration;

use super::echo_server::{self, Answered};

/// Set to a Unix socket's path, this bench binary is the waiter.
pub(crate) const WAITER_VAR: &str = "SWITCHBOARD_BENCH_WAITER_SOCKET";

/// Set to milliseconds, this bench binary is the echo server exiting that long after its
/// handshake.
pub(crate) const CRASH_AFTER_VAR: &str = "SWITCHBOARD_BENCH_CRASH_AFTER_MS";

/// Set to a file's path (with [`CRASH_AFTER_VAR`]), the crash looper appends a line to it at
/// every start.
pub(crate) const STARTS_VAR: &str = "SWITCHBOARD_BENCH_STARTS_FILE";

/// Runs one of the two if the environment asks for it, and returns its exit code.
pub(crate) fn main_from_env() -> Option<ExitCode> {
    let served = if let Some(socket) = std::env::var_os(WAITER_VAR) {
        match UnixStream::connect(&socket) {
            Ok(report) => serve_waiter(report),
            Err(e) => Err(io::Error::new(e.kind(), format!("{socket:?}: {e}"))),
        }
    } else {
        let ms = std::env::var(CRASH_AFTER_VAR).ok()?;
        let ms: u64 = ms.parse().unwrap_or(50);
        if let Some(starts) = std::env::var_os(STARTS_VAR) {
            let file = File::options().append(true).create(true).open(starts);
            let _ = file.and_then(|mut f| f.write_all(b"start\n"));
        }
        serve_crashing(Duration::from_millis(ms))
    };
    Some(match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench fault upstream: {e}");
            ExitCode::FAILURE
        }
    })
}

/// Reads stdin a line at a time and hands each to `serve` with stdout, flushing whenever no
/// more input is buffered, until stdin ends.
fn each_line(
    mut serve: impl FnMut(&[u8], &mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let input = File::from(io::stdin().as_fd().try_clone_to_owned()?);
    let output = File::from(io::stdout().as_fd().try_clone_to_owned()?);
    let (mut reader, mut writer) = (BufReader::new(input), BufWriter::new(output));
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return writer.flush();
        }
        serve(&line, &mut writer)?;
        if reader.buffer().is_empty() {
            writer.flush()?;
        }
    }
}

/// The echo server's answer to `line`, on a line of its own.
fn echo(line: &[u8], writer: &mut BufWriter<File>) -> io::Result<Answered> {
    let answered = echo_server::answer(line, writer)?;
    if answered != Answered::Nothing {
        writer.write_all(b"\n")?;
    }
    Ok(answered)
}

fn serve_waiter(mut report: UnixStream) -> io::Result<()> {
    each_line(|line, writer| {
        let message: serde_json::Value = serde_json::from_slice(line).unwrap_or_default();
        match message["method"].as_str().unwrap_or_default() {
            "tools/call" if message["params"]["name"] == "wait" => report.write_all(b"c"),
            "notifications/cancelled" => report.write_all(b"x"),
            "tools/list" => writeln!(
                writer,
                concat!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{{"name":"wait","#,
                    r#""description":"Never answers","#,
                    r#""inputSchema":{{"type":"object"}}}}]}}}}"#
                ),
                id = &message["id"]
            ),
            _ => echo(line, writer).map(drop),
        }
    })
}

fn serve_crashing(after: Duration) -> io::Result<()> {
    each_line(|line, writer| {
        if echo(line, writer)? == Answered::Initialize {
            std::thread::spawn(move || {
                std::thread::sleep(after);
                std::process::exit(1);
            });
        }
        Ok(())
    })
}
