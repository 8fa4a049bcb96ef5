//! The focus of a render (§5.6): significant words, stopwords, scores.

use std::collections::HashMap;

use super::{lower, word_tokens};

/// §5.6: characters trimmed from both ends of each focus word.
pub const FOCUS_TRIM_CHARS: &[char] = &[
    '.', ',', '!', '?', ';', ':', '"', '\'', '(', ')', '[', ']', '{', '}', '<', '>',
];

/// §5.6: minimum length in bytes of a significant focus word.
pub const FOCUS_MIN_WORD_BYTES: usize = 3;

/// §5.6: focus stopwords.
pub const STOPWORDS: &[&str] = &[
    "this", "that", "with", "from", "have", "what", "when", "where", "which", "would", "could",
    "should", "about", "your", "please", "into", "then", "the", "and", "for", "are", "was", "you",
    "can", "how", "why", "who", "has", "had", "but", "not", "its", "out", "all", "any", "one",
    "two", "now", "see", "off", "per", "via", "let", "did", "our", "yes", "too",
];

/// True for the §5.6 stopwords.
#[must_use]
pub fn is_stopword(word: &str) -> bool {
    // Hashed once: this runs for every token the focus index sees.
    static SET: std::sync::OnceLock<std::collections::HashSet<&'static str>> =
        std::sync::OnceLock::new();
    word.len() <= MAX_STOPWORD_BYTES
        && SET
            .get_or_init(|| STOPWORDS.iter().copied().collect())
            .contains(word)
}

/// §5.6 significant words of a focus text, in order: split `lower(focus)` on
/// whitespace, trim each word of `.,!?;:"'()[]{}<>`, keep words of at least 3
/// bytes that are not stopwords. Repeated words are kept (the spec does not
/// deduplicate, so a repeated word scores once per occurrence).
#[must_use]
pub fn focus_words(focus: &str) -> Vec<String> {
    lower(focus)
        .split(char::is_whitespace)
        .map(|word| word.trim_matches(FOCUS_TRIM_CHARS))
        .filter(|word| word.len() >= FOCUS_MIN_WORD_BYTES && !is_stopword(word))
        .map(str::to_owned)
        .collect()
}

/// The distinct words of `words` in first-occurrence order, each with how
/// many times it occurs (§5.6 counts every occurrence; a long pasted prompt
/// repeats words a lot, and each distinct word is looked up once).
#[must_use]
pub fn distinct_focus_words<S: AsRef<str>>(words: &[S]) -> Vec<(&str, u64)> {
    let mut slot_of: HashMap<&str, usize> = HashMap::with_capacity(words.len());
    let mut distinct: Vec<(&str, u64)> = Vec::new();
    for word in words {
        let word = word.as_ref();
        let slot = *slot_of.entry(word).or_insert_with(|| {
            distinct.push((word, 0));
            distinct.len() - 1
        });
        distinct[slot].1 += 1;
    }
    distinct
}

/// §5.6 score of an entry for the given significant words (from
/// [`focus_words`]): +2 per word that starts some token of `lower(key)`, else
/// +1 when it starts some token of `lower(value)`; then +1 when the score is
/// positive and `entry_type` is not empty, `note` or `fact`.
#[must_use]
pub fn focus_score<S: AsRef<str>>(words: &[S], key: &str, value: &str, entry_type: &str) -> u64 {
    focus_score_distinct(&distinct_focus_words(words), key, value, entry_type)
}

/// [`focus_score`] for words already made distinct by [`distinct_focus_words`].
#[must_use]
pub fn focus_score_distinct(
    distinct: &[(&str, u64)],
    key: &str,
    value: &str,
    entry_type: &str,
) -> u64 {
    let key = lower(key);
    let value = lower(value);
    let starts_a_token = |text: &str, word: &str| word_tokens(text).any(|t| t.starts_with(word));
    focus_score_of_hits(
        distinct.iter().map(|&(word, occurrences)| WordHit {
            occurrences,
            in_key: starts_a_token(&key, word),
            in_value: starts_a_token(&value, word),
        }),
        focus_type_bonus(entry_type),
    )
}

/// §5.6: whether an entry of this type gets the +1 of a positive score
/// (every type but empty, `note` and `fact`).
#[must_use]
pub fn focus_type_bonus(entry_type: &str) -> bool {
    !matches!(entry_type, "" | "note" | "fact")
}

/// What one distinct significant word hits in an entry: whether it starts a
/// word token of the key, of the value, and how often the focus holds it.
#[derive(Clone, Copy, Debug)]
pub struct WordHit {
    pub occurrences: u64,
    pub in_key: bool,
    pub in_value: bool,
}

/// The §5.6 scoring rule itself, for every caller (the renderer answers the
/// hits from its token-prefix index instead of re-tokenising every entry):
/// per occurrence of a word, +2 when it hits the key, else +1 when it hits
/// the value; then +1 for a positive score when `type_bonus` (see
/// [`focus_type_bonus`]). Words that hit nothing may be left out.
#[must_use]
pub fn focus_score_of_hits(hits: impl IntoIterator<Item = WordHit>, type_bonus: bool) -> u64 {
    let mut score: u64 = 0;
    for hit in hits {
        let per_occurrence = if hit.in_key {
            2
        } else {
            u64::from(hit.in_value)
        };
        score = score.saturating_add(per_occurrence.saturating_mul(hit.occurrences));
    }
    if score > 0 && type_bonus {
        score = score.saturating_add(1);
    }
    score
}

/// True when some significant focus word (§5.6: at least 3 bytes, not a
/// stopword) could be a prefix of the word token `token`, i.e. when some
/// prefix of it of at least [`FOCUS_MIN_WORD_BYTES`] is not a stopword. Tokens
/// for which this is false can never make an entry match a focus, so an index
/// of tokens may leave them out.
#[must_use]
pub fn could_match_focus_word(token: &str) -> bool {
    // Stopwords are short: a longer token is its own significant prefix.
    token.len() > MAX_STOPWORD_BYTES
        || (FOCUS_MIN_WORD_BYTES..=token.len())
            .filter_map(|end| token.get(..end))
            .any(|prefix| !is_stopword(prefix))
}

/// The length of the longest stopword (checked by a test).
pub(super) const MAX_STOPWORD_BYTES: usize = 6;
