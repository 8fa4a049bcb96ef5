//! The postings of the recall index: for each term, the entries holding it
//! with the term's frequency in each.
//!
//! Two layers, as a write-optimised index needs:
//! * the [`Base`], built in bulk from a whole store: the postings of all
//!   terms in one array grouped by term (CSR: no allocation per term or
//!   posting), ids ascending within a term;
//! * the [`Delta`], a map from term to the postings of the entries written
//!   since the build, kept one entry at a time.
//!
//! The recall index never edits the base: a write marks the entry's id
//! stale there and puts its new postings in the delta.

use rustc_hash::FxHashMap;

/// A term frequency kept in one byte; larger ones sit in an overflow map.
const TF_OVERFLOW: u8 = u8::MAX;

/// Delta posting lists longer than this become hash maps, so that removing
/// one posting of a common term stays O(1).
const SMALL_POSTINGS: usize = 32;

/// The bulk-built postings: term `t`'s are `ids[starts[t]..starts[t + 1]]`
/// with their frequencies at the same positions of `tfs`.
#[derive(Default)]
pub struct Base {
    starts: Vec<u32>,
    ids: Vec<u32>,
    /// One byte per posting; [`TF_OVERFLOW`] means "see `big_tfs`".
    tfs: Vec<u8>,
    /// Frequencies of 255 and more, by posting position.
    big_tfs: FxHashMap<u32, u32>,
}

impl Base {
    /// The base of `term_count` terms from each entry's `(term, tf)` list,
    /// entries in ascending id order (`documents` yields `(id, postings)`).
    pub fn build<'a>(
        term_count: usize,
        documents: impl Iterator<Item = (u32, &'a [(u32, u32)])> + Clone,
    ) -> Base {
        let mut starts = vec![0u32; term_count + 1];
        for (_, postings) in documents.clone() {
            for &(term, _) in postings {
                starts[term as usize + 1] += 1;
            }
        }
        for t in 0..term_count {
            starts[t + 1] += starts[t];
        }
        let total = starts[term_count] as usize;
        let mut ids = vec![0u32; total];
        let mut tfs = vec![0u8; total];
        let mut big_tfs = FxHashMap::default();
        let mut next = starts.clone();
        for (id, postings) in documents {
            for &(term, tf) in postings {
                let at = next[term as usize];
                next[term as usize] += 1;
                ids[at as usize] = id;
                if tf >= u32::from(TF_OVERFLOW) {
                    tfs[at as usize] = TF_OVERFLOW;
                    big_tfs.insert(at, tf);
                } else {
                    tfs[at as usize] = tf as u8;
                }
            }
        }
        Base {
            starts,
            ids,
            tfs,
            big_tfs,
        }
    }

    /// Calls `visit(id, tf)` for each base posting of `term` (none for a
    /// term added after the build).
    pub fn for_each(&self, term: u32, mut visit: impl FnMut(u32, u32)) {
        let term = term as usize;
        if term + 1 >= self.starts.len() {
            return;
        }
        let range = self.starts[term] as usize..self.starts[term + 1] as usize;
        for at in range {
            let tf = match self.tfs[at] {
                TF_OVERFLOW => self.big_tfs[&(at as u32)],
                small => u32::from(small),
            };
            visit(self.ids[at], tf);
        }
    }

    /// How many postings `term` has here (stale ones included).
    pub fn len(&self, term: u32) -> usize {
        let term = term as usize;
        if term + 1 >= self.starts.len() {
            return 0;
        }
        (self.starts[term + 1] - self.starts[term]) as usize
    }

    #[cfg(test)]
    pub fn posting_count(&self) -> usize {
        self.ids.len()
    }

    /// The number of terms the base was built with.
    pub fn term_count(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// The arrays of the base, for an image: `starts`, `ids`, `tfs`, and
    /// the large frequencies as `(position, tf)` sorted by position.
    pub fn parts(&self) -> BaseParts<'_> {
        let mut big: Vec<(u32, u32)> = self.big_tfs.iter().map(|(&at, &tf)| (at, tf)).collect();
        big.sort_unstable();
        BaseParts {
            starts: &self.starts,
            ids: &self.ids,
            tfs: &self.tfs,
            big,
        }
    }

    /// A base from [`Base::parts`], if they are consistent: `starts`
    /// ascending up to the number of postings, every large frequency at a
    /// posting marked so.
    pub fn from_parts(
        starts: Vec<u32>,
        ids: Vec<u32>,
        tfs: Vec<u8>,
        big: &[(u32, u32)],
    ) -> Option<Base> {
        let consistent = ids.len() == tfs.len()
            && starts.first() == Some(&0)
            && starts
                .last()
                .is_some_and(|&last| last as usize == ids.len())
            && starts.windows(2).all(|pair| pair[0] <= pair[1]);
        let big_tfs: FxHashMap<u32, u32> = big.iter().copied().collect();
        let marked = memchr::memchr_iter(TF_OVERFLOW, &tfs).count();
        let all_found = big_tfs
            .keys()
            .all(|&at| tfs.get(at as usize) == Some(&TF_OVERFLOW));
        (consistent && marked == big_tfs.len() && all_found).then_some(Base {
            starts,
            ids,
            tfs,
            big_tfs,
        })
    }
}

