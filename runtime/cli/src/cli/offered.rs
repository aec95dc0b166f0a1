//! What each server offers besides tools (resources, prompts), asked of every ready server
//! at once, and the one server a `read` or `prompt` goes to.
//!
//! `resources` and `prompts` print one [`Listing`] per server, as `tools` does: a config of
//! one server (`-- CMD` is one) that is not ready, or whose listing fails, is a failure of
//! its own (exit 3, one line); several servers are listed in full, then exit 3 if any is not
//! ready or could not be listed. A server that does not offer the feature (no capability
//! declared, or an older server that answers "method not found") is listed as such and is
//! no failure.
//!
//! `read` and `prompt` go to the server `--server` names, else to the only server of a config
//! of one, else to the one server whose listing has what they were asked for ([`unique`]).

use std::future::Future;
use std::process::ExitCode;

use futures_util::future::join_all;
use serde::ser::{Serialize, SerializeMap, Serializer};

use switchboard::{ConfigFile, Runtime, ServerHandle};

use super::config::{self, Report};
use super::{ready, Failure, Interrupt, Interrupted};

/// JSON-RPC "method not found", which a server that predates declared capabilities answers
/// for a feature it does not have.
const METHOD_NOT_FOUND: i64 = -32601;

/// What one server offers of a feature.
#[derive(Debug)]
pub(crate) enum Offer<T> {
    /// What it listed.
    Listed(T),
    /// It does not offer the feature.
    NotOffered,
    /// It is not ready (its report says why).
    NotReady,
    /// Listing failed: why.
    Failed(String),
}

/// One configured server and what it offers.
#[derive(Debug)]
pub(crate) struct Listing<T> {
    pub(crate) report: Report,
    pub(crate) offer: Offer<T>,
}

impl<T> Listing<T> {
    /// Why this server's listing is missing, for its line or JSON entry: not ready, or the
    /// listing failed.
    pub(crate) fn error(&self) -> Option<&str> {
        match &self.offer {
            Offer::Failed(why) => Some(why),
            _ => self.report.error.as_deref(),
        }
    }

    /// Whether this is an enabled server whose listing is missing: the command exits 3.
    fn failed(&self) -> bool {
        matches!(self.offer, Offer::Failed(_)) || self.report.failed()
    }
}

/// `Ok(None)` for an error that says the server does not offer the feature.
pub(crate) fn offered<T>(result: switchboard::Result<T>) -> switchboard::Result<Option<T>> {
    match result {
        Ok(listed) => Ok(Some(listed)),
        Err(e) => match e.kind() {
            switchboard::ErrorKind::NotSupported { .. }
            | switchboard::ErrorKind::Rpc {
                code: METHOD_NOT_FOUND,
                ..
            } => Ok(None),
            _ => Err(e),
        },
    }
}

/// Asks every ready server of `file` with `list` at once; `what` names the feature for the
/// message of an interruption (`resources`, `prompts`).
pub(crate) async fn list_each<T, F, Fut>(
    runtime: &Runtime,
    file: &ConfigFile,
    what: &str,
    interrupt: &mut Interrupt,
    list: F,
) -> Result<Vec<Listing<T>>, Failure>
where
    F: Fn(ServerHandle) -> Fut,
    Fut: Future<Output = switchboard::Result<Option<T>>>,
{
    let reports = config::reports(runtime, file, false);
    let asks = reports.iter().map(|report| {
        let ask = report
            .status
            .as_ref()
            .filter(|status| status.is_ready())
            .and_then(|_| runtime.server(&report.name).ok())
            .map(&list);
        async move {
            let Some(ask) = ask else {
                return Offer::NotReady;
            };
            match ask.await {
                Ok(Some(listed)) => Offer::Listed(listed),
                Ok(None) => Offer::NotOffered,
                Err(e) => Offer::Failed(e.to_string()),
            }
        }
    });
    let offers = interrupt
        .guard(join_all(asks))
        .await
        .map_err(|Interrupted(signal)| {
            Failure::Interrupted(format!("interrupted by {signal} while listing the {what}"))
        })?;
    Ok(reports
        .into_iter()
        .zip(offers)
        .map(|(report, offer)| Listing { report, offer })
        .collect())
}

