//! Recall (§15): the ranked word search that the `memory_search` tool,
//! `search_words`, the block's focus and the hooks all ask.
//!
//! ```text
//! index.rs     documents, postings and statistics, kept current per write
//! build.rs     the bulk build: documents tokenised on two threads
//! postings.rs  the bulk-built and the incremental posting layers
//! rank.rs      BM25, the equal-score rule and the order of results
//! ```
//!
//! The index lives in the render index (which owns the entry ids and the
//! tie-break stamps); [`ranked`] is the one function every caller uses.

mod build;
mod index;
mod postings;
pub mod rank;

pub use index::{KEY_REPEATS, RecallIndex};

use std::cmp::Ordering;

use crate::views::render_index::RenderIndex;

/// The entries of `index` that qualify for `terms` (a query's significant
/// terms, [`crate::text::query_terms`]): how many, and the first `limit`
/// (all when `None`) in §15.2 rank order with their scores.
pub fn ranked(
    index: &RenderIndex,
    terms: &[String],
    limit: Option<usize>,
) -> (usize, Vec<(u32, f64)>) {
    if terms.is_empty() {
        return (0, Vec::new());
    }
    let scored = rank::score_all(index.recall(), terms);
    let total = scored.len();
    let ranked = rank::rank(scored, limit, |a, b| tie_break(index, a, b));
    (total, ranked)
}

/// §15.2 ties: entries with a type (neither empty nor `note` nor `fact`)
/// first, then the newest, then the smaller key.
pub(crate) fn tie_break(index: &RenderIndex, a: u32, b: u32) -> Ordering {
    index
        .has_type_bonus(b)
        .cmp(&index.has_type_bonus(a))
        .then_with(|| index.updated_at(b).cmp(&index.updated_at(a)))
        .then_with(|| index.entry(a).key.cmp(&index.entry(b).key))
}
