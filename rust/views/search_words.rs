//! The word fallback of `memory_search` (§4, 0.2): when no entry holds the
//! whole query, entries are matched word by word.
//!
//! The query's significant words (the §5.6 focus rule: lowered, trimmed,
//! at least 3 bytes, not a stopword, each counted once) are looked up in the
//! render index's token index: a word hits an entry when a word token of its
//! key or value starts with it. Entries that hit at least half of the words
//! (rounded up) match, ranked by words hit, then words hit in the key (both
//! descending), then newest, then key ascending. A query of fewer than two
//! distinct significant words has no fallback.

use std::cmp::Reverse;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::entry::Entry;
use crate::store::mirror::Mirror;
use crate::text::{distinct_focus_words, focus_words};
use crate::views::token_index::Side;

/// The fallback needs at least this many distinct significant words.
const MIN_WORDS: usize = 2;

/// How many of the query's words one entry hits.
#[derive(Clone, Copy, Default)]
struct Tally {
    words: u32,
    key_words: u32,
    /// 1 + the index of the last word counted (0: none yet).
    last_word: u32,
    last_key_word: u32,
}

/// An entry with its sort key: words hit, words hit in the key (both more
/// first), newest first; ties to the smaller key.
type Ranked<'a> = (Reverse<u32>, Reverse<u32>, Reverse<i64>, &'a Arc<Entry>);

/// The entries matching `query`'s words, in §4 fallback order: the total
/// and the first `limit` (all when `None`).
pub fn search_words(
    mirror: &Mirror,
    query: &str,
    limit: Option<usize>,
) -> (usize, Vec<Arc<Entry>>) {
    let words = focus_words(query);
    let distinct = distinct_focus_words(&words);
    if distinct.len() < MIN_WORDS {
        return (0, Vec::new());
    }
    let index = crate::views::render_index_with_tokens(mirror);
    let tokens = index.tokens();
    let mut tallies: FxHashMap<u32, Tally> = FxHashMap::default();
    for (number, (word, _)) in distinct.iter().enumerate() {
        let mark = number as u32 + 1;
        tokens.for_each_with_prefix(word, |id, side| {
            let tally = tallies.entry(id).or_default();
            if tally.last_word != mark {
                tally.last_word = mark;
                tally.words += 1;
            }
            if side == Side::Key && tally.last_key_word != mark {
                tally.last_key_word = mark;
                tally.key_words += 1;
            }
        });
    }
    let needed = distinct.len().div_ceil(2) as u32;
    let mut ranked: Vec<Ranked<'_>> = tallies
        .into_iter()
        .filter(|(_, tally)| tally.words >= needed)
        .map(|(id, tally)| {
            let entry = index.entry(id);
            (
                Reverse(tally.words),
                Reverse(tally.key_words),
                Reverse(entry.updated_at),
                entry,
            )
        })
        .collect();
    let total = ranked.len();
    let order = |a: &Ranked<'_>, b: &Ranked<'_>| {
        (a.0, a.1, a.2)
            .cmp(&(b.0, b.1, b.2))
            .then_with(|| a.3.key.cmp(&b.3.key))
    };
    let shown = limit.unwrap_or(total).min(total);
    if shown < total && shown > 0 {
        // Only the first `shown` need an order: select, then sort those.
        ranked.select_nth_unstable_by(shown - 1, order);
        ranked.truncate(shown);
    } else {
        ranked.truncate(shown);
    }
    ranked.sort_unstable_by(order);
    (
        total,
        ranked
            .into_iter()
            .map(|(_, _, _, entry)| entry.clone())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::entry;

    fn mirror(entries: &[(&str, &str, i64)]) -> Mirror {
        let mut entries: Vec<_> = entries
            .iter()
            .map(|(key, value, at)| entry(key, "note", value, *at, &[]))
            .collect();
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        Mirror::from_entries(entries, vec![1], 0)
    }

    fn keys(found: &(usize, Vec<Arc<Entry>>)) -> Vec<&str> {
        found.1.iter().map(|e| &*e.key).collect()
    }

    #[test]
    fn entries_hitting_half_the_words_are_ranked_by_words_then_key_words() {
        let m = mirror(&[
            ("decision:billing", "use the provider stripe", 1),
            ("a", "billing provider decision made", 2),
            ("b", "billing only", 3),
            ("c", "nothing relevant", 4),
            ("providers", "billing", 5),
        ]);
        let found = search_words(&m, "billing provider decision", None);
        // Half of 3 rounded up is 2: "b" hits one word only.
        assert_eq!(found.0, 3);
        assert_eq!(keys(&found), ["decision:billing", "a", "providers"]);
    }

    #[test]
    fn ties_go_to_the_newest_then_the_smaller_key() {
        let m = mirror(&[
            ("b", "alpha gamma", 5),
            ("a", "alpha gamma", 5),
            ("c", "alpha gamma", 9),
        ]);
        let found = search_words(&m, "alpha gamma", Some(2));
        assert_eq!(found.0, 3);
        assert_eq!(keys(&found), ["c", "a"]);
    }

    #[test]
    fn a_word_hits_only_as_a_token_prefix_and_one_word_never_falls_back() {
        let m = mirror(&[
            ("k", "rebilling providers", 1),
            ("j", "billing provider", 1),
        ]);
        // "rebilling" does not start with "billing"; "providers" starts
        // with "provide", and one of two words is half.
        assert_eq!(keys(&search_words(&m, "billing provide", None)), ["j", "k"]);
        assert_eq!(search_words(&m, "billing", None).0, 0);
        // Stopwords and short words are not significant: one word is left.
        assert_eq!(search_words(&m, "the billing of an", None).0, 0);
    }
}
