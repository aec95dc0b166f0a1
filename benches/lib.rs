//! Criterion benchmarks of Switchboard live in `benches/`; run them with `cargo bench`.
//!
//! - `routing`: the runtime's own cost over the memory transport, 1 to 256 in flight, next
//!   to a bare cross-thread round trip; the same with a Prometheus exporter; catalogue
//!   routing across 1, 10 and 100 servers of 50 tools.
//! - `stdio`: a blocking std-I/O echo server and the demo server as child processes,
//!   sequential and 64 in flight, then Switchboard, the raw client and rmcp measured in
//!   turns against both, with the ratios that matter.
//! - `http`: Streamable HTTP to a local one-thread hyper server: Switchboard, rmcp (as
//!   shipped and with a pooled client) and bare keep-alive POSTs, measured in turns.
//! - `baseline`: MCP clients with no framework, the floor.
//! - `peers`: the official Rust SDK (`rmcp`).
//! - `codec`: `LinesCodec` and `jsonrpc::Message`, bytes/s.
//! - `faults`: 10,000 deadlines expiring together; a crash with 1,000 calls pending.
//! - `search`: tool search over 5,000 tools (the evaluation set's corpus repeated under
//!   other server names), and the index update when one server relists.
//!
//! [`search_eval`] reads the tool-search evaluation set (`search_eval/`) for the bench, the
//! example `search_eval` (metrics, and rankings for `score.py`) and the test that holds the
//! lexical ranking to its target.
//!
//! `BENCHMARKS.md` at the workspace root has the numbers and how to read them.

pub mod search_eval;
