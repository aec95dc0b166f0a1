//! The server's resources, resource templates and prompts, listed when it becomes ready and
//! again on `notifications/resources/list_changed` and `notifications/prompts/list_changed`,
//! and published in its status, where the runtime resolves URIs and prompt names.
//!
//! A listing that fails is logged and the last one kept: the server still serves its tools.
//!
//! A stateless server's lists carry `ttlMs`: the listing is fresh for the shortest of its
//! pages (resources and templates together), at least [`MIN_FRESH`](crate::freshness::MIN_FRESH).
//! When the runtime resolves a URI or a prompt name with a listing past that, the listing is
//! used as it is and the actor is asked to list again (see [`crate::freshness::Freshness`]).

use std::sync::{Arc, Mutex};

use actix::Context;
use serde::de::DeserializeOwned;
use switchboard_codecs::mcp::{
    methods, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
};

use super::ServerActor;
use crate::call_table::Table;
use crate::core::ServerCore;
use crate::exchange::{exchange, Request};
use crate::paging::collect_pages;
use crate::status::ServerState;

/// Which lists to fetch again.
#[derive(Debug, Clone, Copy)]
pub(super) enum Lists {
    /// Resources and resource templates.
    Resources,
    /// Prompts.
    Prompts,
}

impl ServerActor {
    /// Lists `which` (those the server declared), and publishes them.
    pub(super) fn list_features(&mut self, which: Lists, ctx: &mut Context<Self>) {
        let (Some(link), Some(init)) = (&self.link, &self.learnt.init) else {
            return;
        };
        let caps = &init.capabilities;
        let declared = match which {
            Lists::Resources => caps.resources.is_some(),
            Lists::Prompts => caps.prompts.is_some(),
        };
        if !declared || !self.phase.is_ready() {
            // Nothing to list: callers waiting for a re-list go on.
            self.freshness_of(which).forget();
            return;
        }
        // Callers routing by a name the list does not have wait for this listing.
        self.freshness_of(which).announce();
        let own = Own {
            core: self.core.clone(),
            table: link.table.clone(),
            dialect: self.learnt.dialect.clone(),
        };
        let name = self.name.clone();
        let timeout = self.core.config.timeout;
        // The shortest `ttlMs` of the pages, noted as they arrive.
        let ttl = Ttl::default();
        match which {
            Lists::Resources => {
                let pages = ttl.clone();
                let work = async move {
                    let resources = collect_pages(&name, methods::RESOURCES_LIST, |cursor| {
                        let (own, pages) = (own.clone(), pages.clone());
                        async move {
                            let page: ListResourcesResult =
                                fetch(&own, methods::RESOURCES_LIST, cursor, timeout).await?;
                            pages.note(&page.extra);
                            Ok((page.resources, page.next_cursor))
                        }
                    })
                    .await;
                    let templates =
                        collect_pages(&name, methods::RESOURCE_TEMPLATES_LIST, |cursor| {
                            let (own, pages) = (own.clone(), pages.clone());
                            async move {
                                let page: ListResourceTemplatesResult =
                                    fetch(&own, methods::RESOURCE_TEMPLATES_LIST, cursor, timeout)
                                        .await?;
                                pages.note(&page.extra);
                                Ok((page.resource_templates, page.next_cursor))
                            }
                        })
                        .await;
                    (resources, templates)
                };
                self.when_same_link(ctx, work, move |act, (resources, templates), _| {
                    let listed = resources.is_ok() && templates.is_ok();
                    match resources {
                        Ok(list) => act.learnt.resources = Arc::from(list),
                        Err(why) => act.listing_kept(methods::RESOURCES_LIST, why),
                    }
                    match templates {
                        Ok(list) => act.learnt.resource_templates = Arc::from(list),
                        Err(why) => act.listing_kept(methods::RESOURCE_TEMPLATES_LIST, why),
                    }
                    act.republish();
                    act.freshness_of(Lists::Resources).settled();
                    act.relisted(Lists::Resources, listed, ttl.get());
                });
            }
            Lists::Prompts => {
                let pages = ttl.clone();
                let work = async move {
                    collect_pages(&name, methods::PROMPTS_LIST, |cursor| {
                        let (own, pages) = (own.clone(), pages.clone());
                        async move {
                            let page: ListPromptsResult =
                                fetch(&own, methods::PROMPTS_LIST, cursor, timeout).await?;
                            pages.note(&page.extra);
                            Ok((page.prompts, page.next_cursor))
                        }
                    })
                    .await
                };
                self.when_same_link(ctx, work, move |act, prompts, _| {
                    let listed = prompts.is_ok();
                    match prompts {
                        Ok(list) => act.learnt.prompts = Arc::from(list),
                        Err(why) => act.listing_kept(methods::PROMPTS_LIST, why),
                    }
                    act.republish();
                    act.freshness_of(Lists::Prompts).settled();
                    act.relisted(Lists::Prompts, listed, ttl.get());
                });
            }
        }
    }

