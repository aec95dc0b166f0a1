//! The server's tools: listed (every page) at the end of the handshake, and again on
//! `notifications/tools/list_changed` or when a caller finds a stateless server's list past
//! its `ttlMs` (see [`super::relist`] for when). A listing is published in the status, and
//! the checks it implies are compiled once for every call (see `crate::tool_rules`).
//!
//! A listing that fails during the handshake fails the start; a re-listing that fails keeps
//! the last list.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::{AsyncContext, Context};
use switchboard_codecs::mcp::modern::headers::ParamHeader;
use switchboard_codecs::mcp::{self, methods};

use super::relist::Step;
use super::{Phase, ServerActor};
use crate::exchange::exchange;
use crate::paging::collect_pages;
use crate::status::ServerState;

/// How long a burst of `notifications/tools/list_changed` is gathered into one re-list.
const RELIST_DEBOUNCE: Duration = Duration::from_millis(100);

/// What a listing's pages said besides their tools.
#[derive(Debug, Default)]
struct PageFacts {
    identity: Option<mcp::Implementation>,
    ttl_ms: Option<i64>,
}

impl ServerActor {
    /// Lists every page of tools (see [`collect_pages`]), one request at a time.
    pub(super) fn list_tools(&mut self, ctx: &mut Context<Self>) {
        let Some(link) = &self.link else { return };
        let table = link.table.clone();
        let dialect = self.learnt.dialect.clone();
        let core = self.core.clone();
        let name = self.name.clone();
        let timeout = self.core.config.timeout;
        let listing = async move {
            // A stateless server may say who it is in a result's `_meta` only, and says how
            // long the listing is fresh (the shortest `ttlMs` of its pages).
            let facts = std::cell::RefCell::new(PageFacts::default());
            let tools = collect_pages(&name, methods::TOOLS_LIST, |cursor| {
                let params = match cursor {
                    Some(cursor) => serde_json::json!({ "cursor": cursor }),
                    None => serde_json::json!({}),
                };
                let request = crate::exchange::Request::actor(
                    methods::TOOLS_LIST,
                    params,
                    timeout,
                    table.clone(),
                    dialect.clone(),
                );
                let (core, facts) = (&core, &facts);
                async move {
                    let raw = exchange(core, request)
                        .await
                        .map_err(|e| format!("tools/list failed: {e}"))?;
                    let list: mcp::ListToolsResult = serde_json::from_str(raw.get())
                        .map_err(|e| format!("invalid tools/list result: {e}"))?;
                    let info = list.extra.get("_meta").and_then(|m| m.as_object());
                    let mut facts = facts.borrow_mut();
                    if let Some(info) = info.and_then(mcp::modern::server_info) {
                        facts.identity = Some(info);
                    }
                    facts.ttl_ms = crate::freshness::shortest(
                        facts.ttl_ms,
                        crate::freshness::ttl_ms(&list.extra),
                    );
                    Ok((list.tools, list.next_cursor))
                }
            })
            .await;
            (tools, facts.into_inner())
        };
        self.when_same_link(
            ctx,
            listing,
            move |act, (listed, facts), ctx| match listed {
                Ok(tools) => {
                    act.learn_identity(facts.identity);
                    let modern = act.is_modern();
                    act.on_tools_listed(tools, ctx);
                    // After the status is published: callers that waited for this listing
                    // route by it.
                    if modern {
                        let ttl = facts
                            .ttl_ms
                            .map(|t| Duration::from_millis(t.unsigned_abs()));
                        act.core
                            .freshness
                            .tools
                            .listed(ttl, std::time::Instant::now());
                    }
                }
                Err(detail) => act.listing_failed(detail, ctx),
            },
        );
    }

