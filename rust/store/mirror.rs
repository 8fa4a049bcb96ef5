//! The in-memory copy of a store, which every read is served from and every
//! write rule works on, whatever the medium underneath.
//!
//! Only `entries` is built when a store is loaded; or, when an image of the
//! store matched (`store/image/`), nothing at all: the image's entries are
//! the mirror's `base`, each made into an [`Entry`] the first time a call
//! reads it, and `entries` holds only what changed since (the changed
//! base entries are `shadowed`). Every index is derived from the entries and
//! built in bulk on first use (a fresh process pays only for
//! what its calls need), then kept up to date by every write:
//! * `core` ([`CoreIndexes`]): recency orders and children lists, which the
//!   write rules need;
//! * `derived`: the indexes of a layer above the store (search, rendering),
//!   which the mirror tells about every change through the [`Derived`]
//!   trait without knowing what they are.
//!
//! Invariants: outside a write transaction, the live base entries (those
//! not shadowed) and `entries`, whose keys never overlap, equal the committed
//! contents of the medium as of the moment its owner last brought it up to
//! date; every built index describes exactly `entries` (indexes change only
//! in [`Mirror::insert`] and [`Mirror::remove`]); the derived indexes are
//! told about a change after the core indexes took it.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use crate::entry::Entry;
use crate::store::core_indexes::CoreIndexes;
use crate::store::image::Base;

use crate::store::change_set::Change;

/// Indexes a layer above the store derives from the entries. The mirror
/// calls them after every change, with the core indexes when those are
/// built (a derived index that needs children lists builds them first, so
/// it always gets them).
pub trait Derived: Any + Send + Sync {
    /// `entry` was added, or replaced `previous`.
    fn upsert(
        &mut self,
        entry: &Arc<Entry>,
        previous: Option<&Arc<Entry>>,
        core: Option<&CoreIndexes>,
    );
    /// `entry` was removed.
    fn remove(&mut self, entry: &Arc<Entry>, core: Option<&CoreIndexes>);
    fn as_any(&self) -> &dyn Any;
}

#[derive(Default)]
pub struct Mirror {
    /// Identity of the medium's contents; a different id means the store
    /// was replaced and the mirror must be rebuilt.
    pub store_id: Vec<u8>,
    /// The largest `updated_at` ever given out (§1.3).
    pub clock: i64,
    /// The entries of the image the mirror was loaded from, if it was.
    base: Option<Arc<Base>>,
    /// One bit per base entry: set when it changed or went since the image.
    shadowed: Vec<u64>,
    /// Base entries not shadowed.
    base_live: usize,
    /// Every entry not in the base (all of them without an image).
    entries: BTreeMap<Arc<str>, Arc<Entry>>,
    core: OnceLock<CoreIndexes>,
    derived: OnceLock<Box<dyn Derived>>,
}

impl Mirror {
    pub fn len(&self) -> usize {
        self.base_live + self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, key: &str) -> Option<&Arc<Entry>> {
        self.entries.get(key).or_else(|| {
            let base = self.base.as_deref()?;
            self.base_position(key).map(|i| base.entry(i))
        })
    }

    /// Where `key` is among the live base entries.
    fn base_position(&self, key: &str) -> Option<usize> {
        let i = self.base.as_deref()?.image().find(key)?;
        (!is_set(&self.shadowed, i)).then_some(i)
    }

