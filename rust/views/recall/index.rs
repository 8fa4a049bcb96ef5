//! The recall index (§15.2): for every term, the entries whose document
//! holds it and how often, and for every entry its document's length.
//!
//! An entry's *document* is its key's terms three times followed by its
//! value's terms (§15.1 terms), so the key counts three times in term
//! frequency and in length. The index keeps what BM25 needs, exactly:
//! the number of entries, the total document length, each term's document
//! frequency, each posting's term frequency.
//!
//! Invariants (`base_ids` = the id bound of the bulk build):
//! * the base postings of `id` are live iff `id < base_ids` and `id` is not
//!   stale; they are exactly the postings of the entry it held at the build
//!   (an id without an entry at the build is stale from the start);
//! * the delta holds exactly the postings of the entries whose id is stale
//!   or `>= base_ids`, from their current key and value;
//! * so every live entry's postings are found in exactly one layer, and
//!   `df[t]`, `doc_len`, `live` and `total_len` describe the live entries.
//!
//! Terms are never forgotten until a rebuild: a term whose entries are all
//! gone keeps its id with a document frequency of 0.

use rustc_hash::FxHashMap;

use super::postings::{Base, BaseParts, Delta};
use crate::entry::Entry;
use crate::text::{WordKind, for_each_word, term_of};

/// The key's terms count this many times in an entry's document.
pub const KEY_REPEATS: u32 = 3;

/// The delta and the stale ids may grow to this many entries, or to half
/// the base, whichever is larger, before a rebuild is wanted.
const MIN_CHURN_BEFORE_REBUILD: usize = 4096;

#[derive(Default)]
pub struct RecallIndex {
    /// Term text → term id.
    dictionary: FxHashMap<Box<str>, u32>,
    /// Live entries holding each term, by term id.
    df: Vec<u32>,
    base: Base,
    base_ids: u32,
    /// One bit per base id: its base postings are dead.
    stale: Vec<u64>,
    stale_count: usize,
    delta: Delta,
    delta_entries: usize,
    /// Document length by id (0 for an id without an entry).
    doc_len: Vec<u32>,
    live: u32,
    total_len: u64,
}

/// Calls `visit(word, kind, weight)` for every word of `entry`'s document.
fn for_each_document_word(entry: &Entry, mut visit: impl FnMut(&str, WordKind, u32)) {
    for_each_word(&entry.key, |word, kind| visit(word, kind, KEY_REPEATS));
    for_each_word(&entry.value, |word, kind| visit(word, kind, 1));
}

