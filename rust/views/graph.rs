//! Traversals of the memory graph for the `<memory>` block: the ancestry
//! chain (§5.7) and the parents-first order (§5.3).
//!
//! Both work on the integer ids of [`RenderIndex`] and follow only references
//! to existing entries, in stored order. Every traversal marks what it has
//! seen, so cycles (which explicit links can make) terminate.

use std::collections::VecDeque;

use std::sync::Arc;

use crate::entry::Entry;
use crate::store::mirror::Mirror;
use crate::views::ids::IdSet;
use crate::views::render_index::RenderIndex;

/// §5.7: at most this many keys in an ancestry chain.
pub const MAX_CHAIN: usize = 8;

/// §5.7: breadth-first over references from `start`, nearest first, `start`
/// itself included, at most [`MAX_CHAIN`] ids.
pub fn ancestry_chain(index: &RenderIndex, start: u32) -> Vec<u32> {
    let mut chain = Vec::with_capacity(MAX_CHAIN);
    let mut queued = IdSet::default();
    let mut queue = VecDeque::from([start]);
    queued.insert(start);
    while chain.len() < MAX_CHAIN {
        let Some(current) = queue.pop_front() else {
            break;
        };
        chain.push(current);
        for &parent in index.parents(current) {
            if queued.insert(parent) {
                queue.push_back(parent);
            }
        }
    }
    chain
}

/// A set of ids as one bit each: O(1) with no hashing, for the walk, which
/// may visit many nodes. Allocating it costs `id_bound / 8` bytes.
struct IdBits(Vec<u64>);

impl IdBits {
    fn new(id_bound: usize) -> IdBits {
        IdBits(vec![0; id_bound.div_ceil(64)])
    }

    fn contains(&self, id: u32) -> bool {
        self.0[id as usize / 64] & (1 << (id % 64)) != 0
    }

    /// Adds `id`; returns whether it was absent.
    fn insert(&mut self, id: u32) -> bool {
        let word = &mut self.0[id as usize / 64];
        let bit = 1 << (id % 64);
        let absent = *word & bit == 0;
        *word |= bit;
        absent
    }
}

/// The pruning bound of [`parents_first`].
///
/// Call a reference *inverted* when it points to an entry created no earlier
/// than the referencing one; every other reference goes strictly back in
/// `created_at`. Let `U` be the entries with an inverted reference and `T`
/// the smallest `created_at` over `U` and the kept entries not visited yet.
/// A node `v` that is not kept, not in `U`, and has `created_at(v) <= T`
/// cannot lead the walk to an unvisited kept entry: along any path of
/// unvisited nodes from `v`, the first node in `kept ∪ U` would be reached
/// through non-inverted references only, so it would be created strictly
/// before `v`, i.e. before `T`, which no such node is. Skipping `v` therefore
/// changes no emitted entry and no emission order (whatever `v` would have
/// visited holds no kept entry, and later walks entering it again find none
/// either). As kept entries get visited `T` rises; once all are visited and
/// `U` is empty, the walk only unwinds.
struct Pruning {
    /// Kept entries as `(created_at, id)`, ascending; `cursor` skips the
    /// visited ones.
    kept_by_creation: Vec<(i64, u32)>,
    cursor: usize,
    oldest_inverted: Option<i64>,
}

impl Pruning {
    fn threshold(&mut self, visited: &IdBits) -> i64 {
        while self
            .kept_by_creation
            .get(self.cursor)
            .is_some_and(|&(_, id)| visited.contains(id))
        {
            self.cursor += 1;
        }
        let kept = self
            .kept_by_creation
            .get(self.cursor)
            .map_or(i64::MAX, |&(created, _)| created);
        self.oldest_inverted
            .map_or(kept, |inverted| inverted.min(kept))
    }
}

/// §5.3 parents-first order of the kept ids: a depth-first walk from each
/// kept key in key order, over references in stored order, with one visited
/// set for the whole walk (a key is marked when first entered, so a cycle is
/// cut where it closes), emitting each kept key after its references
/// (post-order); kept keys never reached are appended in key order.
///
/// The walk is pruned as described at [`Pruning`], so it visits only the
/// nodes that can still lead to a kept entry, not the whole history below
/// it; the order is exactly that of the unpruned walk.
pub fn parents_first(index: &RenderIndex, kept: &IdSet) -> Vec<u32> {
    let mut roots: Vec<u32> = kept.iter().copied().collect();
    roots.sort_unstable_by(|&a, &b| index.entry(a).key.cmp(&index.entry(b).key));
    let mut kept_by_creation: Vec<(i64, u32)> =
        kept.iter().map(|&id| (index.created_at(id), id)).collect();
    kept_by_creation.sort_unstable();
    let mut pruning = Pruning {
        kept_by_creation,
        cursor: 0,
        oldest_inverted: index.oldest_inverted(),
    };

    let mut is_kept = IdBits::new(index.id_bound());
    for &id in kept {
        is_kept.insert(id);
    }
    let mut order = Vec::with_capacity(kept.len());
    let mut emitted = IdBits::new(index.id_bound());
    let mut visited = IdBits::new(index.id_bound());
    let mut stack: Vec<(u32, usize)> = Vec::new();
    for &root in &roots {
        if !visited.insert(root) {
            continue;
        }
        stack.push((root, 0));
        while let Some((node, next)) = stack.last_mut() {
            let node = *node;
            let parents = index.parents(node);
            if let Some(&parent) = parents.get(*next) {
                *next += 1;
                if visited.contains(parent) {
                    continue;
                }
                if !is_kept.contains(parent)
                    && !index.has_inverted_reference(parent)
                    && index.created_at(parent) <= pruning.threshold(&visited)
                {
                    continue;
                }
                visited.insert(parent);
                stack.push((parent, 0));
            } else {
                stack.pop();
                if is_kept.contains(node) && emitted.insert(node) {
                    order.push(node);
                }
            }
        }
    }
    for &root in &roots {
        if emitted.insert(root) {
            order.push(root);
        }
    }
    order
}

/// The entries related to `start` through references in either direction
/// (its ancestors and its descendants, transitively; cycle-safe), `start`
/// included. Descendants come from the mirror's children index.
pub fn lineage(mirror: &Mirror, start: &str) -> IdSet {
    let index = crate::views::render_index(mirror);
    let mut related = IdSet::default();
    let Some(first) = index.id(start) else {
        return related;
    };
    related.insert(first);
    let mut upward = vec![first];
    while let Some(id) = upward.pop() {
        for &parent in index.parents(id) {
            if related.insert(parent) {
                upward.push(parent);
            }
        }
    }
    let mut downward = vec![first];
    let mut below = IdSet::default();
    below.insert(first);
    while let Some(id) = downward.pop() {
        let key = index.entry(id).key.clone();
        for child in mirror.children(&key) {
            if let Some(child_id) = index.id(child)
                && below.insert(child_id)
            {
                related.insert(child_id);
                downward.push(child_id);
            }
        }
    }
    related
}
/// Entries for `membolt graph`: every entry, or those related to `key`
/// (ancestors and descendants), in the parents-first order of §5.3.
pub fn graph(mirror: &Mirror, key: Option<&str>) -> Vec<Arc<Entry>> {
    let index = crate::views::render_index(mirror);
    let chosen = match key {
        Some(key) => lineage(mirror, key),
        None => mirror.iter().filter_map(|e| index.id(&e.key)).collect(),
    };
    parents_first(index, &chosen)
        .into_iter()
        .map(|id| index.entry(id).clone())
        .collect()
}
