//! Case-insensitive substring search over the mirror (§4).
//!
//! Each entry has a 512-bit signature of the byte trigrams of its lowered key
//! and value (computed once per write, never per query). A query's trigrams
//! must all be present in an entry's signature for the entry to possibly
//! contain the query, so most entries are rejected by a few word tests; the
//! survivors are checked with `memchr::memmem` in their lowered texts, which
//! sit packed in one buffer (`lowered_text.rs`). When the signatures cannot
//! narrow a query down (a common word of a small vocabulary, or a query
//! under three bytes), the whole buffer is scanned in one pass instead:
//! memory streamed once, no pointer followed per entry.
//!
//! A new process whose mirror came from an image (`store/image/`) takes
//! the index from the image's sections instead of building it: the lowered
//! texts are used where they lie in the mapped file, the signatures copied
//! in one pass, and slot `i` is the image's entry `i` (its key is found
//! in the image, its entry made by the mirror's base on first use); the
//! changes since the image are then applied as any write is.
//!
//! Matching works on UTF-8 bytes of lowered text, which is the same as
//! Python's `query.lower() in text.lower()`: UTF-8 is self-synchronising, so a
//! byte match of a valid needle starts and ends on character boundaries.

use std::cmp::Reverse;
use std::sync::Arc;

use memchr::memmem::Finder;
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::entry::Entry;
use crate::parallel::PARALLEL_MIN_ENTRIES;
use crate::store::image::{Base, tag};
use crate::store::mirror::{ImageBase, Mirror};
use crate::text::lower;
use crate::views::lowered_text::{Found, LoweredText};

const SIGNATURE_WORDS: usize = 8;
type Signature = [u64; SIGNATURE_WORDS];

/// A query whose signatures leave more than one slot in this many is
/// answered by scanning the whole lowered buffer.
const BROAD_SHARE: usize = 8;

/// One byte per signature bit while an entry is indexed: setting a bit is
/// then a plain store. (Or-ing bits into eight words directly made nearly
/// every byte of text a read-modify-write of a randomly chosen word, which
/// the CPU kept mispredicting as independent of the previous one.)
type BitBytes = [u8; SIGNATURE_WORDS * 64];

fn set_trigram_bits(bits: &mut BitBytes, lowered: &[u8]) {
    for window in lowered.windows(3) {
        bits[trigram_bit(trigram_code(window))] = 1;
    }
}

/// The signature of an entry's lowered key and value.
fn signature_of(key: &[u8], value: &[u8]) -> Signature {
    let mut bits: BitBytes = [0; SIGNATURE_WORDS * 64];
    set_trigram_bits(&mut bits, key);
    set_trigram_bits(&mut bits, value);
    let mut signature = [0u64; SIGNATURE_WORDS];
    for (word, chunk) in signature.iter_mut().zip(bits.chunks_exact(64)) {
        // Bit `b` of the word is byte `b` of the chunk (0 or 1): gather eight
        // bytes at a time into eight bits.
        for (part, eight) in chunk.chunks_exact(8).enumerate() {
            let bytes = u64::from_le_bytes(eight.try_into().expect("8 bytes"));
            let packed = bytes.wrapping_mul(0x0102_0408_1020_4080) >> 56;
            *word |= packed << (8 * part);
        }
    }
    signature
}

/// Where the query was found in an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    Key,
    ValueOnly,
}

impl From<Found> for Hit {
    fn from(found: Found) -> Hit {
        match found {
            Found::Key => Hit::Key,
            Found::Value => Hit::ValueOnly,
        }
    }
}

/// The image sections of the index: the lowered texts, their lengths, and
/// the signature columns.
const LOWERED_TEXT: u32 = tag(b"SLTX");
const LOWERED_LENGTHS: u32 = tag(b"SLLN");
const SIGNATURES: u32 = tag(b"SSIG");

