//! The indexes behind the `<memory>` block (§5), kept up to date
//! by [`Mirror`](crate::store::mirror::Mirror) on every insert and remove, so that a
//! render costs what it renders and matches rather than O(store).
//!
//! * Every entry gets a dense integer id (reused after removal) and a node
//!   holding the entry and the ids of its *existing* references, in stored
//!   order (references to missing keys are skipped, as every §5 traversal
//!   does).
//! * `resume` and `errors`: the §5.2 resume candidates (type progress, result
//!   or status, value not done) and unresolved errors, ordered so that the
//!   last element is the answer. Done/resolved is computed once per write.
//! * `inverted`: the entries having an *inverted* reference, i.e. one to an
//!   entry created no earlier than themselves (`created_at(parent) >=
//!   created_at(child)`). Every other reference goes strictly back in
//!   `created_at`; [`crate::graph`] uses that to prune its walk.
//! * `fill` ([`FillTree`]) and `recall` ([`RecallIndex`]) are built lazily on
//!   the first render that needs them and from then on kept up to date by
//!   every write, so a process that only writes never pays for them.
//!
//! Invariant: `ids`, `nodes` and every set above describe exactly the
//! entries of the mirror (and nothing else).

use std::cmp::{Ordering, Reverse};
use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::entry::Entry;
use crate::parallel::PARALLEL_MIN_ENTRIES;
use crate::text::{DONE_MARKERS, RESOLVED_MARKERS, entry_cost, is_done, is_resolved, lower};
use crate::views::fill_tree::FillTree;
use crate::views::recall::RecallIndex;

/// How many slots from the end an out-of-order fill insert may shift before
/// the fill tree is dropped and rebuilt on the next render instead.
const MAX_FILL_SHIFT: usize = 64;

/// Whether an entry is a §5.2 resume candidate (with its type rank) or an
/// unresolved error.
#[derive(Clone, Copy)]
enum ResumeOrError {
    Resume(u8),
    Error,
}

impl ResumeOrError {
    /// The §5.2.1/§5.2.2 tests (resume and error types are disjoint).
    fn of(entry: &Entry) -> Option<ResumeOrError> {
        if let Some(rank) = resume_rank(&entry.kind) {
            let done = may_hit_any(&entry.value, Markers::Done) && is_done(&entry.value);
            (!done).then_some(ResumeOrError::Resume(rank))
        } else if &*entry.kind == ERROR_TYPE {
            let resolved =
                may_hit_any(&entry.value, Markers::Resolved) && is_resolved(&entry.value);
            (!resolved).then_some(ResumeOrError::Error)
        } else {
            None
        }
    }
}

#[derive(Clone, Copy)]
enum Markers {
    Done,
    Resolved,
}

/// A necessary condition for `is_done` ([`Markers::Done`]) or `is_resolved`
/// to be true, checked without tokenising: each way a §5.5 marker can hit
/// (a substring of the lowered value, a token equal to it, a token starting
/// with it) makes the marker a substring of the lowered value, and both
/// tests are false unless one of their positive markers hits. So a value
/// holding none of them as a substring is neither done nor resolved, and the
/// full test (which tokenises and compares every marker with every token,
/// ~100× slower) runs only for the values that may be.
fn may_hit_any(value: &str, markers: Markers) -> bool {
    static FINDERS: OnceLock<[Vec<memchr::memmem::Finder<'static>>; 2]> = OnceLock::new();
    let finders = FINDERS.get_or_init(|| {
        let build = |list: &'static [&'static str]| {
            list.iter()
                .map(|marker| memchr::memmem::Finder::new(marker.as_bytes()))
                .collect()
        };
        [build(DONE_MARKERS), build(RESOLVED_MARKERS)]
    });
    let lowered = lower(value);
    finders[markers as usize]
        .iter()
        .any(|finder| finder.find(lowered.as_bytes()).is_some())
}

/// §5.2.1 types of a resume point, with their tie-break rank
/// (`progress` > `status` > `result`).
pub fn resume_rank(kind: &str) -> Option<u8> {
    match kind {
        "progress" => Some(3),
        "status" => Some(2),
        "result" => Some(1),
        _ => None,
    }
}

const ERROR_TYPE: &str = "error";

/// §15.2: whether an entry of this type ranks before an equal-scoring entry
/// of type empty, `note` or `fact`.
pub fn has_type_bonus(kind: &str) -> bool {
    !matches!(kind, "" | "note" | "fact")
}

