//! The in-memory copy of a store, which every read is served from and every
//! write rule works on, whatever the medium underneath.
//!
//! Only `entries` is built when a store is loaded. Every index is derived
//! from it and built in bulk on first use (a fresh process pays only for
//! what its calls need), then kept up to date by every write:
//! * `core` ([`CoreIndexes`]): recency orders and children lists, which the
//!   write rules need;
//! * `derived`: the indexes of a layer above the store (search, rendering),
//!   which the mirror tells about every change through the [`Derived`]
//!   trait without knowing what they are.
//!
//! Invariants: outside a write transaction, `entries` equals the committed
//! contents of the medium as of the moment its owner last brought it up to
//! date; every built index describes exactly `entries` (indexes change only
//! in [`Mirror::insert`] and [`Mirror::remove`]); the derived indexes are
//! told about a change after the core indexes took it.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use crate::entry::Entry;
use crate::store::core_indexes::CoreIndexes;

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
    entries: BTreeMap<Arc<str>, Arc<Entry>>,
    core: OnceLock<CoreIndexes>,
    derived: OnceLock<Box<dyn Derived>>,
}

impl Mirror {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, key: &str) -> Option<&Arc<Entry>> {
        self.entries.get(key)
    }

    /// Entries sorted by key.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Arc<Entry>> {
        self.entries.values()
    }

    /// Entries whose key starts with `prefix`, sorted by key.
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a Arc<Entry>> {
        self.entries
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(move |(key, _)| key.starts_with(prefix))
            .map(|(_, entry)| entry)
    }

    /// The recency orders and children lists, built on first use (any
    /// thread may build them; one build wins).
    pub fn core_indexes(&self) -> &CoreIndexes {
        self.core.get_or_init(|| {
            let entries: Vec<&Arc<Entry>> = self.entries.values().collect();
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
            .map(|(_, key)| &self.entries[key])
    }

    /// Entries of one type from oldest to newest.
    pub fn of_type_oldest_first(&self, kind: &str) -> impl Iterator<Item = &Arc<Entry>> {
        self.core_indexes()
            .by_type
            .get(kind)
            .into_iter()
            .flat_map(|set| set.iter().map(|(_, key)| &self.entries[key]))
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
            .map(|(_, key)| &self.entries[key])
    }

    pub fn newest_of_type(&self, kind: &str) -> Option<&Arc<Entry>> {
        self.core_indexes()
            .by_type
            .get(kind)?
            .last()
            .map(|(_, key)| &self.entries[key])
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

    /// Adds or replaces an entry; returns the one it replaced.
    pub fn insert(&mut self, entry: Arc<Entry>) -> Option<Arc<Entry>> {
        let previous = self.entries.get(&entry.key).cloned();
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
        let entry = self.entries.remove(key)?;
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
}
