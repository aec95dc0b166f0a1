//! Tool search over a [`Catalogue`]: which tools serve a request written in plain words,
//! best first, so that an agent can hand its model a few tools instead of hundreds.
//!
//! [`Catalogue::search`] (and [`Runtime::search_tools`](crate::Runtime::search_tools) on
//! the runtime's catalogue now) ranks the listed tools by a lexical score, BM25F; an
//! embedder may add its own [`ToolScorer`] (say, an embedding model's similarity), fused
//! with the lexical rank; [`ToolSearch::filter`] restricts the tools considered before the
//! limit is applied (a gateway's per-client tool permissions). Only tools in the catalogue
//! are found: a tool a server's allow/deny globs reject never is.
//!
//! ```
//! # fn demo(runtime: &switchboard::Runtime) {
//! for found in runtime.search_tools("who touched this file lately", 5) {
//!     println!("{} ({}) {:.2}", found.name, found.server, found.score);
//! }
//! # }
//! ```
//!
//! # Ranking
//!
//! Every tool is a document of six fields, analysed as described in the private module
//! `analyse` (words split at `_`, `-`, `.` and case changes; lower case; English stop words
//! dropped; Snowball English stems; a query's words widened by a small table of synonyms
//! general to tool catalogues, at half weight). The fields, with their weights `w` and
//! length normalisation `b`:
//!
//! | field | w | b |
//! | --- | ---: | ---: |
//! | tool name | 3.0 | 0.3 |
//! | title | 2.0 | 0.3 |
//! | description | 1.0 | 0.75 |
//! | input schema property names (nested too) and `enum` strings | 0.5 | 0.75 |
//! | input schema property descriptions | 0.3 | 0.75 |
//! | server name | 1.5 | 0 |
//!
//! A query term `t` (weight `q`: 1, or 0.5 for a synonym) adds to a tool's score
//! `q · idf(t) · tf / (k1 + tf)`, where `tf = Σ_f w_f · tf_f / (1 − b_f + b_f · len_f /
//! avglen_f)` over the fields, `k1 = 1.2`, and `idf(t) = ln(1 + (N − n_t + 0.5) / (n_t +
//! 0.5))` over the `N` listed tools, `n_t` of which have `t` in some field. Ties keep
//! catalogue order. Tools that match no term are not returned.
//!
//! With a [`ToolScorer`], every tool considered is scored by it too, and the two rankings
//! are fused by reciprocal rank: `1 / (60 + lexical rank) + 1 / (60 + scorer rank)`, a
//! ranking a tool is absent from adding nothing; the fused value is the match's score.
//!
//! # Keeping up with the servers
//!
//! The index is built on the first search of a catalogue snapshot, and kept with it, so a
//! query never rebuilds anything. It is made of one part per server, and a runtime's
//! snapshots share their parts: when a server relists, the next snapshot's index analyses
//! that server's tools again and reuses every other server's part as it is.
//! [`Catalogue::prepare_search`] builds the index ahead of the first query.
//!
//! # Why hand-written
//!
//! The index is some three hundred lines over in-memory postings. `tantivy` is a full
//! on-disk search engine, far more than a catalogue of thousands of short documents needs,
//! and the `bm25` crate is plain BM25 over one text per document (no per-field weights or
//! length normalisation, its tokenizer made for prose rather than `snake_case` and
//! `camelCase` names) and keeps one corpus to upsert into rather than parts shared by
//! immutable snapshots. Stemming is the one piece taken from a crate,
//! `rust-stemmers` (the Snowball English stemmer, also tantivy's): a stemmer is easy to
//! get subtly wrong by hand.

mod analyse;
mod segment;
#[cfg(feature = "semantic")]
pub mod semantic;

use std::fmt;
use std::sync::{Arc, OnceLock};

use switchboard_codecs::mcp::Tool;

use super::{Catalogue, CatalogueEntry};

pub(crate) use segment::SegmentCache;
use segment::{Segment, FIELDS};

/// The weight of each field, in `segment::Field` order.
const WEIGHTS: [f64; FIELDS] = [3.0, 2.0, 1.0, 0.5, 0.3, 1.5];
/// The length normalisation of each field, in `segment::Field` order.
const NORMALISATION: [f64; FIELDS] = [0.3, 0.3, 0.75, 0.75, 0.75, 0.0];
/// BM25's term frequency saturation.
const K1: f64 = 1.2;
/// The constant of reciprocal rank fusion: large enough that the first few places of one
/// ranking do not outweigh agreement between the two.
pub const RRF_K: f64 = 60.0;