impl RecallIndex {
    /// The index of a whole store: `entries` as `(id, entry)`, ids
    /// ascending and distinct (see [`super::build`]).
    pub fn build<'a>(entries: impl Iterator<Item = (u32, &'a Entry)>) -> RecallIndex {
        let entries: Vec<(u32, &Entry)> = entries.collect();
        let documents = super::build::documents(&entries);
        let mut index = RecallIndex {
            df: vec![0; documents.terms.len()],
            ..RecallIndex::default()
        };
        for (id, len, postings) in documents.each() {
            index.count_in(id, len, postings);
        }
        index.base = Base::build(
            documents.terms.len(),
            documents.each().map(|(id, _, postings)| (id, postings)),
        );
        index.base_ids = entries.last().map_or(0, |(id, _)| id + 1);
        // Ids without an entry at the build are marked stale from the start
        // (not counted: they have no base postings to skip), so that an
        // entry given one later lives in the delta like any rewritten one.
        index.stale = vec![u64::MAX; (index.base_ids as usize).div_ceil(64)];
        for (id, _) in &entries {
            index.stale[*id as usize / 64] &= !(1 << (id % 64));
        }
        index.dictionary.reserve(documents.terms.len());
        for (id, term) in documents.terms.into_iter().enumerate() {
            index.dictionary.insert(term, id as u32);
        }
        index
    }

    /// The `(term, tf)` postings of `entry`'s document and its length, with
    /// each term's id from `term_id` (`None`: leave the term out).
    fn document(
        entry: &Entry,
        mut term_id: impl FnMut(&str) -> Option<u32>,
    ) -> (Vec<(u32, u32)>, u32) {
        let mut occurrences = Vec::new();
        for_each_document_word(entry, |word, kind, weight| {
            if let Some(term) = term_id(&term_of(word, kind)) {
                occurrences.push((term, weight));
            }
        });
        let mut postings = Vec::with_capacity(occurrences.len());
        let len = super::build::append_document(&mut occurrences, &mut postings);
        (postings, len)
    }

    /// Adds `entry` under `id` (an id without an entry).
    pub fn insert(&mut self, id: u32, entry: &Entry) {
        let (postings, len) = Self::document(entry, |term| Some(self.intern(term)));
        self.count_in(id, len, &postings);
        // An id below `base_ids` is stale here: its entry was removed, or it
        // had none at the build.
        debug_assert!(id >= self.base_ids || self.is_stale(id));
        for &(term, tf) in &postings {
            self.delta.insert(term, id, tf);
        }
        self.delta_entries += 1;
    }

    /// Removes `entry`, stored under `id`.
    pub fn remove(&mut self, id: u32, entry: &Entry) {
        let (postings, _) = Self::document(entry, |term| self.dictionary.get(term).copied());
        for &(term, _) in &postings {
            self.df[term as usize] -= 1;
        }
        self.live -= 1;
        self.total_len -= u64::from(self.doc_len[id as usize]);
        self.doc_len[id as usize] = 0;
        if id < self.base_ids && !self.is_stale(id) {
            self.stale[id as usize / 64] |= 1 << (id % 64);
            self.stale_count += 1;
        } else {
            for &(term, _) in &postings {
                self.delta.remove(term, id);
            }
            self.delta_entries -= 1;
        }
    }

    /// Whether so much was written since the bulk build that rebuilding
    /// would pay off (the owner decides when).
    pub fn wants_rebuild(&self) -> bool {
        self.stale_count + self.delta_entries
            > MIN_CHURN_BEFORE_REBUILD.max(self.base_ids as usize / 2)
    }

    /// The id of `term`, if some entry ever held it.
    pub fn term_id(&self, term: &str) -> Option<u32> {
        self.dictionary.get(term).copied()
    }

    /// How many entries hold term `term`.
    pub fn document_frequency(&self, term: u32) -> u32 {
        self.df[term as usize]
    }

    /// Calls `visit(id, term frequency)` for every entry holding `term`.
    pub fn for_each_posting(&self, term: u32, mut visit: impl FnMut(u32, u32)) {
        if self.stale_count == 0 {
            self.base.for_each(term, &mut visit);
        } else {
            self.base.for_each(term, |id, tf| {
                if !self.is_stale(id) {
                    visit(id, tf);
                }
            });
        }
        self.delta.for_each(term, visit);
    }

    /// At least the number of postings of `term` (stale ones counted).
    pub fn posting_bound(&self, term: u32) -> usize {
        self.base.len(term) + self.delta.len(term)
    }

    /// The length of `id`'s document.
    pub fn document_len(&self, id: u32) -> u32 {
        self.doc_len[id as usize]
    }

    /// The number of entries (documents).
    pub fn document_count(&self) -> u32 {
        self.live
    }

    /// The average document length over every entry (0 for no entry).
    pub fn average_len(&self) -> f64 {
        if self.live == 0 {
            0.0
        } else {
            self.total_len as f64 / f64::from(self.live)
        }
    }

    fn intern(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.dictionary.get(term) {
            return id;
        }
        let id = self.df.len() as u32;
        self.dictionary.insert(term.into(), id);
        self.df.push(0);
        id
    }

    /// Counts a new document of `id` in the statistics.
    fn count_in(&mut self, id: u32, len: u32, postings: &[(u32, u32)]) {
        for &(term, _) in postings {
            self.df[term as usize] += 1;
        }
        if self.doc_len.len() <= id as usize {
            self.doc_len.resize(id as usize + 1, 0);
        }
        self.doc_len[id as usize] = len;
        self.live += 1;
        self.total_len += u64::from(len);
    }

    fn is_stale(&self, id: u32) -> bool {
        self.stale[id as usize / 64] & (1 << (id % 64)) != 0
    }

    /// The index as an image section (`store/image/`): only a freshly
    /// built index (no delta, no id gone stale since the build) has one.
    pub fn to_image_bytes(&self) -> Option<Vec<u8>> {
        if self.delta_entries > 0 || self.stale_count > 0 {
            return None;
        }
        let mut terms: Vec<(&str, u32)> =
            self.dictionary.iter().map(|(t, &id)| (&**t, id)).collect();
        terms.sort_unstable_by_key(|&(_, id)| id);
        let BaseParts {
            starts,
            ids,
            tfs,
            big,
        } = self.base.parts();
        let mut out = Vec::new();
        let mut put = |value: u64| out.extend_from_slice(&value.to_le_bytes());
        for count in [
            terms.len(),
            self.base_ids as usize,
            self.live as usize,
            self.total_len as usize,
            starts.len(),
            ids.len(),
            big.len(),
            self.stale.len(),
            self.doc_len.len(),
        ] {
            put(count as u64);
        }
        for (term, _) in &terms {
            out.extend_from_slice(&(term.len() as u32).to_le_bytes());
            out.extend_from_slice(term.as_bytes());
        }
        let words = |out: &mut Vec<u8>, values: &[u32]| {
            for value in values {
                out.extend_from_slice(&value.to_le_bytes());
            }
        };
        words(&mut out, &self.df);
        words(&mut out, starts);
        words(&mut out, ids);
        out.extend_from_slice(tfs);
        for (at, tf) in big {
            words(&mut out, &[at, tf]);
        }
        for word in &self.stale {
            out.extend_from_slice(&word.to_le_bytes());
        }
        words(&mut out, &self.doc_len);
        Some(out)
    }

    /// The index [`RecallIndex::to_image_bytes`] wrote, if the bytes hold
    /// one whole and consistent (the section's checksum was verified).
    pub fn from_image_bytes(bytes: &[u8]) -> Option<RecallIndex> {
        let mut reader = ImageReader { bytes, at: 0 };
        let mut counts = [0usize; 9];
        for count in &mut counts {
            *count = usize::try_from(reader.u64()?).ok()?;
        }
        let [
            terms,
            base_ids,
            live,
            total_len,
            starts,
            ids,
            big,
            stale,
            doc_len,
        ] = counts;
        let mut dictionary = FxHashMap::default();
        dictionary.reserve(terms);
        for id in 0..terms {
            let len = reader.u32()? as usize;
            let term = std::str::from_utf8(reader.take(len)?).ok()?;
            dictionary.insert(Box::from(term), id as u32);
        }
        let df = reader.u32s(terms)?;
        let starts = reader.u32s(starts)?;
        let ids = reader.u32s(ids)?;
        let tfs = reader.take(ids.len())?.to_vec();
        let big: Vec<(u32, u32)> = (0..big)
            .map(|_| Some((reader.u32()?, reader.u32()?)))
            .collect::<Option<_>>()?;
        let stale = (0..stale)
            .map(|_| reader.u64())
            .collect::<Option<Vec<u64>>>()?;
        let doc_len = reader.u32s(doc_len)?;
        let base = Base::from_parts(starts, ids, tfs, &big)?;
        let base_ids = u32::try_from(base_ids).ok()?;
        let consistent = reader.at == bytes.len()
            && dictionary.len() == terms
            && stale.len() == (base_ids as usize).div_ceil(64)
            && doc_len.len() <= base_ids as usize
            && base.term_count() <= terms;
        consistent.then(|| RecallIndex {
            dictionary,
            df,
            base,
            base_ids,
            stale,
            stale_count: 0,
            delta: Delta::default(),
            delta_entries: 0,
            doc_len,
            live: live as u32,
            total_len: total_len as u64,
        })
    }
}

