//! The BERT encoder a sentence-embedding model runs on, in plain Rust: token embeddings,
//! then layers of self-attention and feed-forward, then sentence-transformers' mean pooling.
//!
//! Why not candle (`candle-transformers`' `BertModel`, which this crate ran first): a
//! request embeds some ten tokens, and at that size candle spent most of a query copying
//! weights rather than multiplying them: its linear layer broadcasts the weight over the
//! batch, which its CPU matmul copies into a contiguous batch (2.4 MB for a feed-forward
//! layer of MiniLM, per call), and its matrix multiply repacks the weight on each call. A
//! request took 11–15 ms. Here each weight is packed once, at load ([`matmul`](super::matmul)),
//! and texts are not padded: their tokens are concatenated into one matrix for the linear
//! layers, and only attention looks at each text's own tokens. The weights and the
//! arithmetic are the model's own; the test `matches_the_reference_port` holds the
//! embeddings to those `BertModel` computed.

use serde::Deserialize;

use super::dot;
use super::matmul::{Kernel, Packed};

/// The fields of a BERT `config.json` the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Config {
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    #[serde(default = "gelu")]
    hidden_act: String,
    max_position_embeddings: usize,
    #[serde(default = "two")]
    type_vocab_size: usize,
    #[serde(default = "eps")]
    layer_norm_eps: f64,
    #[serde(default = "absolute")]
    position_embedding_type: String,
}

fn gelu() -> String {
    "gelu".into()
}
fn two() -> usize {
    2
}
fn eps() -> f64 {
    1e-12
}
fn absolute() -> String {
    "absolute".into()
}

impl Config {
    /// Why this encoder cannot run the model the config describes, if it cannot.
    pub(super) fn unsupported(&self) -> Option<String> {
        if self.hidden_act != "gelu" {
            return Some(format!(
                "hidden_act {:?} (only \"gelu\" is supported)",
                self.hidden_act
            ));
        }
        if self.position_embedding_type != "absolute" {
            return Some(format!(
                "position_embedding_type {:?} (only \"absolute\" is supported)",
                self.position_embedding_type
            ));
        }
        if self.num_attention_heads == 0
            || !self.hidden_size.is_multiple_of(self.num_attention_heads)
        {
            return Some(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        None
    }

    /// The number of token ids the model knows.
    pub(super) fn vocabulary(&self) -> usize {
        self.vocab_size
    }

    /// The most tokens a text may have: the model's positions.
    pub(super) fn max_positions(&self) -> usize {
        self.max_position_embeddings
    }
}

/// How a text's token states become one vector (sentence-transformers' `1_Pooling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pooling {
    /// The mean of its tokens' states (all-MiniLM, e5, gte).
    Mean,
    /// The state of its first token, `[CLS]` (bge).
    FirstToken,
}

impl Pooling {
    /// The pooling a `1_Pooling/config.json` asks for, if the encoder does it.
    pub(super) fn from_config(json: &str) -> Result<Pooling, String> {
        let config: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(json).map_err(|e| e.to_string())?;
        let on: Vec<&str> = config
            .iter()
            .filter(|(key, value)| {
                key.starts_with("pooling_mode_") && value.as_bool() == Some(true)
            })
            .map(|(key, _)| key.as_str())
            .collect();
        match on.as_slice() {
            ["pooling_mode_mean_tokens"] => Ok(Pooling::Mean),
            ["pooling_mode_cls_token"] => Ok(Pooling::FirstToken),
            [] => Err("it sets no pooling mode".into()),
            modes => Err(format!(
                "it pools by {} (only the mean of the tokens, or the first token, is supported)",
                modes.join(" + ")
            )),
        }
    }
}

/// A layer norm's scale and shift.
struct Norm {
    scale: Vec<f32>,
    shift: Vec<f32>,
    eps: f32,
}

impl Norm {
    /// Normalises each row of `rows` in place.
    fn apply(&self, rows: &mut [f32]) {
        let width = self.scale.len() as f32;
        for row in rows.chunks_exact_mut(self.scale.len()) {
            let mean = row.iter().sum::<f32>() / width;
            let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width;
            let inverse = 1.0 / (variance + self.eps).sqrt();
            for ((v, scale), shift) in row.iter_mut().zip(&self.scale).zip(&self.shift) {
                *v = (*v - mean) * inverse * scale + shift;
            }
        }
    }
}

/// One transformer layer: self-attention, then the feed-forward block, each with its
/// residual and layer norm (BERT's post-norm).
struct Layer {
    /// Query, key and value in one product: `[3 × hidden, hidden]`.
    qkv: Packed,
    attention_out: Packed,
    attention_norm: Norm,
    intermediate: Packed,
    output: Packed,
    output_norm: Norm,
}

/// A BERT encoder with mean pooling: token ids in, one vector per text out.
pub(super) struct Encoder {
    hidden: usize,
    heads: usize,
    /// `[vocab, hidden]`.
    words: Vec<f32>,
    /// `[positions, hidden]`, with the token type 0 row added (a sentence is one segment).
    positions: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

/// Why the weights could not be read.
pub(super) type LoadError = String;

/// The tensors of a safetensors file, by name.
struct Tensors<'a> {
    file: safetensors::SafeTensors<'a>,
    /// `"bert."` when the names carry that prefix, else empty.
    prefix: &'static str,
}

impl Tensors<'_> {
    /// The tensor `name` as `f32`s, checked to hold `len` of them.
    fn get(&self, name: &str, len: usize) -> Result<Vec<f32>, LoadError> {
        let full = format!("{}{name}", self.prefix);
        let view = self
            .file
            .tensor(&full)
            .map_err(|e| format!("{full}: {e}"))?;
        let data = view.data();
        let values: Vec<f32> = match view.dtype() {
            safetensors::Dtype::F32 => data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            safetensors::Dtype::F16 => data
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            safetensors::Dtype::BF16 => data
                .chunks_exact(2)
                .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            other => return Err(format!("{full}: {other:?} weights are not supported")),
        };
        if values.len() != len {
            return Err(format!(
                "{full} holds {} values where the config implies {len}",
                values.len()
            ));
        }
        Ok(values)
    }

