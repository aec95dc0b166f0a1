//! `switchboard serve-metrics`: start a config file's servers and keep them running, with
//! their metrics at `http://ADDR/metrics`, until `SIGINT` or `SIGTERM`.
//!
//! ```text
//! $ switchboard serve-metrics -c .mcp.json --metrics 127.0.0.1:9464
//! switchboard: serving the metrics of 2 servers at http://127.0.0.1:9464/metrics
//! ```
//!
//! The servers restart as their config says; an interruption shuts them down and exits 0.

use std::net::SocketAddr;
use std::process::ExitCode;

use super::config::{self, ConfigArgs};
use super::{Failure, Interrupt, Interrupted, METRICS};

/// Where metrics are served without `--metrics`.
const DEFAULT_ADDR: &str = "127.0.0.1:9464";

pub(crate) const AFTER_HELP: &str = "\
The config file is -c FILE, else $SWITCHBOARD_CONFIG, else ./.mcp.json. Metrics are served at
http://ADDR/metrics, ADDR from --metrics (default 127.0.0.1:9464), until SIGINT or SIGTERM.

Example: switchboard serve-metrics -c .mcp.json --metrics 127.0.0.1:9464";

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    config: ConfigArgs,
}

pub(crate) async fn run(args: Args, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    if METRICS.get().is_none() {
        let addr: SocketAddr = DEFAULT_ADDR
            .parse()
            .map_err(|e| Failure::Run(format!("bad default metrics address: {e}")))?;
        let _ = METRICS.set(addr);
    }
    let file = args.config.load(false)?;
    let runtime = config::start_all(&file, interrupt).await?;
    let servers = runtime.servers().len();
    let plural = if servers == 1 { "" } else { "s" };
    if let Some(addr) = runtime.metrics_addr() {
        eprintln!(
            "switchboard: serving the metrics of {servers} server{plural} at http://{addr}/metrics"
        );
    }
    // Pending forever: only a signal ends the wait.
    let signal = match interrupt.guard(std::future::pending::<()>()).await {
        Ok(()) => "the end",
        Err(Interrupted(signal)) => signal,
    };
    super::shut_down(&runtime, super::Shutdown::Graceful, interrupt).await;
    eprintln!("switchboard: {signal}: the servers are shut down");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::super::{Cli, Command};

    #[test]
    fn metrics_is_a_global_flag() {
        let cli = Cli::try_parse_from([
            "switchboard",
            "call",
            "t",
            "--metrics",
            "127.0.0.1:9464",
            "--",
            "srv",
        ])
        .unwrap();
        assert_eq!(cli.metrics, Some("127.0.0.1:9464".parse().unwrap()));
        let cli = Cli::try_parse_from(["switchboard", "serve-metrics", "-c", "f.json"]).unwrap();
        assert!(matches!(cli.command, Some(Command::ServeMetrics(_))));
        assert_eq!(cli.metrics, None);
        let bad = Cli::try_parse_from(["switchboard", "--metrics", "localhost", "check"]);
        assert_eq!(bad.unwrap_err().exit_code(), 2);
    }
}
