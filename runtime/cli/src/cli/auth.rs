//! `switchboard auth login NAME | status | logout NAME`: OAuth for a config file's HTTP
//! servers that have an `"oauth"` object.
//!
//! Every command that reads a config file installs those servers' OAuth clients (see
//! [`attach`]): credentials in the user's credentials file, and when a person must approve,
//! the authorization URL printed on stderr (and handed to the desktop's opener) with the
//! redirect received on 127.0.0.1. `auth login` does that up front; `status` shows what is
//! stored (never a token); `logout` forgets it.

use std::sync::Arc;

use clap::{Args, Subcommand};
use switchboard::oauth::{self, FileStore, Loopback, OAuth, TokenStore};
use switchboard::ConfigFile;

use super::config::{self, ConfigArgs};
use super::{Failure, Interrupt};

/// `switchboard auth …`.
#[derive(Debug, Args)]
pub(crate) struct AuthArgs {
    #[command(subcommand)]
    command: AuthCommand,
    #[command(flatten)]
    config: ConfigArgs,
}

#[derive(Debug, Subcommand)]
enum AuthCommand {
    /// Authorize now: discover, register, and have the authorization approved in a browser.
    Login {
        /// The server (a config file entry with an "oauth" object).
        name: String,
    },
    /// Show what is stored for each server with an "oauth" object.
    Status,
    /// Forget the tokens and registration stored for a server.
    Logout {
        /// The server.
        name: String,
    },
    /// Remove a client's own tokens for a per-user server ("auth": {"perUser": "oauth"})
    /// of a gateway: its next call there asks it to authorize again.
    Revoke {
        /// The client, as the gateway names it: key:NAME, or ISSUER#SUB.
        #[arg(long, value_name = "PRINCIPAL")]
        client: String,
        /// The server.
        name: String,
        /// The gateway's per-user OAuth folder (its --oauth-dir).
        #[arg(long = "oauth-dir", value_name = "DIR")]
        oauth_dir: Option<std::path::PathBuf>,
    },
}

/// Installs OAuth clients for the file's servers that have an `"oauth"` object; returns them
/// by name. Nothing is touched (no credentials file, no listener) when there is none.
pub(crate) fn attach(file: &mut ConfigFile) -> Result<Vec<(String, OAuth)>, Failure> {
    if file.oauth.is_empty() {
        return Ok(Vec::new());
    }
    let store: Arc<dyn TokenStore> =
        Arc::new(FileStore::default_location().map_err(|e| Failure::Usage(format!("oauth: {e}")))?);
    let mut bind_error = None;
    let clients = file
        .attach_oauth(store, |name, settings| {
            let server = name.to_owned();
            match Loopback::new(settings.redirect_port.unwrap_or(0), move |url| {
                show(&server, url)
            }) {
                Ok(loopback) => Some(Arc::new(loopback) as Arc<dyn oauth::Authorizer>),
                Err(e) => {
                    bind_error.get_or_insert(format!(
                        "{name}: cannot listen on 127.0.0.1 for the oauth redirect: {e}"
                    ));
                    None
                }
            }
        })
        .map_err(|e| Failure::Usage(e.to_string()))?;
    match bind_error {
        Some(e) => Err(Failure::Usage(e)),
        None => Ok(clients),
    }
}