/// A tool that matched a search.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolMatch {
    /// The catalogue name: what a model sees and calls.
    pub name: String,
    /// The server offering it.
    pub server: Arc<str>,
    /// How well it matched: the lexical (BM25F) score, or with a [`ToolScorer`] the fused
    /// reciprocal-rank score. Higher is better; comparable within one search only.
    pub score: f64,
    /// The tool as the server listed it, under its original name.
    pub tool: Tool,
}

/// An embedder's own relevance score for tools, fused with the lexical ranking (see the
/// [module's](self) documentation).
///
/// # Example
///
/// ```
/// use switchboard::search::ToolScorer;
/// use switchboard::CatalogueEntry;
///
/// /// Prefers read-only tools.
/// struct ReadOnlyFirst;
///
/// impl ToolScorer for ReadOnlyFirst {
///     fn score(&self, _query: &str, candidates: &[&CatalogueEntry]) -> Vec<f64> {
///         let read_only = |e: &CatalogueEntry| {
///             e.tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true)
///         };
///         candidates.iter().map(|&e| if read_only(e) { 1.0 } else { 0.0 }).collect()
///     }
/// }
/// ```
pub trait ToolScorer: Send + Sync {
    /// Scores each of `candidates` for `query`, higher meaning more relevant: one score per
    /// candidate, in their order. A candidate without a finite score (a NaN, or past the end
    /// of the returned scores) has no place in this ranking.
    fn score(&self, query: &str, candidates: &[&CatalogueEntry]) -> Vec<f64>;
}

/// A tool search: the query, how many matches, and optionally a filter and a scorer.
///
/// ```
/// # fn demo(catalogue: &switchboard::Catalogue) {
/// use switchboard::search::ToolSearch;
///
/// let allowed = ["git_log", "git_status"];
/// let matches = catalogue.search_with(
///     &ToolSearch::new("what changed lately")
///         .limit(3)
///         .filter(|entry| allowed.contains(&entry.name.as_str())),
/// );
/// # }
/// ```
pub struct ToolSearch<'a> {
    query: &'a str,
    limit: usize,
    filter: Option<Filter<'a>>,
    scorer: Option<&'a dyn ToolScorer>,
}

/// Which tools a search considers.
type Filter<'a> = Box<dyn Fn(&CatalogueEntry) -> bool + 'a>;

impl fmt::Debug for ToolSearch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSearch")
            .field("query", &self.query)
            .field("limit", &self.limit)
            .field("filter", &self.filter.is_some())
            .field("scorer", &self.scorer.is_some())
            .finish()
    }
}

impl<'a> ToolSearch<'a> {
    /// A search for `query`, 10 matches at most, every listed tool considered.
    pub fn new(query: &'a str) -> Self {
        ToolSearch {
            query,
            limit: 10,
            filter: None,
            scorer: None,
        }
    }

    /// At most `limit` matches.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Considers only the tools `filter` accepts; applied before the limit, so a search
    /// still returns up to `limit` of the accepted ones. A gateway passes a client's tool
    /// permissions here.
    pub fn filter(mut self, filter: impl Fn(&CatalogueEntry) -> bool + 'a) -> Self {
        self.filter = Some(Box::new(filter));
        self
    }

    /// Fuses `scorer`'s ranking with the lexical one (see the [module's](self) docs).
    pub fn scorer(mut self, scorer: &'a dyn ToolScorer) -> Self {
        self.scorer = Some(scorer);
        self
    }
}

/// A catalogue's search index, its servers' segments side by side.
#[derive(Debug)]
pub(crate) struct Index {
    parts: Vec<Part>,
    /// Listed tools (documents).
    docs: usize,
    /// The average length of each field over all documents.
    average_lengths: [f64; FIELDS],
}

/// One server's segment and where its documents are among the catalogue's listed entries.
#[derive(Debug)]
struct Part {
    segment: Arc<Segment>,
    first: usize,
}

