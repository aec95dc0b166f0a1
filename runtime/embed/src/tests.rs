//! The model's own tests: all but one need its files, in the folder `SWITCHBOARD_TEST_MODEL`
//! names (`.ci/run` fetches all-MiniLM-L6-v2 into `.ci/models/all-minilm-l6-v2`).

use super::*;

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
#[ignore = "needs the model: all-MiniLM-L6-v2 in .ci/models or $SWITCHBOARD_TEST_MODEL"]
fn embeddings_are_unit_vectors_and_close_in_meaning_is_close() {
    let embedder = Embedder::load(test_model_folder()).unwrap();
    let texts = [
        "who touched this file lately",
        "git log. Shows the commit logs",
        "create issue. Create a new issue in a GitHub repository",
        "A man is eating food.",
    ];
    let vectors = embedder.embed(&texts);
    for v in &vectors {
        assert_eq!(v.len(), 384);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    }
    let log = cosine(&vectors[0], &vectors[1]);
    let issue = cosine(&vectors[0], &vectors[2]);
    let food = cosine(&vectors[0], &vectors[3]);
    eprintln!("log {log} issue {issue} food {food}");
    assert!(
        log > issue && log > food,
        "log {log} issue {issue} food {food}"
    );
    // One text alone embeds as it does in a batch (padding changes nothing).
    let alone = embedder.embed(&texts[1..2]);
    assert!(cosine(&alone[0], &vectors[1]) > 0.9999);
}

/// The embeddings `candle-transformers`' `BertModel` 0.9.2 (the port this crate ran before
/// `bert`) computed for these texts with all-MiniLM-L6-v2, mean-pooled and
/// normalised as here.
const REFERENCE: &str = include_str!("reference_embeddings.json");

#[test]
#[ignore = "needs the model: all-MiniLM-L6-v2 in .ci/models or $SWITCHBOARD_TEST_MODEL"]
fn matches_the_reference_port_in_singles_and_closely_in_halves() {
    let reference: Vec<serde_json::Value> = serde_json::from_str(REFERENCE).unwrap();
    let texts: Vec<&str> = reference
        .iter()
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    let expected: Vec<Vec<f32>> = reference
        .iter()
        .map(|r| serde_json::from_value(r["embedding"].clone()).unwrap())
        .collect();
    // Halves round each weight to 11 significant bits: a component moves by under 1e-4, and
    // the cosine to the single-precision embedding stays within 1e-5 of 1.
    for (precision, within) in [(Precision::Single, 1e-5), (Precision::Half, 5e-4)] {
        let embedder = Embedder::load_with(test_model_folder(), precision).unwrap();
        if precision == Precision::Half && embedder.precision() != Precision::Half {
            eprintln!("this CPU holds no halves: the half-precision run is the single one");
        }
        // In one batch, and each alone.
        let batched = embedder.embed(&texts);
        let mut worst_seen = 0.0f32;
        for (i, expected) in expected.iter().enumerate() {
            let alone = embedder.embed(&texts[i..=i]).remove(0);
            for got in [&batched[i], &alone] {
                let worst = got
                    .iter()
                    .zip(expected)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0f32, f32::max);
                worst_seen = worst_seen.max(worst);
                assert!(
                    worst < within,
                    "{precision:?} {:?}: a component {worst} off",
                    texts[i]
                );
                assert!(
                    cosine(got, expected) > 1.0 - 1e-5,
                    "{precision:?} {:?}",
                    texts[i]
                );
            }
        }
        eprintln!("{precision:?}: the worst component {worst_seen} off");
    }
}

#[test]
fn a_missing_or_broken_model_folder_is_a_typed_error() {
    let missing = Embedder::load("/nonexistent/model").unwrap_err();
    assert!(
        matches!(
            missing,
            ModelError::Missing {
                file: "config.json",
                ..
            }
        ),
        "{missing}"
    );
    let folder = std::env::temp_dir().join(format!("switchboard-model-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("config.json"), "{ not json").unwrap();
    let broken = Embedder::load(&folder).unwrap_err();
    assert!(
        matches!(
            broken,
            ModelError::Unreadable {
                file: "config.json",
                ..
            }
        ),
        "{broken}"
    );
    assert!(broken.to_string().contains("config.json"), "{broken}");
    // A model pooled by the maximum is refused, not embedded as if by the mean.
    std::fs::write(
        folder.join("config.json"),
        r#"{"vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6,
            "num_attention_heads": 12, "intermediate_size": 1536, "hidden_act": "gelu",
            "max_position_embeddings": 512}"#,
    )
    .unwrap();
    std::fs::create_dir_all(folder.join("1_Pooling")).unwrap();
    std::fs::write(
        folder.join("1_Pooling/config.json"),
        r#"{"pooling_mode_max_tokens": true, "pooling_mode_mean_tokens": false}"#,
    )
    .unwrap();
    let pooled = Embedder::load(&folder).unwrap_err();
    assert!(
        matches!(
            pooled,
            ModelError::Unreadable {
                file: "1_Pooling/config.json",
                ..
            }
        ),
        "{pooled}"
    );
    assert!(
        pooled.to_string().contains("pooling_mode_max_tokens"),
        "{pooled}"
    );
    let _ = std::fs::remove_dir_all(&folder);
}

#[test]
fn dot_is_the_dot_product_at_any_length() {
    for len in [0, 1, 7, 8, 15, 16, 17, 384, 385] {
        let a: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..len).map(|i| (i as f32 * 0.11).cos()).collect();
        let exact: f64 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum();
        assert!(
            (f64::from(dot(&a, &b)) - exact).abs() < 1e-4,
            "length {len}"
        );
    }
}
