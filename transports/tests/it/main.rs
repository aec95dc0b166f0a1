//! Integration tests of the transports, one module per behaviour. Real child processes
//! (`/bin/sh`, `cat`, `sleep`), scripted HTTP servers on 127.0.0.1 (`http_*`, feature
//! `http`), and wide margins.

mod support;

mod memory_round_trip;
#[cfg(all(unix, feature = "stdio"))]
mod stdio_bad_lines_are_skipped;
#[cfg(all(unix, feature = "stdio"))]
mod stdio_clear_env_starts_empty;
#[cfg(all(unix, feature = "stdio"))]
mod stdio_close_stops_the_whole_group;
#[cfg(all(unix, feature = "stdio"))]
mod stdio_drop_kills_the_group;
#[cfg(all(unix, feature = "stdio"))]
mod stdio_echo_round_trip;
#[cfg(all(unix, feature = "stdio"))]
mod stdio_exit_reports_status_and_stderr;
#[cfg(all(unix, feature = "stdio"))]
mod stdio_spawn_failure_names_the_program;
#[cfg(all(unix, feature = "stdio"))]
mod stdio_stderr_flood_does_not_block;

#[cfg(feature = "http")]
mod http_bad_messages_are_skipped;
#[cfg(feature = "http")]
mod http_get_stream_delivers_server_requests;
#[cfg(feature = "http")]
mod http_initialized_goes_first;
#[cfg(feature = "http")]
mod http_legacy_sse;
#[cfg(feature = "http")]
mod http_server_gone_closes;
#[cfg(feature = "http")]
mod http_session_expiry;
#[cfg(feature = "http")]
mod http_stateless_cancel;
#[cfg(feature = "http")]
mod http_stream_resumes_after_retry;
#[cfg(feature = "http")]
mod http_streamable_answers;
#[cfg(feature = "http")]
mod http_support;
#[cfg(feature = "http")]
mod http_unauthorized;