/// What a catalogue keeps for search: the index once built, and how to build it.
#[derive(Clone, Default)]
pub(crate) struct SearchState {
    index: OnceLock<Arc<Index>>,
    /// Shared by the snapshots of one runtime or builder; `None`: segments are not reused.
    cache: Option<Arc<SegmentCache>>,
    /// The tool list each available server's entries were taken from, by server name.
    sources: Vec<(Arc<str>, Arc<[Tool]>)>,
}

impl fmt::Debug for SearchState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SearchState")
            .field("indexed", &self.index.get().is_some())
            .finish_non_exhaustive()
    }
}

impl SearchState {
    /// The state of a catalogue whose servers' entries came from `sources`, reusing the
    /// segments in `cache`.
    pub(crate) fn new(
        cache: Option<Arc<SegmentCache>>,
        sources: Vec<(Arc<str>, Arc<[Tool]>)>,
    ) -> Self {
        SearchState {
            index: OnceLock::new(),
            cache,
            sources,
        }
    }

    /// The sources it was made with.
    pub(crate) fn into_sources(self) -> Vec<(Arc<str>, Arc<[Tool]>)> {
        self.sources
    }

    fn source(&self, server: &str) -> Option<&Arc<[Tool]>> {
        self.sources
            .iter()
            .find(|(name, _)| &**name == server)
            .map(|(_, source)| source)
    }
}

impl Index {
    /// The index of `entries` (a catalogue's listed entries, contiguous by server).
    fn build(entries: &[CatalogueEntry], state: &SearchState) -> Index {
        let mut parts = Vec::new();
        let mut first = 0;
        while first < entries.len() {
            let server = &entries[first].server;
            let end = entries[first..]
                .iter()
                .position(|e| &e.server != server)
                .map_or(entries.len(), |n| first + n);
            let tools: Vec<&Tool> = entries[first..end].iter().map(|e| &e.tool).collect();
            let segment = match (&state.cache, state.source(server)) {
                (Some(cache), Some(source)) => cache.segment(server, source, &tools),
                _ => Arc::new(Segment::build(server, tools.iter().copied(), None)),
            };
            parts.push(Part { segment, first });
            first = end;
        }
        if let Some(cache) = &state.cache {
            cache.retain(|server| {
                parts
                    .iter()
                    .any(|p| entries[p.first].server.as_ref() == server)
            });
        }
        let mut totals = [0u64; FIELDS];
        for part in &parts {
            for (total, part_total) in totals.iter_mut().zip(part.segment.total_lengths) {
                *total += part_total;
            }
        }
        let docs = entries.len();
        let average_lengths = totals.map(|t| t as f64 / docs.max(1) as f64);
        Index {
            parts,
            docs,
            average_lengths,
        }
    }

    /// The lexical score of every document for these weighted terms.
    fn scores(&self, terms: &[(String, f32)]) -> Vec<f64> {
        let mut scores = vec![0.0; self.docs];
        let n = self.docs as f64;
        let mut lists = Vec::with_capacity(self.parts.len());
        for (term, weight) in terms {
            lists.clear();
            let mut df = 0usize;
            for part in &self.parts {
                if let Some(list) = part.segment.postings.get(term.as_str()) {
                    df += list.len();
                    lists.push((part, list));
                }
            }
            if df == 0 {
                continue;
            }
            let df = df as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            let weight = f64::from(*weight) * idf;
            for (part, list) in &lists {
                for posting in list.iter() {
                    let doc = posting.doc as usize;
                    let lengths = &part.segment.lengths[doc];
                    let mut tf = 0.0;
                    for (f, &count) in posting.tf.iter().enumerate() {
                        if count > 0 {
                            let norm = 1.0 - NORMALISATION[f]
                                + NORMALISATION[f] * f64::from(lengths[f])
                                    / self.average_lengths[f];
                            tf += WEIGHTS[f] * f64::from(count) / norm;
                        }
                    }
                    scores[part.first + doc] += weight * tf / (K1 + tf);
                }
            }
        }
        scores
    }
}

impl Catalogue {
    /// The listed tools that best match `query`, best first, at most `limit`: see the
    /// [`search`](crate::search) module for the ranking.
    pub fn search(&self, query: &str, limit: usize) -> Vec<ToolMatch> {
        self.search_with(&ToolSearch::new(query).limit(limit))
    }

