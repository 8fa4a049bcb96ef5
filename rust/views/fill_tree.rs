//! The budget fill of the `<memory>` block (§5.2 step 5) as an
//! index: "the next entry, in newest-first order, whose cost still fits".
//!
//! Entries sit in *slots*; slot order ascending is the reverse of the fill
//! order, i.e. oldest first: `(updated_at asc, key desc)`, so the fill walks
//! slots downwards and the usual write (a new stamp, the newest) is an append.
//! A segment tree over the slots keeps the minimum cost of each range, which
//! answers "the highest slot below `pos` whose cost is at most `limit`" in
//! O(log n).
//!
//! Invariants:
//! * `slots[s]` is an entry id or [`TOMBSTONE`]; live slots are in fill
//!   order (the caller picks the insertion slot, see [`FillTree::insert_at`]);
//! * `tree` is a perfect binary tree over `capacity` leaves (a power of two,
//!   `>= slots.len()`), leaf `s` holding the cost of slot `s` or [`EMPTY`],
//!   every inner node the minimum of its two children;
//! * `slot_of[id]` is the slot of a live id and `NO_SLOT` otherwise.
//!
//! An overwrite or removal leaves a tombstone; tombstones are compacted away
//! once they outnumber the live slots, so the cost is amortised O(log n) per
//! write.

/// Marks a slot whose entry was removed or moved.
pub const TOMBSTONE: u32 = u32::MAX;
/// Leaf value of a tombstone or unused slot: larger than any real cost.
const EMPTY: u64 = u64::MAX;
const NO_SLOT: u32 = u32::MAX;
/// Tombstones tolerated before a compaction, at least.
const MIN_TOMBSTONES_BEFORE_COMPACTION: usize = 1024;

#[derive(Clone, Debug, Default)]
pub struct FillTree {
    slots: Vec<u32>,
    tree: Vec<u64>,
    capacity: usize,
    slot_of: Vec<u32>,
    tombstones: usize,
}

/// Clamps a cost so that it never collides with [`EMPTY`].
fn leaf_cost(cost: u64) -> u64 {
    cost.min(EMPTY - 1)
}

impl FillTree {
    /// Builds the tree from `(id, cost)` pairs already in slot order.
    pub fn from_sorted(items: impl IntoIterator<Item = (u32, u64)>) -> FillTree {
        let mut slots = Vec::new();
        let mut costs = Vec::new();
        for (id, cost) in items {
            slots.push(id);
            costs.push(leaf_cost(cost));
        }
        let mut tree = FillTree::default();
        tree.rebuild(slots, &costs);
        tree
    }

    /// Number of slots, tombstones included (the `pos` to start a fill from).
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// The id in `slot`, or `None` for a tombstone.
    pub fn id_at(&self, slot: usize) -> Option<u32> {
        self.slots.get(slot).copied().filter(|&id| id != TOMBSTONE)
    }

    /// The highest slot below `pos` holding an entry whose cost is at most
    /// `limit`.
    pub fn last_fitting_below(&self, pos: usize, limit: u64) -> Option<usize> {
        if self.capacity == 0 {
            return None;
        }
        // Live leaves hold at most `EMPTY - 1`, so tombstones never fit.
        self.last_fitting(1, 0, self.capacity, pos, limit.min(EMPTY - 1))
    }

    fn last_fitting(
        &self,
        node: usize,
        lo: usize,
        hi: usize,
        pos: usize,
        limit: u64,
    ) -> Option<usize> {
        if lo >= pos || self.tree[node] > limit {
            return None;
        }
        if hi - lo == 1 {
            return Some(lo);
        }
        let mid = lo + (hi - lo) / 2;
        self.last_fitting(2 * node + 1, mid, hi, pos, limit)
            .or_else(|| self.last_fitting(2 * node, lo, mid, pos, limit))
    }

