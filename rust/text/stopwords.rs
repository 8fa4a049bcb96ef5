//! The stopwords of a query (§15.1): words too common to say what a
//! question is about. They are dropped from queries only; the index keeps
//! every term, so a stopword saved in a key or value still counts towards
//! the entry's length.

use std::collections::HashSet;
use std::sync::OnceLock;

/// The focus stopwords of 0.2 (§5.6), still stopwords of a query.
pub const FOCUS_STOPWORDS: &[&str] = &[
    "this", "that", "with", "from", "have", "what", "when", "where", "which", "would", "could",
    "should", "about", "your", "please", "into", "then", "the", "and", "for", "are", "was", "you",
    "can", "how", "why", "who", "has", "had", "but", "not", "its", "out", "all", "any", "one",
    "two", "now", "see", "off", "per", "via", "let", "did", "our", "yes", "too",
];

/// The stopwords §15.1 adds to [`FOCUS_STOPWORDS`] (short words 0.2 never
/// looked at, since its words had at least three bytes).
pub const MORE_QUERY_STOPWORDS: &[&str] = &[
    "a", "an", "is", "are", "be", "been", "being", "do", "does", "i", "me", "my", "we", "us", "it",
    "he", "she", "they", "them", "his", "her", "their", "there", "here", "of", "to", "in", "on",
    "at", "by", "as", "or", "if", "so", "than", "very", "just", "also", "will", "shall", "may",
    "might", "must",
];

/// Whether `lowered_word` (a word of §15.1 step 2, before stemming) is a
/// query stopword.
#[must_use]
pub fn is_query_stopword(lowered_word: &str) -> bool {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    lowered_word.len() <= LONGEST_STOPWORD_BYTES
        && SET
            .get_or_init(|| {
                FOCUS_STOPWORDS
                    .iter()
                    .chain(MORE_QUERY_STOPWORDS)
                    .copied()
                    .collect()
            })
            .contains(lowered_word)
}

/// The length of the longest stopword (a test checks it): longer words
/// skip the set.
const LONGEST_STOPWORD_BYTES: usize = 6;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_stopword_bytes_is_right() {
        let longest = FOCUS_STOPWORDS
            .iter()
            .chain(MORE_QUERY_STOPWORDS)
            .map(|w| w.len())
            .max();
        assert_eq!(longest, Some(LONGEST_STOPWORD_BYTES));
    }

    #[test]
    fn both_lists_are_stopwords_and_nothing_else() {
        for word in FOCUS_STOPWORDS.iter().chain(MORE_QUERY_STOPWORDS) {
            assert!(is_query_stopword(word), "{word}");
        }
        for word in ["caroline", "go", "db", "v2", "The", "thes", "whom"] {
            assert!(!is_query_stopword(word), "{word}");
        }
    }
}
