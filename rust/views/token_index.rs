//! Token-prefix index for focus matching (§5.6). One concept, kept in one
//! file although long: the index's layout (a frozen sorted dictionary plus
//! postings, and a small mutable overlay) is only sound as a whole.
//!
//! Maps each word token of `lower(key)` and of `lower(value)` (the §5.5 word
//! tokens, via [`crate::text::word_tokens`]) to the entries holding it, so the
//! entries a focus word can score on are found by a range scan over the
//! tokens starting with that word, instead of tokenising the whole store.
//!
//! Key tokens and value tokens are kept apart (an entry holding a token in
//! both is in both), so a focus word's key and value postings can be counted
//! separately. Tokens that no significant focus word can be a prefix of
//! ([`could_match_focus_word`]) are not indexed.
//!
//! Two layers per side:
//! * the *base*, built in bulk from a whole store: the distinct tokens sorted
//!   and concatenated, and one array of postings grouped by token (a CSR
//!   layout: no allocation per token or posting, prefix ranges found by
//!   binary search, a prefix's posting count by subtracting two offsets);
//! * the *delta*, an ordered map of the postings of the entries written since
//!   the build, maintained one entry at a time.
//!
//! A write never edits the base: it marks the entry's id *stale* (the base
//! postings of a stale id are skipped) and indexes the entry's new text in
//! the delta. Once the delta and the stale ids outweigh half the base,
//! [`TokenIndex::wants_rebuild`] says so and the owner rebuilds in bulk.
//!
//! Invariants (`base_ids` = the id bound of the bulk build):
//! * the base postings of `id` are live iff `id < base_ids` and `id` is not
//!   stale; they are exactly the postings of the entry it held at the build;
//! * the delta holds exactly the postings of the entries whose id is stale or
//!   `>= base_ids`, derived from their current key and value, and no token
//!   maps to an empty set;
//! * so every live entry's postings are found in exactly one layer.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::{Bound, Range};

use crate::entry::Entry;
use crate::parallel::PARALLEL_MIN_ENTRIES;
use crate::text::{FOCUS_MIN_WORD_BYTES, could_match_focus_word, lower, word_tokens};

/// Posting sets larger than this switch from a vector to a hash set, so that
/// removing one posting of a very common token stays O(1).
const SMALL_POSTINGS: usize = 32;

/// The delta and the stale ids may grow to this many entries, or to half the
/// base, whichever is larger, before a rebuild is wanted.
const MIN_CHURN_BEFORE_REBUILD: usize = 4096;

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

/// The text whose runs of `[A-Za-z0-9]`, lowered, are the word tokens of
/// `lower(text)` (the tokens of [`word_tokens`] of [`lower`]), without
/// lowering an ASCII text: lowering ASCII maps `[A-Z]` to `[a-z]` and
/// nothing else. Text that is not ASCII is lowered first (lowering it can
/// make ASCII letters: `K` (Kelvin) → `k`).
fn token_source(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        Cow::Borrowed(text)
    } else {
        lower(text)
    }
}

/// Calls `visit(start, len)` for every maximal run of `[A-Za-z0-9]` in
/// `bytes`, in order. Such a run is lowered by setting bit 5 of every byte
/// (digits and lower-case letters have it already).
///
/// Bytes are classified eight at a time ([`token_bits`]) into one bit each,
/// 64 to a block, and runs are read off the bits: a byte-at-a-time scan
/// mispredicted a branch at nearly every token boundary.
fn for_each_run(bytes: &[u8], mut visit: impl FnMut(usize, usize)) {
    // The start of a run that reached the end of the previous block.
    let mut open: Option<usize> = None;
    for (block_number, block) in bytes.chunks(64).enumerate() {
        let base = block_number * 64;
        // Bit i: byte base + i is a token byte; bits past the text are 0.
        let mut mask = block_mask(block);
        if let Some(start) = open {
            let ones = (!mask).trailing_zeros() as usize;
            if ones == 64 {
                continue; // the run goes on through this whole block
            }
            visit(start, base + ones - start);
            open = None;
            mask &= u64::MAX << ones;
        }
        while mask != 0 {
            let start = mask.trailing_zeros() as usize;
            let ones = (!(mask >> start)).trailing_zeros() as usize;
            let end = start + ones;
            if end == 64 {
                open = Some(base + start);
                break;
            }
            visit(base + start, ones);
            mask &= u64::MAX << end;
        }
    }
    if let Some(start) = open {
        visit(start, bytes.len() - start);
    }
}

