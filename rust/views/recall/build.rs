//! The bulk build of the recall index: every entry's document at once.
//!
//! Three steps, the first on two threads for a large store:
//! 1. **tokenise** each half of the entries (in id order) into documents of
//!    `(local term, tf)` laid end to end in one array, with a local table
//!    from lowered word to local term, so each distinct word is stemmed
//!    once per half and no document allocates;
//! 2. **merge** the halves' terms into one dictionary (term text → id) and
//!    renumber their postings;
//! 3. **lay out** the postings by term (see [`super::postings::Base`]).
//!
//! Word tables are open-addressed over one byte arena, with the word's
//! 64-bit hash kept in the slot, so a lookup compares bytes only on a
//! matching hash (almost always the word itself).

use rustc_hash::FxHashMap;

use super::index::KEY_REPEATS;
use crate::entry::Entry;
use crate::parallel::PARALLEL_MIN_ENTRIES;
use crate::text::{WordKind, for_each_word, term_of};

/// Documents of consecutive ids, their postings end to end.
pub struct Documents {
    /// `(id, length, end of its postings in `postings`)`, ids ascending.
    pub entries: Vec<(u32, u32, u32)>,
    /// `(term, tf)` of every document, terms distinct within a document.
    pub postings: Vec<(u32, u32)>,
    /// Term text of each term id of `postings`.
    pub terms: Vec<Box<str>>,
}

impl Documents {
    /// Each document as `(id, length, postings)`.
    pub fn each(&self) -> impl Iterator<Item = (u32, u32, &[(u32, u32)])> + Clone {
        let mut start = 0usize;
        self.entries.iter().map(move |&(id, len, end)| {
            let postings = &self.postings[start..end as usize];
            start = end as usize;
            (id, len, postings)
        })
    }
}

/// The documents of `entries` (`(id, entry)`, ids ascending), their term
/// ids numbered in order of first appearance.
pub fn documents(entries: &[(u32, &Entry)]) -> Documents {
    if entries.len() < PARALLEL_MIN_ENTRIES {
        return tokenise(entries);
    }
    let (first, second) = entries.split_at(entries.len() / 2);
    let (first, second) = std::thread::scope(|scope| {
        let second = scope.spawn(|| tokenise(second));
        (tokenise(first), second.join().expect("recall build thread"))
    });
    merge(first, &second)
}

/// Step 1 for one run of entries.
fn tokenise(entries: &[(u32, &Entry)]) -> Documents {
    let mut words = WordTable::with_capacity(1 << 14);
    let mut terms = WordTable::with_capacity(1 << 14);
    let mut term_texts: Vec<Box<str>> = Vec::new();
    let mut documents = Documents {
        entries: Vec::with_capacity(entries.len()),
        postings: Vec::with_capacity(entries.len() * 24),
        terms: Vec::new(),
    };
    let mut occurrences: Vec<(u32, u32)> = Vec::new();
    for &(id, entry) in entries {
        occurrences.clear();
        let mut visit = |word: &str, kind: WordKind, weight: u32| {
            let term = words.get_or_insert(word.as_bytes(), || {
                let term = term_of(word, kind);
                terms.get_or_insert(term.as_bytes(), || {
                    term_texts.push(term.as_ref().into());
                    (term_texts.len() - 1) as u32
                })
            });
            occurrences.push((term, weight));
        };
        for_each_word(&entry.key, |word, kind| visit(word, kind, KEY_REPEATS));
        for_each_word(&entry.value, |word, kind| visit(word, kind, 1));
        let len = append_document(&mut occurrences, &mut documents.postings);
        documents
            .entries
            .push((id, len, documents.postings.len() as u32));
    }
    documents.terms = term_texts;
    documents
}

/// Counts weighted term occurrences into `(term, tf)` postings appended to
/// `postings`; returns the document's length.
pub fn append_document(occurrences: &mut [(u32, u32)], postings: &mut Vec<(u32, u32)>) -> u32 {
    occurrences.sort_unstable_by_key(|&(term, _)| term);
    let start = postings.len();
    let mut len: u32 = 0;
    for &mut (term, weight) in occurrences {
        len = len.saturating_add(weight);
        match postings[start..].last_mut() {
            Some((last, tf)) if *last == term => *tf = tf.saturating_add(weight),
            _ => postings.push((term, weight)),
        }
    }
    len
}

/// Step 2: `second`'s terms renumbered after `first`'s.
fn merge(mut first: Documents, second: &Documents) -> Documents {
    let mut id_of: FxHashMap<&str, u32> = first
        .terms
        .iter()
        .enumerate()
        .map(|(id, term)| (&**term, id as u32))
        .collect();
    let mut added: Vec<Box<str>> = Vec::new();
    let next = first.terms.len();
    let renumber: Vec<u32> = second
        .terms
        .iter()
        .map(|term| {
            *id_of.entry(term).or_insert_with(|| {
                added.push(term.clone());
                (next + added.len() - 1) as u32
            })
        })
        .collect();
    drop(id_of);
    first.terms.extend(added);
    let offset = first.postings.len() as u32;
    first.postings.extend(
        second
            .postings
            .iter()
            .map(|&(term, tf)| (renumber[term as usize], tf)),
    );
    first.entries.extend(
        second
            .entries
            .iter()
            .map(|&(id, len, end)| (id, len, end + offset)),
    );
    first
}

