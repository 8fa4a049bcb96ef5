//! Recall by meaning (§15.4): the cosine ranking of a query's vector over
//! the entries' vectors, fused with the word ranking of §15.2 by
//! reciprocal rank fusion.
//!
//! The entries' vectors are rows of a flat `f32` buffer
//! ([`crate::store::vectors::Space`]), found by the hash of each entry's
//! text; an entry's text has a set of them (usually one). The render
//! index's ids are what the word ranking and the tie-breaks speak, so this
//! view keeps, per id, the hash of the entry's text ([`TextHashes`], kept
//! current change by change like the other derived indexes) and, in the
//! space, the set of each id (`Space::by_entry`, recomputed in one pass of
//! hash look-ups when the entries or the rows changed since). A query then
//! scans the rows of the ids that have some: a dot product per row (the
//! rows are normalised, so it is the cosine; an entry's cosine is the best
//! of its set's) in chunked accumulators the compiler vectorises, into a
//! bounded heap of the best. Nothing a query allocates grows with the store.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};

use rustc_hash::FxHashMap;

use crate::entry::Entry;
use crate::store::mirror::Mirror;
use crate::store::vectors::space::normalise;
use crate::store::vectors::{Set, Space, hash::text_hash};
use crate::views::recall::{self, rank, tie_break};
use crate::views::render_index::RenderIndex;

/// Reciprocal rank fusion's constant: an entry at rank `r` (from 1) of a
/// list adds `1 / (RRF_K + r)`.
pub const RRF_K: f64 = 60.0;

/// Each ranking is cut at its first this many before the fusion.
pub const LIST_CUT: usize = 100;

/// The cosine scan keeps this many of the best before ranking them with
/// §15.2's ties, so that equal scores at the cut are ordered by the rule,
/// not by the order of the scan.
const HEAP_SIZE: usize = LIST_CUT + 28;

/// The scan's accumulators: 16 lanes, which the compiler turns into SIMD
/// registers (two of AVX, four of SSE or NEON).
const LANES: usize = 16;

static SERIAL: AtomicU64 = AtomicU64::new(1);

/// The hash of each entry's text ([`text_hash`]), by render-index id; 0
/// for a free id.
pub struct TextHashes {
    by_id: Vec<u64>,
    /// Which table this is (a new mirror has a new one) and how many
    /// changes it took: together they say when `Space::by_entry` is stale.
    serial: u64,
    generation: u64,
    buffer: Vec<u8>,
}

impl TextHashes {
    pub fn build(index: &RenderIndex) -> TextHashes {
        let mut hashes = TextHashes {
            by_id: vec![0; index.id_bound()],
            serial: SERIAL.fetch_add(1, Ordering::Relaxed),
            generation: 0,
            buffer: Vec::new(),
        };
        for id in 0..index.id_bound() as u32 {
            if let Some(entry) = index.live_entry(id) {
                hashes.set(id, entry);
            }
        }
        hashes
    }

    /// `entry` now has the id `id`.
    pub fn set(&mut self, id: u32, entry: &Entry) {
        let id = id as usize;
        if self.by_id.len() <= id {
            self.by_id.resize(id + 1, 0);
        }
        self.by_id[id] = text_hash(&entry.key, &entry.value, &mut self.buffer);
        self.generation += 1;
    }

    /// The id `id` is free.
    pub fn clear(&mut self, id: u32) {
        if let Some(hash) = self.by_id.get_mut(id as usize) {
            *hash = 0;
        }
        self.generation += 1;
    }
}

/// A query's vector, normalised, with the space it is compared in.
pub struct Meaning<'a> {
    space: &'a Space,
    query: Vec<f32>,
}

/// The meaning of `query` (a vector of `space`'s model) over `mirror`:
/// `None` when it cannot be compared (wrong length, a NaN or an infinity,
/// all zeros), so that the caller ranks by words alone.
pub fn meaning<'a>(
    mirror: &Mirror,
    space: &'a mut Space,
    mut query: Vec<f32>,
) -> Option<Meaning<'a>> {
    if query.len() != space.dims() || !normalise(&mut query) {
        return None;
    }
    rows_by_entry(mirror, space);
    Some(Meaning {
        space: &*space,
        query,
    })
}

/// Builds what [`meaning`] needs of `mirror` (the render index with its
/// recall index, the texts' hashes), so that it can be done while the
/// vectors are read (`Store::read_with_vectors`).
pub fn warm(mirror: &Mirror) {
    crate::views::text_hashes(mirror);
}