/// Orders resume candidates so that the maximum is the §5.2.1 resume point:
/// newest, then higher type rank, then smaller key.
type ResumeOrder = (i64, u8, Reverse<Arc<str>>);

/// What a render reads per entry. The stamps and the type bonus are copies
/// kept inline so that walks and ranking touch one array, not every
/// entry's heap record.
struct Node {
    entry: Arc<Entry>,
    created_at: i64,
    updated_at: i64,
    /// [`has_type_bonus`] of the entry's type.
    type_bonus: bool,
    /// Ids of the referenced entries that exist, in stored order.
    parents: Parents,
    /// How many of `parents` were created no earlier than this entry.
    inverted: u32,
}

/// A node's parent ids; the usual single parent is stored inline, so a walk
/// up a chain does not chase a pointer per step.
#[derive(Default)]
enum Parents {
    #[default]
    None,
    One(u32),
    Many(Box<[u32]>),
}

impl Parents {
    fn as_slice(&self) -> &[u32] {
        match self {
            Parents::None => &[],
            Parents::One(parent) => std::slice::from_ref(parent),
            Parents::Many(parents) => parents,
        }
    }
}

impl From<Vec<u32>> for Parents {
    fn from(parents: Vec<u32>) -> Parents {
        match parents.as_slice() {
            [] => Parents::None,
            [parent] => Parents::One(*parent),
            _ => Parents::Many(parents.into_boxed_slice()),
        }
    }
}

impl Node {
    /// A node without links (see [`RenderIndex::refresh_links`]).
    fn new(entry: &Arc<Entry>) -> Node {
        Node {
            entry: entry.clone(),
            created_at: entry.created_at,
            updated_at: entry.updated_at,
            type_bonus: has_type_bonus(&entry.kind),
            parents: Parents::None,
            inverted: 0,
        }
    }
}

#[derive(Default)]
pub struct RenderIndex {
    ids: FxHashMap<Arc<str>, u32>,
    nodes: Vec<Option<Node>>,
    free: Vec<u32>,
    resume: BTreeSet<ResumeOrder>,
    /// Unresolved errors as `(updated_at, key)`: the last is the newest.
    errors: BTreeSet<(i64, Arc<str>)>,
    /// `(created_at, id)` of the entries with an inverted reference.
    inverted: BTreeSet<(i64, u32)>,
    fill: OnceLock<FillTree>,
    recall: OnceLock<RecallIndex>,
}

/// Fill order, ascending = oldest first: `(updated_at asc, key desc)`. The
/// fill walks it backwards: newest first, ties to the smaller key (§5.2.5).
fn fill_order(a: &Entry, b: &Entry) -> Ordering {
    a.updated_at
        .cmp(&b.updated_at)
        .then_with(|| b.key.cmp(&a.key))
}

fn cost_of(entry: &Entry) -> u64 {
    entry_cost(&entry.key, &entry.value) as u64
}

impl RenderIndex {
    /// Builds the index over a whole store at once: `entries` sorted by key,
    /// distinct keys. The fill tree and the token index are left to be
    /// built on first use.
    pub fn from_entries(entries: &[&Arc<Entry>]) -> RenderIndex {
        RenderIndex::build(entries, false)
    }

    /// [`RenderIndex::from_entries`] with the fill tree and the recall index
    /// built too, as a focused render needs them: the recall index, the
    /// largest part, on its own thread meanwhile.
    pub fn for_render(entries: &[&Arc<Entry>]) -> RenderIndex {
        RenderIndex::build(entries, true)
    }