    fn on_tools_listed(&mut self, listing: Vec<mcp::Tool>, ctx: &mut Context<Self>) {
        let (listing, headers) = self.screen_header_tools(listing);
        // Compiled once per listing: calls go by the listing and its checks together.
        let rules =
            crate::tool_rules::ToolRules::compile(&self.name, &listing).with_param_headers(headers);
        self.learnt.tool_rules = Arc::new(rules);
        self.learnt.tools = Arc::from(listing);
        match self.phase {
            Phase::ListingTools => {
                self.become_ready(ctx);
                // A change announced during the handshake's listing is listed now.
                self.relist_ended(ctx);
            }
            Phase::Ready { .. } => {
                self.open_gate();
                self.publish(ServerState::Ready);
                self.relist_ended(ctx);
            }
            _ => {}
        }
    }

    fn listing_failed(&mut self, detail: String, ctx: &mut Context<Self>) {
        if self.is_modern() {
            // Callers waiting for a re-list go on with the last list.
            self.core.freshness.tools.failed(std::time::Instant::now());
        }
        if matches!(self.phase, Phase::ListingTools) {
            let error = self.handshake_error(detail);
            self.fail_start(error, ctx);
        } else {
            tracing::warn!(server = %self.name, "refreshing the tool list failed: {detail}");
            self.relist_ended(ctx);
        }
    }

    /// `notifications/tools/list_changed`: re-list once per burst. One that arrives while
    /// the handshake lists the tools means one more listing once that one ends (the server
    /// may have answered it before the change: server-everything adds tools once it is
    /// initialized, and announces them).
    pub(super) fn on_tools_changed(&mut self, ctx: &mut Context<Self>) {
        if !self.phase.is_ready() && !matches!(self.phase, Phase::ListingTools) {
            // Nothing is listed yet: the handshake's listing, when it comes, sees the change.
            self.core.freshness.tools.settled();
            return;
        }
        let step = self.relist.changed();
        self.take(step, ctx);
    }

    /// A caller found the list stale: re-list now (the callers of the burst wait for it).
    pub(super) fn tools_stale(&mut self, ctx: &mut Context<Self>) {
        let step = self.relist.stale();
        self.take(step, ctx);
    }

    fn relist_ended(&mut self, ctx: &mut Context<Self>) {
        let step = self.relist.ended();
        self.take(step, ctx);
        if self.relist == super::relist::Relist::Idle {
            // After the status is published: callers of a name the announced change may
            // have brought route by the new list, or fail.
            self.core.freshness.tools.settled();
        }
    }

    fn take(&mut self, step: Step, ctx: &mut Context<Self>) {
        match step {
            Step::Wait => {}
            Step::Debounce => {
                let generation = self.generation;
                ctx.run_later(RELIST_DEBOUNCE, move |act, ctx| {
                    if act.generation == generation && act.phase.is_ready() {
                        let step = act.relist.debounced();
                        act.take(step, ctx);
                    }
                });
            }
            Step::List if self.phase.is_ready() => self.list_tools(ctx),
            Step::List => {
                self.relist.reset();
                self.core.freshness.tools.settled();
            }
        }
    }

    /// A modern server over HTTP: tools whose `x-mcp-header` annotations are invalid are left
    /// out (with a warning), as the transport requires, and the valid ones' headers are
    /// returned, for the framer to send with each `tools/call`. Other servers' tools pass as
    /// they are (stdio may ignore the annotations).
    fn screen_header_tools(
        &self,
        listing: Vec<mcp::Tool>,
    ) -> (Vec<mcp::Tool>, HashMap<String, Vec<ParamHeader>>) {
        let mut headers = HashMap::new();
        let sends_headers = self
            .link
            .as_ref()
            .is_some_and(|l| l.control.kind().sends_request_headers());
        if !self.is_modern() || !sends_headers {
            return (listing, headers);
        }
        let mut kept = Vec::with_capacity(listing.len());
        for tool in listing {
            match ParamHeader::from_schema(&tool.input_schema) {
                Ok(found) => {
                    if !found.is_empty() {
                        headers.insert(tool.name.clone(), found);
                    }
                    kept.push(tool);
                }
                Err(why) => tracing::warn!(
                    server = %self.name,
                    tool = %tool.name,
                    "tool left out: its x-mcp-header annotations are invalid: {why}"
                ),
            }
        }
        (kept, headers)
    }
}