/// Brings `space.by_entry`, the set of each entry by render id, up to
/// date with `mirror` and the space's rows.
fn rows_by_entry<'a>(mirror: &'a Mirror, space: &mut Space) -> &'a RenderIndex {
    let index = crate::views::render_index_with_recall(mirror);
    let hashes = crate::views::text_hashes(mirror);
    let stamp = (hashes.serial, hashes.generation, space.version);
    if space.by_entry_stamp != Some(stamp) {
        let mut by_entry = std::mem::take(&mut space.by_entry);
        by_entry.clear();
        by_entry.extend(hashes.by_id.iter().map(|&hash| {
            if hash == 0 {
                Set::MISSING
            } else {
                space.set_of(hash)
            }
        }));
        by_entry.resize(index.id_bound(), Set::MISSING);
        space.by_entry = by_entry;
        space.by_entry_stamp = Some(stamp);
    }
    index
}

/// Up to `limit` entries of `mirror` without a set in `space`, for the
/// embedder to catch up on (a new model, a save whose embedding failed).
/// An entry whose set is empty (the embedder embeds nothing of it) is not
/// missing.
pub fn missing(mirror: &Mirror, space: &mut Space, limit: usize) -> Vec<std::sync::Arc<Entry>> {
    let index = rows_by_entry(mirror, space);
    space
        .by_entry
        .iter()
        .enumerate()
        .filter(|&(id, set)| set.is_missing() && index.live_entry(id as u32).is_some())
        .take(limit)
        .map(|(id, _)| index.entry(id as u32).clone())
        .collect()
}

/// The dot product of two rows of equal length.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (a_chunks, a_rest) = a.as_chunks::<LANES>();
    let (b_chunks, b_rest) = b.as_chunks::<LANES>();
    let mut lanes = [0.0f32; LANES];
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += x * y;
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
}

/// The cosine of the query with the best of `set`'s vectors; `None` for
/// an empty (or missing) set.
fn best_cosine(meaning: &Meaning<'_>, set: Set) -> Option<f32> {
    if set.count == 0 {
        return None;
    }
    let rows = meaning.space.vectors(set).chunks_exact(meaning.query.len());
    rows.map(|row| dot(&meaning.query, row)).reduce(f32::max)
}

/// The entries closest to the query by cosine (those above 0), the first
/// [`LIST_CUT`] in rank order (§15.2's ties), with their cosines.
pub fn nearest(index: &RenderIndex, meaning: &Meaning<'_>) -> Vec<(u32, f64)> {
    let space = meaning.space;
    // (cosine bits, id): the bits of a positive float order as it does.
    let mut heap: BinaryHeap<Reverse<(u32, u32)>> = BinaryHeap::with_capacity(HEAP_SIZE + 1);
    for (id, &set) in space.by_entry.iter().enumerate() {
        let Some(cosine) = best_cosine(meaning, set) else {
            continue;
        };
        if cosine.is_nan() || cosine <= 0.0 {
            continue;
        }
        let item = (cosine.to_bits(), id as u32);
        if heap.len() < HEAP_SIZE {
            heap.push(Reverse(item));
        } else if heap.peek().is_some_and(|worst| item.0 > worst.0.0) {
            heap.pop();
            heap.push(Reverse(item));
        }
    }
    let scored = heap
        .into_iter()
        .map(|Reverse((bits, id))| (id, f64::from(f32::from_bits(bits))))
        .collect();
    rank::rank(scored, Some(LIST_CUT), |a, b| tie_break(index, a, b))
}

/// The ranking of §15.4: without `meaning`, §15.2's; with it, reciprocal
/// rank fusion of §15.2's first [`LIST_CUT`] and [`nearest`]'s, ordered by
/// fused score with §15.2's ties. Returns how many qualify and the first
/// `limit` (all when `None`) with their scores.
pub fn ranked(
    index: &RenderIndex,
    terms: &[String],
    meaning: Option<&Meaning<'_>>,
    limit: Option<usize>,
) -> (usize, Vec<(u32, f64)>) {
    let Some(meaning) = meaning else {
        return recall::ranked(index, terms, limit);
    };
    if terms.is_empty() {
        return (0, Vec::new());
    }
    let words = recall::ranked(index, terms, Some(LIST_CUT)).1;
    let near = nearest(index, meaning);
    let mut fused: FxHashMap<u32, f64> = FxHashMap::default();
    for list in [&words, &near] {
        for (rank, &(id, _)) in list.iter().enumerate() {
            *fused.entry(id).or_insert(0.0) += 1.0 / (RRF_K + (rank + 1) as f64);
        }
    }
    let scored: Vec<(u32, f64)> = fused.into_iter().collect();
    let total = scored.len();
    (
        total,
        rank::rank(scored, limit, |a, b| tie_break(index, a, b)),
    )
}

