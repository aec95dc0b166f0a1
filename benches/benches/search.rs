//! Tool search over 5,000 tools: the evaluation set's corpus (333 tools of 20 real servers,
//! `search_eval/`) repeated 16 times under other server names (`github`, `github-1`, ...,
//! 5,328 tools of 320 servers), every tool name prefixed since every name is on 16
//! servers.
//!
//! - `search/lexical/query`: `Catalogue::search(query, 10)`, cycling through the set's 270
//!   queries; then a custom loop times every query one by one for p50/p99/max (target:
//!   p99 ≤ 1 ms).
//! - `search/index/one_server_relists`: the index update after one server (`atlassian-7`,
//!   98 tools, the largest) relists: `Catalogue::prepare_search` on the catalogue built
//!   after the relist, every other server's part reused (target: ≤ 10 ms).
//! - `search/index/from_scratch`: the same index with nothing to reuse, for comparison.
//! - `search/catalogue/build`: building the catalogue snapshot itself (naming 5,328 tools,
//!   cloning them), which a relist costs before any search: informative.
//! - With the feature `semantic` and the model (`.ci/models/all-minilm-l6-v2` or
//!   `$SWITCHBOARD_TEST_MODEL`), a custom loop times the hybrid search the same way (one
//!   query embedding, the cosine of 5,328 tools, the fusion; target: p99 ≤ 10 ms), beside the
//!   query's embedding alone (with the weights as the scorer holds them, halves by default,
//!   and in turns as singles), after timing the tools' embedding (each distinct text once:
//!   the corpus's 333).

mod support;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use support::measure::{print_summary, print_target, usage, Profile};
use switchboard::model::Tool;
use switchboard::{Catalogue, CatalogueBuilder, Naming};
use switchboard_benches::search_eval::{default_dir, EvalSet};

/// Copies of the corpus: 16 × 333 = 5,328 tools.
const COPIES: usize = 16;
/// The server that relists in the update bench.
const RELISTING: &str = "atlassian-7";

/// The builder of the big catalogue, and the relisting server's tools.
fn big(set: &EvalSet) -> (CatalogueBuilder, Arc<[Tool]>) {
    let mut builder = CatalogueBuilder::new(Naming::default());
    let mut relisting = None;
    for copy in 0..COPIES {
        for (server, tools) in &set.servers {
            let name = if copy == 0 {
                server.clone()
            } else {
                format!("{server}-{copy}")
            };
            let tools: Arc<[Tool]> = Arc::from(tools.clone());
            if name == RELISTING {
                relisting = Some(Arc::clone(&tools));
            }
            builder.set_server(name, tools);
        }
    }
    (
        builder,
        relisting.expect("the relisting server is in the corpus"),
    )
}

/// A fresh list with the same tools: what a relist hands the runtime.
fn relist(builder: &mut CatalogueBuilder, tools: &Arc<[Tool]>) -> Catalogue {
    builder.set_server(RELISTING, tools.to_vec());
    builder.build()
}

