//! Which entries a `<memory>` block shows, and how much of each (§5.2 as
//! §15.5 changes it): the budget is a ceiling.
//!
//! The entry lines cost at most `max_tokens × 4` bytes (§5.1 costs, the
//! shown value counted). Priority entries are offered first, in this order:
//! the resume point, the focus matches in rank order, the newest unresolved
//! error; then their ancestry chains, round by round (each chain offers
//! its next ancestor not yet taken, in the same order of chains, until no
//! chain has one left). An offered entry is taken whole when it fits; else
//! with its value cut to what is left when that leaves at least
//! [`MIN_CUT_VALUE_BYTES`] for the value; else it is left out, and the
//! offers go on. Then the other entries, newest first, each taken whole if
//! it fits. A budget of 0 or less, or one too small for anything, shows
//! the resume point (else the newest entry) alone, its value cut to
//! [`ALONE_VALUE_BYTES`].

use rustc_hash::FxHashMap;

use crate::text::{ELLIPSIS, ENTRY_OVERHEAD, truncate};
use crate::views::graph::ancestry_chain;
use crate::views::ids::IdSet;
use crate::views::render_index::RenderIndex;

/// §5.1: budget bytes per token.
pub const BYTES_PER_TOKEN: i64 = 4;

/// §15.5: a priority entry that does not fit whole is cut only when at
/// least this many bytes are left for its value (after its key, the
/// entry overhead and the `...`).
pub const MIN_CUT_VALUE_BYTES: usize = 80;

/// §15.5: the value of an entry shown alone is cut to this many bytes.
pub const ALONE_VALUE_BYTES: usize = 200;

/// The anchors of the priority entries (§5.2 steps 1–3).
pub struct Anchors<'a> {
    pub resume: Option<u32>,
    /// Focus matches, in rank order.
    pub matches: &'a [u32],
    pub error: Option<u32>,
}

impl Anchors<'_> {
    /// The anchors in priority order, each once.
    fn in_order(&self) -> Vec<u32> {
        let mut order: Vec<u32> = Vec::with_capacity(self.matches.len() + 2);
        for id in self
            .resume
            .into_iter()
            .chain(self.matches.iter().copied())
            .chain(self.error)
        {
            if !order.contains(&id) {
                order.push(id);
            }
        }
        order
    }
}

/// The entries a block shows; the cut ones with the value they show (the
/// raw value cut, `...` included).
#[derive(Default)]
pub struct Selection {
    pub kept: IdSet,
    cut: FxHashMap<u32, String>,
}

impl Selection {
    /// The value `id` shows: its cut value, else `raw`.
    pub fn shown_value<'a>(&'a self, id: u32, raw: &'a str) -> &'a str {
        self.cut.get(&id).map_or(raw, String::as_str)
    }
}

/// What is left of the budget while entries are taken.
struct Taking<'a> {
    index: &'a RenderIndex,
    selection: Selection,
    remaining: u64,
}

impl Taking<'_> {
    /// Offers `id` as a priority entry: taken whole, taken cut, or left out.
    fn offer(&mut self, id: u32) {
        if self.selection.kept.contains(&id) {
            return;
        }
        let cost = self.index.cost(id);
        if cost <= self.remaining {
            self.take(id, cost);
            return;
        }
        let entry = self.index.entry(id);
        let fixed = (entry.key.len() + ENTRY_OVERHEAD + ELLIPSIS.len()) as u64;
        let Some(room) = self.remaining.checked_sub(fixed) else {
            return;
        };
        if room < MIN_CUT_VALUE_BYTES as u64 {
            return;
        }
        let shown = truncate(&entry.value, room as usize);
        let shown_cost = (entry.key.len() + ENTRY_OVERHEAD + shown.len()) as u64;
        self.selection.cut.insert(id, shown);
        self.take(id, shown_cost);
    }

    fn take(&mut self, id: u32, cost: u64) {
        debug_assert!(cost <= self.remaining);
        self.selection.kept.insert(id);
        self.remaining -= cost;
    }

    /// §5.2 step 5: the other entries, newest first, each if it fits whole.
    fn fill(&mut self) {
        let tree = self.index.fill();
        let mut pos = tree.slot_count();
        while let Some(slot) = tree.last_fitting_below(pos, self.remaining) {
            pos = slot;
            let id = tree.id_at(slot).expect("a fitting slot is live");
            if !self.selection.kept.contains(&id) {
                let cost = self.index.cost(id);
                self.take(id, cost);
            }
        }
    }
}

/// The selection of a block of `max_tokens` over `index` (not empty).
pub fn select(index: &RenderIndex, anchors: &Anchors<'_>, max_tokens: i64) -> Selection {
    if max_tokens <= 0 {
        return alone(index, anchors.resume);
    }
    let max_bytes = max_tokens.saturating_mul(BYTES_PER_TOKEN);
    let mut taking = Taking {
        index,
        selection: Selection::default(),
        remaining: u64::try_from(max_bytes).unwrap_or(u64::MAX),
    };
    let resume = anchors.resume;
    let anchors = anchors.in_order();
    for &anchor in &anchors {
        taking.offer(anchor);
    }
    // Each chain's ancestors (the anchor itself is its first key).
    let chains: Vec<Vec<u32>> = anchors
        .iter()
        .map(|&anchor| ancestry_chain(index, anchor).split_off(1))
        .collect();
    let mut cursors = vec![0usize; chains.len()];
    loop {
        let mut offered = false;
        for (chain, cursor) in chains.iter().zip(&mut cursors) {
            while chain
                .get(*cursor)
                .is_some_and(|id| taking.selection.kept.contains(id))
            {
                *cursor += 1;
            }
            if let Some(&id) = chain.get(*cursor) {
                *cursor += 1;
                offered = true;
                taking.offer(id);
            }
        }
        if !offered {
            break;
        }
    }
    taking.fill();
    if taking.selection.kept.is_empty() {
        return alone(index, resume);
    }
    taking.selection
}

/// The resume point, else the newest entry, alone, its value cut to
/// [`ALONE_VALUE_BYTES`].
fn alone(index: &RenderIndex, resume: Option<u32>) -> Selection {
    let tree = index.fill();
    let newest = || {
        tree.last_fitting_below(tree.slot_count(), u64::MAX)
            .and_then(|slot| tree.id_at(slot))
    };
    let mut selection = Selection::default();
    if let Some(id) = resume.or_else(newest) {
        selection.kept.insert(id);
        let value = &index.entry(id).value;
        if value.len() > ALONE_VALUE_BYTES {
            selection.cut.insert(id, truncate(value, ALONE_VALUE_BYTES));
        }
    }
    selection
}
