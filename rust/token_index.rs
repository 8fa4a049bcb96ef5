//! Token-prefix index for focus matching (BEHAVIOUR §5.6).
//!
//! Maps each word token of `lower(key)` and of `lower(value)` (the §5.5 word
//! tokens, via [`crate::text::word_tokens`]) to the entries holding it, so the
//! entries a focus word can score on are found by a range scan over the
//! tokens starting with that word, instead of tokenising the whole store.
//!
//! Key tokens and value tokens are kept in two maps (an entry holding a
//! token in both is in both), so a focus word's key and value postings can be
//! counted separately. Tokens that no significant focus word can be a prefix
//! of ([`could_match_focus_word`]) are not indexed.
//!
//! Invariant: for every indexed entry, exactly the postings derived from its
//! current key and value are present, and no token maps to an empty set.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Bound;

use crate::entry::Entry;
use crate::text::{could_match_focus_word, lower, word_tokens};

/// Posting sets larger than this switch from a vector to a hash set, so that
/// removing one posting of a very common token stays O(1).
const SMALL_POSTINGS: usize = 32;

/// A hasher for `u32` ids: one multiplication (ids are not attacker-chosen,
/// and iteration order never reaches the output).
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

/// murmur3's 64-bit finaliser: spreads every input bit over the whole word,
/// so the low bits a hash table indexes by are well mixed.
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        mix(self.0)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 << 32) | u64::from(n);
    }
}

pub type IdBuildHasher = BuildHasherDefault<IdHasher>;
pub type IdSet = HashSet<u32, IdBuildHasher>;

#[derive(Debug, Clone)]
enum Postings {
    One(u32),
    Few(Vec<u32>),
    Many(Box<IdSet>),
}

impl Postings {
    fn insert(&mut self, posting: u32) {
        match self {
            Postings::One(existing) => {
                if *existing != posting {
                    *self = Postings::Few(vec![*existing, posting]);
                }
            }
            Postings::Few(list) => {
                if !list.contains(&posting) {
                    list.push(posting);
                    if list.len() > SMALL_POSTINGS {
                        *self = Postings::Many(Box::new(list.iter().copied().collect()));
                    }
                }
            }
            Postings::Many(set) => {
                set.insert(posting);
            }
        }
    }

    /// Removes `posting`; returns whether the set is now empty.
    fn remove(&mut self, posting: u32) -> bool {
        match self {
            Postings::One(existing) => *existing == posting,
            Postings::Few(list) => {
                if let Some(at) = list.iter().position(|&p| p == posting) {
                    list.swap_remove(at);
                }
                if list.len() == 1 {
                    *self = Postings::One(list[0]);
                }
                list_is_empty(self)
            }
            Postings::Many(set) => {
                set.remove(&posting);
                set.is_empty()
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Postings::One(_) => 1,
            Postings::Few(list) => list.len(),
            Postings::Many(set) => set.len(),
        }
    }

    fn contains(&self, id: u32) -> bool {
        match self {
            Postings::One(posting) => *posting == id,
            Postings::Few(list) => list.contains(&id),
            Postings::Many(set) => set.contains(&id),
        }
    }

    fn for_each(&self, mut visit: impl FnMut(u32)) {
        match self {
            Postings::One(posting) => visit(*posting),
            Postings::Few(list) => list.iter().copied().for_each(visit),
            Postings::Many(set) => set.iter().copied().for_each(visit),
        }
    }
}

fn list_is_empty(postings: &Postings) -> bool {
    matches!(postings, Postings::Few(list) if list.is_empty())
}

/// Which part of an entry a posting came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Key,
    Value,
}

/// Calls `visit` with each distinct indexable token of `text` (lowered
/// first), borrowed, so that only tokens new to the index get allocated.
fn for_each_indexable_token(text: &str, mut visit: impl FnMut(&str)) {
    let lowered = lower(text);
    let mut tokens: Vec<&str> = word_tokens(&lowered)
        .filter(|token| could_match_focus_word(token))
        .collect();
    tokens.sort_unstable();
    tokens.dedup();
    for token in tokens {
        visit(token);
    }
}

