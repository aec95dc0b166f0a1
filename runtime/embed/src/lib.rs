//! A sentence-embedding model on the CPU, in plain Rust: what Switchboard's semantic tool
//! search (`switchboard::search::semantic`, the feature `semantic`) embeds requests and
//! tools with.
//!
//! [`Embedder::load`] reads a BERT sentence-embedding model in the sentence-transformers
//! layout from a folder the caller names (`config.json`, `tokenizer.json`,
//! `model.safetensors`, and `1_Pooling/config.json` if there is one; nothing is downloaded):
//! all-MiniLM-L6-v2 (384 dimensions, 22 M parameters) is the one tested. A text is its
//! tokens' mean last hidden state (or its first token's, where the pooling config says so),
//! L2-normalised, as sentence-transformers computes it, so a dot product of two embeddings
//! is their cosine.
//!
//! Its own crate so that tests, built unoptimised, still run its arithmetic optimised (the
//! workspace's dev profile sets it to `opt-level = 3`), and so that the fast path of a
//! query's embedding lives in one place. The weights are read with the `safetensors` crate;
//! the encoder is `bert`'s, over `matmul`'s products (that module says why not candle, which
//! the feature ran on first); the tokenizer is `wordpiece`'s, over the model's
//! `tokenizer.json`.

mod bert;
mod matmul;
mod wordpiece;

use std::path::{Path, PathBuf};

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
}

/// How the encoder holds its linear layers' weights (nine tenths of its arithmetic).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Precision {
    /// As halves (IEEE binary16), converted to singles in the vector unit as the products
    /// read them, where the CPU can (AVX-512, or AVX2 with F16C; elsewhere as singles): a
    /// request's products stream half the bytes. Embeddings move by under 1e-4 a component,
    /// which leaves rankings as they were (the tests check both).
    #[default]
    Half,
    /// As singles: the embeddings sentence-transformers computes, within 1e-5.
    Single,
}

/// A sentence-embedding model and its tokenizer.
pub struct Embedder {
    encoder: bert::Encoder,
    tokenizer: wordpiece::WordPiece,
    /// Tokens a text is cut to: [`MAX_TOKENS`], or fewer if the model has fewer positions.
    max_tokens: usize,
    /// How token states become a text's vector (`1_Pooling/config.json`).
    pooling: bert::Pooling,
    /// The embedder's own threads (one per core, four at most), so that a request's
    /// products are split between cores that are already running its embedding: called
    /// from outside a pool, every split would wait for a thread to wake. Its own, too, so
    /// an application's use of rayon's global pool does not queue a search behind it.
    /// `None` if the threads could not be started: the caller's thread does it all.
    threads: Option<rayon::ThreadPool>,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder").finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads the model in `folder` (sentence-transformers' layout: `config.json`,
    /// `tokenizer.json`, `model.safetensors`, and the optional `1_Pooling/config.json`), on
    /// the CPU, its weights held at the default [`Precision`]. A pooling other than the mean
    /// or the first token is refused.
    pub fn load(folder: impl AsRef<Path>) -> Result<Embedder, ModelError> {
        Embedder::load_with(folder, Precision::default())
    }

    /// [`load`](Self::load), with the weights held at `precision`.
    pub fn load_with(
        folder: impl AsRef<Path>,
        precision: Precision,
    ) -> Result<Embedder, ModelError> {
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
        let config: bert::Config = serde_json::from_str(&read("config.json")?)
            .map_err(|e| unreadable("config.json", e.to_string()))?;
        if let Some(reason) = config.unsupported() {
            return Err(unreadable("config.json", reason));
        }
        // Optional: a folder without it is pooled by the mean, as sentence-transformers does.
        let pooling = match folder.join("1_Pooling/config.json").is_file() {
            true => bert::Pooling::from_config(&read("1_Pooling/config.json")?)
                .map_err(|e| unreadable("1_Pooling/config.json", e))?,
            false => bert::Pooling::Mean,
        };
        let tokenizer = wordpiece::WordPiece::from_tokenizer_json(&read("tokenizer.json")?)
            .map_err(|e| unreadable("tokenizer.json", e))?;
        let weights = folder.join("model.safetensors");
        if !weights.is_file() {
            return Err(ModelError::Missing {
                folder: folder.to_owned(),
                file: "model.safetensors",
            });
        }
        if tokenizer.largest_id() as usize >= config.vocabulary() {
            return Err(unreadable(
                "tokenizer.json",
                format!(
                    "its vocabulary is larger than the model's ({} ids)",
                    config.vocabulary()
                ),
            ));
        }
        let bytes =
            std::fs::read(&weights).map_err(|e| unreadable("model.safetensors", e.to_string()))?;
        let encoder = bert::Encoder::load(&bytes, &config, precision == Precision::Half)
            .map_err(|reason| unreadable("model.safetensors", reason))?;
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(cores.min(4))
            .thread_name(|i| format!("switchboard-embed-{i}"))
            .build()
            .ok();
        Ok(Embedder {
            encoder,
            tokenizer,
            max_tokens: MAX_TOKENS.min(config.max_positions()),
            pooling,
            threads,
        })
    }

    /// The precision the weights are held at: [`Precision::Half`] only where it was asked
    /// for and the CPU converts halves.
    pub fn precision(&self) -> Precision {
        match self.encoder.holds_halves() {
            true => Precision::Half,
            false => Precision::Single,
        }
    }

    /// The embeddings of `texts`, each L2-normalised (so a dot product is their cosine).
    pub fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        match &self.threads {
            Some(threads) => threads.install(|| self.embed_here(texts)),
            None => self.embed_here(texts),
        }
    }

    fn embed_here(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let mut embeddings = Vec::with_capacity(texts.len());
        // A batch at a time bounds the activations held at once (32 texts of 256 tokens:
        // some 50 MB in the feed-forward layer).
        for batch in texts.chunks(BATCH) {
            let encoded: Vec<Vec<u32>> = batch
                .iter()
                .map(|text| self.tokenizer.encode(text, self.max_tokens))
                .collect();
            let tokens: Vec<&[u32]> = encoded.iter().map(Vec::as_slice).collect();
            embeddings.extend(self.encoder.embed(&tokens, self.pooling));
        }
        embeddings
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
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/models/all-minilm-l6-v2")
        });
    assert!(
        folder.join("model.safetensors").is_file(),
        "no model in {} (set SWITCHBOARD_TEST_MODEL, or run .ci/run once)",
        folder.display()
    );
    folder
}

/// The dot product of two vectors of the same length: of two embeddings, their cosine. On
/// the widest vector unit the CPU has (a search takes one per tool, 5,000 of them).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    match matmul::Kernel::detect() {
        // SAFETY: `detect` names these only on a CPU with the features.
        #[cfg(target_arch = "x86_64")]
        matmul::Kernel::Avx512 => unsafe { dot_avx512(a, b) },
        #[cfg(target_arch = "x86_64")]
        matmul::Kernel::Avx2 => unsafe { dot_avx2(a, b) },
        matmul::Kernel::Portable => dot_lanes::<8>(a, b),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn dot_avx512(a: &[f32], b: &[f32]) -> f32 {
    dot_lanes::<16>(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot_lanes::<8>(a, b)
}

/// Summed in `N` lanes so the compiler can vectorise it (a single running sum it may not
/// reorder).
#[inline(always)]
fn dot_lanes<const N: usize>(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; N];
    let (a_chunks, b_chunks) = (a.chunks_exact(N), b.chunks_exact(N));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for i in 0..N {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests;