    /// Live slots from `pos` down: the ids a fill would look at, newest first.
    pub fn ids_below(&self, pos: usize) -> impl Iterator<Item = u32> + '_ {
        self.slots[..pos.min(self.slots.len())]
            .iter()
            .rev()
            .copied()
            .filter(|&id| id != TOMBSTONE)
    }

    /// `(slot, id)` of the live slots below `pos`, highest (newest) first.
    pub fn live_below(&self, pos: usize) -> impl Iterator<Item = (usize, u32)> + '_ {
        self.slots[..pos.min(self.slots.len())]
            .iter()
            .enumerate()
            .rev()
            .filter(|&(_, &id)| id != TOMBSTONE)
            .map(|(slot, &id)| (slot, id))
    }

    /// The slot of a live id.
    pub fn slot(&self, id: u32) -> Option<usize> {
        self.slot_of
            .get(id as usize)
            .filter(|&&slot| slot != NO_SLOT)
            .map(|&slot| slot as usize)
    }

    pub fn contains(&self, id: u32) -> bool {
        self.slot_of
            .get(id as usize)
            .is_some_and(|&slot| slot != NO_SLOT)
    }

    /// Puts `id` at slot `slot` (`<= slot_count()`), moving the slots from
    /// there up by one. The caller guarantees that this keeps fill order; the
    /// cost is O((`slot_count` - slot) · log n), so callers only insert near the
    /// end (an append is O(log n)).
    pub fn insert_at(&mut self, slot: usize, id: u32, cost: u64) {
        debug_assert!(!self.contains(id));
        debug_assert!(slot <= self.slots.len());
        if self.slots.len() == self.capacity {
            // Full: rebuild with a larger capacity (amortised O(1) per slot).
            let costs = self.leaf_costs();
            let slots = std::mem::take(&mut self.slots);
            self.rebuild(slots, &costs);
        }
        let end = self.slots.len();
        self.slots.insert(slot, id);
        // Shift the leaves of the old slots `slot..end` up by one, from the
        // top down so that each reads its neighbour before it is overwritten.
        for moved in (slot + 1..=end).rev() {
            let value = self.tree[self.capacity + moved - 1];
            self.set_leaf(moved, value);
            let moved_id = self.slots[moved];
            if moved_id != TOMBSTONE {
                self.set_slot_of(moved_id, moved as u32);
            }
        }
        self.set_leaf(slot, leaf_cost(cost));
        self.set_slot_of(id, slot as u32);
    }

    /// Appends `id` as the newest slot.
    pub fn push(&mut self, id: u32, cost: u64) {
        self.insert_at(self.slots.len(), id, cost);
    }

    /// Removes `id`, leaving a tombstone; compacts when tombstones dominate.
    pub fn remove(&mut self, id: u32) {
        let Some(&slot) = self.slot_of.get(id as usize) else {
            return;
        };
        if slot == NO_SLOT {
            return;
        }
        self.slot_of[id as usize] = NO_SLOT;
        self.slots[slot as usize] = TOMBSTONE;
        self.set_leaf(slot as usize, EMPTY);
        self.tombstones += 1;
        let live = self.slots.len() - self.tombstones;
        if self.tombstones > live.max(MIN_TOMBSTONES_BEFORE_COMPACTION) {
            self.compact();
        }
    }

    /// Drops every tombstone (O(n)).
    fn compact(&mut self) {
        let mut slots = Vec::with_capacity(self.slots.len() - self.tombstones);
        let mut costs = Vec::with_capacity(slots.capacity());
        for (slot, &id) in self.slots.iter().enumerate() {
            if id != TOMBSTONE {
                slots.push(id);
                costs.push(self.tree[self.capacity + slot]);
            }
        }
        self.rebuild(slots, &costs);
    }

    fn leaf_costs(&self) -> Vec<u64> {
        (0..self.slots.len())
            .map(|slot| self.tree[self.capacity + slot])
            .collect()
    }

    /// Rebuilds every structure from slots and their leaf costs, with room to
    /// grow: the capacity is the next power of two above the slot count.
    fn rebuild(&mut self, slots: Vec<u32>, costs: &[u64]) {
        let capacity = (slots.len() + 1).next_power_of_two().max(16);
        let mut tree = vec![EMPTY; 2 * capacity];
        tree[capacity..capacity + costs.len()].copy_from_slice(costs);
        for node in (1..capacity).rev() {
            tree[node] = tree[2 * node].min(tree[2 * node + 1]);
        }
        self.tombstones = slots.iter().filter(|&&id| id == TOMBSTONE).count();
        self.slot_of.iter_mut().for_each(|s| *s = NO_SLOT);
        self.capacity = capacity;
        self.tree = tree;
        self.slots = slots;
        for slot in 0..self.slots.len() {
            let id = self.slots[slot];
            if id != TOMBSTONE {
                self.set_slot_of(id, slot as u32);
            }
        }
    }

    fn set_slot_of(&mut self, id: u32, slot: u32) {
        let index = id as usize;
        if index >= self.slot_of.len() {
            self.slot_of.resize(index + 1, NO_SLOT);
        }
        self.slot_of[index] = slot;
    }

    fn set_leaf(&mut self, slot: usize, value: u64) {
        let mut node = self.capacity + slot;
        self.tree[node] = value;
        while node > 1 {
            node /= 2;
            self.tree[node] = self.tree[2 * node].min(self.tree[2 * node + 1]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain scan the tree replaces.
    fn naive_last_fitting(costs: &[Option<u64>], pos: usize, limit: u64) -> Option<usize> {
        (0..pos.min(costs.len()))
            .rev()
            .find(|&s| costs[s].is_some_and(|c| c <= limit))
    }

    #[test]
    fn finds_the_highest_fitting_slot() {
        let tree = FillTree::from_sorted([(0, 50), (1, 10), (2, 70), (3, 30)]);
        assert_eq!(tree.last_fitting_below(4, 40), Some(3));
        assert_eq!(tree.last_fitting_below(3, 40), Some(1));
        assert_eq!(tree.last_fitting_below(1, 40), None);
        assert_eq!(tree.last_fitting_below(4, 5), None);
        assert_eq!(tree.last_fitting_below(4, u64::MAX), Some(3));
        assert_eq!(tree.last_fitting_below(0, u64::MAX), None);
    }

    #[test]
    fn compacts_when_tombstones_dominate() {
        let mut tree = FillTree::default();
        for id in 0..3000 {
            tree.push(id, 100 + u64::from(id));
        }
        for id in 0..2500 {
            tree.remove(id);
        }
        assert!(tree.slot_count() < 3000);
        assert_eq!(tree.ids_below(tree.slot_count()).count(), 500);
        assert_eq!(
            tree.last_fitting_below(tree.slot_count(), 2600),
            Some(tree.slot_count() - 1 - 499)
        );
        assert!(!tree.contains(0) && tree.contains(2999));
    }

    #[test]
    fn agrees_with_a_scan_under_random_edits() {
        let mut random = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut next = move || random(u64::MAX);
        let mut tree = FillTree::default();
        tree.rebuild(Vec::new(), &[]);
        // Model: slot -> (id, cost), tombstones as None.
        let mut model: Vec<Option<(u32, u64)>> = Vec::new();
        let mut next_id = 0u32;
        for step in 0..5000 {
            let op = next() % 10;
            let live: Vec<u32> = model.iter().flatten().map(|&(id, _)| id).collect();
            if op < 5 || live.is_empty() {
                let cost = 31 + next() % 300;
                tree.push(next_id, cost);
                model.push(Some((next_id, cost)));
                next_id += 1;
            } else if op < 7 {
                // Insert near the end.
                let back = (next() % 5) as usize;
                let slot = model.len().saturating_sub(back);
                let cost = 31 + next() % 300;
                tree.insert_at(slot, next_id, cost);
                model.insert(slot, Some((next_id, cost)));
                next_id += 1;
            } else {
                let id = live[(next() % live.len() as u64) as usize];
                tree.remove(id);
                for slot in &mut model {
                    if slot.is_some_and(|(i, _)| i == id) {
                        *slot = None;
                    }
                }
            }
            // The tree compacts on its own: rebuild the model's slots the same
            // way whenever the tree's slot count shrinks.
            if tree.slot_count() != model.len() {
                model.retain(Option::is_some);
            }
            assert_eq!(tree.slot_count(), model.len(), "step {step}");
            let costs: Vec<Option<u64>> = model.iter().map(|s| s.map(|(_, c)| c)).collect();
            for _ in 0..4 {
                let pos = (next() % (model.len() as u64 + 1)) as usize;
                let limit = next() % 400;
                let expected = naive_last_fitting(&costs, pos, limit);
                assert_eq!(tree.last_fitting_below(pos, limit), expected, "step {step}");
                if let Some(slot) = expected {
                    assert_eq!(tree.id_at(slot), model[slot].map(|(id, _)| id));
                }
            }
        }
    }
}
