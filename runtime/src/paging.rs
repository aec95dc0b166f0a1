//! Following a paginated list (`tools/list`, `resources/list`, `prompts/list`, …) to its end,
//! with one cap for all of them.
//!
//! A server whose cursor never ends must not keep a caller (or the handshake) busy forever:
//! after [`MAX_PAGES`] pages the list stops with what it has and a warning.

use std::future::Future;

/// Most pages followed in one listing.
pub(crate) const MAX_PAGES: u32 = 100;

/// Fetches pages with `fetch(cursor)` until a page has no next cursor, or [`MAX_PAGES`]
/// pages were fetched (then a warning names the server and the method).
pub(crate) async fn collect_pages<T, E, F, Fut>(
    server: &str,
    method: &str,
    mut fetch: F,
) -> Result<Vec<T>, E>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), E>>,
{
    let mut all = Vec::new();
    let mut cursor = None;
    for page in 1..=MAX_PAGES {
        let (items, next) = fetch(cursor.take()).await?;
        all.extend(items);
        match next {
            Some(next) if page < MAX_PAGES => cursor = Some(next),
            Some(_) => tracing::warn!(
                server,
                method,
                pages = MAX_PAGES,
                "the list still had more pages; the rest were not fetched"
            ),
            None => break,
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pages_are_followed_to_the_end_in_order() {
        let pages = collect_pages("s", "m", |cursor: Option<String>| async move {
            let n: u32 = cursor.map_or(0, |c| c.parse().unwrap_or(0));
            let next = (n < 2).then(|| (n + 1).to_string());
            Ok::<_, ()>((vec![n], next))
        })
        .await;
        assert_eq!(pages, Ok(vec![0, 1, 2]));
    }

    #[tokio::test]
    async fn a_cursor_that_never_ends_stops_at_the_cap() {
        let mut fetched = 0;
        let pages = collect_pages("s", "m", |_| {
            fetched += 1;
            async { Ok::<_, ()>((vec![()], Some("again".to_owned()))) }
        })
        .await;
        assert_eq!(pages.map(|p| p.len()), Ok(MAX_PAGES as usize));
        assert_eq!(fetched, MAX_PAGES);
    }

    #[tokio::test]
    async fn an_error_ends_the_listing() {
        let pages = collect_pages("s", "m", |cursor: Option<String>| async move {
            match cursor {
                None => Ok((vec![1], Some("x".to_owned()))),
                Some(_) => Err("broken"),
            }
        })
        .await;
        assert_eq!(pages, Err("broken"));
    }
}