    /// Entries sorted by key.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Arc<Entry>> {
        Iter::new(self, 0, self.entries.values())
    }

    /// Entries whose key starts with `prefix`, sorted by key.
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a Arc<Entry>> {
        let from = self
            .base
            .as_deref()
            .map_or(0, |base| base.image().lower_bound(prefix));
        let overlay = self
            .entries
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .map(second as fn((&'a Arc<str>, &'a Arc<Entry>)) -> &'a Arc<Entry>);
        Iter::new(self, from, overlay).take_while(move |entry| entry.key.starts_with(prefix))
    }

    /// The image the mirror was loaded from, if it was, for the views
    /// (their sections), with the base entries no longer current and the
    /// entries added or changed since.
    pub fn image_base(&self) -> Option<ImageBase<'_>> {
        let base = self.base.as_ref()?;
        Some(ImageBase {
            base,
            shadowed: &self.shadowed,
            changed: &self.entries,
        })
    }

    /// The recency orders and children lists, built on first use (any
    /// thread may build them; one build wins).
    pub fn core_indexes(&self) -> &CoreIndexes {
        self.core.get_or_init(|| {
            let entries: Vec<&Arc<Entry>> = self.iter().collect();
            CoreIndexes::build(&entries)
        })
    }

    /// The core indexes if they are built.
    pub fn built_core_indexes(&self) -> Option<&CoreIndexes> {
        self.core.get()
    }

    /// Entries from newest to oldest.
    pub fn newest_first(&self) -> impl Iterator<Item = &Arc<Entry>> {
        self.core_indexes()
            .recency
            .iter()
            .rev()
            .map(|(_, key)| self.expect(key))
    }

    /// Entries of one type from oldest to newest.
    pub fn of_type_oldest_first(&self, kind: &str) -> impl Iterator<Item = &Arc<Entry>> {
        self.core_indexes()
            .by_type
            .get(kind)
            .into_iter()
            .flat_map(|set| set.iter().map(|(_, key)| self.expect(key)))
    }

    pub fn count_of_type(&self, kind: &str) -> usize {
        self.core_indexes()
            .by_type
            .get(kind)
            .map_or(0, BTreeSet::len)
    }

    pub fn newest(&self) -> Option<&Arc<Entry>> {
        self.core_indexes()
            .recency
            .last()
            .map(|(_, key)| self.expect(key))
    }

    pub fn newest_of_type(&self, kind: &str) -> Option<&Arc<Entry>> {
        self.core_indexes()
            .by_type
            .get(kind)?
            .last()
            .map(|(_, key)| self.expect(key))
    }

    /// Sorted keys of the entries that reference `key`.
    pub fn children(&self, key: &str) -> impl Iterator<Item = &Arc<str>> {
        self.core_indexes().children_of(key).into_iter().flatten()
    }

    /// The derived indexes of the layer above, made by `init` on first use
    /// (one layer owns the slot).
    pub fn derived(&self, init: impl FnOnce() -> Box<dyn Derived>) -> &dyn Derived {
        &**self.derived.get_or_init(init)
    }

    /// The entry of a key an index holds.
    fn expect(&self, key: &str) -> &Arc<Entry> {
        self.get(key).expect("an index holds only present keys")
    }

    /// Marks base entry `i` as no longer current.
    fn shadow(&mut self, i: usize) {
        self.shadowed[i / 64] |= 1 << (i % 64);
        self.base_live -= 1;
    }

    /// Adds or replaces an entry; returns the one it replaced.
    pub fn insert(&mut self, entry: Arc<Entry>) -> Option<Arc<Entry>> {
        let previous = match self.entries.get(&entry.key) {
            Some(previous) => Some(previous.clone()),
            None => self.base_position(&entry.key).map(|i| {
                let previous = self
                    .base
                    .as_deref()
                    .expect("a base position")
                    .entry(i)
                    .clone();
                self.shadow(i);
                previous
            }),
        };
        self.clock = self.clock.max(entry.updated_at);
        if let Some(core) = self.core.get_mut() {
            if let Some(previous) = &previous {
                core.unindex(previous);
            }
            core.index(&entry);
        }
        if let Some(derived) = self.derived.get_mut() {
            derived.upsert(&entry, previous.as_ref(), self.core.get());
        }
        self.entries.insert(entry.key.clone(), entry);
        previous
    }

    pub fn remove(&mut self, key: &str) -> Option<Arc<Entry>> {
        let entry = if let Some(entry) = self.entries.remove(key) {
            entry
        } else {
            let i = self.base_position(key)?;
            let entry = self
                .base
                .as_deref()
                .expect("a base position")
                .entry(i)
                .clone();
            self.shadow(i);
            entry
        };
        if let Some(core) = self.core.get_mut() {
            core.unindex(&entry);
        }
        if let Some(derived) = self.derived.get_mut() {
            derived.remove(&entry, self.core.get());
        }
        Some(entry)
    }

    /// Undoes a failed transaction's changes (`undo` holds each touched
    /// key's entry before the change), newest first, and puts the clock back.
    pub(crate) fn roll_back(&mut self, undo: Vec<Change>, clock: i64) {
        for (key, previous) in undo.into_iter().rev() {
            match previous {
                Some(entry) => {
                    self.insert(entry);
                }
                None => {
                    self.remove(&key);
                }
            }
        }
        self.clock = clock;
    }

    /// Catch-up, the one way for every medium: applies what other writers
    /// changed since the mirror's position, each key with its entry now
    /// (`None`: deleted), and takes the larger of the two clocks. The medium
    /// reads and checks the whole delta first, so a damaged record leaves
    /// the mirror as it was.
    pub fn apply_delta<K: AsRef<str>>(
        &mut self,
        changes: impl IntoIterator<Item = (K, Option<Arc<Entry>>)>,
        clock: i64,
    ) {
        for (key, entry) in changes {
            match entry {
                Some(entry) => {
                    self.insert(entry);
                }
                None => {
                    self.remove(key.as_ref());
                }
            }
        }
        self.clock = self.clock.max(clock);
    }

    /// Catch-up when the position cannot be trusted (no mirror yet, another
    /// store, changes older than the medium remembers): `mirror` becomes
    /// exactly `entries`.
    pub fn replace(
        mirror: &mut Option<Mirror>,
        entries: Vec<Arc<Entry>>,
        store_id: Vec<u8>,
        clock: i64,
    ) {
        *mirror = Some(Mirror::from_entries(entries, store_id, clock));
    }

    /// A mirror of the entries of an image (`base`), none of them made yet.
    pub fn from_image(base: Arc<Base>, store_id: Vec<u8>, clock: i64) -> Mirror {
        let count = base.len();
        Mirror {
            store_id,
            clock: clock.max(base.image().clock()),
            shadowed: vec![0; count.div_ceil(64)],
            base_live: count,
            base: Some(base),
            ..Mirror::default()
        }
    }

    /// A mirror of `entries` (distinct keys; a full scan of a store gives
    /// them sorted by key). Indexes are built when first used.
    pub fn from_entries(entries: Vec<Arc<Entry>>, store_id: Vec<u8>, clock: i64) -> Mirror {
        let clock = entries.iter().map(|e| e.updated_at).fold(clock, i64::max);
        Mirror {
            store_id,
            clock,
            // Sorted input makes this a bulk build; any order is correct.
            entries: entries.into_iter().map(|e| (e.key.clone(), e)).collect(),
            ..Mirror::default()
        }
    }
}