/// A set of byte strings, each numbered by the caller, open-addressed over
/// one arena.
struct WordTable {
    slots: Vec<Slot>,
    arena: Vec<u8>,
    len: usize,
}

#[derive(Clone, Copy)]
struct Slot {
    hash: u64,
    start: u32,
    len: u32,
    /// The caller's number, or [`EMPTY`].
    value: u32,
}

const EMPTY: u32 = u32::MAX;
const FREE: Slot = Slot {
    hash: 0,
    start: 0,
    len: 0,
    value: EMPTY,
};

/// FxHash-style mixing of a byte string, eight bytes at a time.
fn hash_bytes(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut hash = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        hash = (hash.rotate_left(5) ^ word).wrapping_mul(K);
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    hash = (hash.rotate_left(5) ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    // murmur3's finaliser: every input bit reaches the low bits the table
    // indexes by (a multiplication alone only carries bits upwards).
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}

impl WordTable {
    fn with_capacity(slots: usize) -> WordTable {
        WordTable {
            slots: vec![FREE; slots.next_power_of_two()],
            arena: Vec::new(),
            len: 0,
        }
    }

    /// The number of `word`, made by `make` when `word` is new.
    fn get_or_insert(&mut self, word: &[u8], make: impl FnOnce() -> u32) -> u32 {
        let hash = hash_bytes(word);
        let mask = self.slots.len() - 1;
        let mut at = hash as usize & mask;
        loop {
            let slot = self.slots[at];
            if slot.value == EMPTY {
                break;
            }
            if slot.hash == hash
                && &self.arena[slot.start as usize..(slot.start + slot.len) as usize] == word
            {
                return slot.value;
            }
            at = (at + 1) & mask;
        }
        let value = make();
        self.slots[at] = Slot {
            hash,
            start: self.arena.len() as u32,
            len: word.len() as u32,
            value,
        };
        self.arena.extend_from_slice(word);
        self.len += 1;
        if self.len * 2 > self.slots.len() {
            self.grow();
        }
        value
    }

    fn grow(&mut self) {
        let doubled = vec![FREE; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        let mask = self.slots.len() - 1;
        for slot in old.into_iter().filter(|slot| slot.value != EMPTY) {
            let mut at = slot.hash as usize & mask;
            while self.slots[at].value != EMPTY {
                at = (at + 1) & mask;
            }
            self.slots[at] = slot;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each document as (id, length, its terms spelled out with counts).
    type Spelled = Vec<(u32, u32, Vec<(String, u32)>)>;

    #[test]
    fn word_table_numbers_each_string_once_through_growth() {
        let mut table = WordTable::with_capacity(4);
        let mut next = 0;
        let mut numbers = std::collections::HashMap::new();
        for round in 0..3 {
            for i in 0..5000 {
                let word = format!("w{i}{}", "x".repeat(i % 20));
                let number = table.get_or_insert(word.as_bytes(), || {
                    assert_eq!(round, 0, "{word} was already there");
                    next += 1;
                    next - 1
                });
                assert_eq!(*numbers.entry(word).or_insert(number), number);
            }
        }
        assert_eq!(table.len, 5000);
    }

    #[test]
    fn two_halves_merge_into_the_documents_of_one_pass() {
        let entries: Vec<Entry> = (0..40)
            .map(|i| {
                (*crate::testing::entry(
                    &format!("k{}:{}", i % 3, i),
                    "note",
                    &format!("shared words {} testing tests v{}", i % 5, i % 7),
                    0,
                    &[],
                ))
                .clone()
            })
            .collect();
        let refs: Vec<(u32, &Entry)> = entries
            .iter()
            .enumerate()
            .map(|(id, e)| (id as u32 * 2, e))
            .collect();
        let whole = tokenise(&refs);
        let (a, b) = refs.split_at(17);
        let merged = merge(tokenise(a), &tokenise(b));
        let spelled = |docs: &Documents| -> Spelled {
            docs.each()
                .map(|(id, len, postings)| {
                    let mut named: Vec<(String, u32)> = postings
                        .iter()
                        .map(|&(t, tf)| (docs.terms[t as usize].to_string(), tf))
                        .collect();
                    named.sort();
                    (id, len, named)
                })
                .collect()
        };
        assert_eq!(spelled(&merged), spelled(&whole));
        assert_eq!(merged.terms.len(), whole.terms.len());
    }
}
