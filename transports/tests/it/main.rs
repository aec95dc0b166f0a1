//! Integration tests of the transports, one module per behaviour. Real child processes
//! (`/bin/sh`, `cat`, `sleep`) and wide margins.

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