/// One bit per byte of a block of at most 64 bytes: set for `[A-Za-z0-9]`.
fn block_mask(block: &[u8]) -> u64 {
    let mut mask = 0;
    if let Ok(full) = <&[u8; 64]>::try_from(block) {
        for (k, eight) in full.chunks_exact(8).enumerate() {
            let word = u64::from_le_bytes(eight.try_into().expect("8 bytes"));
            mask |= token_bits(word) << (8 * k);
        }
    } else {
        let mut padded = [0u8; 64];
        padded[..block.len()].copy_from_slice(block);
        for (k, eight) in padded.chunks_exact(8).enumerate() {
            let word = u64::from_le_bytes(eight.try_into().expect("8 bytes"));
            mask |= token_bits(word) << (8 * k);
        }
    }
    mask
}

/// Eight bits for the eight bytes of `word` (little-endian), each set when
/// its byte is in `[A-Za-z0-9]`: range tests done on all bytes at once.
fn token_bits(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // With the high bit of every byte cleared, adding at most 0x80 to a
    // byte never carries into the next one.
    let low = word & !HIGH;
    // The high bit of each byte, set when `lo <= byte <= hi`.
    let in_range = |bytes: u64, lo: u8, hi: u8| {
        let at_least_lo = bytes + ONES * u64::from(0x80 - lo);
        let above_hi = bytes + ONES * u64::from(0x7F - hi);
        at_least_lo & !above_hi
    };
    let digit = in_range(low, b'0', b'9');
    // Setting bit 5 maps `[A-Z]` onto `[a-z]` and nothing else onto it.
    let letter = in_range(low | (ONES * 0x20), b'a', b'z');
    // Bytes with the high bit set (not ASCII) are never token bytes.
    let bits = (digit | letter) & !word & HIGH;
    // Gather bit 7 of byte i into bit i.
    ((bits >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

// ---------------------------------------------------------------------------
// The base: a bulk-built, immutable CSR of sorted tokens and their postings
// ---------------------------------------------------------------------------

/// Sorted distinct tokens and their postings.
#[derive(Debug, Clone, Default)]
struct Frozen {
    /// The tokens, sorted, concatenated.
    text: String,
    /// Token `i` is `text[token_starts[i]..token_starts[i + 1]]`.
    token_starts: Vec<u32>,
    /// The postings of token `i` are `postings[posting_starts[i]..posting_starts[i + 1]]`,
    /// ascending ids.
    posting_starts: Vec<u32>,
    postings: Vec<u32>,
}

/// The first index in `lo..hi` for which `is_before` is false (`is_before`
/// must be true on a prefix of the range and false on the rest).
fn partition_point(mut lo: usize, mut hi: usize, is_before: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if is_before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

impl Frozen {
    fn token_count(&self) -> usize {
        self.token_starts.len().saturating_sub(1)
    }

    fn token(&self, i: usize) -> &str {
        &self.text[self.token_starts[i] as usize..self.token_starts[i + 1] as usize]
    }

    /// The tokens starting with `prefix`: in sorted order they form one run,
    /// from the first token not below `prefix`.
    fn prefix_range(&self, prefix: &str) -> Range<usize> {
        let count = self.token_count();
        let lo = partition_point(0, count, |i| self.token(i) < prefix);
        let hi = partition_point(lo, count, |i| self.token(i).starts_with(prefix));
        lo..hi
    }

    /// The postings of a range of tokens, token by token.
    fn postings(&self, tokens: Range<usize>) -> &[u32] {
        if tokens.is_empty() {
            return &[];
        }
        &self.postings
            [self.posting_starts[tokens.start] as usize..self.posting_starts[tokens.end] as usize]
    }

    fn token_postings(&self, token: usize) -> &[u32] {
        self.postings(token..token + 1)
    }
}

/// Setting bit 5 of every byte lowers a run of `[A-Za-z0-9]`.
const LOWER_BITS: u64 = 0x2020_2020_2020_2020;

/// The first `min(len, 8)` bytes of `bytes[start..]`, a run of
/// `[A-Za-z0-9]` of `len` bytes, lowered, little-endian, zero-padded.
fn lowered_word(bytes: &[u8], start: usize, len: usize) -> u64 {
    let take = len.min(8);
    let raw = if let Some(eight) = bytes.get(start..start + 8) {
        u64::from_le_bytes(eight.try_into().expect("8 bytes"))
    } else {
        let mut padded = [0u8; 8];
        padded[..bytes.len() - start].copy_from_slice(&bytes[start..]);
        u64::from_le_bytes(padded)
    };
    let mask = if take == 8 {
        u64::MAX
    } else {
        (1 << (8 * take)) - 1
    };
    (raw | LOWER_BITS) & mask
}

/// The distinct tokens met while scanning, numbered in order of first
/// appearance, in an open-addressing table over one byte arena (no
/// allocation per token). Tokens are stored lowered; a table slot holds a
/// token's first eight bytes and length, so most lookups compare within the
/// slot and touch nothing else.
struct Dictionary {
    text: Vec<u8>,
    /// Token `n` is `text[starts[n]..starts[n + 1]]`; starts with `0`.
    starts: Vec<u32>,
    /// Whether token `n` is indexed at all ([`could_match_focus_word`]).
    indexable: Vec<bool>,
    /// A power of two, at least 4/3 of the token count.
    table: Vec<DictionarySlot>,
    /// `64 - log2(table.len())`: the hash's top bits pick the slot.
    shift: u32,
}

#[derive(Clone, Copy)]
struct DictionarySlot {
    /// The first eight bytes, lowered, zero-padded.
    head: u64,
    len: u32,
    /// The token number, or `EMPTY_SLOT`.
    number: u32,
}

const EMPTY_SLOT: u32 = u32::MAX;
const FREE: DictionarySlot = DictionarySlot {
    head: 0,
    len: 0,
    number: EMPTY_SLOT,
};

/// Hash of a lowered token from its eight-byte words (the first is `head`).
fn hash_words(head: u64, len: usize, rest: impl Iterator<Item = u64>) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut hash = (head ^ (len as u64).rotate_right(7)).wrapping_mul(K);
    for word in rest {
        hash = (hash.rotate_left(23) ^ word).wrapping_mul(K);
    }
    hash ^ (hash >> 31)
}

impl Dictionary {
    fn new() -> Dictionary {
        Dictionary {
            text: Vec::new(),
            starts: vec![0],
            indexable: Vec::new(),
            table: vec![FREE; 1024],
            shift: 64 - 10,
        }
    }

    fn len(&self) -> usize {
        self.indexable.len()
    }

    fn token(&self, n: u32) -> &[u8] {
        &self.text[self.starts[n as usize] as usize..self.starts[n as usize + 1] as usize]
    }

    /// The head word and hash of the run `bytes[start..start + len]` of
    /// `[A-Za-z0-9]`, lowered.
    fn head_and_hash(bytes: &[u8], start: usize, len: usize) -> (u64, u64) {
        let head = lowered_word(bytes, start, len);
        let rest = (8..len)
            .step_by(8)
            .map(|at| lowered_word(bytes, start + at, len - at));
        (head, hash_words(head, len, rest))
    }

    /// The slot a hash starts probing at.
    fn home(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize
    }

    /// Whether `entry` holds the run `bytes[start..start + len]` whose head
    /// word is `head`.
    fn holds(
        &self,
        entry: DictionarySlot,
        bytes: &[u8],
        start: usize,
        len: usize,
        head: u64,
    ) -> bool {
        entry.number != EMPTY_SLOT
            && entry.head == head
            && entry.len as usize == len
            && (len <= 8 || {
                let stored = self.token(entry.number);
                (8..len).step_by(8).all(|at| {
                    lowered_word(bytes, start + at, len - at) == lowered_word(stored, at, len - at)
                })
            })
    }

    /// The number of the run `bytes[start..start + len]` of `[A-Za-z0-9]`,
    /// lowered; added if new.
    fn intern(&mut self, bytes: &[u8], start: usize, len: usize) -> u32 {
        let (head, hash) = Dictionary::head_and_hash(bytes, start, len);
        self.intern_hashed(bytes, start, len, head, hash)
    }

    fn intern_hashed(
        &mut self,
        bytes: &[u8],
        start: usize,
        len: usize,
        head: u64,
        hash: u64,
    ) -> u32 {
        let mask = self.table.len() - 1;
        let mut slot = self.home(hash);
        loop {
            let entry = self.table[slot];
            if entry.number == EMPTY_SLOT {
                break;
            }
            if self.holds(entry, bytes, start, len, head) {
                return entry.number;
            }
            slot = (slot + 1) & mask;
        }
        let number = self.len() as u32;
        self.text
            .extend(bytes[start..start + len].iter().map(|&b| b | 0x20));
        self.starts.push(self.text.len() as u32);
        let token = std::str::from_utf8(self.token(number)).expect("tokens are ASCII");
        self.indexable.push(could_match_focus_word(token));
        self.table[slot] = DictionarySlot {
            head,
            len: len as u32,
            number,
        };
        if self.len() * 4 > self.table.len() * 3 {
            self.grow();
        }
        number
    }

    fn grow(&mut self) {
        let mut table = vec![FREE; self.table.len() * 2];
        let shift = self.shift - 1;
        let mask = table.len() - 1;
        for number in 0..self.len() as u32 {
            let token = self.token(number);
            let len = token.len();
            let head = lowered_word(token, 0, len);
            let rest = (8..len)
                .step_by(8)
                .map(|at| lowered_word(token, at, len - at));
            let mut slot = (hash_words(head, len, rest) >> shift) as usize;
            while table[slot].number != EMPTY_SLOT {
                slot = (slot + 1) & mask;
            }
            table[slot] = DictionarySlot {
                head,
                len: len as u32,
                number,
            };
        }
        self.table = table;
        self.shift = shift;
    }
}

/// The postings of one side found in a run of entries, in id order: the
/// token numbers (of `dictionary`) of each entry in turn, and where each
/// entry's numbers end (no id per posting: a large store has some twenty
/// postings per entry, and this is the largest transient of the build).
struct Scan {
    dictionary: Dictionary,
    /// `last[n]`: one more than the last id given a posting of token `n`.
    last: Vec<u32>,
    tokens: Vec<u32>,
    /// `(id, end)`: the entry's token numbers are `tokens[previous end..end]`.
    entries: Vec<(u32, u32)>,
}

impl Scan {
    fn new(expected_entries: usize, expected_postings: usize) -> Scan {
        Scan {
            dictionary: Dictionary::new(),
            last: Vec::new(),
            tokens: Vec::with_capacity(expected_postings),
            entries: Vec::with_capacity(expected_entries),
        }
    }

    /// `(id, token numbers)` of each scanned entry, in order.
    fn postings(&self) -> impl Iterator<Item = (u32, &[u32])> {
        let mut start = 0;
        self.entries.iter().map(move |&(id, end)| {
            let numbers = &self.tokens[start as usize..end as usize];
            start = end;
            (id, numbers)
        })
    }

    /// Records the indexable tokens of `lower(text)` for `id` (ids ascending
    /// across calls), each once ([`token_source`], [`for_each_run`]).
    ///
    /// Two passes: the first finds the tokens, hashes them and reads each
    /// one's home slot; the second resolves them. The home-slot reads do not
    /// depend on each other, so their cache misses overlap instead of
    /// stalling one token at a time (the dictionary outgrows the L2 cache
    /// while the text streams through it).
    fn add(&mut self, id: u32, text: &str, batch: &mut Vec<PendingToken>) {
        let source = token_source(text);
        let bytes = source.as_bytes();
        batch.clear();
        for_each_run(bytes, |start, len| {
            if len < FOCUS_MIN_WORD_BYTES {
                return; // no focus word is shorter
            }
            let (head, hash) = Dictionary::head_and_hash(bytes, start, len);
            let home = self.dictionary.table[self.dictionary.home(hash)];
            batch.push(PendingToken {
                start: start as u32,
                len: len as u32,
                head,
                hash,
                home,
            });
        });
        for pending in batch.iter() {
            let (start, len) = (pending.start as usize, pending.len as usize);
            // The home slot read above is still right when it holds the
            // token (numbers never change); otherwise probe in full (the
            // table may have changed since).
            let n = if self
                .dictionary
                .holds(pending.home, bytes, start, len, pending.head)
            {
                pending.home.number
            } else {
                self.dictionary
                    .intern_hashed(bytes, start, len, pending.head, pending.hash)
            } as usize;
            if n == self.last.len() {
                self.last.push(0);
            }
            if self.dictionary.indexable[n] && self.last[n] != id + 1 {
                self.last[n] = id + 1;
                self.tokens.push(n as u32);
            }
        }
        self.entries.push((id, self.tokens.len() as u32));
    }
}

/// A token of the text being scanned, hashed, with its home slot as read.
struct PendingToken {
    start: u32,
    len: u32,
    head: u64,
    hash: u64,
    home: DictionarySlot,
}

/// Scans one side of `entries` (in id order) on up to two threads.
fn scan(entries: &[(u32, &Entry)], side: Side) -> Vec<Scan> {
    fn text_of(entry: &Entry, side: Side) -> &str {
        match side {
            Side::Key => &entry.key,
            Side::Value => &entry.value,
        }
    }
    let run = |part: &[(u32, &Entry)]| {
        let bytes: usize = part.iter().map(|(_, e)| text_of(e, side).len()).sum();
        let mut scan = Scan::new(part.len(), bytes / 10);
        let mut batch = Vec::new();
        for &(id, entry) in part {
            scan.add(id, text_of(entry, side), &mut batch);
        }
        scan
    };
    if entries.len() < PARALLEL_MIN_ENTRIES {
        return vec![run(entries)];
    }
    let (first, second) = entries.split_at(entries.len() / 2);
    std::thread::scope(|scope| {
        let later = scope.spawn(|| run(second));
        let earlier = run(first);
        vec![earlier, later.join().expect("tokenising thread")]
    })
}

/// Merges scans of consecutive id runs (in id order) into the sorted base.
fn freeze(mut scans: Vec<Scan>) -> Frozen {
    if scans.is_empty() {
        return Frozen::default();
    }
    let mut dictionary = std::mem::replace(&mut scans[0].dictionary, Dictionary::new());
    // Token numbers of the later scans, renumbered into `dictionary`.
    let renumbered: Vec<Vec<u32>> = scans[1..]
        .iter()
        .map(|scan| {
            (0..scan.dictionary.len() as u32)
                .map(|n| {
                    let token = scan.dictionary.token(n);
                    dictionary.intern(token, 0, token.len())
                })
                .collect()
        })
        .collect();
    let global = |scan: usize, n: u32| -> u32 {
        if scan == 0 {
            n
        } else {
            renumbered[scan - 1][n as usize]
        }
    };
    let mut counts = vec![0u32; dictionary.len()];
    for (s, scan) in scans.iter().enumerate() {
        for &n in &scan.tokens {
            counts[global(s, n) as usize] += 1;
        }
    }
    let mut order: Vec<u32> = (0..dictionary.len() as u32)
        .filter(|&n| counts[n as usize] > 0)
        .collect();
    order.sort_unstable_by(|&a, &b| dictionary.token(a).cmp(dictionary.token(b)));

    let mut frozen = Frozen {
        text: String::new(),
        token_starts: Vec::with_capacity(order.len() + 1),
        posting_starts: Vec::with_capacity(order.len() + 1),
        postings: Vec::new(),
    };
    // `cursor[n]`: where the next posting of token `n` goes.
    let mut cursor = vec![0u32; dictionary.len()];
    let mut text = Vec::with_capacity(order.iter().map(|&n| dictionary.token(n).len()).sum());
    frozen.token_starts.push(0);
    frozen.posting_starts.push(0);
    let mut total = 0u32;
    for &n in &order {
        text.extend_from_slice(dictionary.token(n));
        frozen.token_starts.push(text.len() as u32);
        cursor[n as usize] = total;
        total += counts[n as usize];
        frozen.posting_starts.push(total);
    }
    frozen.text = String::from_utf8(text).expect("tokens are ASCII");
    // Scatter: scans are in id order and each in id order, so every token's
    // postings come out ascending.
    frozen.postings = vec![0; total as usize];
    for (s, scan) in scans.iter().enumerate() {
        for (id, numbers) in scan.postings() {
            for &n in numbers {
                let at = &mut cursor[global(s, n) as usize];
                frozen.postings[*at as usize] = id;
                *at += 1;
            }
        }
    }
    frozen
}

// ---------------------------------------------------------------------------
// The index: base + stale ids + delta
// ---------------------------------------------------------------------------

type TokenMap = BTreeMap<Box<str>, Postings>;

#[derive(Debug, Clone, Default)]
pub struct TokenIndex {
    key_base: Frozen,
    value_base: Frozen,
    /// One more than the largest id the base was built over.
    base_ids: u32,
    /// One bit per id below `base_ids`: set when the id's base postings are
    /// dead (the entry was rewritten or removed since the build).
    stale: Vec<u64>,
    stale_count: usize,
    key_delta: TokenMap,
    value_delta: TokenMap,
    /// Entries whose postings are in the delta.
    delta_entries: usize,
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
    /// Builds the index over `(id, entry)` pairs, ids ascending, in bulk.
    pub fn build<'a>(entries: impl Iterator<Item = (u32, &'a Entry)>) -> TokenIndex {
        let entries: Vec<(u32, &Entry)> = entries.collect();
        debug_assert!(entries.windows(2).all(|w| w[0].0 < w[1].0), "ids ascending");
        let base_ids = entries.last().map_or(0, |&(id, _)| id + 1);
        let key_base = freeze(scan(&entries, Side::Key));
        let value_base = freeze(scan(&entries, Side::Value));
        TokenIndex {
            key_base,
            value_base,
            base_ids,
            stale: vec![0; (base_ids as usize).div_ceil(64)],
            ..TokenIndex::default()
        }
    }

    fn is_stale(&self, id: u32) -> bool {
        self.stale[id as usize / 64] & (1 << (id % 64)) != 0
    }

    /// Whether the base holds the live postings of `id`.
    fn in_base(&self, id: u32) -> bool {
        id < self.base_ids && !self.is_stale(id)
    }

    fn mark_stale(&mut self, id: u32) {
        if id < self.base_ids && !self.is_stale(id) {
            self.stale[id as usize / 64] |= 1 << (id % 64);
            self.stale_count += 1;
        }
    }

    /// Indexes `entry` under `id`, which holds no indexed entry (a new id, or
    /// one whose previous entry was [`TokenIndex::remove`]d).
    pub fn insert(&mut self, id: u32, entry: &Entry) {
        self.mark_stale(id);
        for_each_indexable_token(&entry.key, |token| add(&mut self.key_delta, token, id));
        for_each_indexable_token(&entry.value, |token| add(&mut self.value_delta, token, id));
        self.delta_entries += 1;
    }

    /// Removes the postings of `entry` (as it was indexed under `id`).
    pub fn remove(&mut self, id: u32, entry: &Entry) {
        if self.in_base(id) {
            self.mark_stale(id);
            return;
        }
        for (text, map) in [
            (&*entry.key, &mut self.key_delta),
            (&*entry.value, &mut self.value_delta),
        ] {
            for_each_indexable_token(text, |token| {
                if let Some(postings) = map.get_mut(token)
                    && postings.remove(id)
                {
                    map.remove(token);
                }
            });
        }
        self.delta_entries -= 1;
    }

    /// Whether so much was written since the bulk build that rebuilding
    /// would pay off (the owner decides when).
    pub fn wants_rebuild(&self) -> bool {
        self.stale_count + self.delta_entries
            > MIN_CHURN_BEFORE_REBUILD.max(self.base_ids as usize / 2)
    }

    fn base(&self, side: Side) -> &Frozen {
        match side {
            Side::Key => &self.key_base,
            Side::Value => &self.value_base,
        }
    }

    fn delta(&self, side: Side) -> &TokenMap {
        match side {
            Side::Key => &self.key_delta,
            Side::Value => &self.value_delta,
        }
    }

    /// Calls `visit(id, side)` for every posting of every token that starts
    /// with `prefix`. An entry can be visited several times (once per
    /// matching token and side).
    pub fn for_each_with_prefix(&self, prefix: &str, mut visit: impl FnMut(u32, Side)) {
        for side in [Side::Key, Side::Value] {
            let base = self.base(side);
            let postings = base.postings(base.prefix_range(prefix));
            if self.stale_count == 0 {
                for &id in postings {
                    visit(id, side);
                }
            } else {
                for &id in postings.iter().filter(|&&id| !self.is_stale(id)) {
                    visit(id, side);
                }
            }
            for postings in with_prefix(self.delta(side), prefix) {
                postings.for_each(|id| visit(id, side));
            }
        }
    }

    /// How many postings the tokens starting with `prefix` have on `side`:
    /// an upper bound of the number of entries they name (dead base postings
    /// are counted too), in O(log tokens) for the base.
    pub fn count_with_prefix(&self, prefix: &str, side: Side) -> usize {
        let base = self.base(side);
        base.postings(base.prefix_range(prefix)).len()
            + with_prefix(self.delta(side), prefix)
                .map(Postings::len)
                .sum::<usize>()
    }

    /// Whether entry `id` has, on `side`, a token starting with `prefix`.
    pub fn has_prefix(&self, prefix: &str, side: Side, id: u32) -> bool {
        if self.in_base(id) {
            let base = self.base(side);
            base.prefix_range(prefix)
                .any(|token| base.token_postings(token).binary_search(&id).is_ok())
        } else {
            with_prefix(self.delta(side), prefix).any(|postings| postings.contains(id))
        }
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

    /// Distinct tokens with live postings, both sides.
    #[cfg(test)]
    fn token_count(&self) -> usize {
        let live_base = |base: &Frozen| {
            (0..base.token_count())
                .filter(|&t| base.token_postings(t).iter().any(|&id| !self.is_stale(id)))
                .count()
        };
        live_base(&self.key_base)
            + live_base(&self.value_base)
            + self.key_delta.len()
            + self.value_delta.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn entry(key: &str, value: &str) -> Entry {
        (*crate::testing::entry(key, "note", value, 0, &[])).clone()
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
    /// The tokens of `text` an index must hold, straight from the §5.5/§5.6
    /// definitions (lower, then word tokens, then the focus-word filter).
    fn model_tokens(text: &str) -> Vec<String> {
        let lowered = lower(text);
        let mut tokens: Vec<String> = word_tokens(&lowered)
            .filter(|t| could_match_focus_word(t))
            .map(str::to_owned)
            .collect();
        tokens.sort();
        tokens.dedup();
        tokens
    }

    #[test]
    fn ascii_fast_tokeniser_equals_lower_then_split() {
        for text in [
            "",
            "Hello World",
            "MiXeD_case-42 tokens,ABC;def",
            "ÉCOLE école İstanbul ΣΟΦΙΑ KELVIN\u{212A} done",
            "trailing123",
            "  many   spaces  ",
            "UPPER",
            "averyveryverylongTOKENindeed0123456789 x",
        ] {
            let source = token_source(text);
            let bytes = source.as_bytes();
            let mut got = Vec::new();
            for_each_run(bytes, |start, len| {
                let lowered: Vec<u8> = bytes[start..start + len].iter().map(|b| b | 0x20).collect();
                got.push(String::from_utf8(lowered).unwrap());
            });
            let lowered = lower(text);
            let want: Vec<String> = word_tokens(&lowered).map(str::to_owned).collect();
            assert_eq!(got, want, "{text:?}");
        }
    }

    /// The block-at-a-time run finder equals a byte-at-a-time scan, on
    /// random bytes of every class and around block boundaries.
    #[test]
    fn run_finder_equals_a_byte_scan() {
        fn byte_scan(bytes: &[u8]) -> Vec<(usize, usize)> {
            let mut runs = Vec::new();
            let mut at = 0;
            while at < bytes.len() {
                while at < bytes.len() && !bytes[at].is_ascii_alphanumeric() {
                    at += 1;
                }
                let start = at;
                while at < bytes.len() && bytes[at].is_ascii_alphanumeric() {
                    at += 1;
                }
                if at > start {
                    runs.push((start, at - start));
                }
            }
            runs
        }
        for byte in 0..=255u8 {
            assert_eq!(
                token_bits(u64::from(byte)) & 1 == 1,
                byte.is_ascii_alphanumeric(),
                "{byte}"
            );
        }
        let mut next = crate::test_rng::xorshift(0x0123_4567_89ab_cdef);
        let classes: [&[u8]; 5] = [b"aZ09mQ", b" -_:.", b"\x80\xc3\xff", b"@[`{/", b"xyzXYZ123"];
        for round in 0..3000 {
            let len = match round % 4 {
                0 => next(10) as usize,
                1 => 60 + next(10) as usize,
                2 => 120 + next(20) as usize,
                _ => next(300) as usize,
            };
            let runny = next(3);
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    let class = if runny == 0 {
                        next(5)
                    } else {
                        [0, 4, 0, 1][next(4) as usize]
                    };
                    let class = classes[class as usize];
                    class[next(class.len() as u64) as usize]
                })
                .collect();
            let mut got = Vec::new();
            for_each_run(&bytes, |start, len| got.push((start, len)));
            assert_eq!(got, byte_scan(&bytes), "{bytes:?}");
        }
    }

    #[test]
    fn dictionary_interns_each_lowered_token_once() {
        let mut dictionary = Dictionary::new();
        let mut numbers = std::collections::HashMap::new();
        for i in 0..5000 {
            for token in [
                format!("Tok{i}"),
                format!("tok{i}"),
                format!("averyLONGtokenNUMBER{i}x"),
                format!("AVERYlongTOKENnumber{i}X"),
                format!("{i}"),
            ] {
                let number = dictionary.intern(token.as_bytes(), 0, token.len());
                let lowered = token.to_ascii_lowercase();
                assert_eq!(dictionary.token(number), lowered.as_bytes());
                assert_eq!(*numbers.entry(lowered).or_insert(number), number);
            }
        }
        assert_eq!(dictionary.len(), numbers.len());
    }

    /// Bulk base + writes (stale ids, delta, id reuse) answer every prefix
    /// query exactly like the definition, on random stores and edits, with
    /// the two-thread build too.
    #[test]
    fn base_and_delta_agree_with_the_definition_under_random_edits() {
        let mut next = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        let words = [
            "alpha",
            "Alpine",
            "ALPS",
            "beta",
            "bet",
            "the",
            "then",
            "thermal",
            "gamma",
            "Über",
            "ÜBERALL",
            "straße",
            "x1",
            "x12",
            "x123",
            "ΣΟΦΙΑ",
            "svc42",
            "svc4",
        ];
        let text = |next: &mut dyn FnMut(u64) -> u64| {
            let mut out = String::new();
            for _ in 0..next(6) {
                out.push_str(words[next(words.len() as u64) as usize]);
                out.push([' ', '-', ':', '.'][next(4) as usize]);
            }
            out
        };
        // Fewer rounds unoptimised: the large size dominates `cargo test`.
        let rounds = if cfg!(debug_assertions) { 9 } else { 40 };
        for round in 0..rounds {
            let size = [5, 50, PARALLEL_MIN_ENTRIES + 100][round % 3];
            // id -> entry (None: a free id).
            let mut live: Vec<Option<Entry>> = (0..size)
                .map(|_| (next(5) != 0).then(|| entry(&text(&mut next), &text(&mut next))))
                .collect();
            let mut index = TokenIndex::build(
                live.iter()
                    .enumerate()
                    .filter_map(|(id, e)| e.as_ref().map(|e| (id as u32, e))),
            );
            let edits = if size > 1000 { 300 } else { 3 * size };
            for _ in 0..edits {
                let id = next(size as u64 + 3) as u32;
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
            for prefix in [
                "alp", "alpine", "bet", "the", "ther", "übe", "stra", "x12", "svc4", "zzz", "σοφ",
            ] {
                for side in [Side::Key, Side::Value] {
                    let mut want: Vec<u32> = live
                        .iter()
                        .enumerate()
                        .filter_map(|(id, e)| e.as_ref().map(|e| (id as u32, e)))
                        .filter(|(_, e)| {
                            let text = if side == Side::Key { &e.key } else { &e.value };
                            model_tokens(text).iter().any(|t| t.starts_with(prefix))
                        })
                        .map(|(id, _)| id)
                        .collect();
                    want.sort_unstable();
                    let mut got = Vec::new();
                    index.for_each_with_prefix(prefix, |id, s| {
                        if s == side {
                            got.push(id);
                        }
                    });
                    got.sort_unstable();
                    got.dedup();
                    assert_eq!(got, want, "round {round} {prefix:?} {side:?}");
                    assert!(index.count_with_prefix(prefix, side) >= want.len());
                    for id in 0..live.len() as u32 {
                        if live[id as usize].is_some() {
                            assert_eq!(
                                index.has_prefix(prefix, side, id),
                                want.binary_search(&id).is_ok(),
                                "round {round} {prefix:?} {side:?} {id}"
                            );
                        }
                    }
                }
            }
        }
    }
}
