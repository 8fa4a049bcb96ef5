//! Case-insensitive substring search over the mirror (BEHAVIOUR §4).
//!
//! Each entry keeps its lowered key and value (computed once per write, never
//! per query) and a 512-bit signature of the byte trigrams of both. A query's
//! trigrams must all be present in an entry's signature for the entry to
//! possibly contain the query, so most entries are rejected by a few word
//! tests; only the survivors are checked with `memchr::memmem`. Queries shorter
//! than three bytes have no trigram and check every entry.
//!
//! Matching works on UTF-8 bytes of lowered text, which is the same as
//! Python's `query.lower() in text.lower()`: UTF-8 is self-synchronising, so a
//! byte match of a valid needle starts and ends on character boundaries.

use std::sync::Arc;

use memchr::memmem::Finder;
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::entry::Entry;
use crate::text::lower;

const SIGNATURE_WORDS: usize = 8;
type Signature = [u64; SIGNATURE_WORDS];

/// One indexed entry. The lowered copies are `None` when lowering changes
/// nothing (most keys), so they cost memory only where they differ.
struct Doc {
    entry: Arc<Entry>,
    lower_key: Option<Box<str>>,
    lower_value: Option<Box<str>>,
}

impl Doc {
    fn new(entry: &Arc<Entry>) -> (Doc, Signature) {
        let lower_key = owned_if_changed(&entry.key);
        let lower_value = owned_if_changed(&entry.value);
        let mut signature = [0u64; SIGNATURE_WORDS];
        add_trigrams(&mut signature, lower_key.as_deref().unwrap_or(&entry.key));
        add_trigrams(
            &mut signature,
            lower_value.as_deref().unwrap_or(&entry.value),
        );
        let doc = Doc {
            entry: entry.clone(),
            lower_key,
            lower_value,
        };
        (doc, signature)
    }

    fn key(&self) -> &str {
        self.lower_key.as_deref().unwrap_or(&self.entry.key)
    }

    fn value(&self) -> &str {
        self.lower_value.as_deref().unwrap_or(&self.entry.value)
    }
}

/// Where the query was found in an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    Key,
    ValueOnly,
}

#[derive(Default)]
pub struct SearchIndex {
    /// Slots in insertion order; a freed slot is reused. Signatures live in a
    /// parallel array so the filtering pass streams through 64-byte rows.
    docs: Vec<Option<Doc>>,
    signatures: Vec<Signature>,
    slot_of: FxHashMap<Arc<str>, usize>,
    free: Vec<usize>,
}

impl SearchIndex {
    /// An index of `entries` (distinct keys), built in one pass.
    pub fn build(entries: &[Arc<Entry>]) -> SearchIndex {
        let mut index = SearchIndex {
            docs: Vec::with_capacity(entries.len()),
            signatures: Vec::with_capacity(entries.len()),
            slot_of: FxHashMap::with_capacity_and_hasher(entries.len(), FxBuildHasher),
            free: Vec::new(),
        };
        for entry in entries {
            let (doc, signature) = Doc::new(entry);
            index.slot_of.insert(entry.key.clone(), index.docs.len());
            index.docs.push(Some(doc));
            index.signatures.push(signature);
        }
        index
    }

    pub fn upsert(&mut self, entry: &Arc<Entry>) {
        let (doc, signature) = Doc::new(entry);
        let slot = if let Some(&slot) = self.slot_of.get(&entry.key) {
            slot
        } else {
            let slot = self.free.pop().unwrap_or_else(|| {
                self.docs.push(None);
                self.signatures.push([0; SIGNATURE_WORDS]);
                self.docs.len() - 1
            });
            self.slot_of.insert(entry.key.clone(), slot);
            slot
        };
        self.docs[slot] = Some(doc);
        self.signatures[slot] = signature;
    }

    pub fn remove(&mut self, key: &str) {
        if let Some(slot) = self.slot_of.remove(key) {
            self.docs[slot] = None;
            self.signatures[slot] = [0; SIGNATURE_WORDS];
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
        let finder = Finder::new(needle.as_bytes());
        let mut wanted = [0u64; SIGNATURE_WORDS];
        add_trigrams(&mut wanted, &needle);
        // Only the words the query sets need testing.
        let tests: Vec<(usize, u64)> = wanted
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, bits)| bits != 0)
            .collect();
        let mut hits = Vec::new();
        for (slot, signature) in self.signatures.iter().enumerate() {
            if !tests.iter().all(|&(i, bits)| signature[i] & bits == bits) {
                continue;
            }
            let Some(doc) = &self.docs[slot] else {
                continue;
            };
            if finder.find(doc.key().as_bytes()).is_some() {
                hits.push((doc.entry.clone(), Hit::Key));
            } else if finder.find(doc.value().as_bytes()).is_some() {
                hits.push((doc.entry.clone(), Hit::ValueOnly));
            }
        }
        hits
    }
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

fn owned_if_changed(text: &str) -> Option<Box<str>> {
    match lower(text) {
        std::borrow::Cow::Borrowed(_) => None,
        std::borrow::Cow::Owned(lowered) => Some(lowered.into_boxed_str()),
    }
}

/// Sets one signature bit per byte trigram (a multiplicative hash of the
/// three bytes picks the bit).
fn add_trigrams(signature: &mut Signature, text: &str) {
    for window in text.as_bytes().windows(3) {
        let code = u32::from(window[0]) | u32::from(window[1]) << 8 | u32::from(window[2]) << 16;
        let bit = (code.wrapping_mul(0x9E37_79B1) >> 23) as usize; // 0..512
        signature[bit / 64] |= 1 << (bit % 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, value: &str, updated_at: i64) -> Arc<Entry> {
        Arc::new(Entry {
            key: key.into(),
            value: value.into(),
            kind: "note".into(),
            namespace: "".into(),
            references: vec![],
            created_at: updated_at,
            updated_at,
        })
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
}
