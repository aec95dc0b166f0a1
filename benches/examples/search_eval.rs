//! Scores the runtime's lexical tool search on the evaluation set (`benches/search_eval`),
//! beside plain BM25, and writes its rankings for `score.py rankings`:
//!
//! ```text
//! cargo run --release -p switchboard-benches --example search_eval -- [--out FILE]
//! python3 benches/search_eval/score.py rankings FILE
//! ```

use std::process::ExitCode;

use switchboard_benches::search_eval::{default_dir, EvalSet, Metrics};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut out = None;
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--out", Some(path)) => out = Some(path),
            _ => {
                eprintln!("usage: search_eval [--out FILE]");
                return ExitCode::from(2);
            }
        }
    }
    let set = match EvalSet::load(&default_dir()) {
        Ok(set) => set,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let catalogue = set.catalogue();
    let lexical = set.rank_lexical(&catalogue);
    let row = |name: &str, m: Metrics| {
        println!(
            "| {name} | {:.3} | {:.3} | {:.3} |",
            m.recall_at_1, m.recall_at_5, m.mrr_at_10
        );
    };
    println!(
        "{} queries, {} tools of {} servers\n",
        set.queries.len(),
        set.tools(),
        set.servers.len()
    );
    println!("| ranking | recall@1 | recall@5 | MRR@10 |\n| --- | ---: | ---: | ---: |");
    row(
        "plain BM25 (name + description)",
        set.evaluate(&set.rank_plain_bm25()),
    );
    row(
        "lexical (BM25F, switchboard::search)",
        set.evaluate(&lexical),
    );
    if let Some(path) = out {
        if let Err(e) = std::fs::write(&path, set.rankings_jsonl(&lexical)) {
            eprintln!("error: {path}: {e}");
            return ExitCode::FAILURE;
        }
        eprintln!("rankings written to {path}");
    }
    ExitCode::SUCCESS
}