/// Invariant: for every live slot, the signature words, the lowered texts
/// and the stamp are those of its entry: `docs[slot]`, or for a slot of the
/// image that is neither dead nor replaced (`docs[slot]` is `None`), the
/// base's entry of that position; free slots have no entry, a zero
/// signature and no text; `slot_of` maps exactly the live keys that are
/// not in a live image slot; while `slots_sorted`, live slots are in key
/// order.
#[derive(Default)]
pub struct SearchIndex {
    /// Slots in insertion order; a freed slot is reused.
    docs: Vec<Option<Arc<Entry>>>,
    /// The image whose entries the first `base_dead.len()` slots were.
    base: Option<Arc<Base>>,
    /// Per image slot: set once its entry went (the slot is then free, or
    /// reused for another key that `slot_of` maps).
    base_dead: Vec<bool>,
    /// Image slots not dead.
    base_live: usize,
    /// The signatures by column: word `w` of slot `s` is `signatures[w][s]`.
    /// A query first streams through the one column its trigrams fill most
    /// (an eighth of the signature bytes, and the most selective test), then
    /// tests the few survivors on the other words.
    signatures: [Vec<u64>; SIGNATURE_WORDS],
    text: LoweredText,
    /// `updated_at` by slot: ranking reads no entry but the ones shown.
    stamps: Vec<i64>,
    slot_of: FxHashMap<Arc<str>, u32>,
    free: Vec<u32>,
    /// Whether the live slots are in key order (true after a bulk build,
    /// until a new key is added): results sorted by key then need no sort.
    slots_sorted: bool,
}

impl SearchIndex {
    /// An index of `entries` (distinct keys, sorted by key), built in one
    /// pass over the texts and then the signatures (two threads for a large
    /// store).
    pub fn build(entries: &[&Arc<Entry>]) -> SearchIndex {
        let count = entries.len();
        let text = LoweredText::build(entries.iter().map(|e| (&*e.key, &*e.value)));
        let mut signatures: [Vec<u64>; SIGNATURE_WORDS] = std::array::from_fn(|_| vec![0; count]);
        let fill = |first: usize, columns: &mut [&mut [u64]]| {
            for (offset, slot) in (first..first + columns[0].len()).enumerate() {
                let slot = slot as u32;
                let signature = signature_of(text.key(slot), text.value(slot));
                for (column, word) in columns.iter_mut().zip(signature) {
                    column[offset] = word;
                }
            }
        };
        if count < PARALLEL_MIN_ENTRIES {
            let mut columns: Vec<&mut [u64]> =
                signatures.iter_mut().map(Vec::as_mut_slice).collect();
            fill(0, &mut columns);
        } else {
            let half = count / 2;
            let (mut first_columns, mut second_columns): (Vec<&mut [u64]>, Vec<&mut [u64]>) =
                signatures
                    .iter_mut()
                    .map(|column| column.split_at_mut(half))
                    .unzip();
            std::thread::scope(|scope| {
                scope.spawn(|| fill(half, &mut second_columns));
                fill(0, &mut first_columns);
            });
        }
        let mut slot_of = FxHashMap::with_capacity_and_hasher(count, FxBuildHasher);
        for (slot, entry) in entries.iter().enumerate() {
            slot_of.insert(entry.key.clone(), slot as u32);
        }
        SearchIndex {
            docs: entries.iter().map(|&entry| Some(entry.clone())).collect(),
            signatures,
            text,
            stamps: entries.iter().map(|e| e.updated_at).collect(),
            slot_of,
            slots_sorted: true,
            ..SearchIndex::default()
        }
    }