fn search(c: &mut Criterion, set: &EvalSet) {
    let (mut builder, relisting) = big(set);
    let catalogue = builder.build();
    assert_eq!(catalogue.len(), COPIES * set.tools());
    catalogue.prepare_search();
    let queries: Vec<&str> = set.queries.iter().map(|q| q.text.as_str()).collect();

    let mut group = c.benchmark_group("search");
    group.bench_function("lexical/query", |b| {
        let mut next = 0;
        b.iter(|| {
            next = (next + 1) % queries.len();
            black_box(catalogue.search(queries[next], 10))
        })
    });
    group.bench_function("index/one_server_relists", |b| {
        b.iter_batched(
            || relist(&mut builder, &relisting),
            |catalogue| {
                catalogue.prepare_search();
                catalogue
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("index/from_scratch", |b| {
        b.iter_batched(
            || big(set).0.build(),
            |catalogue| {
                catalogue.prepare_search();
                catalogue
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("catalogue/build", |b| {
        b.iter(|| black_box(relist(&mut builder, &relisting)))
    });
    group.finish();

    if !support::custom_loop() {
        return;
    }
    // Every query timed alone, over several rounds.
    let rounds = support::measure::rounds(20);
    let mut latencies = Vec::new();
    let started = Instant::now();
    let used = usage();
    for _ in 0..rounds {
        for query in &queries {
            let t = Instant::now();
            black_box(catalogue.search(query, 10));
            latencies.push(t.elapsed());
        }
    }
    let lexical = Profile::new(
        "search/lexical",
        latencies,
        started.elapsed(),
        usage() - used,
    );
    // Index updates timed alone.
    let mut updates = Vec::new();
    let started = Instant::now();
    let used = usage();
    for _ in 0..rounds * 5 {
        let next = relist(&mut builder, &relisting);
        let t = Instant::now();
        next.prepare_search();
        updates.push(t.elapsed());
    }
    let update = Profile::new("search/update", updates, started.elapsed(), usage() - used);

    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let title = format!(
        "search over {} tools of {} servers (a query; the index update when one server relists)",
        catalogue.len(),
        COPIES * set.servers.len()
    );
    print_summary(&title, &[lexical.clone(), update.clone()]);
    print_target(
        "lexical search p99 per query",
        us(lexical.quantile(0.99)),
        "us",
        true,
        1000.0,
    );
    print_target(
        "index update when one server relists, p99",
        us(update.quantile(0.99)) / 1000.0,
        "ms",
        true,
        10.0,
    );
    #[cfg(feature = "semantic")]
    hybrid(
        &catalogue,
        &queries,
        usize::try_from(rounds / 4).unwrap_or(1),
    );
}

/// The hybrid search timed query by query, and the query's embedding alone.
#[cfg(feature = "semantic")]
fn hybrid(catalogue: &Catalogue, queries: &[&str], rounds: usize) {
    use switchboard::search::semantic::{Embedder, Precision, SemanticScorer};
    use switchboard::search::ToolSearch;
    let folder = std::env::var_os("SWITCHBOARD_TEST_MODEL")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/models/all-minilm-l6-v2")
        });
    // Not `test_model_folder`: without the model the bench says so and times the rest.
    let (scorer, single) = match (
        Embedder::load(&folder),
        Embedder::load_with(&folder, Precision::Single),
    ) {
        (Ok(embedder), Ok(single)) => (SemanticScorer::new(embedder), single),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("hybrid search not timed: {e}");
            return;
        }
    };
    println!(
        "\nthe scorer's weights held as {:?}",
        scorer.embedder().precision()
    );
    let t = Instant::now();
    scorer.prepare_now(catalogue);
    println!(
        "\n{} distinct tool texts of {} tools embedded in {:.1} s",
        scorer.embedded(),
        catalogue.len(),
        t.elapsed().as_secs_f64()
    );
    // The same texts in turns: as the scorer holds the weights, and as singles.
    let mut texts: Vec<String> = catalogue
        .iter()
        .map(switchboard::search::semantic::tool_text)
        .collect();
    texts.sort_unstable();
    texts.dedup();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    for turn in 1..=2 {
        let t = Instant::now();
        black_box(scorer.embedder().embed(&texts));
        let held = t.elapsed();
        let t = Instant::now();
        black_box(single.embed(&texts));
        println!(
            "turn {turn}: the {} texts embedded in {:.2} s ({:?}), {:.2} s (Single)",
            texts.len(),
            held.as_secs_f64(),
            scorer.embedder().precision(),
            t.elapsed().as_secs_f64()
        );
    }
    let rounds = rounds.max(1);
    let mut searches = Vec::new();
    let mut embeddings = Vec::new();
    let mut singles = Vec::new();
    let started = Instant::now();
    let used = usage();
    for _ in 0..rounds {
        for query in queries {
            // The default precision's embedding, in turns with the singles' (the floor as
            // it was, measured in the same regime).
            let t = Instant::now();
            black_box(single.embed(&[query]));
            singles.push(t.elapsed());
            let t = Instant::now();
            black_box(scorer.embedder().embed(&[query]));
            embeddings.push(t.elapsed());
            let t = Instant::now();
            black_box(catalogue.search_with(&ToolSearch::new(query).limit(10).scorer(&*scorer)));
            searches.push(t.elapsed());
        }
    }
    let elapsed = started.elapsed();
    let used = usage() - used;
    let hybrid = Profile::new("search/hybrid", searches, elapsed, used);
    let embedding = Profile::new("search/query_embedding", embeddings, elapsed, used);
    let single = Profile::new("search/query_embedding_single", singles, elapsed, used);
    print_summary(
        &format!(
            "hybrid search over {} tools (a query; its embedding alone, as the scorer holds \
             the weights and as singles)",
            catalogue.len()
        ),
        &[hybrid.clone(), embedding, single],
    );
    print_target(
        "hybrid search p99 per query",
        hybrid.quantile(0.99).as_secs_f64() * 1e3,
        "ms",
        true,
        10.0,
    );
}

fn main() -> std::process::ExitCode {
    if let Some(code) = switchboard_demo::main_from_env() {
        return code;
    }
    let set = match EvalSet::load(&default_dir()) {
        Ok(set) => set,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut c = support::criterion(Duration::from_millis(500), Duration::from_secs(3), 30);
    search(&mut c, &set);
    c.final_summary();
    std::process::ExitCode::SUCCESS
}
