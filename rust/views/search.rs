//! Case-insensitive substring search over the mirror (§4).
//!
//! Each entry has a 512-bit signature of the byte trigrams of its lowered key
//! and value (computed once per write, never per query). A query's trigrams
//! must all be present in an entry's signature for the entry to possibly
//! contain the query, so most entries are rejected by a few word tests; only
//! the survivors are checked with `memchr::memmem`. Queries shorter than
//! three bytes have no trigram and check every entry.
//!
//! Matching works on UTF-8 bytes of lowered text, which is the same as
//! Python's `query.lower() in text.lower()`: UTF-8 is self-synchronising, so a
//! byte match of a valid needle starts and ends on character boundaries.
//!
//! No lowered copy is kept for ASCII text (nearly all of it): lowering ASCII
//! maps `[A-Z]` to `[a-z]` byte for byte, so the signature is computed over
//! the bytes lowered on the fly, and a surviving candidate with upper-case
//! letters is lowered into a scratch buffer just for the check. Only text
//! that is not ASCII and changes when lowered keeps a lowered copy.

use std::borrow::Cow;
use std::sync::Arc;

use memchr::memmem::Finder;
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::entry::Entry;
use crate::parallel::PARALLEL_MIN_ENTRIES;
use crate::store::mirror::Mirror;
use crate::text::lower;

const SIGNATURE_WORDS: usize = 8;
type Signature = [u64; SIGNATURE_WORDS];

/// How one text of an entry compares with a lowered query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// Lowering changes nothing: compare the text as it is.
    Lower = 0,
    /// ASCII with upper-case letters: lower a scratch copy per comparison.
    AsciiUpper = 1,
    /// Not ASCII, and lowering changes it: compare the kept lowered copy.
    Copied = 2,
}

impl Form {
    fn from_bits(bits: u8) -> Form {
        match bits & 3 {
            0 => Form::Lower,
            1 => Form::AsciiUpper,
            _ => Form::Copied,
        }
    }
}

/// The lowered copies of an entry whose key or value is [`Form::Copied`].
#[derive(Default)]
struct Copies {
    key: Option<Box<str>>,
    value: Option<Box<str>>,
}

/// One byte per signature bit while an entry is indexed: setting a bit is
/// then a plain store. (Or-ing bits into eight words directly made nearly
/// every byte of text a read-modify-write of a randomly chosen word, which
/// the CPU kept mispredicting as independent of the previous one.)
type BitBytes = [u8; SIGNATURE_WORDS * 64];

/// Adds the trigrams of `lower(text)` to `bits`; returns how `text`
/// compares, and its lowered copy when one must be kept.
fn index_text(text: &str, bits: &mut BitBytes, scratch: &mut Vec<u8>) -> (Form, Option<Box<str>>) {
    if text.is_ascii() {
        // No early exit: the whole scan vectorises.
        let upper = text
            .bytes()
            .fold(false, |upper, byte| upper | byte.is_ascii_uppercase());
        let lowered = if upper {
            scratch.clear();
            scratch.extend_from_slice(text.as_bytes());
            scratch.make_ascii_lowercase();
            scratch.as_slice()
        } else {
            text.as_bytes()
        };
        set_trigram_bits(bits, lowered);
        let form = if upper { Form::AsciiUpper } else { Form::Lower };
        (form, None)
    } else {
        let (form, lowered) = match lower(text) {
            Cow::Borrowed(text) => (Form::Lower, Cow::Borrowed(text)),
            Cow::Owned(lowered) => (Form::Copied, Cow::Owned(lowered)),
        };
        set_trigram_bits(bits, lowered.as_bytes());
        let copy = (form == Form::Copied).then(|| lowered.into_owned().into_boxed_str());
        (form, copy)
    }
}

fn set_trigram_bits(bits: &mut BitBytes, lowered: &[u8]) {
    for window in lowered.windows(3) {
        bits[trigram_bit(trigram_code(window))] = 1;
    }
}

/// The signature, forms (key in bits 0–1, value in bits 2–3) and lowered
/// copies (if any) of one entry.
fn index_entry(entry: &Entry, scratch: &mut Vec<u8>) -> (Signature, u8, Option<Copies>) {
    let mut bits: BitBytes = [0; SIGNATURE_WORDS * 64];
    let (key_form, key) = index_text(&entry.key, &mut bits, scratch);
    let (value_form, value) = index_text(&entry.value, &mut bits, scratch);
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
    let forms = key_form as u8 | (value_form as u8) << 2;
    let copies = (key.is_some() || value.is_some()).then_some(Copies { key, value });
    (signature, forms, copies)
}