    /// A listing of `which` ended (`listed`: it arrived, with `ttl`), after the status was
    /// published: callers that waited for it route by it.
    fn relisted(&self, which: Lists, listed: bool, ttl: Option<std::time::Duration>) {
        if !self.is_modern() {
            return;
        }
        let freshness = self.freshness_of(which);
        let now = std::time::Instant::now();
        if listed {
            freshness.listed(ttl, now);
        } else {
            freshness.failed(now);
        }
    }

    fn freshness_of(&self, which: Lists) -> &crate::freshness::Freshness {
        match which {
            Lists::Resources => &self.core.freshness.resources,
            Lists::Prompts => &self.core.freshness.prompts,
        }
    }

    fn listing_kept(&self, method: &str, why: Option<String>) {
        // `None`: the connection went away meanwhile, which is reported where it is handled.
        if let Some(why) = why {
            tracing::warn!(server = %self.name, method, "{why}; keeping the last list");
        }
    }

    fn republish(&mut self) {
        if self.phase.is_ready() {
            self.publish(ServerState::Ready);
        }
    }
}

/// The shortest `ttlMs` of a listing's pages so far.
#[derive(Clone, Default)]
struct Ttl(Arc<Mutex<Option<i64>>>);

impl Ttl {
    fn note(&self, extra: &serde_json::Map<String, serde_json::Value>) {
        let mut shortest = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *shortest = crate::freshness::shortest(*shortest, crate::freshness::ttl_ms(extra));
    }

    /// The listing's TTL (`None`: no page had one).
    fn get(&self) -> Option<std::time::Duration> {
        let shortest = *self.0.lock().unwrap_or_else(|e| e.into_inner());
        // Non-negative: `ttl_ms` reads negative as 0.
        shortest.map(|ms| std::time::Duration::from_millis(ms.unsigned_abs()))
    }
}

/// What the listing's requests need: the server's core and the connection to list on.
#[derive(Clone)]
struct Own {
    core: Arc<ServerCore>,
    table: Arc<Table>,
    dialect: Option<Arc<crate::era::Dialect>>,
}

/// One page of a list; the error is `None` when the connection is gone.
async fn fetch<R: DeserializeOwned>(
    own: &Own,
    method: &'static str,
    cursor: Option<String>,
    timeout: Option<std::time::Duration>,
) -> Result<R, Option<String>> {
    let params = match cursor {
        Some(cursor) => serde_json::json!({ "cursor": cursor }),
        None => serde_json::json!({}),
    };
    let request = Request::actor(
        method,
        params,
        timeout,
        own.table.clone(),
        own.dialect.clone(),
    );
    let raw = exchange(&own.core, request)
        .await
        .map_err(|e| Some(format!("{method} failed: {e}")))?;
    serde_json::from_str(raw.get()).map_err(|e| Some(format!("invalid {method} result: {e}")))
}
