//! The score of an entry for a query, and the order of the ranked results
//! (§15.2).
//!
//! BM25 with k1 = 1.2 and b = 0.75 over the documents of
//! [`RecallIndex`], summed over the query's significant terms in their
//! order. Scores within [`RELATIVE_TOLERANCE`] of each other are equal, so
//! that the last bits of a floating-point sum (which may differ between
//! platforms and media) never decide the order: the tie-breaks do.
//!
//! "Within the tolerance" is made transitive by chaining: walking the
//! scores from the highest, a score starts a new *tier* when it is below
//! the previous one by more than the tolerance; entries of one tier are
//! ordered by the tie-breaks alone.

use std::cmp::Ordering;

use rustc_hash::FxHashMap;

use super::index::RecallIndex;

/// BM25's term-frequency saturation.
pub const K1: f64 = 1.2;
/// BM25's length normalisation.
pub const B: f64 = 0.75;
/// An entry id with its score.
type Scored = (u32, f64);

/// Scores closer than this, relative to the larger, are equal.
pub const RELATIVE_TOLERANCE: f64 = 1e-9;

/// BM25's inverse document frequency, with `n` entries of which `df` hold
/// the term; always positive.
#[must_use]
pub fn idf(n: u32, df: u32) -> f64 {
    let (n, df) = (f64::from(n), f64::from(df));
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// One term's part of an entry's score.
#[must_use]
pub fn term_score(idf: f64, tf: u32, len: u32, average_len: f64) -> f64 {
    let tf = f64::from(tf);
    let norm = K1 * (1.0 - B + B * f64::from(len) / average_len);
    idf * tf * (K1 + 1.0) / (tf + norm)
}

/// `(id, score)` of every entry holding one of `terms` (the significant
/// terms of a query, distinct), in no particular order.
pub fn score_all(index: &RecallIndex, terms: &[String]) -> Vec<(u32, f64)> {
    let n = index.document_count();
    let average_len = index.average_len();
    let known: Vec<u32> = terms
        .iter()
        .filter_map(|term| index.term_id(term))
        .filter(|&term| index.document_frequency(term) > 0)
        .collect();
    let bound: usize = known.iter().map(|&t| index.posting_bound(t)).sum();
    let mut scores: FxHashMap<u32, f64> =
        FxHashMap::with_capacity_and_hasher(bound.min(n as usize), rustc_hash::FxBuildHasher);
    for term in known {
        let idf = idf(n, index.document_frequency(term));
        index.for_each_posting(term, |id, tf| {
            let part = term_score(idf, tf, index.document_len(id), average_len);
            *scores.entry(id).or_insert(0.0) += part;
        });
    }
    scores.into_iter().collect()
}

/// Whether two scores (the larger first) count as equal.
fn same_tier(higher: f64, lower: f64) -> bool {
    higher - lower <= RELATIVE_TOLERANCE * higher.abs()
}

/// The first `limit` (all when `None`) of `scored` in rank order: score
/// descending by tiers, then `tie_break` (which must be a total order on
/// ids).
pub fn rank(
    mut scored: Vec<(u32, f64)>,
    limit: Option<usize>,
    tie_break: impl Fn(u32, u32) -> Ordering,
) -> Vec<(u32, f64)> {
    let limit = limit.unwrap_or(scored.len()).min(scored.len());
    if limit == 0 {
        return Vec::new();
    }
    let by_score = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1);
    if limit < scored.len() {
        // Only the best need an order: keep the `limit` best by exact
        // score and whatever is close enough below them to share a tier.
        scored.select_nth_unstable_by(limit - 1, by_score);
        let cutoff = scored[limit - 1].1;
        let margin = cutoff - 1e3 * RELATIVE_TOLERANCE * cutoff.abs();
        let (mut kept, rest): (Vec<Scored>, Vec<Scored>) =
            scored.iter().partition(|s| s.1 >= margin);
        let best_left_out = rest.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
        let lowest_kept = kept.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
        if rest.is_empty() || !same_tier(lowest_kept, best_left_out) {
            kept.sort_unstable_by(by_score);
            let mut ranked = order_tiers(kept, &tie_break);
            ranked.truncate(limit);
            return ranked;
        }
        // A tier reaches past the margin (never seen in practice): sort all.
    }
    scored.sort_unstable_by(by_score);
    let mut ranked = order_tiers(scored, &tie_break);
    ranked.truncate(limit);
    ranked
}

/// Orders each tier of `sorted` (scores descending) by `tie_break`.
fn order_tiers(
    mut sorted: Vec<(u32, f64)>,
    tie_break: &impl Fn(u32, u32) -> Ordering,
) -> Vec<(u32, f64)> {
    let mut start = 0;
    while start < sorted.len() {
        let mut end = start + 1;
        while end < sorted.len() && same_tier(sorted[end - 1].1, sorted[end].1) {
            end += 1;
        }
        if end - start > 1 {
            sorted[start..end].sort_unstable_by(|a, b| tie_break(a.0, b.0));
        }
        start = end;
    }
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idf_and_term_score_follow_bm25() {
        // ln(1 + (10 - 2 + 0.5) / 2.5)
        assert!((idf(10, 2) - (1.0f64 + 8.5 / 2.5).ln()).abs() < 1e-15);
        assert!(idf(1, 1) > 0.0);
        // At average length: idf * tf * 2.2 / (tf + 1.2).
        let s = term_score(2.0, 3, 10, 10.0);
        assert!((s - 2.0 * 3.0 * 2.2 / 4.2).abs() < 1e-12);
        // Longer documents score lower for the same frequency.
        assert!(term_score(2.0, 3, 20, 10.0) < s);
    }

    #[test]
    fn near_equal_scores_are_ordered_by_the_tie_break() {
        let scored = vec![
            (1, 2.0),
            (2, 2.0 * (1.0 + 1e-12)),
            (3, 5.0),
            (4, 1.0),
            (5, 2.0),
        ];
        // Tie-break: smaller id first.
        let all = rank(scored.clone(), None, |a, b| a.cmp(&b));
        let ids: Vec<u32> = all.iter().map(|s| s.0).collect();
        assert_eq!(ids, [3, 1, 2, 5, 4]);
        let top2 = rank(scored, Some(2), |a, b| a.cmp(&b));
        assert_eq!(top2.iter().map(|s| s.0).collect::<Vec<_>>(), [3, 1]);
    }

    #[test]
    fn selecting_the_first_few_equals_sorting_all() {
        let mut next = crate::test_rng::xorshift(0x0dd5_eed5_1234_9876);
        for _ in 0..500 {
            let n = 1 + next(60) as usize;
            let scored: Vec<(u32, f64)> = (0..n as u32)
                .map(|id| {
                    let base = f64::from(1 + next(6) as u32);
                    // Some scores differ from others by a few ulps only.
                    let noise = if next(2) == 0 { 0.0 } else { base * 1e-13 };
                    (id, base + noise)
                })
                .collect();
            let tie = |a: u32, b: u32| (a % 7).cmp(&(b % 7)).then(b.cmp(&a));
            let all = rank(scored.clone(), None, tie);
            for limit in [1, 2, 5, n] {
                let some = rank(scored.clone(), Some(limit), tie);
                assert_eq!(some, all[..limit.min(n)].to_vec());
            }
        }
    }
}