    /// Ids follow creation order, but every pass over the entries goes in
    /// key order, the order they were decoded (and so allocated) in: reading
    /// them in id order instead missed the cache on nearly every entry of a
    /// large store. The §5.5 done/resolved tests, the text-heavy part, run on
    /// a second thread for a large store.
    fn build(entries: &[&Arc<Entry>], complete: bool) -> RenderIndex {
        let count = entries.len();
        // Ids in creation order keep reference walks (which mostly go back in
        // time) close together in memory. `entries` is in key order, so
        // ordering by (created_at, position) is ordering by (created_at, key).
        let mut by_creation: Vec<(i64, u32)> = entries
            .iter()
            .enumerate()
            .map(|(at, e)| (e.created_at, at as u32))
            .collect();
        by_creation.sort_unstable();
        let mut id_of = vec![0u32; count];
        for (id, &(_, at)) in by_creation.iter().enumerate() {
            id_of[at as usize] = id as u32;
        }
        let build_recall = || {
            RecallIndex::build(
                by_creation
                    .iter()
                    .enumerate()
                    .map(|(id, &(_, at))| (id as u32, &**entries[at as usize])),
            )
        };
        let flags = |part: &[&Arc<Entry>]| -> Vec<(usize, ResumeOrError)> {
            part.iter()
                .enumerate()
                .filter_map(|(at, entry)| ResumeOrError::of(entry).map(|flag| (at, flag)))
                .collect()
        };
        let build_nodes = || {
            let mut ids = FxHashMap::with_capacity_and_hasher(count, FxBuildHasher);
            let mut nodes: Vec<Option<Node>> = Vec::with_capacity(count);
            nodes.resize_with(count, || None);
            for (at, &entry) in entries.iter().enumerate() {
                let id = id_of[at];
                ids.insert(entry.key.clone(), id);
                nodes[id as usize] = Some(Node::new(entry));
            }
            (ids, nodes)
        };
        let parallel = count >= PARALLEL_MIN_ENTRIES;
        std::thread::scope(|scope| {
            let recall = (complete && parallel).then(|| scope.spawn(build_recall));
            let flagged = parallel.then(|| scope.spawn(|| flags(entries)));
            let (ids, nodes) = build_nodes();
            let flagged = match flagged {
                Some(thread) => thread.join().expect("render index thread"),
                None => flags(entries),
            };
            let mut index = RenderIndex {
                ids,
                nodes,
                ..RenderIndex::default()
            };
            index.list_flagged(entries, flagged);
            index.link_all(entries, &id_of);
            if complete {
                let _ = index.fill();
                let recall = match recall {
                    Some(thread) => thread.join().expect("recall index thread"),
                    None => build_recall(),
                };
                let _ = index.recall.set(recall);
            }
            index
        })
    }

    /// The resume and error sets of a bulk build, from the flags of
    /// `entries` (by position).
    fn list_flagged(&mut self, entries: &[&Arc<Entry>], flagged: Vec<(usize, ResumeOrError)>) {
        let mut resume = Vec::new();
        let mut errors = Vec::new();
        for (at, flag) in flagged {
            let entry = entries[at];
            match flag {
                ResumeOrError::Resume(rank) => {
                    resume.push((entry.updated_at, rank, Reverse(entry.key.clone())));
                }
                ResumeOrError::Error => errors.push((entry.updated_at, entry.key.clone())),
            }
        }
        self.resume = resume.into_iter().collect();
        self.errors = errors.into_iter().collect();
    }

    /// Parent links and inversions of a bulk build (`id_of` by position).
    fn link_all(&mut self, entries: &[&Arc<Entry>], id_of: &[u32]) {
        let mut inverted = Vec::new();
        for (at, &entry) in entries.iter().enumerate() {
            let id = id_of[at];
            let (parents, count) = self.links_of(entry, entry.created_at);
            let node = self.nodes[id as usize].as_mut().expect("live id");
            node.parents = parents;
            node.inverted = count;
            if count > 0 {
                inverted.push((entry.created_at, id));
            }
        }
        self.inverted = inverted.into_iter().collect();
    }

    /// Records `entry`, which replaces `previous` (same key) if given.
    /// `referrers` are the keys of the entries that reference `entry.key`.
    pub fn upsert(
        &mut self,
        entry: &Arc<Entry>,
        previous: Option<&Arc<Entry>>,
        referrers: Option<&[Arc<str>]>,
    ) {
        let id = if let Some(previous) = previous {
            let id = self.ids[&previous.key];
            self.unlist(id, previous);
            let node = self.nodes[id as usize]
                .as_mut()
                .expect("a listed id has a node");
            let parents = std::mem::take(&mut node.parents);
            *node = Node {
                parents,
                ..Node::new(entry)
            };
            id
        } else {
            let id = self.free.pop().unwrap_or_else(|| {
                self.nodes.push(None);
                (self.nodes.len() - 1) as u32
            });
            self.ids.insert(entry.key.clone(), id);
            self.nodes[id as usize] = Some(Node::new(entry));
            id
        };
        self.list(id, entry);
        self.refresh_links(id);
        // The entries referencing this key see a new parent (the key did not
        // exist) or a parent with another creation stamp (an import).
        if previous.is_none_or(|p| p.created_at != entry.created_at) {
            self.refresh_referrers(referrers);
        }
    }

