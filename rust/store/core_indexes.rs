//! The indexes the mirror keeps itself, because the write rules need them:
//! recency orders (auto parent §3.2, caps, newest keys) and the children
//! lists (children §3.4, and the render index's parent links). Every other
//! index is derived by a layer above the store (see `mirror.rs`).
//!
//! Invariant: the orders and lists describe exactly the mirror's entries;
//! only [`CoreIndexes::index`] and [`CoreIndexes::unindex`] change them, and
//! the mirror calls them on every insert and remove.

use std::collections::BTreeSet;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::entry::Entry;

/// Orders entries oldest to newest: by `updated_at`, then key (the
/// contract's conventions: the newest is the largest stamp, then the larger
/// key).
pub type Recency = (i64, Arc<str>);

pub(crate) fn recency_of(entry: &Entry) -> Recency {
    (entry.updated_at, entry.key.clone())
}

/// The indexes the mirror keeps itself.
#[derive(Default)]
pub struct CoreIndexes {
    pub(crate) recency: BTreeSet<Recency>,
    pub(crate) by_type: FxHashMap<Arc<str>, BTreeSet<Recency>>,
    /// parent key -> sorted keys of the entries that reference it (the parent
    /// need not exist). A sorted vector: most parents have one or two.
    children: FxHashMap<Arc<str>, Vec<Arc<str>>>,
}

impl CoreIndexes {
    /// Builds the indexes of `entries`, sorted by key, in bulk. Entries are
    /// read in key order, the order they were allocated in; reading them in
    /// recency order instead missed the cache on nearly every entry.
    pub(crate) fn build(entries: &[&Arc<Entry>]) -> CoreIndexes {
        let mut recency: Vec<Recency> = Vec::with_capacity(entries.len());
        let mut by_type: FxHashMap<Arc<str>, Vec<Recency>> = FxHashMap::default();
        let mut children: FxHashMap<Arc<str>, Vec<Arc<str>>> = FxHashMap::default();
        children.reserve(entries.len());
        for entry in entries {
            recency.push(recency_of(entry));
            by_type
                .entry(entry.kind.clone())
                .or_default()
                .push(recency_of(entry));
            // Entries arrive sorted by key, so each list grows in order.
            for parent in &entry.references {
                children
                    .entry(parent.clone())
                    .or_default()
                    .push(entry.key.clone());
            }
        }
        recency.sort_unstable();
        for list in children.values_mut() {
            list.dedup();
        }
        children.shrink_to_fit();
        CoreIndexes {
            recency: recency.into_iter().collect(),
            by_type: by_type
                .into_iter()
                .map(|(kind, mut stamps)| {
                    stamps.sort_unstable();
                    (kind, stamps.into_iter().collect())
                })
                .collect(),
            children,
        }
    }

    pub(crate) fn index(&mut self, entry: &Entry) {
        self.recency.insert(recency_of(entry));
        self.by_type
            .entry(entry.kind.clone())
            .or_default()
            .insert(recency_of(entry));
        for parent in &entry.references {
            let children = self.children.entry(parent.clone()).or_default();
            if let Err(at) = children.binary_search(&entry.key) {
                children.insert(at, entry.key.clone());
            }
        }
    }

    pub(crate) fn unindex(&mut self, entry: &Entry) {
        let stamp = recency_of(entry);
        self.recency.remove(&stamp);
        if let Some(set) = self.by_type.get_mut(&entry.kind) {
            set.remove(&stamp);
            if set.is_empty() {
                self.by_type.remove(&entry.kind);
            }
        }
        for parent in &entry.references {
            if let Some(children) = self.children.get_mut(parent) {
                if let Ok(at) = children.binary_search_by(|child| (**child).cmp(&entry.key)) {
                    children.remove(at);
                }
                if children.is_empty() {
                    self.children.remove(parent);
                }
            }
        }
    }

    /// Sorted keys of the entries that reference `key` (which need not
    /// exist).
    pub fn children_of(&self, key: &str) -> Option<&[Arc<str>]> {
        self.children.get(key).map(Vec::as_slice)
    }
}