/// Where the query was found in an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    Key,
    ValueOnly,
}

/// Invariant: for every live slot, the signature words, `forms` and
/// `copies` are those of `docs[slot]` (see [`index_entry`]); free slots are
/// `None` with a zero signature and no copies; `slot_of` maps exactly the
/// live keys.
#[derive(Default)]
pub struct SearchIndex {
    /// Slots in insertion order; a freed slot is reused.
    docs: Vec<Option<Arc<Entry>>>,
    /// The signatures by column: word `w` of slot `s` is `signatures[w][s]`.
    /// A query first streams through the one column its trigrams fill most
    /// (an eighth of the signature bytes, and the most selective test), then
    /// tests the few survivors on the other words.
    signatures: [Vec<u64>; SIGNATURE_WORDS],
    forms: Vec<u8>,
    /// Lowered copies, by slot, of the few entries that need them.
    copies: FxHashMap<u32, Copies>,
    slot_of: FxHashMap<Arc<str>, u32>,
    free: Vec<u32>,
}

impl SearchIndex {
    /// An index of `entries` (distinct keys), built in one pass (two threads
    /// for a large store).
    pub fn build(entries: &[&Arc<Entry>]) -> SearchIndex {
        let count = entries.len();
        let mut signatures: [Vec<u64>; SIGNATURE_WORDS] = std::array::from_fn(|_| vec![0; count]);
        let mut forms = vec![0u8; count];
        let fill = |entries: &[&Arc<Entry>], columns: &mut [&mut [u64]], forms: &mut [u8]| {
            let (mut copies, mut scratch) = (Vec::new(), Vec::new());
            for (slot, entry) in entries.iter().enumerate() {
                let (signature, form, copy) = index_entry(entry, &mut scratch);
                for (column, word) in columns.iter_mut().zip(signature) {
                    column[slot] = word;
                }
                forms[slot] = form;
                if let Some(copy) = copy {
                    copies.push((slot, copy));
                }
            }
            copies
        };
        let slots = |entries: &[&Arc<Entry>]| -> FxHashMap<Arc<str>, u32> {
            let mut slot_of = FxHashMap::with_capacity_and_hasher(entries.len(), FxBuildHasher);
            for (slot, entry) in entries.iter().enumerate() {
                slot_of.insert(entry.key.clone(), slot as u32);
            }
            slot_of
        };
        let (copies, slot_of) = if count < PARALLEL_MIN_ENTRIES {
            let mut columns: Vec<&mut [u64]> =
                signatures.iter_mut().map(Vec::as_mut_slice).collect();
            (fill(entries, &mut columns, &mut forms), slots(entries))
        } else {
            // This thread: the first part of the signatures, then the key map;
            // the other: the rest of the signatures.
            let half = count * 3 / 5;
            let (mut first_columns, mut second_columns): (Vec<&mut [u64]>, Vec<&mut [u64]>) =
                signatures
                    .iter_mut()
                    .map(|column| column.split_at_mut(half))
                    .unzip();
            let (first_forms, second_forms) = forms.split_at_mut(half);
            std::thread::scope(|scope| {
                let later =
                    scope.spawn(|| fill(&entries[half..], &mut second_columns, second_forms));
                let mut copies = fill(&entries[..half], &mut first_columns, first_forms);
                let slot_of = slots(entries);
                let later = later.join().expect("search index thread");
                copies.extend(later.into_iter().map(|(slot, copy)| (slot + half, copy)));
                (copies, slot_of)
            })
        };
        SearchIndex {
            docs: entries.iter().map(|&entry| Some(entry.clone())).collect(),
            signatures,
            forms,
            copies: copies
                .into_iter()
                .map(|(slot, copy)| (slot as u32, copy))
                .collect(),
            slot_of,
            free: Vec::new(),
        }
    }

    pub fn upsert(&mut self, entry: &Arc<Entry>) {
        let (signature, forms, copy) = index_entry(entry, &mut Vec::new());
        let slot = if let Some(&slot) = self.slot_of.get(&entry.key) {
            slot
        } else {
            let slot = self.free.pop().unwrap_or_else(|| {
                self.docs.push(None);
                for column in &mut self.signatures {
                    column.push(0);
                }
                self.forms.push(0);
                (self.docs.len() - 1) as u32
            });
            self.slot_of.insert(entry.key.clone(), slot);
            slot
        };
        let at = slot as usize;
        self.docs[at] = Some(entry.clone());
        for (column, word) in self.signatures.iter_mut().zip(signature) {
            column[at] = word;
        }
        self.forms[at] = forms;
        match copy {
            Some(copy) => {
                self.copies.insert(slot, copy);
            }
            None => {
                self.copies.remove(&slot);
            }
        }
    }