fn second<'a>(pair: (&'a Arc<str>, &'a Arc<Entry>)) -> &'a Arc<Entry> {
    pair.1
}

fn is_set(bits: &[u64], i: usize) -> bool {
    bits[i / 64] & (1 << (i % 64)) != 0
}

/// What the views need of a mirror loaded from an image: the image, which
/// of its entries are no longer current, and the entries changed since.
pub struct ImageBase<'a> {
    pub base: &'a Arc<Base>,
    shadowed: &'a [u64],
    changed: &'a BTreeMap<Arc<str>, Arc<Entry>>,
}

impl<'a> ImageBase<'a> {
    /// Positions of the base entries changed or removed since the image.
    pub fn shadowed(&self) -> impl Iterator<Item = usize> + 'a {
        let shadowed = self.shadowed;
        (0..self.base.len()).filter(move |&i| is_set(shadowed, i))
    }

    /// Entries added or changed since the image, sorted by key.
    pub fn changed(&self) -> impl Iterator<Item = &'a Arc<Entry>> + 'a {
        self.changed.values()
    }
}

/// The mirror's entries in key order: the live base entries merged with
/// the others (whose keys are never a base entry's).
pub struct Iter<'a, I> {
    base: Option<&'a Base>,
    shadowed: &'a [u64],
    /// The base positions not visited yet from either end.
    front: usize,
    back: usize,
    others: I,
    /// An entry of `others` taken from one end and not yet handed out.
    others_front: Option<&'a Arc<Entry>>,
    others_back: Option<&'a Arc<Entry>>,
}

