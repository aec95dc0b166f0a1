//! The tool-search evaluation set (`search_eval/`, see its README) from Rust: the corpus
//! loaded as a [`Catalogue`], the queries ranked by the runtime's search, the plain BM25
//! baseline of `score.py`, and the same metrics as `score.py` (recall@1, recall@5, MRR@10).
//!
//! The example `search_eval` prints the metrics and writes rankings for
//! `score.py rankings`; the test `tests/search_eval.rs` holds the lexical ranking to its
//! target; the bench `search` times it over 5,000 tools.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;
use switchboard::model::Tool;
use switchboard::search::{ToolScorer, ToolSearch};
use switchboard::{Catalogue, CatalogueBuilder, Naming};

/// How deep rankings go: MRR's cut-off (10), past recall@5.
pub const DEPTH: usize = 10;

/// The folder of the set in this repository.
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("search_eval")
}

/// One labelled request.
#[derive(Debug, Clone)]
pub struct Query {
    /// Its id (`q001`).
    pub id: String,
    /// The request as a user would write it.
    pub text: String,
    /// The tools that serve it, as `server/tool`.
    pub relevant: Vec<String>,
}

/// The corpus and the queries.
#[derive(Debug, Clone)]
pub struct EvalSet {
    /// Each server's tools as its `tools/list` returned them, servers by file name.
    pub servers: Vec<(String, Vec<Tool>)>,
    /// The queries in file order.
    pub queries: Vec<Query>,
}

/// recall@1, recall@5 and MRR@10 over a set of queries, as `score.py` defines them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metrics {
    /// The fraction of queries whose first result is relevant.
    pub recall_at_1: f64,
    /// The fraction of queries with a relevant tool in the top 5.
    pub recall_at_5: f64,
    /// The mean of 1/rank of the first relevant tool, 0 past rank 10.
    pub mrr_at_10: f64,
}

/// Rankings by query id: tool ids (`server/tool`), best first.
pub type Rankings = HashMap<String, Vec<String>>;