    /// Runs `search`: its query, limit, filter and scorer.
    pub fn search_with(&self, search: &ToolSearch<'_>) -> Vec<ToolMatch> {
        self.search_fused(search, None)
    }

    /// [`search_with`](Self::search_with), fused with `fallback` when the search has no
    /// scorer of its own (a runtime's semantic scorer).
    pub(crate) fn search_fused(
        &self,
        search: &ToolSearch<'_>,
        fallback: Option<&dyn ToolScorer>,
    ) -> Vec<ToolMatch> {
        let entries = self.listed_entries();
        if search.limit == 0 || entries.is_empty() {
            return Vec::new();
        }
        let index = self.search_index();
        let lexical = index.scores(&analyse::query_terms(search.query));
        let accepted = |at: &usize| match &search.filter {
            Some(filter) => filter(&entries[*at]),
            None => true,
        };
        let ranked: Vec<(usize, f64)> = match search.scorer.or(fallback) {
            None => {
                let found: Vec<(usize, f64)> = (0..entries.len())
                    .filter(|at| lexical[*at] > 0.0)
                    .filter(accepted)
                    .map(|at| (at, lexical[at]))
                    .collect();
                best(found, search.limit)
            }
            Some(scorer) => {
                let candidates: Vec<usize> = (0..entries.len()).filter(accepted).collect();
                best(
                    fuse(search.query, entries, &candidates, &lexical, scorer),
                    search.limit,
                )
            }
        };
        ranked
            .into_iter()
            .map(|(at, score)| {
                let entry = &entries[at];
                ToolMatch {
                    name: entry.name.clone(),
                    server: Arc::clone(&entry.server),
                    score,
                    tool: entry.tool.clone(),
                }
            })
            .collect()
    }

    /// Builds the search index now, if it is not built yet, rather than on the first search
    /// (for example right after the catalogue changed, off a query's path).
    pub fn prepare_search(&self) {
        self.search_index();
    }

    fn search_index(&self) -> &Index {
        self.search_state()
            .index
            .get_or_init(|| Arc::new(Index::build(self.listed_entries(), self.search_state())))
    }
}

/// The reciprocal rank fusion of the lexical ranking and `scorer`'s over `candidates`
/// (entry places): each candidate with a place in either, with its fused score.
fn fuse(
    query: &str,
    entries: &[CatalogueEntry],
    candidates: &[usize],
    lexical: &[f64],
    scorer: &dyn ToolScorer,
) -> Vec<(usize, f64)> {
    let mut fused = vec![0.0; candidates.len()];
    let add_ranks = |fused: &mut [f64], mut scored: Vec<(usize, f64)>| {
        // `scored` holds (candidate index, score); equal scores keep catalogue order (the
        // index breaks ties, so an unstable sort orders them all the same, and faster).
        scored.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for (rank, (candidate, _)) in scored.into_iter().enumerate() {
            fused[candidate] += 1.0 / (RRF_K + (rank + 1) as f64);
        }
    };
    let lexical_scored: Vec<(usize, f64)> = candidates
        .iter()
        .enumerate()
        .filter(|(_, at)| lexical[**at] > 0.0)
        .map(|(c, at)| (c, lexical[*at]))
        .collect();
    add_ranks(&mut fused, lexical_scored);
    let refs: Vec<&CatalogueEntry> = candidates.iter().map(|at| &entries[*at]).collect();
    let external = scorer.score(query, &refs);
    let external_scored: Vec<(usize, f64)> = external
        .into_iter()
        .take(candidates.len())
        .enumerate()
        .filter(|(_, score)| score.is_finite())
        .collect();
    add_ranks(&mut fused, external_scored);
    candidates
        .iter()
        .zip(fused)
        .filter(|(_, score)| *score > 0.0)
        .map(|(at, score)| (*at, score))
        .collect()
}

/// The `limit` best of `found` (entry place, score), best first; equal scores keep
/// catalogue order.
fn best(mut found: Vec<(usize, f64)>, limit: usize) -> Vec<(usize, f64)> {
    let order = |a: &(usize, f64), b: &(usize, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if found.len() > limit {
        found.select_nth_unstable_by(limit, order);
        found.truncate(limit);
    }
    found.sort_unstable_by(order);
    found
}

#[cfg(test)]
mod tests;