/// Shows the authorization URL, and asks the desktop to open it.
fn show(server: &str, url: &url::Url) {
    eprintln!("switchboard: authorize `{server}` in your browser:\n  {url}");
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    // Best effort: without a desktop the printed URL is the way.
    let _ = std::process::Command::new(opener)
        .arg(url.as_str())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// Runs `switchboard auth …`.
pub(crate) async fn run(
    args: AuthArgs,
    interrupt: &mut Interrupt,
) -> Result<std::process::ExitCode, Failure> {
    let plain = args.config.load_without_oauth(false)?;
    let command = match args.command {
        AuthCommand::Revoke {
            client,
            name,
            oauth_dir,
        } => return revoke(&plain, &client, &name, oauth_dir),
        command => command,
    };
    let mut file = plain.clone();
    let clients = attach(&mut file)?;
    let find = |name: &str| {
        clients
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.clone())
            .ok_or_else(|| {
                Failure::Usage(format!(
                    "`{name}` is not a server of {} with an \"oauth\" object",
                    file.path.display()
                ))
            })
    };
    match command {
        AuthCommand::Login { name } => {
            let client = find(&name)?;
            if let Err(error) = client.login().await {
                return Err(login_failed(&plain, &name, error, interrupt).await);
            }
            println!("{name}: authorized");
        }
        AuthCommand::Logout { name } => {
            find(&name)?
                .logout()
                .await
                .map_err(|e| Failure::Run(e.to_string()))?;
            println!("{name}: logged out");
        }
        AuthCommand::Revoke { .. } => {}
        AuthCommand::Status => {
            if clients.is_empty() {
                println!(
                    "no server of {} has an \"oauth\" object",
                    file.path.display()
                );
            }
            for (name, client) in &clients {
                let credentials = client
                    .credentials()
                    .await
                    .map_err(|e| Failure::Run(e.to_string()))?;
                println!("{name}: {}", describe(&credentials));
            }
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// `auth revoke --client PRINCIPAL NAME`: removes the client's tokens for per-user server
/// `NAME` from the gateway's folder.
fn revoke(
    file: &ConfigFile,
    client: &str,
    name: &str,
    dir: Option<std::path::PathBuf>,
) -> Result<std::process::ExitCode, Failure> {
    if !file.per_user.iter().any(|n| n == name) {
        return Err(Failure::Usage(format!(
            "`{name}` is not a server of {} whose \"auth\" says \"perUser\": \"oauth\"",
            file.path.display()
        )));
    }
    let url =
        config::url_of(file, name).ok_or_else(|| Failure::Usage(format!("`{name}` has no URL")))?;
    let dir = dir
        .or_else(super::serve::default_oauth_dir)
        .ok_or_else(|| Failure::Usage("give --oauth-dir (no XDG_STATE_HOME or HOME)".into()))?;
    let removed = switchboard_gateway::per_user::revoke(&dir, client, name, url)
        .map_err(|e| Failure::Run(format!("{}: {e}", dir.display())))?;
    if removed {
        println!("{name}: {client}'s authorization revoked");
    } else {
        println!(
            "{name}: {client} had no authorization stored in {}",
            dir.display()
        );
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Why `auth login NAME` failed. When discovery found no authorization server of the
/// server's own and a default endpoint was missing (what a server without OAuth gives), the
/// server is asked without credentials: one that answers needs no login, and saying so is
/// more use than the 404 of a guessed `/register`.
async fn login_failed(
    plain: &ConfigFile,
    name: &str,
    error: oauth::Error,
    interrupt: &mut Interrupt,
) -> Failure {
    let guessed = matches!(
        &error,
        oauth::Error::Status {
            status: 404 | 405,
            ..
        } | oauth::Error::NoMetadata { .. }
    );
    let failure = Failure::Run(error.to_string());
    if !guessed {
        return failure;
    }
    let Ok(runtime) = config::start_all(&config::only(plain, name), interrupt).await else {
        return failure;
    };
    let answered = runtime.server(name).is_ok_and(|s| s.status().is_ready());
    super::shut_down(&runtime, super::Shutdown::Graceful, interrupt).await;
    if !answered {
        return failure;
    }
    let at = config::url_of(plain, name).unwrap_or("its URL");
    Failure::Run(format!(
        "server `{name}` does not use OAuth: it answered at {at} without credentials (no 401), \
         and no authorization server is found for it ({error}); remove its \"oauth\" object"
    ))
}

/// One line about stored credentials, without any secret.
fn describe(credentials: &oauth::Credentials) -> String {
    let Some(tokens) = &credentials.tokens else {
        return "not logged in".into();
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let validity = match tokens.expires_at_ms {
        Some(at) if at > now => format!("token valid for {}s", (at - now) / 1000),
        Some(_) => "token expired".into(),
        None => "token without expiry".into(),
    };
    let refresh = if tokens.refresh_token.is_some() {
        ", refreshable"
    } else {
        ""
    };
    let scopes = if tokens.scopes.is_empty() {
        String::new()
    } else {
        format!(", scopes: {}", tokens.scopes.join(" "))
    };
    let client = credentials
        .client
        .as_ref()
        .map(|c| format!(", client {} at {}", c.client_id, c.issuer))
        .unwrap_or_default();
    format!("logged in; {validity}{refresh}{scopes}{client}")
}