    /// The index of a mirror loaded from an image, from the image's
    /// sections (`None` when it has none, or they do not fit it), brought
    /// up to date with the changes since.
    pub fn from_image(image: &ImageBase<'_>) -> Option<SearchIndex> {
        let base = image.base;
        let count = base.len();
        let lengths = base.image().section(LOWERED_LENGTHS)?;
        let signature_bytes = base.image().section(SIGNATURES)?;
        if lengths.len() != count * 8 || signature_bytes.len() != count * 8 * SIGNATURE_WORDS {
            return None;
        }
        let text_range = base.image().section_range(LOWERED_TEXT)?;
        let text = LoweredText::from_image(base, text_range, lengths)?;
        let signatures = std::array::from_fn(|word| {
            signature_bytes[word * count * 8..(word + 1) * count * 8]
                .chunks_exact(8)
                .map(|bytes| u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
                .collect()
        });
        let mut index = SearchIndex {
            docs: vec![None; count],
            base: Some(base.clone()),
            base_dead: vec![false; count],
            base_live: count,
            signatures,
            text,
            stamps: (0..count).map(|i| base.image().updated_at(i)).collect(),
            slots_sorted: true,
            ..SearchIndex::default()
        };
        for slot in image.shadowed() {
            index.remove_slot(slot as u32);
        }
        for entry in image.changed() {
            index.upsert(entry);
        }
        Some(index)
    }

    /// The image sections of an index of `entries` (sorted by key): see
    /// [`SearchIndex::from_image`].
    pub fn image_sections(entries: &[&Arc<Entry>]) -> Vec<(u32, Vec<u8>)> {
        let built = SearchIndex::build(entries);
        let (text, lengths) = built.text.image_sections();
        let mut signatures = Vec::with_capacity(entries.len() * 8 * SIGNATURE_WORDS);
        for column in &built.signatures {
            for word in column {
                signatures.extend_from_slice(&word.to_le_bytes());
            }
        }
        vec![
            (LOWERED_TEXT, text),
            (LOWERED_LENGTHS, lengths),
            (SIGNATURES, signatures),
        ]
    }

    /// The number of entries indexed.
    pub fn len(&self) -> usize {
        self.slot_of.len() + self.base_live
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The live slot of `key`.
    fn slot(&self, key: &str) -> Option<u32> {
        if let Some(&slot) = self.slot_of.get(key) {
            return Some(slot);
        }
        let i = self.base.as_ref()?.image().find(key)?;
        (!self.base_dead[i]).then_some(i as u32)
    }

    pub fn upsert(&mut self, entry: &Arc<Entry>) {
        let slot = if let Some(slot) = self.slot(&entry.key) {
            slot
        } else {
            self.slots_sorted = false;
            let slot = self.free.pop().unwrap_or_else(|| {
                self.docs.push(None);
                for column in &mut self.signatures {
                    column.push(0);
                }
                self.stamps.push(0);
                (self.docs.len() - 1) as u32
            });
            self.slot_of.insert(entry.key.clone(), slot);
            slot
        };
        let at = slot as usize;
        self.text.set(slot, &entry.key, &entry.value);
        let signature = signature_of(self.text.key(slot), self.text.value(slot));
        for (column, word) in self.signatures.iter_mut().zip(signature) {
            column[at] = word;
        }
        self.stamps[at] = entry.updated_at;
        self.docs[at] = Some(entry.clone());
    }

    pub fn remove(&mut self, key: &str) {
        let slot = match self.slot_of.remove(key) {
            Some(slot) => slot,
            None => match self.slot(key) {
                Some(slot) => slot,
                None => return,
            },
        };
        self.remove_slot(slot);
    }

    /// Frees a live slot whose key `slot_of` no longer maps.
    fn remove_slot(&mut self, slot: u32) {
        let at = slot as usize;
        if let Some(dead) = self.base_dead.get_mut(at)
            && !*dead
        {
            *dead = true;
            self.base_live -= 1;
        }
        self.docs[at] = None;
        for column in &mut self.signatures {
            column[at] = 0;
        }
        self.text.clear(slot);
        self.free.push(slot);
    }

    /// The slots whose key or value contains `query`, case-insensitively,
    /// with where it matched. Unordered. An empty query matches nothing.
    fn find_slots(&self, query: &str) -> Vec<(u32, Hit)> {
        if query.is_empty() {
            return Vec::new();
        }
        let needle = lower(query);
        let finder = Finder::new(needle.as_bytes());
        let mut wanted = [0u64; SIGNATURE_WORDS];
        add_trigrams(&mut wanted, &needle);
        // The words the query sets, the one with the most bits first.
        let mut tests: Vec<(usize, u64)> = wanted
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, bits)| bits != 0)
            .collect();
        tests.sort_by_key(|&(_, bits)| Reverse(bits.count_ones()));
        let live = self.len();
        let mut hits = Vec::new();
        let scan_all = || {
            let mut hits = Vec::new();
            self.text
                .scan(&finder, |slot, found| hits.push((slot, Hit::from(found))));
            hits
        };
        let Some((&(first, bits), rest)) = tests.split_first() else {
            return scan_all(); // under three bytes: no trigram to narrow by
        };
        // Two columns in the first pass when the query sets two words: one
        // word often holds a single bit, which a third of all signatures
        // have.
        let (second, second_bits, rest) = match rest.split_first() {
            Some((&(second, second_bits), rest)) => (second, second_bits, rest),
            None => (first, bits, rest),
        };
        let mut candidates: Vec<u32> = self.signatures[first]
            .iter()
            .zip(&self.signatures[second])
            .enumerate()
            .filter(|&(_, (&a, &b))| a & bits == bits && b & second_bits == second_bits)
            .map(|(slot, _)| slot as u32)
            .collect();
        for &(word, bits) in rest {
            let column = &self.signatures[word];
            candidates.retain(|&slot| column[slot as usize] & bits == bits);
        }
        if candidates.len() * BROAD_SHARE > live {
            return scan_all();
        }
        for slot in candidates {
            if finder.find(self.text.key(slot)).is_some() {
                hits.push((slot, Hit::Key));
            } else if finder.find(self.text.value(slot)).is_some() {
                hits.push((slot, Hit::ValueOnly));
            }
        }
        hits
    }