    /// Forgets `entry`; `referrers` as for [`RenderIndex::upsert`].
    pub fn remove(&mut self, entry: &Arc<Entry>, referrers: Option<&[Arc<str>]>) {
        let Some(id) = self.ids.remove(&entry.key) else {
            return;
        };
        self.unlist(id, entry);
        self.nodes[id as usize] = None;
        self.free.push(id);
        self.refresh_referrers(referrers);
    }

    fn refresh_referrers(&mut self, referrers: Option<&[Arc<str>]>) {
        for referrer in referrers.into_iter().flatten() {
            if let Some(&referrer_id) = self.ids.get(referrer) {
                self.refresh_links(referrer_id);
            }
        }
    }

    /// Adds `entry` (stored under `id`) to every ordered index.
    fn list(&mut self, id: u32, entry: &Arc<Entry>) {
        match ResumeOrError::of(entry) {
            Some(ResumeOrError::Resume(rank)) => {
                self.resume
                    .insert((entry.updated_at, rank, Reverse(entry.key.clone())));
            }
            Some(ResumeOrError::Error) => {
                self.errors.insert((entry.updated_at, entry.key.clone()));
            }
            None => {}
        }
        if let Some(recall) = self.recall.get_mut() {
            recall.insert(id, entry);
            if recall.wants_rebuild() {
                // Rebuilt in bulk by the next search that needs it.
                self.recall = OnceLock::new();
            }
        }
        if self.fill.get().is_some() {
            self.fill_insert(id, entry);
        }
    }

    /// Removes `entry` (stored under `id`) from every ordered index.
    fn unlist(&mut self, id: u32, entry: &Arc<Entry>) {
        if let Some(rank) = resume_rank(&entry.kind) {
            self.resume
                .remove(&(entry.updated_at, rank, Reverse(entry.key.clone())));
        }
        if &*entry.kind == ERROR_TYPE {
            self.errors.remove(&(entry.updated_at, entry.key.clone()));
        }
        self.inverted.remove(&(entry.created_at, id));
        if let Some(recall) = self.recall.get_mut() {
            recall.remove(id, entry);
        }
        if let Some(fill) = self.fill.get_mut() {
            fill.remove(id);
        }
    }

    /// Puts `id` into the built fill tree at its place in fill order: an
    /// append in the usual case (a new stamp is the newest), a short shift
    /// when it belongs near the end (a catch-up applies another process's
    /// batch in key order), else the tree is dropped and rebuilt lazily
    /// (imports of old stamps).
    fn fill_insert(&mut self, id: u32, entry: &Entry) {
        let Some(fill) = self.fill.get() else {
            return;
        };
        let mut slot = fill.slot_count();
        let mut shifted = 0;
        while slot > 0 && shifted <= MAX_FILL_SHIFT {
            match fill.id_at(slot - 1) {
                Some(other) if fill_order(self.entry(other), entry) == Ordering::Less => break,
                _ => {}
            }
            slot -= 1;
            shifted += 1;
        }
        if shifted > MAX_FILL_SHIFT {
            self.fill = OnceLock::new();
        } else if let Some(fill) = self.fill.get_mut() {
            fill.insert_at(slot, id, cost_of(entry));
        }
    }

    /// The ids of the existing references of `entry` (created at
    /// `created`), and how many of them are inverted.
    fn links_of(&self, entry: &Entry, created: i64) -> (Parents, u32) {
        let mut parents = Parents::None;
        let mut inverted = 0;
        for reference in &entry.references {
            let Some(&parent) = self.ids.get(reference) else {
                continue;
            };
            inverted += u32::from(self.created_at(parent) >= created);
            parents = match parents {
                Parents::None => Parents::One(parent),
                Parents::One(first) => Parents::Many(Box::new([first, parent])),
                Parents::Many(many) => {
                    let mut many = many.into_vec();
                    many.push(parent);
                    Parents::Many(many.into_boxed_slice())
                }
            };
        }
        (parents, inverted)
    }

