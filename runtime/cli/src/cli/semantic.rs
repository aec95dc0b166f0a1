//! `--model DIR`: semantic tool search with a local sentence-embedding model, for
//! `tools --search` and `serve` (see `switchboard::search::semantic`). A build without the
//! cargo feature `semantic` refuses the flag with a clear error rather than ignoring it.

use std::path::Path;

use super::Failure;

/// A loaded model's scorer.
#[cfg(feature = "semantic")]
pub(crate) type Scorer = std::sync::Arc<switchboard::search::semantic::SemanticScorer>;
/// Without the feature there is none (this type has no value).
#[cfg(not(feature = "semantic"))]
pub(crate) type Scorer = std::convert::Infallible;

/// The scorer of the model in `folder`, if one was given.
pub(crate) fn load(folder: Option<&Path>) -> Result<Option<Scorer>, Failure> {
    let Some(folder) = folder else {
        return Ok(None);
    };
    #[cfg(feature = "semantic")]
    {
        use switchboard::search::semantic::{Embedder, SemanticScorer};
        let embedder =
            Embedder::load(folder).map_err(|e| Failure::Usage(format!("--model: {e}")))?;
        Ok(Some(SemanticScorer::new(embedder)))
    }
    #[cfg(not(feature = "semantic"))]
    {
        Err(Failure::Usage(format!(
            "--model {}: this switchboard was built without semantic search; build it with \
             `cargo install switchboard-cli --features semantic` (or `cargo build --features \
             semantic`)",
            folder.display()
        )))
    }
}
