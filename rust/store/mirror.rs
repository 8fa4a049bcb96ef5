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
use std::sync::atomic::{AtomicU32, Ordering};
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
    /// How many more questions of the write rules a scan of the image
    /// answers before the core indexes are built (see `unindexed_base`).
    scans_left: AtomicU32,
    derived: OnceLock<Box<dyn Derived>>,
}

/// Scans of the image a mirror makes instead of building its core indexes:
/// enough for a new process's first batch (a hook's saves with their caps
/// ask a few each), few enough that a process that goes on saving soon
/// pays the build once instead of a pass over every record per save.
const IMAGE_SCANS: u32 = 16;

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
        if let Some(base) = self.unindexed_base() {
            let mut count = 0;
            self.scan_live(base, Some(kind), |_, _| count += 1);
            return count;
        }
        self.core_indexes()
            .by_type
            .get(kind)
            .map_or(0, BTreeSet::len)
    }

    /// The `n` oldest entries of one type, oldest first.
    pub fn oldest_of_type(&self, kind: &str, n: usize) -> Vec<&Arc<Entry>> {
        if n == 0 {
            return Vec::new();
        }
        if let Some(base) = self.unindexed_base() {
            let mut found = Vec::new();
            self.scan_live(base, Some(kind), |stamp, at| found.push((stamp, at)));
            found.sort_unstable_by(|a, b| {
                a.0.cmp(&b.0).then_with(|| a.1.key(base).cmp(b.1.key(base)))
            });
            return found
                .into_iter()
                .take(n)
                .map(|(_, at)| at.entry(base))
                .collect();
        }
        self.of_type_oldest_first(kind).take(n).collect()
    }

    pub fn newest(&self) -> Option<&Arc<Entry>> {
        if let Some(base) = self.unindexed_base() {
            return self.newest_scanning(base, None);
        }
        self.core_indexes()
            .recency
            .last()
            .map(|(_, key)| self.expect(key))
    }

    pub fn newest_of_type(&self, kind: &str) -> Option<&Arc<Entry>> {
        if let Some(base) = self.unindexed_base() {
            return self.newest_scanning(base, Some(kind));
        }
        self.core_indexes()
            .by_type
            .get(kind)?
            .last()
            .map(|(_, key)| self.expect(key))
    }

    /// The image under the mirror while the core indexes are not built: a
    /// question of the write rules (the newest entry, §3.2; a type's count
    /// and oldest entries, caps) is then answered by one pass over the
    /// image's fixed-width records, so that a new process's first save does
    /// not make every entry an object to build the indexes (~80 ms at
    /// 100k entries, against well under 1 ms for the pass), for the first
    /// [`IMAGE_SCANS`] questions; after those the indexes are built. The
    /// answers are the indexes' answers: the same order (`updated_at`, then
    /// key; a key is read only to break a tie).
    fn unindexed_base(&self) -> Option<&Base> {
        if self.core.get().is_some() || self.base.is_none() {
            return None;
        }
        let left = self.scans_left.load(Ordering::Relaxed);
        if left == 0 {
            return None;
        }
        self.scans_left.store(left - 1, Ordering::Relaxed);
        self.base.as_deref()
    }

    /// Calls `visit(updated_at, where)` for every live entry (of `kind`
    /// when given): the base entries not shadowed, then the others.
    fn scan_live<'a>(
        &'a self,
        base: &'a Base,
        kind: Option<&str>,
        mut visit: impl FnMut(i64, Found<'a>),
    ) {
        let image = base.image();
        let wanted = kind.map(|kind| image.name_index(kind));
        // A type no base entry has: only the others can match.
        if wanted != Some(None) {
            for i in 0..image.len() {
                if is_set(&self.shadowed, i)
                    || wanted.is_some_and(|index| Some(image.kind_index(i)) != index)
                {
                    continue;
                }
                visit(image.updated_at(i), Found::Base(i));
            }
        }
        for entry in self.entries.values() {
            if kind.is_none_or(|kind| &*entry.kind == kind) {
                visit(entry.updated_at, Found::Other(entry));
            }
        }
    }

    fn newest_scanning<'a>(&'a self, base: &'a Base, kind: Option<&str>) -> Option<&'a Arc<Entry>> {
        let mut newest: Option<(i64, Found<'_>)> = None;
        self.scan_live(base, kind, |stamp, at| {
            let newer = newest.is_none_or(|(s, current)| {
                stamp > s || (stamp == s && at.key(base) > current.key(base))
            });
            if newer {
                newest = Some((stamp, at));
            }
        });
        newest.map(|(_, at)| at.entry(base))
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
            scans_left: AtomicU32::new(IMAGE_SCANS),
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

/// Where a scan of the live entries found one.
#[derive(Clone, Copy)]
enum Found<'a> {
    /// Base entry `i` (made into an object only when asked for).
    Base(usize),
    Other(&'a Arc<Entry>),
}

impl<'a> Found<'a> {
    fn key(self, base: &'a Base) -> &'a str {
        match self {
            Found::Base(i) => base.image().key(i),
            Found::Other(entry) => &entry.key,
        }
    }

    fn entry(self, base: &'a Base) -> &'a Arc<Entry> {
        match self {
            Found::Base(i) => base.entry(i),
            Found::Other(entry) => entry,
        }
    }
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

    /// A mirror over an image of `entries` (sorted by key), and the
    /// directory the image lies in (kept alive by the caller).
    fn over_image(entries: &[Arc<Entry>]) -> (tempfile::TempDir, Mirror) {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("memory.redb");
        let refs: Vec<&Arc<Entry>> = entries.iter().collect();
        let stamp = crate::store::image::Stamp {
            store_id: vec![1],
            sequence: 1,
            count: entries.len() as u64,
            position: None,
            token: 0,
        };
        crate::store::image::write::write_image(&store, &stamp, 7, &refs, Vec::new()).unwrap();
        let image = crate::store::image::Image::open(&crate::store::image::path_for(&store));
        let mirror = Mirror::from_image(Arc::new(Base::new(image.unwrap())), vec![1], 0);
        (dir, mirror)
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
        let entries: Vec<Arc<Entry>> = (0..200)
            .map(|i| entry(&format!("k{:03}", i * 2), "note", i, &[]))
            .collect();
        let (_dir, mut lazy) = over_image(&entries);
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

    #[test]
    fn an_unindexed_mirror_over_an_image_answers_the_rules_as_the_indexes_do() {
        // Several types and many equal stamps, so that ties go by key; an
        // image, then changes and deletions on top; the lazy mirror answers
        // by scanning the image (its core indexes are never built), the
        // plain one from its indexes.
        let kinds = ["note", "goal", "progress", "error"];
        let entries: Vec<Arc<Entry>> = (0..300)
            .map(|i| entry(&format!("k{i:03}"), kinds[i % 4], (i % 7) as i64, &[]))
            .collect();
        let (_dir, mut lazy) = over_image(&entries);
        // Every question by a scan, however many.
        lazy.scans_left = AtomicU32::new(u32::MAX);
        let mut plain = Mirror::from_entries(entries, vec![1], 0);
        let mut below = crate::test_rng::xorshift(5);
        let keys =
            |found: Vec<&Arc<Entry>>| found.iter().map(|e| e.key.clone()).collect::<Vec<_>>();
        for step in 0..400 {
            let key = format!("k{:03}", below(350));
            if below(3) == 0 {
                lazy.remove(&key);
                plain.remove(&key);
            } else {
                // "decision" is a type the image has none of.
                let kind = ["note", "goal", "decision"][below(3) as usize];
                let new = entry(&key, kind, 3 + i64::from(step % 5), &[]);
                lazy.insert(new.clone());
                plain.insert(new);
            }
            if step % 20 == 0 {
                assert_eq!(lazy.newest(), plain.newest());
                for kind in ["note", "goal", "progress", "error", "decision", "absent"] {
                    assert_eq!(
                        lazy.newest_of_type(kind),
                        plain.newest_of_type(kind),
                        "{kind}"
                    );
                    assert_eq!(
                        lazy.count_of_type(kind),
                        plain.count_of_type(kind),
                        "{kind}"
                    );
                    for n in [0, 1, 5, 1_000] {
                        assert_eq!(
                            keys(lazy.oldest_of_type(kind, n)),
                            keys(plain.oldest_of_type(kind, n)),
                            "{kind} {n}"
                        );
                    }
                }
            }
        }
        assert!(
            lazy.built_core_indexes().is_none(),
            "answered without the indexes"
        );
    }

    #[test]
    fn a_mirror_over_an_image_builds_its_core_indexes_after_a_few_scans() {
        let entries: Vec<Arc<Entry>> = (0..10)
            .map(|i| entry(&format!("k{i}"), "note", i, &[]))
            .collect();
        let (_dir, mirror) = over_image(&entries);
        for _ in 0..IMAGE_SCANS {
            assert_eq!(&*mirror.newest().unwrap().key, "k9");
            assert!(mirror.built_core_indexes().is_none());
        }
        // A process that goes on asking pays the build once, not a pass
        // over every record per save.
        assert_eq!(&*mirror.newest().unwrap().key, "k9");
        assert!(mirror.built_core_indexes().is_some());
    }
}
