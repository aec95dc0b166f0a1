//! The `switchboard` command: a tour of the runtime (`switchboard demo`, the default), the
//! servers of a config file (`switchboard tools`, `call` and `check`), and ad-hoc use against
//! any stdio MCP server (`switchboard tools -- CMD`, `switchboard call TOOL -- CMD`).
//!
//! The binary doubles as the bundled demo server: as a child process of itself it serves MCP
//! on stdio (`switchboard demo-server`, or with `SWITCHBOARD_DEMO_SERVER` set).

use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    if let Some(code) = switchboard_demo::main_from_env() {
        return code;
    }
    cli::main()
}