    /// Every entry whose key or value contains `query`, case-insensitively,
    /// with where it matched. Unordered. An empty query matches nothing.
    pub fn find(&self, query: &str) -> Vec<(Arc<Entry>, Hit)> {
        self.find_slots(query)
            .into_iter()
            .map(|(slot, hit)| (self.entry(slot).clone(), hit))
            .collect()
    }

    fn entry(&self, slot: u32) -> &Arc<Entry> {
        match &self.docs[slot as usize] {
            Some(entry) => entry,
            None => self
                .base
                .as_ref()
                .expect("a hit is a live slot")
                .entry(slot as usize),
        }
    }

    /// Entries matching `query`, sorted by key.
    pub fn find_sorted(&self, query: &str) -> Vec<Arc<Entry>> {
        let mut slots: Vec<u32> = self
            .find_slots(query)
            .into_iter()
            .map(|(slot, _)| slot)
            .collect();
        if self.slots_sorted {
            slots.sort_unstable();
            slots
                .into_iter()
                .map(|slot| self.entry(slot).clone())
                .collect()
        } else {
            let mut hits: Vec<Arc<Entry>> = slots
                .into_iter()
                .map(|slot| self.entry(slot).clone())
                .collect();
            hits.sort_unstable_by(|a, b| a.key.cmp(&b.key));
            hits
        }
    }

    /// The number of hits and the first `limit` in §4 tool order: key hits
    /// before value hits, then newest, then key ascending. Only the shown
    /// ones are put in order.
    pub fn find_ranked(&self, query: &str, limit: usize) -> (usize, Vec<Arc<Entry>>) {
        let mut hits = self.find_slots(query);
        let total = hits.len();
        let order = |&(a, a_hit): &(u32, Hit), &(b, b_hit): &(u32, Hit)| {
            (a_hit == Hit::ValueOnly, Reverse(self.stamps[a as usize]))
                .cmp(&(b_hit == Hit::ValueOnly, Reverse(self.stamps[b as usize])))
                .then_with(|| self.entry(a).key.cmp(&self.entry(b).key))
        };
        let shown = limit.min(total);
        if shown > 0 && shown < total {
            hits.select_nth_unstable_by(shown - 1, order);
        }
        hits.truncate(shown);
        hits.sort_unstable_by(order);
        (
            total,
            hits.into_iter()
                .map(|(slot, _)| self.entry(slot).clone())
                .collect(),
        )
    }
}

/// Entries matching `query` (§4), sorted by key.
pub fn search(mirror: &Mirror, query: &str) -> Vec<Arc<Entry>> {
    crate::views::search_index(mirror).find_sorted(query)
}

/// The `memory_search` view: the total number of hits and the first
/// `limit` in tool order (key hits, newest, key).
pub fn search_ranked(mirror: &Mirror, query: &str, limit: usize) -> (usize, Vec<Arc<Entry>>) {
    crate::views::search_index(mirror).find_ranked(query, limit)
}

/// The §4 tool ranking: key hits first, then newest, then key ascending.
pub fn rank(hits: &mut [(Arc<Entry>, Hit)]) {
    hits.sort_by(|(a, a_hit), (b, b_hit)| {
        (*a_hit == Hit::ValueOnly)
            .cmp(&(*b_hit == Hit::ValueOnly))
            .then(b.updated_at.cmp(&a.updated_at))
            .then(a.key.cmp(&b.key))
    });
}

/// The trigram code of three bytes: `b0 | b1 << 8 | b2 << 16`.
fn trigram_code(window: &[u8]) -> u32 {
    u32::from(window[0]) | u32::from(window[1]) << 8 | u32::from(window[2]) << 16
}

/// The signature bit of a trigram code: a multiplicative hash picks it.
fn trigram_bit(code: u32) -> usize {
    (code.wrapping_mul(0x9E37_79B1) >> 23) as usize // 0..512
}

