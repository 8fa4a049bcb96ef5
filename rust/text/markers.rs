//! Done and resolved (§5.5): which progress is finished, which error fixed.

use super::{lower, word_tokens};

/// §5.5: markers that make a value *not* done; checked before [`DONE_MARKERS`].
pub const NOT_DONE_MARKERS: &[&str] = &[
    "not done",
    "not complete",
    "not finished",
    "incomplete",
    "unfinished",
    "in progress",
    "in-progress",
    "pending",
    "todo",
    "to do",
    "wip",
    "blocked",
    "failed",
];

/// §5.5: markers that make a value done (unless a not-done marker hits).
pub const DONE_MARKERS: &[&str] = &[
    "done",
    "complete",
    "finished",
    "success",
    "shipped",
    "merged",
    "cancelled",
    "canceled",
    "abandoned",
    "wontfix",
    "won't fix",
];

/// §5.5: markers that make an error *not* resolved; checked before
/// [`RESOLVED_MARKERS`].
pub const REOPENED_MARKERS: &[&str] = &[
    "reopened",
    "not fixed",
    "not resolved",
    "still failing",
    "still broken",
    "regressed",
];

/// §5.5: markers that make an error resolved (unless a reopened marker hits).
pub const RESOLVED_MARKERS: &[&str] = &[
    "resolved",
    "fixed",
    "closed",
    "no longer",
    "not an issue",
    "works now",
    "wontfix",
    "won't fix",
    "cancelled",
    "canceled",
    "abandoned",
];

/// §5.5 hit rule of one marker against an already lowered value:
/// a marker holding a space, `-` or `'` hits when it is a substring of the
/// value; otherwise a marker of at most 3 characters hits when some token
/// equals it; otherwise when some token starts with it.
#[must_use]
pub fn marker_hits(lowered: &str, marker: &str) -> bool {
    let tokens: Vec<&str> = word_tokens(lowered).collect();
    marker_hits_tokens(lowered, &tokens, marker)
}

/// [`marker_hits`] with the word tokens of `lowered` already split, so that
/// checking a list of markers tokenises the value once.
fn marker_hits_tokens(lowered: &str, tokens: &[&str], marker: &str) -> bool {
    if marker.contains([' ', '-', '\'']) {
        lowered.contains(marker)
    } else if marker.chars().count() <= 3 {
        tokens.contains(&marker)
    } else {
        tokens.iter().any(|token| token.starts_with(marker))
    }
}

/// §5.5's two-step test: false if any of `negating` hits, else whether any
/// of `markers` hits.
fn markers_decide(value: &str, negating: &[&str], markers: &[&str]) -> bool {
    let lowered = lower(value);
    let tokens: Vec<&str> = word_tokens(&lowered).collect();
    let hits = |list: &[&str]| {
        list.iter()
            .any(|marker| marker_hits_tokens(&lowered, &tokens, marker))
    };
    !hits(negating) && hits(markers)
}

/// §5.5 `is_done`: false if any not-done marker hits, else true if any done
/// marker hits, else false.
#[must_use]
pub fn is_done(value: &str) -> bool {
    markers_decide(value, NOT_DONE_MARKERS, DONE_MARKERS)
}

/// §5.5 `is_resolved`: false if any reopened marker hits, else true if any
/// resolved marker hits, else false.
#[must_use]
pub fn is_resolved(value: &str) -> bool {
    markers_decide(value, REOPENED_MARKERS, RESOLVED_MARKERS)
}
