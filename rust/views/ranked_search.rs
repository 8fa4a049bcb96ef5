//! The ranked word search of a mirror (§15.3) without an embedder: what
//! `memory_search` falls back to, `search_words`, `membolt search` and the
//! MCP tool answer with. With an embedder the same call fuses in the
//! cosine ranking ([`crate::views::semantic::ranked_search`]).

use std::sync::Arc;

use crate::entry::Entry;
use crate::store::mirror::Mirror;
use crate::views::semantic;

/// The entries qualifying for `query` (§15.2): how many, and the first
/// `limit` (all when `None`) in rank order with their scores. A query
/// without a significant term qualifies nothing.
pub fn ranked_search(
    mirror: &Mirror,
    query: &str,
    limit: Option<usize>,
) -> (usize, Vec<(Arc<Entry>, f64)>) {
    semantic::ranked_search(mirror, query, None, limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::entry;

    fn mirror(entries: &[(&str, &str, &str, i64)]) -> Mirror {
        let mut entries: Vec<_> = entries
            .iter()
            .map(|(key, kind, value, at)| entry(key, kind, value, *at, &[]))
            .collect();
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        Mirror::from_entries(entries, vec![1], 0)
    }

    fn keys(found: &(usize, Vec<(Arc<Entry>, f64)>)) -> Vec<&str> {
        found.1.iter().map(|(e, _)| &*e.key).collect()
    }

    #[test]
    fn rare_terms_outrank_common_ones() {
        let m = mirror(&[
            ("a", "note", "Caroline went to the support group", 1),
            ("b", "note", "Melanie went hiking", 2),
            ("c", "note", "everyone went home", 3),
            ("d", "note", "went went went", 4),
        ]);
        let found = ranked_search(&m, "where Caroline went", None);
        assert_eq!(found.0, 4);
        assert_eq!(keys(&found)[0], "a");
        // One significant term suffices; stopwords alone find nothing.
        assert_eq!(keys(&ranked_search(&m, "hiking", None)), ["b"]);
        assert_eq!(ranked_search(&m, "the where", None).0, 0);
        // Stemming: "groups" finds "group".
        assert_eq!(keys(&ranked_search(&m, "groups", Some(1))), ["a"]);
    }

    #[test]
    fn equal_scores_go_to_typed_then_newest_then_smaller_key() {
        let m = mirror(&[
            ("b", "note", "alpha", 5),
            ("a", "note", "alpha", 5),
            ("c", "note", "alpha", 9),
            ("z", "decision", "alpha", 1),
        ]);
        let found = ranked_search(&m, "alpha", Some(3));
        assert_eq!(found.0, 4);
        assert_eq!(keys(&found), ["z", "c", "a"]);
    }
}