/// Sets one signature bit per byte trigram of `text` (already lowered).
fn add_trigrams(signature: &mut Signature, text: &str) {
    for window in text.as_bytes().windows(3) {
        let bit = trigram_bit(trigram_code(window));
        signature[bit / 64] |= 1 << (bit % 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, value: &str, updated_at: i64) -> Arc<Entry> {
        crate::testing::entry(key, "note", value, updated_at, &[])
    }

    fn keys(mut hits: Vec<(Arc<Entry>, Hit)>) -> Vec<String> {
        rank(&mut hits);
        hits.iter().map(|(e, _)| e.key.to_string()).collect()
    }

    #[test]
    fn matches_key_or_value_case_insensitively() {
        let mut index = SearchIndex::default();
        index.upsert(&entry("prompt:Build", "Add /users endpoint", 1));
        index.upsert(&entry("result:x", "BUILD compiles", 2));
        index.upsert(&entry("other", "nothing", 3));
        assert_eq!(keys(index.find("build")), ["prompt:Build", "result:x"]);
        assert_eq!(keys(index.find("USERS")), ["prompt:Build"]);
        assert!(index.find("").is_empty());
        assert!(index.find("absent").is_empty());
        // Short queries have no trigram and still match.
        assert_eq!(keys(index.find("o")).len(), 3);
    }

    #[test]
    fn key_hits_rank_before_value_hits_then_newest_then_key() {
        let mut index = SearchIndex::default();
        index.upsert(&entry("a", "has cat", 9));
        index.upsert(&entry("cat:old", "x", 1));
        index.upsert(&entry("cat:new", "x", 5));
        index.upsert(&entry("cat:tie-b", "x", 3));
        index.upsert(&entry("cat:tie-a", "x", 3));
        assert_eq!(
            keys(index.find("cat")),
            ["cat:new", "cat:tie-a", "cat:tie-b", "cat:old", "a"]
        );
    }

    #[test]
    fn overwrite_and_remove_update_the_index() {
        let mut index = SearchIndex::default();
        index.upsert(&entry("k", "alpha", 1));
        index.upsert(&entry("k", "beta", 2));
        assert!(index.find("alpha").is_empty());
        assert_eq!(keys(index.find("beta")), ["k"]);
        index.remove("k");
        assert!(index.find("beta").is_empty());
        index.upsert(&entry("j", "beta", 3));
        assert_eq!(keys(index.find("beta")), ["j"]);
    }

    #[test]
    fn unicode_lowering_matches() {
        let mut index = SearchIndex::default();
        index.upsert(&entry("ÉCOLE", "ΣΟΦΙΑ", 1));
        assert_eq!(keys(index.find("école")), ["ÉCOLE"]);
        assert_eq!(keys(index.find("σοφ")), ["ÉCOLE"]);
    }
    /// The definition: `lower(query) in lower(key)`, else in the value.
    fn model(entries: &[Arc<Entry>], query: &str) -> Vec<(String, Hit)> {
        let needle = lower(query);
        let mut out: Vec<(String, Hit)> = entries
            .iter()
            .filter(|_| !query.is_empty())
            .filter_map(|e| {
                if lower(&e.key).contains(&*needle) {
                    Some((e.key.to_string(), Hit::Key))
                } else if lower(&e.value).contains(&*needle) {
                    Some((e.key.to_string(), Hit::ValueOnly))
                } else {
                    None
                }
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    fn found(index: &SearchIndex, query: &str) -> Vec<(String, Hit)> {
        let mut out: Vec<(String, Hit)> = index
            .find(query)
            .into_iter()
            .map(|(e, hit)| (e.key.to_string(), hit))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    #[test]
    fn signatures_are_those_of_the_lowered_texts() {
        for (key, value) in [
            ("prompt:Build", "Add /users endpoint"),
            ("ab", "abc"),
            ("", ""),
            ("ÉCOLE", "ΣΟΦΙΑ and MORE text"),
            (
                "x",
                "The quick brown fox jumps over the lazy dog 0123456789",
            ),
        ] {
            let mut want = [0u64; SIGNATURE_WORDS];
            add_trigrams(&mut want, &lower(key));
            add_trigrams(&mut want, &lower(value));
            let got = signature_of(lower(key).as_bytes(), lower(value).as_bytes());
            assert_eq!(got, want, "{key:?} {value:?}");
        }
    }

    #[test]
    fn bulk_and_incremental_indexes_agree_with_the_definition() {
        let mut next = crate::test_rng::xorshift(0x2545_f491_4f6c_dd1d);
        let pieces = [
            "Build",
            "build",
            "BUILD",
            "école",
            "ÉCOLE",
            "\u{212A}elvin",
            "kelvin",
            "ΣΟΦΙΑ",
            "σοφ",
            "İx",
            "ab",
            "a",
            " ",
            "-",
            "straße",
            "STRASSE",
        ];
        let queries = [
            "build",
            "BUI",
            "uil",
            "écol",
            "kelv",
            "\u{212A}el",
            "σοφ",
            "ΣΟΦ",
            "i\u{307}",
            "ab",
            "a",
            "b",
            "zz",
            "straße",
            "ss",
            "ld é",
            "",
        ];
        for size in [3, 40, PARALLEL_MIN_ENTRIES + 7] {
            let mut text = || {
                let mut out = String::new();
                for _ in 0..next(5) {
                    out.push_str(pieces[next(pieces.len() as u64) as usize]);
                }
                out
            };
            let mut entries: Vec<Arc<Entry>> = (0..size)
                .map(|i| entry(&format!("{}{i:06}", text()), &text(), i as i64))
                .collect();
            entries.sort_by(|a, b| a.key.cmp(&b.key));
            entries.dedup_by(|a, b| a.key == b.key);
            let refs: Vec<&Arc<Entry>> = entries.iter().collect();
            let bulk = SearchIndex::build(&refs);
            let mut incremental = SearchIndex::default();
            for e in &entries {
                incremental.upsert(&entry(&e.key, "placeholder", 0));
                incremental.upsert(e);
            }
            for query in queries {
                let want = model(&entries, query);
                assert_eq!(found(&bulk, query), want, "bulk {size} {query:?}");
                assert_eq!(
                    found(&incremental, query),
                    want,
                    "incremental {size} {query:?}"
                );
            }
            // Removing and rewriting keeps every answer exact.
            let mut index = bulk;
            for e in entries.iter().step_by(3) {
                index.remove(&e.key);
            }
            let kept: Vec<Arc<Entry>> = entries
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 3 != 0)
                .map(|(_, e)| e.clone())
                .collect();
            for query in queries {
                assert_eq!(
                    found(&index, query),
                    model(&kept, query),
                    "after removes {query:?}"
                );
            }
        }
    }

    /// The ranked and the sorted answers agree with ranking and sorting the
    /// whole answer, for a broad query (the whole buffer scanned) as for a
    /// selective one, on bulk-built and updated indexes.
    #[test]
    fn ranked_and_sorted_answers_agree_with_the_whole_answer() {
        let mut next = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        let words = ["deploy", "build", "test", "Error", "api", "cache"];
        let mut entries: Vec<Arc<Entry>> = (0..300)
            .map(|i| {
                let value: Vec<&str> = (0..=next(6)).map(|_| words[next(6) as usize]).collect();
                entry(
                    &format!("{}-{i:04}", words[next(6) as usize]),
                    &value.join(" "),
                    next(50) as i64,
                )
            })
            .collect();
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        let refs: Vec<&Arc<Entry>> = entries.iter().collect();
        let mut index = SearchIndex::build(&refs);
        for round in 0..2 {
            for query in ["deploy", "error", "api c", "o", "zz", "test-00"] {
                let mut whole = index.find(query);
                rank(&mut whole);
                let whole_keys: Vec<String> =
                    whole.iter().map(|(e, _)| e.key.to_string()).collect();
                for limit in [0, 1, 7, 20, 1000] {
                    let (total, shown) = index.find_ranked(query, limit);
                    assert_eq!(total, whole.len(), "{query} round {round}");
                    let shown: Vec<String> = shown.iter().map(|e| e.key.to_string()).collect();
                    assert_eq!(
                        shown,
                        whole_keys[..limit.min(whole.len())],
                        "{query} {limit}"
                    );
                }
                let mut sorted = whole_keys.clone();
                sorted.sort();
                let got: Vec<String> = index
                    .find_sorted(query)
                    .iter()
                    .map(|e| e.key.to_string())
                    .collect();
                assert_eq!(got, sorted, "{query} round {round}");
            }
            // Then new keys and rewrites: the slots leave key order.
            for i in 0..100 {
                index.upsert(&entry(&format!("api-new-{i}"), "deploy cache", 60 + i));
                index.upsert(&entry(&entries[i as usize * 2].key, "build test", 200 + i));
            }
        }
    }
}