/// Reads the fields of a recall section in order.
struct ImageReader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> ImageReader<'a> {
    fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        let slice = self.bytes.get(self.at..self.at.checked_add(len)?)?;
        self.at += len;
        Some(slice)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn u32s(&mut self, count: usize) -> Option<Vec<u32>> {
        let bytes = self.take(count.checked_mul(4)?)?;
        Some(
            bytes
                .chunks_exact(4)
                .map(|word| u32::from_le_bytes(word.try_into().expect("4 bytes")))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::terms;

    fn entry(key: &str, value: &str) -> Entry {
        (*crate::testing::entry(key, "note", value, 0, &[])).clone()
    }

    /// `term` → `(id, tf)` of every live posting, sorted.
    fn postings(index: &RecallIndex, term: &str) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        if let Some(t) = index.term_id(term) {
            index.for_each_posting(t, |id, tf| out.push((id, tf)));
        }
        out.sort_unstable();
        out
    }

    /// An index read back from its image bytes answers as the one written;
    /// bytes cut short, or an index written to since its build, give none.
    #[test]
    fn an_index_survives_its_image_bytes() {
        let long = "word ".repeat(300);
        let entries = [
            entry("error:build", "the build fails"),
            entry("b", "builds"),
            entry("c", &long),
        ];
        let index =
            RecallIndex::build(entries.iter().enumerate().map(|(id, e)| (id as u32 * 2, e)));
        let bytes = index.to_image_bytes().unwrap();
        let read = RecallIndex::from_image_bytes(&bytes).unwrap();
        for term in ["build", "error", "fail", "word", "b", "absent"] {
            assert_eq!(postings(&read, term), postings(&index, term), "{term}");
        }
        assert_eq!(read.document_count(), 3);
        assert!((read.average_len() - index.average_len()).abs() < 1e-12);
        assert_eq!(read.document_len(4), index.document_len(4));
        assert!(RecallIndex::from_image_bytes(&bytes[..bytes.len() - 1]).is_none());
        let mut written = read;
        written.remove(0, &entries[0]);
        assert!(written.to_image_bytes().is_none());
        assert_eq!(postings(&written, "error"), []);
    }

    #[test]
    fn key_terms_count_three_times() {
        let index = RecallIndex::build(
            [
                entry("error:build", "the build fails"),
                entry("b", "builds"),
            ]
            .iter()
            .enumerate()
            .map(|(id, e)| (id as u32, e)),
        );
        assert_eq!(postings(&index, "build"), [(0, 4), (1, 1)]);
        assert_eq!(postings(&index, "error"), [(0, 3)]);
        // error×3 + build×3 + the + build + fail; b×3 + build.
        assert_eq!(index.document_len(0), 9);
        assert_eq!(index.document_len(1), 4);
        assert_eq!(index.document_count(), 2);
        assert!((index.average_len() - 6.5).abs() < 1e-12);
        let build = index.term_id("build").unwrap();
        assert_eq!(index.document_frequency(build), 2);
    }

    /// Bulk build plus random writes (stale ids, the delta, reused ids)
    /// always describe the live entries exactly, as a fresh build does.
    #[test]
    fn writes_keep_the_index_equal_to_a_fresh_build() {
        let mut next = crate::test_rng::xorshift(0x7a3c_91e5_0b4d_2f68);
        let words = [
            "alpha", "Alphas", "beta", "gamma", "the", "running", "runs", "東京", "café", "x1",
        ];
        let text = |next: &mut dyn FnMut(u64) -> u64| {
            let mut out = String::new();
            for _ in 0..next(7) {
                out.push_str(words[next(words.len() as u64) as usize]);
                out.push([' ', '-', ':', '.'][next(4) as usize]);
            }
            out
        };
        let vocabulary: Vec<String> = words.iter().flat_map(|w| terms(w)).collect();
        for round in 0..40 {
            let size = [3, 30, 200][round % 3];
            let mut live: Vec<Option<Entry>> = (0..size)
                .map(|_| (next(4) != 0).then(|| entry(&text(&mut next), &text(&mut next))))
                .collect();
            let mut index = RecallIndex::build(
                live.iter()
                    .enumerate()
                    .filter_map(|(id, e)| e.as_ref().map(|e| (id as u32, e))),
            );
            for _ in 0..2 * size {
                let id = next(size as u64 + 5) as u32;
                if id as usize >= live.len() {
                    live.resize(id as usize + 1, None);
                }
                if let Some(old) = live[id as usize].take() {
                    index.remove(id, &old);
                }
                if next(3) != 0 {
                    let new = entry(&text(&mut next), &text(&mut next));
                    index.insert(id, &new);
                    live[id as usize] = Some(new);
                }
            }
            let fresh = RecallIndex::build(
                live.iter()
                    .enumerate()
                    .filter_map(|(id, e)| e.as_ref().map(|e| (id as u32, e))),
            );
            assert_eq!(index.document_count(), fresh.document_count());
            assert!((index.average_len() - fresh.average_len()).abs() < 1e-9);
            for term in &vocabulary {
                assert_eq!(postings(&index, term), postings(&fresh, term), "{term}");
                let df = |i: &RecallIndex| i.term_id(term).map_or(0, |t| i.document_frequency(t));
                assert_eq!(df(&index), df(&fresh), "round {round} {term}");
            }
            for (id, e) in live.iter().enumerate() {
                if e.is_some() {
                    let id = id as u32;
                    assert_eq!(index.document_len(id), fresh.document_len(id));
                }
            }
        }
    }
}