/// The entries of `keys` (each once; a key with no entry, or whose entry
/// has no vector, is left out) by the cosine of the query with the best of
/// their vectors, any sign, in rank order (highest first, §15.2's ties):
/// the first `limit` (all when `None`), as entries with their cosines.
pub fn by_cosine(
    mirror: &Mirror,
    meaning: &Meaning<'_>,
    keys: &[String],
    limit: Option<usize>,
) -> Vec<(std::sync::Arc<Entry>, f64)> {
    let index = crate::views::render_index_with_recall(mirror);
    let by_entry = &meaning.space.by_entry;
    let mut seen = rustc_hash::FxHashSet::default();
    let scored: Vec<(u32, f64)> = keys
        .iter()
        .filter_map(|key| index.id(key))
        .filter(|&id| seen.insert(id))
        .filter_map(|id| {
            let set = by_entry.get(id as usize).copied()?;
            let cosine = best_cosine(meaning, set)?;
            (!cosine.is_nan()).then_some((id, f64::from(cosine)))
        })
        .collect();
    rank::rank(scored, limit, |a, b| tie_break(index, a, b))
        .into_iter()
        .map(|(id, cosine)| (index.entry(id).clone(), cosine))
        .collect()
}

/// [`ranked`] for `query` over `mirror`, as entries.
pub fn ranked_search(
    mirror: &Mirror,
    query: &str,
    meaning: Option<&Meaning<'_>>,
    limit: Option<usize>,
) -> (usize, Vec<(std::sync::Arc<Entry>, f64)>) {
    let terms = crate::text::query_terms(query);
    if terms.is_empty() {
        return (0, Vec::new());
    }
    let index = crate::views::render_index_with_recall(mirror);
    let (total, ranked) = ranked(index, &terms, meaning, limit);
    let hits = ranked
        .into_iter()
        .map(|(id, score)| (index.entry(id).clone(), score))
        .collect();
    (total, hits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::vectors::Model;
    use crate::testing::entry;

    fn mirror(entries: &[(&str, &str, i64)]) -> Mirror {
        let mut entries: Vec<_> = entries
            .iter()
            .map(|(key, value, at)| entry(key, "note", value, *at, &[]))
            .collect();
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        Mirror::from_entries(entries, vec![1], 0)
    }

    fn space_for(mirror: &Mirror, vectors: &[(&str, [f32; 3])]) -> Space {
        let mut space = Space::new(Model {
            name_hash: 1,
            dims: 3,
        });
        let mut buffer = Vec::new();
        for (key, vector) in vectors {
            let entry = mirror.get(key).unwrap();
            let mut vector = vector.to_vec();
            assert!(normalise(&mut vector));
            space.push(text_hash(&entry.key, &entry.value, &mut buffer), &vector);
        }
        space
    }

    fn keys(found: &(usize, Vec<(std::sync::Arc<Entry>, f64)>)) -> Vec<&str> {
        found.1.iter().map(|(e, _)| &*e.key).collect()
    }

    #[test]
    fn dot_matches_the_plain_sum_at_every_length() {
        for len in [1, 15, 16, 17, 33, 256, 300] {
            let a: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..len).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).sum();
            assert!((f64::from(dot(&a, &b)) - plain).abs() < 1e-4, "len {len}");
        }
    }

    #[test]
    fn a_vector_alone_qualifies_and_fusion_orders_by_both() {
        let m = mirror(&[
            ("error:ci", "linker fails on libssl", 1),
            ("note:build", "the build is green again", 2),
            ("note:lunch", "pizza on friday", 3),
        ]);
        let mut space = space_for(
            &m,
            &[
                ("error:ci", [1.0, 0.1, 0.0]),
                ("note:build", [0.2, 1.0, 0.0]),
                ("note:lunch", [0.0, 0.0, 1.0]),
            ],
        );
        // Words alone: only "build" matches.
        assert_eq!(
            keys(&ranked_search(&m, "what broke the build", None, None)),
            ["note:build"]
        );
        let meaning = meaning(&m, &mut space, vec![1.0, 0.0, 0.0]).unwrap();
        let found = ranked_search(&m, "what broke the build", Some(&meaning), None);
        // error:ci is first by meaning; note:build first by words and
        // second by meaning, so first in all.
        assert_eq!(keys(&found), ["note:build", "error:ci"]);
        assert_eq!(found.0, 2);
        let score = found.1[0].1;
        assert!((score - (1.0 / 61.0 + 1.0 / 62.0)).abs() < 1e-12);
        // (The lunch vector is orthogonal to the query: it does not qualify.)
    }

    #[test]
    fn an_entry_scores_the_best_of_its_set_and_an_empty_set_is_not_missing() {
        let m = mirror(&[("a", "alpha", 1), ("b", "beta", 2), ("c", "gamma", 3)]);
        let mut space = space_for(&m, &[("c", [0.0, 0.0, 1.0])]);
        let mut buffer = Vec::new();
        let hash = |key: &str, buffer: &mut Vec<u8>| {
            let entry = m.get(key).unwrap();
            text_hash(&entry.key, &entry.value, buffer)
        };
        // a: two vectors, the second along the query; b: none by choice.
        space.push(hash("a", &mut buffer), &[0.0, 1.0, 0.0, 1.0, 0.0, 0.0]);
        space.push(hash("b", &mut buffer), &[]);
        assert!(missing(&m, &mut space, 10).is_empty());
        let meaning = meaning(&m, &mut space, vec![1.0, 0.0, -0.5]).unwrap();
        let keys: Vec<String> = ["c", "b", "a", "a", "zz"].map(String::from).to_vec();
        let found = by_cosine(&m, &meaning, &keys, None);
        let found: Vec<(&str, f64)> = found.iter().map(|(e, s)| (&*e.key, *s)).collect();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].0, "a");
        assert!((found[0].1 - 1.0 / 1.25f64.sqrt()).abs() < 1e-6);
        // A negative cosine is kept, with its sign.
        assert_eq!(found[1].0, "c");
        assert!((found[1].1 + 0.5 / 1.25f64.sqrt()).abs() < 1e-6);
        assert_eq!(by_cosine(&m, &meaning, &keys, Some(1)).len(), 1);
        // The fused ranking uses the best of a set too, and only above 0.
        assert_eq!(keys_of(&nearest_keys(&m, &meaning)), ["a"]);
    }

    fn nearest_keys(m: &Mirror, meaning: &Meaning<'_>) -> Vec<std::sync::Arc<Entry>> {
        let index = crate::views::render_index_with_recall(m);
        nearest(index, meaning)
            .into_iter()
            .map(|(id, _)| index.entry(id).clone())
            .collect()
    }

    fn keys_of(entries: &[std::sync::Arc<Entry>]) -> Vec<&str> {
        entries.iter().map(|e| &*e.key).collect()
    }

    #[test]
    fn unusable_query_vectors_give_no_meaning() {
        let m = mirror(&[("a", "alpha", 1)]);
        let mut space = space_for(&m, &[("a", [1.0, 0.0, 0.0])]);
        assert!(meaning(&m, &mut space, vec![1.0, 0.0]).is_none());
        assert!(meaning(&m, &mut space, vec![f32::NAN, 0.0, 0.0]).is_none());
        assert!(meaning(&m, &mut space, vec![0.0, 0.0, 0.0]).is_none());
    }

    #[test]
    fn rows_follow_changes_of_the_entries() {
        let mut m = mirror(&[("a", "alpha", 1), ("b", "beta", 2)]);
        let mut space = space_for(&m, &[("a", [1.0, 0.0, 0.0]), ("b", [0.0, 1.0, 0.0])]);
        let q = || vec![0.0, 1.0, 0.0];
        {
            let meaning = meaning(&m, &mut space, q()).unwrap();
            assert_eq!(
                keys(&ranked_search(&m, "gamma", Some(&meaning), None)),
                ["b"]
            );
        }
        // b's text changes: its vector is stale and no longer used.
        m.insert(entry("b", "note", "gamma", 3, &[]));
        {
            let meaning = meaning(&m, &mut space, q()).unwrap();
            let found = ranked_search(&m, "gamma", Some(&meaning), None);
            assert_eq!(keys(&found), ["b"]);
            assert!((found.1[0].1 - 1.0 / 61.0).abs() < 1e-12);
        }
        m.remove("b");
        let meaning = meaning(&m, &mut space, q()).unwrap();
        assert_eq!(ranked_search(&m, "gamma", Some(&meaning), None).0, 0);
    }
}