impl<'a, I: DoubleEndedIterator<Item = &'a Arc<Entry>>> Iter<'a, I> {
    fn new(mirror: &'a Mirror, from: usize, others: I) -> Self {
        let base = mirror.base.as_deref();
        Iter {
            base,
            shadowed: &mirror.shadowed,
            front: from,
            back: base.map_or(0, Base::len),
            others,
            others_front: None,
            others_back: None,
        }
    }

    /// The next live base position from the front, without taking it.
    fn base_front(&mut self) -> Option<usize> {
        while self.front < self.back && is_set(self.shadowed, self.front) {
            self.front += 1;
        }
        (self.front < self.back).then_some(self.front)
    }

    fn base_back(&mut self) -> Option<usize> {
        while self.back > self.front && is_set(self.shadowed, self.back - 1) {
            self.back -= 1;
        }
        (self.back > self.front).then(|| self.back - 1)
    }
}

impl<'a, I: DoubleEndedIterator<Item = &'a Arc<Entry>>> Iterator for Iter<'a, I> {
    type Item = &'a Arc<Entry>;

    fn next(&mut self) -> Option<&'a Arc<Entry>> {
        if self.others_front.is_none() {
            self.others_front = self.others.next().or_else(|| self.others_back.take());
        }
        let Some(base) = self.base else {
            return self.others_front.take();
        };
        match (self.base_front(), self.others_front) {
            (Some(i), Some(other)) if other.key.as_bytes() < base.image().key(i).as_bytes() => {
                self.others_front.take()
            }
            (Some(i), _) => {
                self.front += 1;
                Some(base.entry(i))
            }
            (None, _) => self.others_front.take(),
        }
    }
}