    /// Recomputes the existing-parent ids of `id` and its inverted count.
    fn refresh_links(&mut self, id: u32) {
        let node = self.node(id);
        let created = node.created_at;
        let (parents, inverted) = self.links_of(&node.entry, created);
        let node = self.nodes[id as usize].as_mut().expect("live id");
        node.parents = parents;
        node.inverted = inverted;
        if inverted > 0 {
            self.inverted.insert((created, id));
        } else {
            self.inverted.remove(&(created, id));
        }
    }

    // ----- queries -------------------------------------------------------

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn id(&self, key: &str) -> Option<u32> {
        self.ids.get(key).copied()
    }

    /// The entry of a live id.
    pub fn entry(&self, id: u32) -> &Arc<Entry> {
        &self.node(id).entry
    }

    /// The entry of `id`, `None` for a free id.
    pub fn live_entry(&self, id: u32) -> Option<&Arc<Entry>> {
        self.nodes
            .get(id as usize)
            .and_then(Option::as_ref)
            .map(|node| &node.entry)
    }

    fn node(&self, id: u32) -> &Node {
        self.nodes[id as usize].as_ref().expect("live id")
    }

    pub fn created_at(&self, id: u32) -> i64 {
        self.node(id).created_at
    }

    pub fn updated_at(&self, id: u32) -> i64 {
        self.node(id).updated_at
    }

    /// [`has_type_bonus`] of the type of `id`.
    pub fn has_type_bonus(&self, id: u32) -> bool {
        self.node(id).type_bonus
    }

    /// Ids of the existing references of `id`, in stored order.
    pub fn parents(&self, id: u32) -> &[u32] {
        self.node(id).parents.as_slice()
    }

    /// One more than the largest id in use: the size of a dense id set.
    pub fn id_bound(&self) -> usize {
        self.nodes.len()
    }

    /// Whether `id` has a reference to an entry created no earlier than it.
    pub fn has_inverted_reference(&self, id: u32) -> bool {
        self.nodes[id as usize]
            .as_ref()
            .is_some_and(|node| node.inverted > 0)
    }

    /// The smallest `created_at` among entries with an inverted reference.
    pub fn oldest_inverted(&self) -> Option<i64> {
        self.inverted.first().map(|&(created, _)| created)
    }

    /// §5.2.1: the resume point.
    pub fn resume_point(&self) -> Option<u32> {
        let (_, _, Reverse(key)) = self.resume.last()?;
        self.id(key)
    }

    /// §5.2.2: the newest unresolved error.
    pub fn newest_unresolved_error(&self) -> Option<u32> {
        let (_, key) = self.errors.last()?;
        self.id(key)
    }

    /// The fill tree, built on first use.
    pub fn fill(&self) -> &FillTree {
        self.fill.get_or_init(|| {
            // Sorted on the stamps kept inline; keys are read only for ties.
            let mut live: Vec<(i64, u32)> = self
                .nodes
                .iter()
                .enumerate()
                .filter_map(|(id, node)| node.as_ref().map(|n| (n.updated_at, id as u32)))
                .collect();
            live.sort_unstable_by(|a, b| {
                a.0.cmp(&b.0)
                    .then_with(|| fill_order(self.entry(a.1), self.entry(b.1)))
            });
            FillTree::from_sorted(live.into_iter().map(|(_, id)| (id, self.cost(id))))
        })
    }

    /// Takes `recall` as the recall index, before any is built; it must
    /// describe exactly this index's entries under their ids (an image's,
    /// `store/image/`, for an index built from the image's entries).
    pub fn set_recall(&mut self, recall: RecallIndex) -> bool {
        self.recall.set(recall).is_ok()
    }

    /// The recall index, built on first use.
    pub fn recall(&self) -> &RecallIndex {
        self.recall.get_or_init(|| {
            RecallIndex::build(
                self.nodes
                    .iter()
                    .enumerate()
                    .filter_map(|(id, node)| node.as_ref().map(|n| (id as u32, &*n.entry))),
            )
        })
    }