/// The arrays of a [`Base`] (see [`Base::parts`]).
pub struct BaseParts<'a> {
    pub starts: &'a [u32],
    pub ids: &'a [u32],
    pub tfs: &'a [u8],
    pub big: Vec<(u32, u32)>,
}

/// The postings of one term in the delta.
enum Postings {
    Few(Vec<(u32, u32)>),
    Many(FxHashMap<u32, u32>),
}

impl Postings {
    fn insert(&mut self, id: u32, tf: u32) {
        match self {
            Postings::Few(list) => {
                list.push((id, tf));
                if list.len() > SMALL_POSTINGS {
                    *self = Postings::Many(list.iter().copied().collect());
                }
            }
            Postings::Many(map) => {
                map.insert(id, tf);
            }
        }
    }

    /// Removes `id`'s posting; returns whether none is left.
    fn remove(&mut self, id: u32) -> bool {
        match self {
            Postings::Few(list) => {
                if let Some(at) = list.iter().position(|&(p, _)| p == id) {
                    list.swap_remove(at);
                }
                list.is_empty()
            }
            Postings::Many(map) => {
                map.remove(&id);
                map.is_empty()
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Postings::Few(list) => list.len(),
            Postings::Many(map) => map.len(),
        }
    }

    fn for_each(&self, mut visit: impl FnMut(u32, u32)) {
        match self {
            Postings::Few(list) => list.iter().for_each(|&(id, tf)| visit(id, tf)),
            Postings::Many(map) => map.iter().for_each(|(&id, &tf)| visit(id, tf)),
        }
    }
}

/// The postings of the entries written since the bulk build.
///
/// Invariant: no term maps to an empty list, and each `(term, id)` pair is
/// at most once.
#[derive(Default)]
pub struct Delta {
    terms: FxHashMap<u32, Postings>,
}

impl Delta {
    pub fn insert(&mut self, term: u32, id: u32, tf: u32) {
        self.terms
            .entry(term)
            .or_insert_with(|| Postings::Few(Vec::new()))
            .insert(id, tf);
    }

    pub fn remove(&mut self, term: u32, id: u32) {
        if let Some(postings) = self.terms.get_mut(&term)
            && postings.remove(id)
        {
            self.terms.remove(&term);
        }
    }

    pub fn for_each(&self, term: u32, visit: impl FnMut(u32, u32)) {
        if let Some(postings) = self.terms.get(&term) {
            postings.for_each(visit);
        }
    }

    pub fn len(&self, term: u32) -> usize {
        self.terms.get(&term).map_or(0, Postings::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn postings(base: &Base, term: u32) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        base.for_each(term, |id, tf| out.push((id, tf)));
        out
    }

    #[test]
    fn base_groups_postings_by_term_in_id_order_with_large_frequencies() {
        let documents: Vec<(u32, Vec<(u32, u32)>)> = vec![
            (0, vec![(0, 1), (2, 3)]),
            (4, vec![(2, 1000)]),
            (7, vec![(0, 255), (1, 254)]),
        ];
        let base = Base::build(3, documents.iter().map(|(id, list)| (*id, list.as_slice())));
        assert_eq!(postings(&base, 0), [(0, 1), (7, 255)]);
        assert_eq!(postings(&base, 1), [(7, 254)]);
        assert_eq!(postings(&base, 2), [(0, 3), (4, 1000)]);
        assert!(postings(&base, 3).is_empty());
        assert_eq!(base.len(2), 2);
        assert_eq!(base.len(9), 0);
        assert_eq!(base.posting_count(), 5);
    }

    #[test]
    fn delta_inserts_and_removes_through_both_layouts() {
        let mut delta = Delta::default();
        for id in 0..100 {
            delta.insert(5, id, id + 1);
        }
        assert_eq!(delta.len(5), 100);
        for id in 1..100 {
            delta.remove(5, id);
        }
        let mut left = Vec::new();
        delta.for_each(5, |id, tf| left.push((id, tf)));
        assert_eq!(left, [(0, 1)]);
        delta.remove(5, 0);
        assert_eq!(delta.len(5), 0);
        assert!(delta.terms.is_empty());
        // Removing what is not there changes nothing.
        delta.remove(6, 1);
        assert!(delta.terms.is_empty());
    }
}