/// The failure of a listing of one server that is not ready or failed to list; it is all a
/// command about that server prints.
pub(crate) fn only_failure<T>(listings: &[Listing<T>]) -> Option<Failure> {
    let [only] = listings else { return None };
    match &only.offer {
        Offer::Failed(why) => Some(Failure::Run(why.clone())),
        Offer::NotReady => only.report.unready(),
        Offer::Listed(_) | Offer::NotOffered => None,
    }
}

/// The one stderr line after a listing of several servers some of which are not ready or
/// could not be listed; `None` if there are none.
pub(crate) fn failure<T>(listings: &[Listing<T>], what: &str) -> Option<Failure> {
    let failed: Vec<&str> = listings
        .iter()
        .filter(|l| l.failed())
        .map(|l| l.report.name.as_str())
        .collect();
    let enabled = listings.len();
    match failed[..] {
        [] => None,
        [one] => Some(Failure::Run(format!(
            "the {what} of 1 of {enabled} servers could not be listed: {one}"
        ))),
        _ => Some(Failure::Run(format!(
            "the {what} of {} of {enabled} servers could not be listed: {}",
            failed.len(),
            failed.join(", ")
        ))),
    }
}

/// `file` with only the server `--server` names, checked before anything starts: it must be
/// one of the file's enabled servers.
pub(crate) fn narrow(file: &ConfigFile, name: &str) -> Result<ConfigFile, Failure> {
    if file.disabled.iter().any(|d| d == name) {
        return Err(Failure::Usage(format!(
            "server `{name}` is disabled in {}",
            file.path.display()
        )));
    }
    if !file.servers.iter().any(|(n, _)| n == name) {
        let names: Vec<String> = file.servers.iter().map(|(n, _)| format!("`{n}`")).collect();
        return Err(Failure::Usage(format!(
            "--server {name}: no such server; the servers are {}",
            names.join(", ")
        )));
    }
    Ok(config::only(file, name))
}

/// The server `--server` names (the only one started, see [`narrow`]), ready.
pub(crate) fn named(
    runtime: &Runtime,
    file: &ConfigFile,
    name: &str,
) -> Result<ServerHandle, Failure> {
    narrow(file, name)?;
    let server = runtime.server(name)?;
    ready(&server, config::url_of(file, name))?;
    Ok(server)
}

/// The server a `read` or `prompt` goes to without `--server`, when the config has only one:
/// it, if ready.
pub(crate) fn only(runtime: &Runtime, file: &ConfigFile) -> Result<Option<ServerHandle>, Failure> {
    let Some(name) = config::only_server(file) else {
        return Ok(None);
    };
    let server = runtime.server(name)?;
    ready(&server, config::url_of(file, name))?;
    Ok(Some(server))
}

/// What a search of the listings found: the servers that have it, and those that could not
/// be searched (not ready, or their listing failed) with why.
#[derive(Debug, PartialEq)]
pub(crate) enum Found<'a> {
    One(&'a str),
    None { unsearched: Vec<String> },
    Several(Vec<&'a str>),
}

/// The servers whose listing `has` what was asked for.
pub(crate) fn unique<'a, T>(listings: &'a [Listing<T>], has: impl Fn(&T) -> bool) -> Found<'a> {
    let found: Vec<&str> = listings
        .iter()
        .filter(|l| matches!(&l.offer, Offer::Listed(listed) if has(listed)))
        .map(|l| l.report.name.as_str())
        .collect();
    match found[..] {
        [one] => Found::One(one),
        [] => Found::None {
            unsearched: listings
                .iter()
                .filter(|l| l.failed())
                .map(|l| match l.error() {
                    Some(why) => format!("`{}` ({why})", l.report.name),
                    None => format!("`{}`", l.report.name),
                })
                .collect(),
        },
        _ => Found::Several(found),
    }
}

/// `` `a`, `b` `` for a message.
pub(crate) fn quoted(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    quoted.join(", ")
}

