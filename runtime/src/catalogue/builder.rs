//! Catalogues made from tool lists at hand rather than from running servers: for tests, for
//! evaluating a search offline, for an application that has the lists already.

use std::collections::BTreeMap;
use std::sync::Arc;

use switchboard_codecs::mcp::Tool;

use super::search::SegmentCache;
use super::{Catalogue, Naming, ServerTools};

/// Builds [`Catalogue`] snapshots from servers' tool lists, named and searched as a
/// runtime's are; successive snapshots share their search index's per-server parts, as a
/// runtime's do.
///
/// ```
/// use switchboard::model::Tool;
/// use switchboard::{CatalogueBuilder, Naming};
///
/// let tool = |name: &str, description: &str| Tool {
///     name: name.into(),
///     description: Some(description.into()),
///     ..Tool::default()
/// };
/// let mut builder = CatalogueBuilder::new(Naming::default());
/// builder.set_server("git", vec![tool("git_log", "Shows the commit logs")]);
/// builder.set_server("files", vec![tool("read_file", "Reads a file")]);
/// let catalogue = builder.build();
/// assert_eq!(catalogue.search("recent commits", 5)[0].name, "git_log");
/// ```
#[derive(Debug, Default)]
pub struct CatalogueBuilder {
    naming: Naming,
    servers: BTreeMap<Arc<str>, Arc<[Tool]>>,
    cache: Arc<SegmentCache>,
    version: u64,
}

impl CatalogueBuilder {
    /// A builder with no servers, naming tools by `naming`.
    pub fn new(naming: Naming) -> Self {
        CatalogueBuilder {
            naming,
            ..CatalogueBuilder::default()
        }
    }

    /// Sets `server`'s tool list, as a server lists (or relists) its tools.
    pub fn set_server(
        &mut self,
        server: impl Into<Arc<str>>,
        tools: impl Into<Arc<[Tool]>>,
    ) -> &mut Self {
        self.servers.insert(server.into(), tools.into());
        self
    }

    /// Removes `server` and its tools.
    pub fn remove_server(&mut self, server: &str) -> &mut Self {
        self.servers.remove(server);
        self
    }

    /// The catalogue of the servers set now, its version one more than the last one built.
    pub fn build(&mut self) -> Catalogue {
        self.version += 1;
        let inputs: Vec<ServerTools<'_>> = self
            .servers
            .iter()
            .map(|(server, tools)| ServerTools {
                server,
                prefix: None,
                allow: &[],
                deny: &[],
                tools,
                source: Some(tools),
                available: true,
            })
            .collect();
        Catalogue::build(&inputs, &self.naming, self.version)
            .with_search_cache(Arc::clone(&self.cache))
    }
}