    fn norm(&self, name: &str, width: usize, eps: f64) -> Result<Norm, LoadError> {
        Ok(Norm {
            scale: self.get(&format!("{name}.weight"), width)?,
            shift: self.get(&format!("{name}.bias"), width)?,
            eps: eps as f32,
        })
    }

    fn linear(
        &self,
        kernel: Kernel,
        halves: bool,
        names: &[&str],
        inputs: usize,
        outputs: usize,
    ) -> Result<Packed, LoadError> {
        let mut weight = Vec::with_capacity(names.len() * outputs * inputs);
        let mut bias = Vec::with_capacity(names.len() * outputs);
        for name in names {
            weight.extend(self.get(&format!("{name}.weight"), outputs * inputs)?);
            bias.extend(self.get(&format!("{name}.bias"), outputs)?);
        }
        Ok(Packed::new(kernel, &weight, &bias, inputs, halves))
    }
}

impl Encoder {
    /// The encoder of the safetensors `bytes` (named as Hugging Face's `BertModel` saves
    /// them, with or without a `bert.` prefix), its linear layers' weights held as halves
    /// if `halves` and the CPU's kernel reads them.
    pub(super) fn load(bytes: &[u8], config: &Config, halves: bool) -> Result<Encoder, LoadError> {
        let file = safetensors::SafeTensors::deserialize(bytes).map_err(|e| e.to_string())?;
        let prefix = if file.tensor("embeddings.word_embeddings.weight").is_ok() {
            ""
        } else {
            "bert."
        };
        let tensors = Tensors { file, prefix };
        let kernel = Kernel::detect();
        let (hidden, inner, eps) = (
            config.hidden_size,
            config.intermediate_size,
            config.layer_norm_eps,
        );
        let words = tensors.get(
            "embeddings.word_embeddings.weight",
            config.vocab_size * hidden,
        )?;
        let mut positions = tensors.get(
            "embeddings.position_embeddings.weight",
            config.max_position_embeddings * hidden,
        )?;
        let token_types = tensors.get(
            "embeddings.token_type_embeddings.weight",
            config.type_vocab_size * hidden,
        )?;
        for row in positions.chunks_exact_mut(hidden) {
            for (p, t) in row.iter_mut().zip(&token_types[..hidden]) {
                *p += t;
            }
        }
        let layers = (0..config.num_hidden_layers)
            .map(|i| -> Result<Layer, LoadError> {
                let at = |part: &str| format!("encoder.layer.{i}.{part}");
                Ok(Layer {
                    qkv: tensors.linear(
                        kernel,
                        halves,
                        &[
                            &at("attention.self.query"),
                            &at("attention.self.key"),
                            &at("attention.self.value"),
                        ],
                        hidden,
                        hidden,
                    )?,
                    attention_out: tensors.linear(
                        kernel,
                        halves,
                        &[&at("attention.output.dense")],
                        hidden,
                        hidden,
                    )?,
                    attention_norm: tensors.norm(&at("attention.output.LayerNorm"), hidden, eps)?,
                    intermediate: tensors.linear(
                        kernel,
                        halves,
                        &[&at("intermediate.dense")],
                        hidden,
                        inner,
                    )?,
                    output: tensors.linear(
                        kernel,
                        halves,
                        &[&at("output.dense")],
                        inner,
                        hidden,
                    )?,
                    output_norm: tensors.norm(&at("output.LayerNorm"), hidden, eps)?,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Encoder {
            hidden,
            heads: config.num_attention_heads,
            words,
            positions,
            embedding_norm: tensors.norm("embeddings.LayerNorm", hidden, eps)?,
            layers,
        })
    }

    /// Whether the linear layers' weights are held as halves.
    pub(super) fn holds_halves(&self) -> bool {
        self.layers.first().is_some_and(|layer| layer.qkv.is_half())
    }

    /// Each text's last hidden states pooled as `pooling` says, L2-normalised
    /// (sentence-transformers' `Pooling` then `Normalize`). Each text is a list of token ids
    /// within the model's positions and vocabulary.
    pub(super) fn embed(&self, texts: &[&[u32]], pooling: Pooling) -> Vec<Vec<f32>> {
        let hidden = self.hidden;
        let spans: Vec<(usize, usize)> = texts
            .iter()
            .scan(0, |start, text| {
                let span = (*start, text.len());
                *start += text.len();
                Some(span)
            })
            .collect();
        let mut rows: Vec<f32> = Vec::with_capacity(spans.iter().map(|s| s.1).sum::<usize>());
        for text in texts {
            for (position, &id) in text.iter().enumerate() {
                let word = &self.words[id as usize * hidden..][..hidden];
                let place = &self.positions[position * hidden..][..hidden];
                rows.extend(word.iter().zip(place).map(|(w, p)| w + p));
            }
        }
        self.embedding_norm.apply(&mut rows);
        for layer in &self.layers {
            rows = self.layer(layer, rows, &spans);
        }
        spans
            .iter()
            .map(|&(start, len)| {
                let states = &rows[start * hidden..(start + len) * hidden];
                let mut pooled = match pooling {
                    Pooling::Mean => {
                        let mut sum = vec![0.0f32; hidden];
                        for row in states.chunks_exact(hidden) {
                            sum.iter_mut().zip(row).for_each(|(m, v)| *m += v);
                        }
                        sum
                    }
                    Pooling::FirstToken => states[..hidden].to_vec(),
                };
                // Normalised, so the mean's division by the length is not needed.
                let norm = pooled.iter().map(|v| v * v).sum::<f32>().sqrt();
                let scale = if norm > 0.0 { 1.0 / norm } else { 0.0 };
                pooled.iter_mut().for_each(|v| *v *= scale);
                pooled
            })
            .collect()
    }

    fn layer(&self, layer: &Layer, rows: Vec<f32>, spans: &[(usize, usize)]) -> Vec<f32> {
        let hidden = self.hidden;
        let qkv = layer.qkv.apply(&rows);
        let context = self.attention(&qkv, spans);
        let mut attended = layer.attention_out.apply(&context);
        attended.iter_mut().zip(&rows).for_each(|(a, r)| *a += r);
        layer.attention_norm.apply(&mut attended);
        let mut inner = layer.intermediate.apply(&attended);
        inner.iter_mut().for_each(|v| *v = gelu_erf(*v));
        let mut out = layer.output.apply(&inner);
        out.iter_mut().zip(&attended).for_each(|(o, a)| *o += a);
        layer.output_norm.apply(&mut out);
        debug_assert_eq!(out.len(), rows.len() / hidden * layer.output.outputs());
        out
    }

    /// Scaled dot-product attention of each text over its own tokens, head by head.
    /// `qkv` is `[tokens, 3 × hidden]` (queries, keys, values); the result `[tokens, hidden]`.
    fn attention(&self, qkv: &[f32], spans: &[(usize, usize)]) -> Vec<f32> {
        let hidden = self.hidden;
        let width = self.hidden / self.heads;
        let scale = 1.0 / (width as f32).sqrt();
        let stride = 3 * hidden;
        let tokens = qkv.len() / stride;
        let mut context = vec![0.0f32; tokens * hidden];
        let mut weights = Vec::new();
        for &(start, len) in spans {
            for head in 0..self.heads {
                let (q, k, v) = (
                    head * width,
                    hidden + head * width,
                    2 * hidden + head * width,
                );
                for i in start..start + len {
                    let query = &qkv[i * stride + q..][..width];
                    weights.clear();
                    weights.extend(
                        (start..start + len)
                            .map(|j| dot(query, &qkv[j * stride + k..][..width]) * scale),
                    );
                    let max = weights.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let mut sum = 0.0;
                    for w in weights.iter_mut() {
                        *w = (*w - max).exp();
                        sum += *w;
                    }
                    let out = &mut context[i * hidden + head * width..][..width];
                    for (j, w) in (start..start + len).zip(&weights) {
                        let value = &qkv[j * stride + v..][..width];
                        let w = w / sum;
                        out.iter_mut().zip(value).for_each(|(o, x)| *o += w * x);
                    }
                }
            }
        }
        context
    }
}

/// GELU as BERT defines it, with the error function (not the tanh approximation).
fn gelu_erf(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// The error function, to within 4e-7 of the exact value: `x·P(x²)/Q(x²)` on [-4, 4] (past
/// 4, erf is 1 in `f32`). A rational function rather than `libm::erff`, whose branches
/// and calls the compiler cannot vectorise: the GELU of a request's feed-forward layers
/// took a sixth of its time. The coefficients are a weighted least-squares fit made for
/// this function; `erf_is_within_4e_7_of_libm` checks it against `libm`.
fn erf(x: f32) -> f32 {
    const P: [f32; 7] = [
        1.128_378_6,
        2.166_104_2e-1,
        5.279_330_5e-2,
        4.408_294_2e-3,
        1.584_032_5e-4,
        -2.002_340_8e-6,
        1.917_181_6e-8,
    ];
    const Q: [f32; 5] = [
        1.0,
        5.252_930_5e-1,
        1.219_080_1e-1,
        1.578_299_1e-2,
        1.126_324_1e-3,
    ];
    let x = x.clamp(-4.0, 4.0);
    let t = x * x;
    let p = P.iter().rev().fold(0.0, |acc, c| acc * t + c);
    let q = Q.iter().rev().fold(0.0, |acc, c| acc * t + c);
    x * p / q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooling_is_read_from_the_pooling_config() {
        let config = |mean: bool, cls: bool, max: bool| {
            format!(
                r#"{{"word_embedding_dimension": 384, "pooling_mode_cls_token": {cls},
                "pooling_mode_mean_tokens": {mean}, "pooling_mode_max_tokens": {max}}}"#
            )
        };
        assert_eq!(
            Pooling::from_config(&config(true, false, false)),
            Ok(Pooling::Mean)
        );
        assert_eq!(
            Pooling::from_config(&config(false, true, false)),
            Ok(Pooling::FirstToken)
        );
        let max = Pooling::from_config(&config(false, false, true)).unwrap_err();
        assert!(max.contains("pooling_mode_max_tokens"), "{max}");
        assert!(Pooling::from_config(&config(true, true, false)).is_err());
        assert!(Pooling::from_config(&config(false, false, false)).is_err());
        assert!(Pooling::from_config("[]").is_err());
    }

    #[test]
    fn erf_is_within_4e_7_of_libm() {
        let mut worst = 0.0f64;
        for i in -800_000..=800_000 {
            let x = i as f32 * 1e-5;
            let exact = libm::erf(f64::from(x));
            worst = worst.max((f64::from(erf(x)) - exact).abs());
        }
        assert!(worst < 4e-7, "{worst}");
        assert_eq!(erf(0.0), 0.0);
        assert!((erf(f32::MAX) - 1.0).abs() < 1e-6 && (erf(f32::MIN) + 1.0).abs() < 1e-6);
    }
}