impl<'a, I: DoubleEndedIterator<Item = &'a Arc<Entry>>> DoubleEndedIterator for Iter<'a, I> {
    fn next_back(&mut self) -> Option<&'a Arc<Entry>> {
        if self.others_back.is_none() {
            self.others_back = self.others.next_back().or_else(|| self.others_front.take());
        }
        let Some(base) = self.base else {
            return self.others_back.take();
        };
        match (self.base_back(), self.others_back) {
            (Some(i), Some(other)) if other.key.as_bytes() > base.image().key(i).as_bytes() => {
                self.others_back.take()
            }
            (Some(i), _) => {
                self.back -= 1;
                Some(base.entry(i))
            }
            (None, _) => self.others_back.take(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, kind: &str, updated_at: i64, refs: &[&str]) -> Arc<Entry> {
        crate::testing::entry(key, kind, "", updated_at, refs)
    }

    #[test]
    fn indexes_follow_inserts_overwrites_and_removes() {
        let mut mirror = Mirror::default();
        mirror.insert(entry("p", "prompt", 1, &[]));
        mirror.insert(entry("t", "tool_result", 2, &["p"]));
        mirror.insert(entry("r", "result", 3, &["t"]));
        assert_eq!(mirror.newest().unwrap().key.as_ref(), "r");
        assert_eq!(mirror.newest_of_type("prompt").unwrap().key.as_ref(), "p");
        assert_eq!(
            mirror.children("p").map(AsRef::as_ref).collect::<Vec<_>>(),
            ["t"]
        );

        // Overwrite moves the entry in recency and type order, and re-links.
        mirror.insert(entry("p", "note", 4, &["r"]));
        assert_eq!(mirror.newest().unwrap().key.as_ref(), "p");
        assert!(mirror.newest_of_type("prompt").is_none());
        assert_eq!(
            mirror.children("r").map(AsRef::as_ref).collect::<Vec<_>>(),
            ["p"]
        );

        mirror.remove("t");
        assert_eq!(mirror.children("p").count(), 0);
        assert_eq!(mirror.len(), 2);
        assert_eq!(mirror.clock, 4);
    }

    #[test]
    fn a_delta_inserts_replaces_removes_and_never_moves_the_clock_back() {
        let mut mirror = Mirror::from_entries(
            vec![entry("a", "note", 1, &[]), entry("b", "note", 2, &[])],
            vec![7],
            10,
        );
        mirror.core_indexes();
        let delta = vec![
            ("a", Some(entry("a", "status", 5, &[]))),
            ("b", None),
            ("c", Some(entry("c", "note", 6, &["a"]))),
            ("gone", None),
        ];
        mirror.apply_delta(delta, 3);
        let keys: Vec<_> = mirror.iter().map(|e| e.key.to_string()).collect();
        assert_eq!(keys, ["a", "c"]);
        assert_eq!(mirror.get("a").unwrap().kind.as_ref(), "status");
        assert_eq!(mirror.children("a").count(), 1);
        // The store's clock (10) stays: a delta's older clock never lowers it.
        assert_eq!(mirror.clock, 10);
        mirror.apply_delta(Vec::<(&str, _)>::new(), 42);
        assert_eq!(mirror.clock, 42);

        let mut replaced = Some(mirror);
        Mirror::replace(&mut replaced, vec![entry("z", "note", 1, &[])], vec![8], 0);
        let replaced = replaced.unwrap();
        assert_eq!(replaced.len(), 1);
        assert_eq!(replaced.store_id, [8]);
    }

    #[test]
    fn ties_on_stamp_go_to_the_larger_key() {
        let mut mirror = Mirror::default();
        mirror.insert(entry("b", "note", 5, &[]));
        mirror.insert(entry("a", "note", 5, &[]));
        assert_eq!(mirror.newest().unwrap().key.as_ref(), "b");
        let order: Vec<_> = mirror.newest_first().map(|e| e.key.to_string()).collect();
        assert_eq!(order, ["b", "a"]);
    }

    #[test]
    fn bulk_build_equals_incremental_build() {
        let entries = vec![
            entry("a", "note", 3, &["c"]),
            entry("b", "result", 1, &[]),
            entry("c", "note", 2, &["b", "b"]),
        ];
        let bulk = Mirror::from_entries(entries.clone(), vec![1], 3);
        let mut incremental = Mirror::default();
        for e in entries {
            incremental.insert(e);
        }
        let order = |m: &Mirror| {
            m.newest_first()
                .map(|e| e.key.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(order(&bulk), order(&incremental));
        assert_eq!(bulk.newest_of_type("note").unwrap().key.as_ref(), "a");
        assert_eq!(bulk.children("b").count(), 1);
    }

    /// A mirror over an image answers as one over the same entries, through
    /// changes of base entries and of new ones, from both ends.
    #[test]
    fn a_mirror_over_an_image_answers_as_one_over_its_entries() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("memory.redb");
        let entries: Vec<Arc<Entry>> = (0..200)
            .map(|i| entry(&format!("k{:03}", i * 2), "note", i, &[]))
            .collect();
        let refs: Vec<&Arc<Entry>> = entries.iter().collect();
        let stamp = crate::store::image::Stamp {
            store_id: vec![1],
            sequence: 1,
            count: 200,
            position: None,
            token: 0,
        };
        crate::store::image::write::write_image(&store, &stamp, 7, &refs, Vec::new()).unwrap();
        let image = crate::store::image::Image::open(&crate::store::image::path_for(&store));
        let base = Arc::new(Base::new(image.unwrap()));
        let mut lazy = Mirror::from_image(base, vec![1], 0);
        let mut plain = Mirror::from_entries(entries, vec![1], 0);
        let mut below = crate::test_rng::xorshift(11);
        for step in 0..600 {
            let key = format!("k{:03}", below(420));
            if below(3) == 0 {
                assert_eq!(lazy.remove(&key), plain.remove(&key), "{key}");
            } else {
                let new = entry(&key, "status", 1_000 + step, &[]);
                assert_eq!(lazy.insert(new.clone()), plain.insert(new), "{key}");
            }
            if step % 50 == 0 {
                let keys = |m: &Mirror| m.iter().map(|e| e.key.clone()).collect::<Vec<_>>();
                assert_eq!(keys(&lazy), keys(&plain));
                let back = |m: &Mirror| m.iter().rev().map(|e| e.key.clone()).collect::<Vec<_>>();
                assert_eq!(back(&lazy), back(&plain));
                // Both ends at once meet in the middle, nothing twice.
                let mut both = lazy.iter();
                let mut seen = Vec::new();
                while let (Some(a), b) = (both.next(), both.next_back()) {
                    seen.push(a.key.clone());
                    seen.extend(b.map(|b| b.key.clone()));
                }
                seen.sort();
                assert_eq!(seen, keys(&plain));
                for prefix in ["k1", "k0", "k39", "x", ""] {
                    let with = |m: &Mirror| {
                        m.with_prefix(prefix)
                            .map(|e| e.key.clone())
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(with(&lazy), with(&plain), "{prefix}");
                }
                assert_eq!(lazy.len(), plain.len());
                assert_eq!(lazy.newest(), plain.newest());
                assert_eq!(lazy.get(&key), plain.get(&key));
            }
        }
    }
}
