//! The in-memory copy of a store, with the indexes reads and writes need.
//!
//! Only `entries` is built when a store is loaded. Every index is derived
//! from it and built in bulk on first use (a fresh process pays only for what
//! its calls need: a search does not build the renderer's indexes, a save
//! does not build the search index), then kept up to date by every write:
//! * `graph`: recency orders and the children lists (auto parent, caps,
//!   newest keys, children); the render index needs it, so building the
//!   render index builds it first;
//! * `search`: the substring-search index;
//! * `render`: the indexes of the `<memory>` block.
//!
//! Invariants: outside a write transaction, `entries` equals the committed
//! contents of the file as of the sidecar position its owner recorded; every
//! built index describes exactly `entries` (indexes change only in
//! [`Mirror::insert`] and [`Mirror::remove`]); `render` is built only when
//! `graph` is.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use rustc_hash::FxHashMap;

use crate::entry::Entry;
use crate::render_index::RenderIndex;
use crate::search::SearchIndex;

/// Stores at least this large build the graph beside the render index.
const PARALLEL_BUILD_MIN: usize = 16_384;

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
    graph: OnceLock<Graph>,
    search: OnceLock<SearchIndex>,
    render: OnceLock<RenderIndex>,
}

/// Recency orders and reference lists.
#[derive(Default)]
struct Graph {
    recency: BTreeSet<Recency>,
    by_type: FxHashMap<Arc<str>, BTreeSet<Recency>>,
    /// parent key -> sorted keys of the entries that reference it (the parent
    /// need not exist). A sorted vector: most parents have one or two.
    children: FxHashMap<Arc<str>, Vec<Arc<str>>>,
}

impl Graph {
    /// Builds the graph of `entries`, sorted by key, in bulk. Entries are
    /// read in key order, the order they were allocated in; reading them in
    /// recency order instead missed the cache on nearly every entry.
    fn build(entries: &[&Arc<Entry>]) -> Graph {
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
        Graph {
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

    fn index(&mut self, entry: &Entry) {
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

    fn unindex(&mut self, entry: &Entry) {
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

    fn children_of(&self, key: &str) -> Option<&[Arc<str>]> {
        self.children.get(key).map(Vec::as_slice)
    }
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

    fn graph(&self) -> &Graph {
        self.graph.get_or_init(|| {
            let entries: Vec<&Arc<Entry>> = self.entries.values().collect();
            Graph::build(&entries)
        })
    }

    /// Entries from newest to oldest.
    pub fn newest_first(&self) -> impl Iterator<Item = &Arc<Entry>> {
        self.graph()
            .recency
            .iter()
            .rev()
            .map(|(_, key)| &self.entries[key])
    }

    /// Entries of one type from oldest to newest.
    pub fn of_type_oldest_first(&self, kind: &str) -> impl Iterator<Item = &Arc<Entry>> {
        self.graph()
            .by_type
            .get(kind)
            .into_iter()
            .flat_map(|set| set.iter().map(|(_, key)| &self.entries[key]))
    }

    pub fn count_of_type(&self, kind: &str) -> usize {
        self.graph().by_type.get(kind).map_or(0, BTreeSet::len)
    }

    pub fn newest(&self) -> Option<&Arc<Entry>> {
        self.graph()
            .recency
            .last()
            .map(|(_, key)| &self.entries[key])
    }

    pub fn newest_of_type(&self, kind: &str) -> Option<&Arc<Entry>> {
        self.graph()
            .by_type
            .get(kind)?
            .last()
            .map(|(_, key)| &self.entries[key])
    }

    /// Sorted keys of the entries that reference `key`.
    pub fn children(&self, key: &str) -> impl Iterator<Item = &Arc<str>> {
        self.graph().children_of(key).into_iter().flatten()
    }

    /// The search index, built on first use.
    pub fn search(&self) -> &SearchIndex {
        self.search.get_or_init(|| {
            let entries: Vec<&Arc<Entry>> = self.entries.values().collect();
            SearchIndex::build(&entries)
        })
    }

    /// The indexes of the `<memory>` block, built on first use together
    /// with its fill tree and token index (the first render needs all of
    /// them), and with the graph, on another thread, if that is not built
    /// yet (the render index is maintained with its children lists, see the
    /// module invariants).
    pub fn render_index(&self) -> &RenderIndex {
        self.render.get_or_init(|| {
            let entries: Vec<&Arc<Entry>> = self.entries.values().collect();
            std::thread::scope(|scope| {
                let graph = (self.graph.get().is_none() && entries.len() >= PARALLEL_BUILD_MIN)
                    .then(|| scope.spawn(|| Graph::build(&entries)));
                let render = RenderIndex::for_render(&entries);
                if let Some(graph) = graph {
                    let _ = self.graph.set(graph.join().expect("graph thread"));
                }
                self.graph();
                render
            })
        })
    }

    /// Adds or replaces an entry; returns the one it replaced.
    pub fn insert(&mut self, entry: Arc<Entry>) -> Option<Arc<Entry>> {
        let previous = self.entries.get(&entry.key).cloned();
        self.clock = self.clock.max(entry.updated_at);
        if let Some(graph) = self.graph.get_mut() {
            if let Some(previous) = &previous {
                graph.unindex(previous);
            }
            graph.index(&entry);
        }
        if let Some(search) = self.search.get_mut() {
            search.upsert(&entry);
        }
        if let Some(render) = self.render.get_mut() {
            let graph = self.graph.get().expect("a built render index has a graph");
            render.upsert(&entry, previous.as_ref(), graph.children_of(&entry.key));
        }
        self.entries.insert(entry.key.clone(), entry);
        previous
    }

    pub fn remove(&mut self, key: &str) -> Option<Arc<Entry>> {
        let entry = self.entries.remove(key)?;
        if let Some(graph) = self.graph.get_mut() {
            graph.unindex(&entry);
        }
        if let Some(search) = self.search.get_mut() {
            search.remove(key);
        }
        if let Some(render) = self.render.get_mut() {
            let graph = self.graph.get().expect("a built render index has a graph");
            render.remove(&entry, graph.children_of(key));
        }
        Some(entry)
    }

    /// A mirror of `entries` (distinct keys; a full scan of the file gives
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
