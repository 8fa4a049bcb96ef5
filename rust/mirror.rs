//! The in-memory copy of a store, with the indexes every read needs.
//!
//! Invariant: outside a write transaction, the mirror equals the committed
//! contents of the file as of the sidecar position its owner recorded.
//! Every index is updated by [`Mirror::insert`] and [`Mirror::remove`] only, so
//! they can never disagree with `entries`.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;
use std::sync::Arc;

use crate::entry::Entry;
use crate::render_index::RenderIndex;
use crate::search::SearchIndex;

/// Orders entries oldest to newest: by `updated_at`, then key
/// (BEHAVIOUR conventions: the newest is the largest stamp, then larger key).
pub type Recency = (i64, Arc<str>);

fn recency_of(entry: &Entry) -> Recency {
    (entry.updated_at, entry.key.clone())
}

#[derive(Default)]
pub struct Mirror {
    /// Identity of the file's contents; a different id means the file was
    /// replaced and the mirror must be rebuilt.
    pub store_id: Vec<u8>,
    /// The largest `updated_at` ever given out (BEHAVIOUR §1.3).
    pub clock: i64,
    entries: BTreeMap<Arc<str>, Arc<Entry>>,
    recency: BTreeSet<Recency>,
    by_type: FxHashMap<Arc<str>, BTreeSet<Recency>>,
    /// parent key -> sorted keys of the entries that reference it (the parent
    /// need not exist). A sorted vector: most parents have one or two.
    children: FxHashMap<Arc<str>, Vec<Arc<str>>>,
    search: SearchIndex,
    render: RenderIndex,
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

    /// Entries from newest to oldest.
    pub fn newest_first(&self) -> impl Iterator<Item = &Arc<Entry>> {
        self.recency.iter().rev().map(|(_, key)| &self.entries[key])
    }

    /// Entries of one type from oldest to newest.
    pub fn of_type_oldest_first(&self, kind: &str) -> impl Iterator<Item = &Arc<Entry>> {
        self.by_type
            .get(kind)
            .into_iter()
            .flat_map(|set| set.iter().map(|(_, key)| &self.entries[key]))
    }

    pub fn count_of_type(&self, kind: &str) -> usize {
        self.by_type.get(kind).map_or(0, BTreeSet::len)
    }

    pub fn newest(&self) -> Option<&Arc<Entry>> {
        self.recency.last().map(|(_, key)| &self.entries[key])
    }

    pub fn newest_of_type(&self, kind: &str) -> Option<&Arc<Entry>> {
        self.by_type
            .get(kind)?
            .last()
            .map(|(_, key)| &self.entries[key])
    }

    /// Sorted keys of the entries that reference `key`.
    pub fn children(&self, key: &str) -> impl Iterator<Item = &Arc<str>> {
        self.children.get(key).into_iter().flatten()
    }

    pub fn search(&self) -> &SearchIndex {
        &self.search
    }

    /// The indexes of the `<memory>` block.
    pub fn render_index(&self) -> &RenderIndex {
        &self.render
    }

    /// Adds or replaces an entry; returns the one it replaced.
    pub fn insert(&mut self, entry: Arc<Entry>) -> Option<Arc<Entry>> {
        let previous = self.unindex(&entry.key);
        self.recency.insert(recency_of(&entry));
        self.by_type
            .entry(entry.kind.clone())
            .or_default()
            .insert(recency_of(&entry));
        for parent in &entry.references {
            let children = self.children.entry(parent.clone()).or_default();
            if let Err(at) = children.binary_search(&entry.key) {
                children.insert(at, entry.key.clone());
            }
        }
        self.search.upsert(&entry);
        self.clock = self.clock.max(entry.updated_at);
        self.render.upsert(
            &entry,
            previous.as_ref(),
            self.children.get(&entry.key).map(Vec::as_slice),
        );
        self.entries.insert(entry.key.clone(), entry);
        previous
    }

    pub fn remove(&mut self, key: &str) -> Option<Arc<Entry>> {
        let entry = self.unindex(key)?;
        self.render
            .remove(&entry, self.children.get(key).map(Vec::as_slice));
        Some(entry)
    }

    /// Removes `key` from every index but `render` (which [`Mirror::insert`]
    /// updates in place, keeping the entry's id).
    fn unindex(&mut self, key: &str) -> Option<Arc<Entry>> {
        let entry = self.entries.remove(key)?;
        let stamp = recency_of(&entry);
        self.recency.remove(&stamp);
        if let Some(set) = self.by_type.get_mut(&entry.kind) {
            set.remove(&stamp);
            if set.is_empty() {
                self.by_type.remove(&entry.kind);
            }
        }
        for parent in &entry.references {
            if let Some(children) = self.children.get_mut(parent) {
                if let Ok(at) = children.binary_search_by(|child| (**child).cmp(key)) {
                    children.remove(at);
                }
                if children.is_empty() {
                    self.children.remove(parent);
                }
            }
        }
        self.search.remove(key);
        Some(entry)
    }

    /// Builds a mirror from a full scan of the file (entries sorted by key).
    /// The search index, the most expensive part, is built on a second
    /// thread meanwhile: opening a large store is on the agent's critical path.
    pub fn from_entries(entries: Vec<Arc<Entry>>, store_id: Vec<u8>, clock: i64) -> Mirror {
        let (search, mut mirror) = std::thread::scope(|scope| {
            let search = scope.spawn(|| SearchIndex::build(&entries));
            let mirror = Mirror::graph_indexes(&entries, store_id, clock);
            (search.join().expect("building the search index"), mirror)
        });
        mirror.search = search;
        mirror.render = RenderIndex::from_entries(&entries);
        mirror.entries = entries.into_iter().map(|e| (e.key.clone(), e)).collect();
        mirror
    }

    /// Everything but `entries` and `search`, in bulk.
    fn graph_indexes(entries: &[Arc<Entry>], store_id: Vec<u8>, clock: i64) -> Mirror {
        let mut mirror = Mirror {
            store_id,
            clock,
            ..Mirror::default()
        };
        let mut recency: Vec<Recency> = entries.iter().map(|e| recency_of(e)).collect();
        recency.sort_unstable();
        mirror.recency = recency.into_iter().collect();
        let mut by_type: FxHashMap<Arc<str>, Vec<Recency>> = FxHashMap::default();
        for entry in entries {
            by_type
                .entry(entry.kind.clone())
                .or_default()
                .push(recency_of(entry));
            // Entries arrive sorted by key, so each list grows in order.
            for parent in &entry.references {
                mirror
                    .children
                    .entry(parent.clone())
                    .or_default()
                    .push(entry.key.clone());
            }
            mirror.clock = mirror.clock.max(entry.updated_at);
        }
        for children in mirror.children.values_mut() {
            children.dedup();
        }
        mirror.by_type = by_type
            .into_iter()
            .map(|(kind, mut stamps)| {
                stamps.sort_unstable();
                (kind, stamps.into_iter().collect())
            })
            .collect();
        mirror
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, kind: &str, updated_at: i64, refs: &[&str]) -> Arc<Entry> {
        Arc::new(Entry {
            key: key.into(),
            value: format!("value of {key}").into(),
            kind: kind.into(),
            namespace: "".into(),
            references: refs.iter().map(|r| Arc::from(*r)).collect(),
            created_at: updated_at,
            updated_at,
        })
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