/// `switchboard resources` and `switchboard prompts`: starts `file`'s servers, lists `what`
/// on each ready one, prints the listings (`document` with `--json`, else `text`), and exits
/// as `tools` does: one server's failure is its own error, several are printed, then exit 3.
pub(crate) async fn run_listing<T, F, Fut>(
    file: &ConfigFile,
    json: bool,
    what: &str,
    interrupt: &mut Interrupt,
    list: F,
    document: fn(&[Listing<T>]) -> Result<String, Failure>,
    text: fn(&[Listing<T>]) -> String,
) -> Result<ExitCode, Failure>
where
    F: Fn(ServerHandle) -> Fut,
    Fut: Future<Output = switchboard::Result<Option<T>>>,
{
    let runtime = config::start_all(file, interrupt).await?;
    let listings = list_each(&runtime, file, what, interrupt, list).await;
    let listed = listings.and_then(|listings| {
        if let Some(failure) = only_failure(&listings) {
            return Err(failure);
        }
        let output = if json {
            document(&listings)?
        } else {
            text(&listings)
        };
        Ok((output, listings))
    });
    let (output, outcome) = match listed {
        Ok((output, listings)) => match failure(&listings, what) {
            Some(failure) => (output, Err(failure)),
            None => (output, Ok(ExitCode::SUCCESS)),
        },
        Err(failure) => (String::new(), Err(failure)),
    };
    super::finish(&runtime, &output, outcome, interrupt).await
}

/// The `--json` document of a listing of `key` (`"prompts"`, `"skills"`):
/// `{"servers": [{"name", "state", "error", key}]}`, one entry per server in file order, whose
/// `key` is what it listed, `null` when it does not offer the feature, and empty (with
/// `error` saying why) when it is not ready or its listing failed.
pub(crate) fn listing_document<T: Serialize>(
    listings: &[Listing<Vec<T>>],
    key: &'static str,
) -> Result<String, Failure> {
    let servers: Vec<ServerDocument<'_, T>> = listings
        .iter()
        .map(|listing| ServerDocument { listing, key })
        .collect();
    let document = serde_json::to_string_pretty(&Document { servers })
        .map_err(|e| Failure::Run(format!("cannot write the {key} as JSON: {e}")))?;
    Ok(document + "\n")
}

#[derive(serde::Serialize)]
struct Document<'a, T> {
    servers: Vec<ServerDocument<'a, T>>,
}

/// One server's entry in [`listing_document`], its fields in that order.
struct ServerDocument<'a, T> {
    listing: &'a Listing<Vec<T>>,
    key: &'static str,
}

impl<T: Serialize> Serialize for ServerDocument<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let listing = self.listing;
        let listed: Option<&[T]> = match &listing.offer {
            Offer::Listed(items) => Some(items),
            Offer::NotOffered => None,
            Offer::NotReady | Offer::Failed(_) => Some(&[]),
        };
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("name", &listing.report.name)?;
        map.serialize_entry("state", listing.report.state)?;
        map.serialize_entry("error", &listing.error())?;
        map.serialize_entry(self.key, &listed)?;
        map.end()
    }
}

/// The human listing of `what`: `lines` for one server, else each server's line (name, state,
/// error or "no WHAT") with its own lines indented under it.
pub(crate) fn grouped_text<T>(
    listings: &[Listing<T>],
    what: &str,
    lines: impl Fn(&mut String, &str, &T),
) -> String {
    let mut out = String::new();
    if let [only] = listings {
        match &only.offer {
            Offer::Listed(listed) => lines(&mut out, "", listed),
            _ => eprintln!("server `{}`: no {what}", only.report.name),
        }
        return out;
    }
    for listing in listings {
        out.push_str(&listing.report.name);
        out.push_str(" (");
        out.push_str(listing.report.state);
        if let Some(error) = listing.error() {
            out.push_str(", ");
            out.push_str(error);
        } else if matches!(listing.offer, Offer::NotOffered) {
            out.push_str(", no ");
            out.push_str(what);
        }
        out.push_str(")\n");
        if let Offer::Listed(listed) = &listing.offer {
            lines(&mut out, "  ", listed);
        }
    }
    out
}