    /// §5.1 cost of `id`.
    pub fn cost(&self, id: u32) -> u64 {
        cost_of(self.entry(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::entry;

    /// The substring pre-check never hides a done or resolved value.
    #[test]
    fn marker_precheck_is_a_necessary_condition() {
        let mut next = crate::test_rng::xorshift(0x1234_5678_9abc_def1);
        let pieces: Vec<&str> = DONE_MARKERS
            .iter()
            .chain(RESOLVED_MARKERS)
            .chain(crate::text::NOT_DONE_MARKERS)
            .chain(crate::text::REOPENED_MARKERS)
            .copied()
            .chain([
                "DONE", "Fixed", "ÉTÉ", "İ", " ", "-", "x", "won", "'t", "not", "ed", "s",
            ])
            .collect();
        let (mut done, mut resolved) = (0, 0);
        for _ in 0..20_000 {
            let mut value = String::new();
            for _ in 0..next(5) {
                value.push_str(pieces[next(pieces.len() as u64) as usize]);
                if next(2) == 0 {
                    value.push(' ');
                }
            }
            if is_done(&value) {
                done += 1;
                assert!(may_hit_any(&value, Markers::Done), "{value:?}");
            }
            if is_resolved(&value) {
                resolved += 1;
                assert!(may_hit_any(&value, Markers::Resolved), "{value:?}");
            }
            for kind in ["progress", "result", "status", "error", "note"] {
                let e = entry("k", kind, &value, 1, &[]);
                let want = match (resume_rank(kind), kind) {
                    (Some(rank), _) => (!is_done(&value)).then_some(rank),
                    (None, "error") => (!is_resolved(&value)).then_some(0),
                    _ => None,
                };
                let got = ResumeOrError::of(&e).map(|flag| match flag {
                    ResumeOrError::Resume(rank) => rank,
                    ResumeOrError::Error => 0,
                });
                assert_eq!(got, want, "{kind} {value:?}");
            }
        }
        assert!(done > 1000 && resolved > 1000, "{done} {resolved}");
    }

    #[test]
    fn resume_and_error_follow_writes() {
        let mut index = RenderIndex::default();
        let r = entry("result:a", "result", "tests pending", 1, &[]);
        index.upsert(&r, None, None);
        let s = entry("status:b", "status", "all done", 2, &[]);
        index.upsert(&s, None, None);
        assert_eq!(
            index.entry(index.resume_point().unwrap()).key.as_ref(),
            "result:a"
        );
        let s2 = entry("status:b", "status", "waiting", 3, &[]);
        index.upsert(&s2, Some(&s), None);
        assert_eq!(
            index.entry(index.resume_point().unwrap()).key.as_ref(),
            "status:b"
        );
        let e = entry("error:x", "error", "boom", 4, &[]);
        index.upsert(&e, None, None);
        assert!(index.newest_unresolved_error().is_some());
        index.remove(&e, None);
        assert!(index.newest_unresolved_error().is_none());
    }

    #[test]
    fn links_and_inversions_follow_writes() {
        let mut index = RenderIndex::default();
        // `a` references `b`, which does not exist yet.
        let a = entry("a", "note", "x", 1, &["b"]);
        index.upsert(&a, None, None);
        assert!(index.parents(index.id("a").unwrap()).is_empty());
        assert_eq!(index.oldest_inverted(), None);
        // `b` appears later: the edge a -> b is inverted.
        let b = entry("b", "note", "y", 2, &[]);
        let referrers: Vec<Arc<str>> = vec![Arc::from("a")];
        index.upsert(&b, None, Some(&referrers));
        let (ida, idb) = (index.id("a").unwrap(), index.id("b").unwrap());
        assert_eq!(index.parents(ida), [idb]);
        assert!(index.has_inverted_reference(ida));
        assert_eq!(index.oldest_inverted(), Some(1));
        index.remove(&b, Some(&referrers));
        assert!(index.parents(ida).is_empty());
        assert_eq!(index.oldest_inverted(), None);
    }

    #[test]
    fn fill_tree_stays_in_fill_order() {
        let mut index = RenderIndex::default();
        let mut all = Vec::new();
        for at in [5, 1, 9, 3, 7, 7] {
            let key = format!("k{at}{}", all.len());
            let e = entry(&key, "note", "v", at, &[]);
            index.upsert(&e, None, None);
            all.push(e);
            // Build the fill tree after the first insert so the rest go
            // through the incremental path.
            let _ = index.fill();
        }
        let fill = index.fill();
        let got: Vec<String> = fill
            .ids_below(fill.slot_count())
            .map(|id| index.entry(id).key.to_string())
            .collect();
        all.sort_by(|a, b| fill_order(b, a));
        let want: Vec<String> = all.iter().map(|e| e.key.to_string()).collect();
        assert_eq!(got, want);
    }
}