impl EvalSet {
    /// Loads `dir/tools/*.json` and `dir/queries.jsonl`.
    pub fn load(dir: &Path) -> Result<EvalSet, String> {
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("tools"))
            .map_err(|e| format!("{}: {e}", dir.join("tools").display()))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        let mut servers = Vec::new();
        for path in files {
            let server = path
                .file_stem()
                .and_then(|s| s.to_str())
                .ok_or_else(|| format!("{}: not a UTF-8 name", path.display()))?
                .to_owned();
            let tools: Vec<Tool> = serde_json::from_str(&read(&path)?)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            servers.push((server, tools));
        }
        let mut queries = Vec::new();
        let path = dir.join("queries.jsonl");
        for (n, line) in read(&path)?.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad = || format!("{}:{}: not a query", path.display(), n + 1);
            let value: Value = serde_json::from_str(line).map_err(|_| bad())?;
            let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
            let relevant = value
                .get("relevant")
                .and_then(Value::as_array)
                .ok_or_else(bad)?
                .iter()
                .map(|r| r.as_str().map(str::to_owned).ok_or_else(bad))
                .collect::<Result<_, _>>()?;
            queries.push(Query {
                id: text("id").ok_or_else(bad)?,
                text: text("query").ok_or_else(bad)?,
                relevant,
            });
        }
        Ok(EvalSet { servers, queries })
    }

    /// How many tools the corpus has.
    pub fn tools(&self) -> usize {
        self.servers.iter().map(|(_, tools)| tools.len()).sum()
    }

    /// The corpus as a catalogue: each server's tools under its server name, named as a
    /// runtime names them (a tool two servers list is prefixed with its server's name).
    pub fn catalogue(&self) -> Catalogue {
        let mut builder = CatalogueBuilder::new(Naming::default());
        for (server, tools) in &self.servers {
            builder.set_server(server.as_str(), tools.clone());
        }
        builder.build()
    }

    /// Every query ranked by `catalogue`'s lexical search, `DEPTH` deep.
    pub fn rank_lexical(&self, catalogue: &Catalogue) -> Rankings {
        self.queries
            .iter()
            .map(|q| {
                let ranked = catalogue
                    .search(&q.text, DEPTH)
                    .into_iter()
                    .map(|found| format!("{}/{}", found.server, found.tool.name))
                    .collect();
                (q.id.clone(), ranked)
            })
            .collect()
    }

    /// Every query ranked by `catalogue`'s search fused with `scorer`'s (hybrid), `DEPTH`
    /// deep.
    pub fn rank_hybrid(&self, catalogue: &Catalogue, scorer: &dyn ToolScorer) -> Rankings {
        self.queries
            .iter()
            .map(|q| {
                let search = ToolSearch::new(&q.text).limit(DEPTH).scorer(scorer);
                let ranked = catalogue
                    .search_with(&search)
                    .into_iter()
                    .map(|found| format!("{}/{}", found.server, found.tool.name))
                    .collect();
                (q.id.clone(), ranked)
            })
            .collect()
    }

    /// Every query ranked by `scorer` alone over the whole catalogue, `DEPTH` deep.
    pub fn rank_scorer(&self, catalogue: &Catalogue, scorer: &dyn ToolScorer) -> Rankings {
        let entries: Vec<&switchboard::CatalogueEntry> = catalogue.iter().collect();
        self.queries
            .iter()
            .map(|q| {
                let scores = scorer.score(&q.text, &entries);
                let mut order: Vec<usize> = (0..entries.len())
                    .filter(|&i| scores.get(i).is_some_and(|s| s.is_finite()))
                    .collect();
                order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
                let ranked = order
                    .into_iter()
                    .take(DEPTH)
                    .map(|i| format!("{}/{}", entries[i].server, entries[i].tool.name))
                    .collect();
                (q.id.clone(), ranked)
            })
            .collect()
    }

    /// Every query ranked by `score.py`'s plain BM25: name and description, lower case,
    /// split on every non-alphanumeric character, no stems or stop words, k1 = 1.2,
    /// b = 0.75, ties in corpus order.
    pub fn rank_plain_bm25(&self) -> Rankings {
        let (k1, b) = (1.2, 0.75);
        let ids: Vec<String> = self
            .servers
            .iter()
            .flat_map(|(server, tools)| tools.iter().map(move |t| format!("{server}/{}", t.name)))
            .collect();
        let docs: Vec<HashMap<String, f64>> = self
            .servers
            .iter()
            .flat_map(|(_, tools)| tools)
            .map(|t| {
                let text = format!("{} {}", t.name, t.description.as_deref().unwrap_or(""));
                let mut tf = HashMap::new();
                for token in plain_tokens(&text) {
                    *tf.entry(token).or_insert(0.0) += 1.0;
                }
                tf
            })
            .collect();
        let lengths: Vec<f64> = docs.iter().map(|d| d.values().sum()).collect();
        let n = docs.len() as f64;
        let average = lengths.iter().sum::<f64>() / n;
        let mut df: HashMap<&str, f64> = HashMap::new();
        for doc in &docs {
            for term in doc.keys() {
                *df.entry(term).or_insert(0.0) += 1.0;
            }
        }
        self.queries
            .iter()
            .map(|q| {
                let mut scores = vec![0.0; docs.len()];
                for token in plain_tokens(&q.text) {
                    let Some(m) = df.get(token.as_str()) else {
                        continue;
                    };
                    let idf = (1.0 + (n - m + 0.5) / (m + 0.5)).ln();
                    for (i, doc) in docs.iter().enumerate() {
                        if let Some(f) = doc.get(&token) {
                            let norm = k1 * (1.0 - b + b * lengths[i] / average);
                            scores[i] += idf * f * (k1 + 1.0) / (f + norm);
                        }
                    }
                }
                let mut order: Vec<usize> = (0..docs.len()).collect();
                order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
                let ranked = order.iter().take(DEPTH).map(|i| ids[*i].clone()).collect();
                (q.id.clone(), ranked)
            })
            .collect()
    }

    /// The metrics of `rankings` (a query without one counts as a miss).
    pub fn evaluate(&self, rankings: &Rankings) -> Metrics {
        let (mut r1, mut r5, mut rr) = (0.0, 0.0, 0.0);
        for q in &self.queries {
            let relevant: HashSet<&str> = q.relevant.iter().map(String::as_str).collect();
            let mut seen = HashSet::new();
            let first = rankings
                .get(&q.id)
                .into_iter()
                .flatten()
                .filter(|t| seen.insert(t.as_str()))
                .take(DEPTH)
                .position(|t| relevant.contains(t.as_str()))
                .map(|at| at + 1);
            if let Some(rank) = first {
                r1 += f64::from(u8::from(rank == 1));
                r5 += f64::from(u8::from(rank <= 5));
                rr += 1.0 / rank as f64;
            }
        }
        let n = self.queries.len().max(1) as f64;
        Metrics {
            recall_at_1: r1 / n,
            recall_at_5: r5 / n,
            mrr_at_10: rr / n,
        }
    }

    /// `rankings` as `score.py rankings` reads them: one `{"id", "ranked"}` line a query,
    /// in query order.
    pub fn rankings_jsonl(&self, rankings: &Rankings) -> String {
        let mut out = String::new();
        for q in &self.queries {
            let ranked = rankings.get(&q.id).cloned().unwrap_or_default();
            let line = serde_json::json!({"id": q.id, "ranked": ranked});
            let _ = writeln!(out, "{line}");
        }
        out
    }
}

/// `score.py`'s tokens: lower case, split on every character not in `[a-z0-9]`.
fn plain_tokens(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}
