//! The lexical tool search holds its target on the evaluation set: recall@5 at least 1.2
//! times plain BM25's, both computed here with `score.py`'s definitions.

use switchboard_benches::search_eval::{default_dir, EvalSet};

#[test]
fn lexical_recall_at_5_is_at_least_1_2_times_plain_bm25() {
    let set = EvalSet::load(&default_dir()).expect("the evaluation set loads");
    assert!(
        set.tools() >= 300 && set.queries.len() >= 150,
        "the whole set"
    );
    let catalogue = set.catalogue();
    assert_eq!(
        catalogue.len(),
        set.tools(),
        "every tool is in the catalogue"
    );

    let plain = set.evaluate(&set.rank_plain_bm25());
    // The baseline is score.py's (its README: recall@5 0.604): same definitions.
    assert!(
        (plain.recall_at_5 - 0.604).abs() < 0.002,
        "plain BM25 as score.py has it: {plain:?}"
    );
    let lexical = set.evaluate(&set.rank_lexical(&catalogue));
    eprintln!("plain BM25: {plain:?}\nlexical:    {lexical:?}");
    assert!(
        lexical.recall_at_5 >= 1.2 * plain.recall_at_5,
        "lexical recall@5 {:.3} < 1.2 × plain BM25's {:.3}",
        lexical.recall_at_5,
        plain.recall_at_5
    );
    assert!(
        lexical.mrr_at_10 > plain.mrr_at_10,
        "{lexical:?} vs {plain:?}"
    );
}

#[test]
fn rankings_name_tools_as_server_slash_tool() {
    let set = EvalSet::load(&default_dir()).expect("the evaluation set loads");
    let known: std::collections::HashSet<String> = set
        .servers
        .iter()
        .flat_map(|(server, tools)| tools.iter().map(move |t| format!("{server}/{}", t.name)))
        .collect();
    let rankings = set.rank_lexical(&set.catalogue());
    assert_eq!(rankings.len(), set.queries.len());
    for ranked in rankings.values() {
        assert!(ranked.len() <= 10);
        assert!(ranked.iter().all(|t| known.contains(t)), "{ranked:?}");
    }
    let jsonl = set.rankings_jsonl(&rankings);
    assert_eq!(jsonl.lines().count(), set.queries.len());
}