/// FxHash-style hasher for the bulk build's token map (8 bytes per step;
/// tokens are not attacker-chosen and the map's order never reaches the
/// output).
#[derive(Default, Clone, Copy)]
struct TokenHasher(u64);

impl Hasher for TokenHasher {
    fn finish(&self) -> u64 {
        mix(self.0)
    }

    fn write(&mut self, bytes: &[u8]) {
        const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(SEED);
        }
    }
}

type TokenMap = BTreeMap<Box<str>, Postings>;

#[derive(Debug, Clone, Default)]
pub struct TokenIndex {
    key_tokens: TokenMap,
    value_tokens: TokenMap,
}

/// The tokens of `map` starting with `prefix`, with their postings.
fn with_prefix<'a>(map: &'a TokenMap, prefix: &'a str) -> impl Iterator<Item = &'a Postings> + 'a {
    map.range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
        .take_while(move |(token, _)| token.starts_with(prefix))
        .map(|(_, postings)| postings)
}

fn add(map: &mut TokenMap, token: &str, id: u32) {
    match map.get_mut(token) {
        Some(postings) => postings.insert(id),
        None => {
            map.insert(token.into(), Postings::One(id));
        }
    }
}

impl TokenIndex {
    /// Builds the index over `(id, entry)` pairs in one pass.
    pub fn build<'a>(entries: impl Iterator<Item = (u32, &'a Entry)>) -> TokenIndex {
        // Hashing while collecting, then one sort, is much faster than
        // inserting every posting into an ordered map.
        type BuildMap = HashMap<Box<str>, Postings, BuildHasherDefault<TokenHasher>>;
        let mut key_tokens = BuildMap::default();
        let mut value_tokens = BuildMap::default();
        for (id, entry) in entries {
            for (text, map) in [
                (&*entry.key, &mut key_tokens),
                (&*entry.value, &mut value_tokens),
            ] {
                for_each_indexable_token(text, |token| match map.get_mut(token) {
                    Some(postings) => postings.insert(id),
                    None => {
                        map.insert(token.into(), Postings::One(id));
                    }
                });
            }
        }
        let sorted = |map: BuildMap| {
            let mut tokens: Vec<(Box<str>, Postings)> = map.into_iter().collect();
            tokens.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            tokens.into_iter().collect()
        };
        TokenIndex {
            key_tokens: sorted(key_tokens),
            value_tokens: sorted(value_tokens),
        }
    }

    pub fn insert(&mut self, id: u32, entry: &Entry) {
        for_each_indexable_token(&entry.key, |token| add(&mut self.key_tokens, token, id));
        for_each_indexable_token(&entry.value, |token| add(&mut self.value_tokens, token, id));
    }

    /// Removes the postings of `entry` (as it was indexed under `id`).
    pub fn remove(&mut self, id: u32, entry: &Entry) {
        for (text, map) in [
            (&*entry.key, &mut self.key_tokens),
            (&*entry.value, &mut self.value_tokens),
        ] {
            for_each_indexable_token(text, |token| {
                if let Some(postings) = map.get_mut(token)
                    && postings.remove(id)
                {
                    map.remove(token);
                }
            });
        }
    }

    fn map(&self, side: Side) -> &TokenMap {
        match side {
            Side::Key => &self.key_tokens,
            Side::Value => &self.value_tokens,
        }
    }

    /// Calls `visit(id, side)` for every posting of every token that starts
    /// with `prefix`. An entry can be visited several times (once per
    /// matching token and side).
    pub fn for_each_with_prefix(&self, prefix: &str, mut visit: impl FnMut(u32, Side)) {
        for side in [Side::Key, Side::Value] {
            for postings in with_prefix(self.map(side), prefix) {
                postings.for_each(|id| visit(id, side));
            }
        }
    }

    /// How many postings the tokens starting with `prefix` have on `side`
    /// (an upper bound of the number of entries they name).
    pub fn count_with_prefix(&self, prefix: &str, side: Side) -> usize {
        with_prefix(self.map(side), prefix).map(Postings::len).sum()
    }

    /// Whether entry `id` has, on `side`, a token starting with `prefix`.
    pub fn has_prefix(&self, prefix: &str, side: Side, id: u32) -> bool {
        with_prefix(self.map(side), prefix).any(|postings| postings.contains(id))
    }

    #[cfg(test)]
    pub fn tokenize_only<'a>(entries: impl Iterator<Item = &'a Entry>) -> usize {
        let mut n = 0;
        for entry in entries {
            for_each_indexable_token(&entry.key, |_| n += 1);
            for_each_indexable_token(&entry.value, |_| n += 1);
        }
        n
    }

    #[cfg(test)]
    fn token_count(&self) -> usize {
        self.key_tokens.len() + self.value_tokens.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn entry(key: &str, value: &str) -> Entry {
        Entry {
            key: key.into(),
            value: value.into(),
            kind: "note".into(),
            namespace: "".into(),
            references: Vec::new(),
            created_at: 0,
            updated_at: 0,
        }
    }

    fn hits(index: &TokenIndex, prefix: &str) -> Vec<(u32, Side)> {
        let mut out = Vec::new();
        index.for_each_with_prefix(prefix, |id, side| out.push((id, side)));
        out.sort_by_key(|&(id, side)| (id, side == Side::Key));
        out.dedup();
        out
    }

    #[test]
    fn finds_key_and_value_tokens_by_prefix() {
        let mut index = TokenIndex::default();
        index.insert(1, &entry("error:Migration", "the migrate step"));
        index.insert(2, &entry("note", "MIGRATED fine; ab the"));
        assert_eq!(
            hits(&index, "migrat"),
            [(1, Side::Value), (1, Side::Key), (2, Side::Value)]
        );
        assert_eq!(hits(&index, "migration"), [(1, Side::Key)]);
        assert_eq!(index.count_with_prefix("migrat", Side::Value), 2);
        assert_eq!(index.count_with_prefix("migrat", Side::Key), 1);
        assert!(index.has_prefix("migr", Side::Key, 1));
        assert!(!index.has_prefix("migr", Side::Key, 2));
        assert!(index.has_prefix("migr", Side::Value, 2));
        assert_eq!(hits(&index, "err"), [(1, Side::Key)]);
        assert!(hits(&index, "/mig").is_empty());
        // Short tokens and 3-byte stopwords are not indexed.
        assert!(hits(&index, "ab").is_empty());
        assert!(hits(&index, "the").is_empty());
    }

    #[test]
    fn remove_undoes_insert_and_big_posting_sets_work() {
        let mut index = TokenIndex::default();
        let entries: Vec<Arc<Entry>> = (0..100)
            .map(|i| Arc::new(entry(&format!("k{i}"), "shared token build")))
            .collect();
        for (id, e) in entries.iter().enumerate() {
            index.insert(id as u32, e);
        }
        assert_eq!(hits(&index, "buil").len(), 100);
        for (id, e) in entries.iter().enumerate().skip(1) {
            index.remove(id as u32, e);
        }
        assert_eq!(hits(&index, "build"), [(0, Side::Value)]);
        index.remove(0, &entries[0]);
        assert_eq!(index.token_count(), 0);
    }

    #[test]
    fn bulk_build_equals_incremental_inserts() {
        let entries: Vec<Entry> = (0..50)
            .map(|i| {
                entry(
                    &format!("key{}", i % 7),
                    &format!("value {} api{}", i, i % 3),
                )
            })
            .collect();
        let bulk = TokenIndex::build(entries.iter().enumerate().map(|(i, e)| (i as u32, e)));
        let mut incremental = TokenIndex::default();
        for (i, e) in entries.iter().enumerate() {
            incremental.insert(i as u32, e);
        }
        for prefix in ["api", "api1", "key", "key3", "val", "value", "zzz"] {
            assert_eq!(hits(&bulk, prefix), hits(&incremental, prefix), "{prefix}");
        }
    }
}
