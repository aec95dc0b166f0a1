//! `switchboard serve`: every server of a config file as one MCP server, on stdin/stdout
//! or over Streamable HTTP, until the client leaves or `SIGINT`/`SIGTERM`.
//!
//! ```text
//! $ switchboard serve -c .mcp.json                      # MCP on stdin/stdout
//! $ switchboard serve -c .mcp.json --listen 8080        # http://127.0.0.1:8080/mcp
//! ```
//!
//! On stdio, stdout carries only MCP (logs go to stderr) and the end of stdin ends the
//! command. Over HTTP the address is loopback unless another one is given in full, and the
//! `Host`/`Origin` checks stay on (`--allow-host` names what a proxy in front forwards);
//! `/healthz` and `/readyz` answer probes. Either way an interruption stops serving and
//! shuts every server down before exiting 0.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use switchboard::Runtime;
use switchboard_gateway::Gateway;
use switchboard_server::http::{self, Probes};

use super::config::ConfigArgs;
use super::{Failure, Interrupt, Interrupted};

pub(crate) const AFTER_HELP: &str = "\
The config file is -c FILE, else $SWITCHBOARD_CONFIG, else ./.mcp.json: its servers' tools,
resources, resource templates and prompts are served as one MCP server, named as the other
commands name them (with one server and no prefix, as the server names them). Tool calls
(with their progress and cancellation), resources/read, prompts/get and completion/complete
are forwarded to the server that offers what they name, and the clients hear list_changed
when the catalogue changes. Both protocol eras are served, whatever era each server speaks.

Without --listen, MCP is spoken on stdin/stdout (logs on stderr) until stdin ends. With
--listen, Streamable HTTP is served at http://ADDR/mcp: a bare PORT binds 127.0.0.1:PORT;
any other address must be written out (0.0.0.0:8080) and is then reachable from the network
with no authentication (put a proxy that authenticates in front). Host and Origin headers
must name loopback, the address given, or an --allow-host name. GET /healthz answers 200
while serving, GET /readyz 200 once every server has started or failed, else 503.

SIGINT or SIGTERM stops serving and shuts the servers down; exit 0.

Examples:
  switchboard serve -c .mcp.json
  switchboard serve -c .mcp.json --listen 8080";

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio: PORT (on 127.0.0.1) or
    /// IP:PORT.
    #[arg(long, value_name = "ADDR", value_parser = listen_addr)]
    listen: Option<SocketAddr>,
    /// A host name the HTTP server also accepts in `Host` and `Origin` (repeatable), for a
    /// proxy in front that forwards it.
    #[arg(long = "allow-host", value_name = "NAME", requires = "listen")]
    allow_hosts: Vec<String>,
    #[command(flatten)]
    config: ConfigArgs,
}

/// `--listen`: a bare port is loopback's; anything else is a full socket address.
fn listen_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    text.parse()
        .map_err(|_| format!("expected PORT or IP:PORT (127.0.0.1:8080, [::1]:8080), not {text:?}"))
}

pub(crate) async fn run(args: Args, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    let file = args.config.load(false)?;
    // Bound first: a port already taken fails before any server is started.
    let listener = match args.listen {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| Failure::Run(format!("cannot listen on {addr}: {e}")))?,
        ),
        None => None,
    };
    let runtime = start(&file, interrupt).await?;
    let gateway = Gateway::new(runtime.clone());
    let front = gateway
        .clone()
        .serve(switchboard_server::Options::default());
    let servers = runtime.servers().len();
    let plural = if servers == 1 { "" } else { "s" };
    let served = match listener {
        None => {
            tracing::info!("serving {servers} server{plural} on stdin/stdout");
            interrupt.guard(front.server().serve_stdio()).await
        }
        Some(listener) => {
            let addr = listener
                .local_addr()
                .map_err(|e| Failure::Run(format!("the listener has no address: {e}")))?;
            let ready = gateway.clone();
            let mut config =
                http::Config::default().with_probes(Probes::new(move || ready.is_ready()));
            let mut hosts = args.allow_hosts;
            if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
                hosts.push(addr.ip().to_string());
            }
            config = config.allow_hosts(hosts);
            eprintln!("switchboard: serving {servers} server{plural} at http://{addr}/mcp");
            interrupt
                .guard(front.server().serve_http(listener, config))
                .await
        }
    };
    let outcome = match served {
        Ok(Ok(())) => Ok(ExitCode::SUCCESS),
        Ok(Err(e)) => Err(Failure::Run(e.to_string())),
        Err(Interrupted(signal)) => {
            tracing::info!("{signal}: shutting the servers down");
            Ok(ExitCode::SUCCESS)
        }
    };
    drop(front);
    super::shut_down(&runtime, interrupt).await;
    outcome
}

/// The config file's servers (a server that fails to start is served as failed, the others
/// as they are: fail open), started without the terminal's handlers: on stdio the
/// terminal is the MCP client's stream, and a server's questions are not ours to answer.
async fn start(
    file: &switchboard::ConfigFile,
    interrupt: &mut Interrupt,
) -> Result<Runtime, Failure> {
    let builder = Runtime::builder().with_env_defaults().config(file.clone());
    let starting = format!("the servers of {} were starting", file.path.display());
    super::start(builder, starting, interrupt).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_is_loopback_and_other_addresses_are_explicit() {
        assert_eq!(
            listen_addr("8080").unwrap(),
            "127.0.0.1:8080".parse().unwrap()
        );
        assert_eq!(
            listen_addr("0.0.0.0:9000").unwrap(),
            "0.0.0.0:9000".parse().unwrap()
        );
        assert_eq!(
            listen_addr("[::1]:9000").unwrap(),
            "[::1]:9000".parse().unwrap()
        );
        assert!(listen_addr("localhost:80").is_err());
        assert!(listen_addr("99999").is_err());
    }
}