    pub fn remove(&mut self, key: &str) {
        if let Some(slot) = self.slot_of.remove(key) {
            let at = slot as usize;
            self.docs[at] = None;
            for column in &mut self.signatures {
                column[at] = 0;
            }
            self.forms[at] = 0;
            self.copies.remove(&slot);
            self.free.push(slot);
        }
    }

    /// Every entry whose key or value contains `query`, case-insensitively,
    /// with where it matched. Unordered. An empty query matches nothing.
    pub fn find(&self, query: &str) -> Vec<(Arc<Entry>, Hit)> {
        if query.is_empty() {
            return Vec::new();
        }
        let needle = lower(query);
        let matcher = Matcher {
            finder: Finder::new(needle.as_bytes()),
            // An ASCII text lowers to ASCII, which a needle holding other
            // bytes cannot occur in.
            ascii_needle: needle.is_ascii(),
        };
        let mut wanted = [0u64; SIGNATURE_WORDS];
        add_trigrams(&mut wanted, &needle);
        // The words the query sets, the one with the most bits first.
        let mut tests: Vec<(usize, u64)> = wanted
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, bits)| bits != 0)
            .collect();
        tests.sort_by_key(|&(_, bits)| std::cmp::Reverse(bits.count_ones()));
        let candidates: Vec<u32> = match tests.split_first() {
            None => (0..self.docs.len() as u32).collect(),
            Some((&(first, bits), rest)) => {
                // Two columns in the first pass when the query sets two
                // words: one word often holds a single bit, which a third of
                // all signatures have.
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
                candidates
            }
        };
        let mut scratch = Vec::new();
        let mut hits = Vec::new();
        for slot in candidates {
            let slot = slot as usize;
            let Some(entry) = &self.docs[slot] else {
                continue;
            };
            let forms = self.forms[slot];
            let copies = || self.copies.get(&(slot as u32));
            let key_form = Form::from_bits(forms);
            let value_form = Form::from_bits(forms >> 2);
            if matcher.contains(
                &entry.key,
                key_form,
                || copies().and_then(|c| c.key.as_deref()),
                &mut scratch,
            ) {
                hits.push((entry.clone(), Hit::Key));
            } else if matcher.contains(
                &entry.value,
                value_form,
                || copies().and_then(|c| c.value.as_deref()),
                &mut scratch,
            ) {
                hits.push((entry.clone(), Hit::ValueOnly));
            }
        }
        hits
    }
}

/// A lowered query, ready to look for in texts of any [`Form`].
struct Matcher<'n> {
    finder: Finder<'n>,
    ascii_needle: bool,
}

impl Matcher<'_> {
    fn contains<'t>(
        &self,
        text: &'t str,
        form: Form,
        copy: impl FnOnce() -> Option<&'t str>,
        scratch: &mut Vec<u8>,
    ) -> bool {
        match form {
            Form::Lower => self.finder.find(text.as_bytes()).is_some(),
            Form::AsciiUpper => {
                if !self.ascii_needle || self.finder.needle().len() > text.len() {
                    return false;
                }
                scratch.clear();
                scratch.extend_from_slice(text.as_bytes());
                scratch.make_ascii_lowercase();
                self.finder.find(scratch).is_some()
            }
            Form::Copied => {
                copy().is_some_and(|lowered| self.finder.find(lowered.as_bytes()).is_some())
            }
        }
    }
}

/// Entries matching `query` (§4), sorted by key.
pub fn search(mirror: &Mirror, query: &str) -> Vec<Arc<Entry>> {
    let mut hits: Vec<_> = crate::views::search_index(mirror)
        .find(query)
        .into_iter()
        .map(|(e, _)| e)
        .collect();
    hits.sort_by(|a, b| a.key.cmp(&b.key));
    hits
}

/// The `memory_search` view: the total number of hits and the first
/// `limit` in tool order (key hits, newest, key).
pub fn search_ranked(mirror: &Mirror, query: &str, limit: usize) -> (usize, Vec<Arc<Entry>>) {
    let mut hits = crate::views::search_index(mirror).find(query);
    let total = hits.len();
    rank(&mut hits);
    let top = hits.into_iter().take(limit).map(|(e, _)| e).collect();
    (total, top)
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
            let (got, _, _) = index_entry(&entry(key, value, 0), &mut Vec::new());
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
}
