//! One model's vectors in memory: a flat buffer of `f32` rows, found by
//! the hash of the entry text they were computed from.
//!
//! An entry's text has a *set* of vectors (§15.4): one for the default
//! `key + "\n" + value`, several when the embedder embeds several texts of
//! the entry (the fields of a framework's item), none when it embeds nothing
//! of it (the entry is done, not missing). A set's vectors are consecutive
//! rows.
//!
//! The buffer is filled without a copy per vector: the companion file is
//! read straight into it (its records are 4-byte words, the vector words
//! left in place), and the PostgreSQL rows are appended to it. A set is a
//! word offset into the buffer and a count; every stored vector is
//! normalised, so a dot product is a cosine.

use rustc_hash::FxHashMap;

/// The largest number of dimensions a vector may have.
pub const MAX_DIMS: u32 = 16_384;

/// The most vectors one entry's text may have.
pub const MAX_SET: u32 = 1024;

/// A model: the hash of its name and its number of dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Model {
    pub name_hash: u64,
    pub dims: u32,
}

pub struct Space {
    pub model: Model,
    /// Words as read from the source; vectors are `dims` words each.
    data: Vec<u32>,
    /// Text hash → the newest set of vectors of that text in `data`.
    by_hash: FxHashMap<u64, Set>,
    /// Records of this model read (superseded ones included).
    pub rows: usize,
    /// Records that could not be read: skipped, never served.
    pub damaged: usize,
    /// Intact records of other models (or of this name with other dims).
    pub foreign: usize,
    /// Bumped whenever a row is added or the space is cleared, so that a
    /// view's table of which entry has which row knows when it is stale.
    pub version: u64,
    /// The views' table of sets by entry (see `views::semantic`): kept
    /// here because it depends on both the entries and the rows.
    pub by_entry: Vec<Set>,
    pub by_entry_stamp: Option<(u64, u64, u64)>,
    /// A source's position: the newest change read (PostgreSQL's `seq`).
    pub(crate) source_seq: i64,
    /// The source's table exists (PostgreSQL).
    pub(crate) source_ready: bool,
}

/// The vectors of one text: `count` rows from word `at` of the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Set {
    pub at: u32,
    pub count: u32,
}

impl Set {
    /// "No vectors stored" (the text is missing), in [`Space::by_entry`].
    pub const MISSING: Set = Set {
        at: u32::MAX,
        count: 0,
    };

    pub fn is_missing(self) -> bool {
        self.at == u32::MAX
    }
}

impl Space {
    pub fn new(model: Model) -> Space {
        Space {
            model,
            data: Vec::new(),
            by_hash: FxHashMap::default(),
            rows: 0,
            damaged: 0,
            foreign: 0,
            version: 0,
            by_entry: Vec::new(),
            by_entry_stamp: None,
            source_seq: 0,
            source_ready: false,
        }
    }

    pub fn dims(&self) -> usize {
        self.model.dims as usize
    }

    /// Forgets every row (the source was replaced).
    pub fn clear(&mut self) {
        let model = self.model;
        let version = self.version + 1;
        *self = Space::new(model);
        self.version = version;
    }

    /// Room for `texts` more texts in the map.
    pub(crate) fn reserve(&mut self, texts: usize) {
        self.by_hash.reserve(texts);
    }

    /// The raw words, for a source that reads into them.
    pub(crate) fn data_mut(&mut self) -> &mut Vec<u32> {
        &mut self.data
    }

    pub(crate) fn data(&self) -> &[u32] {
        &self.data
    }

    /// Records the `count` vectors from word `at` of the buffer as
    /// `text_hash`'s set.
    pub(crate) fn index(&mut self, text_hash: u64, at: usize, count: u32) {
        debug_assert!(at + count as usize * self.dims() <= self.data.len());
        let set = Set {
            at: at as u32,
            count,
        };
        self.by_hash.insert(text_hash, set);
        self.rows += 1;
        self.version += 1;
    }

    /// Appends `vectors` (normalised, `dims` each, any number up to
    /// [`MAX_SET`]) as `text_hash`'s set.
    pub(crate) fn push(&mut self, text_hash: u64, vectors: &[f32]) {
        debug_assert_eq!(vectors.len() % self.dims(), 0);
        let at = self.data.len();
        self.data.extend(vectors.iter().map(|x| x.to_bits()));
        self.index(text_hash, at, (vectors.len() / self.dims()) as u32);
    }

    /// The set of `text_hash`, or [`Set::MISSING`].
    pub fn set_of(&self, text_hash: u64) -> Set {
        self.by_hash
            .get(&text_hash)
            .copied()
            .unwrap_or(Set::MISSING)
    }

    /// The vectors of `set` (from [`Space::set_of`]), one after the other.
    pub fn vectors(&self, set: Set) -> &[f32] {
        let at = set.at as usize;
        bytemuck::cast_slice(&self.data[at..at + set.count as usize * self.dims()])
    }

    /// The vectors of `text_hash`, one after the other (none for a text
    /// embedded as nothing), when its set is stored.
    pub fn get(&self, text_hash: u64) -> Option<&[f32]> {
        let set = self.set_of(text_hash);
        (!set.is_missing()).then(|| self.vectors(set))
    }

    /// How many texts have a set.
    pub fn texts(&self) -> usize {
        self.by_hash.len()
    }

    /// Every `(text hash, vectors)` of the space.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &[f32])> {
        self.by_hash
            .iter()
            .map(|(&hash, &set)| (hash, self.vectors(set)))
    }
}

/// Normalises `vector` to length 1 in place; `false` (and the vector left
/// as it was) when it holds a NaN or an infinity, or is all zeros, so that
/// no such vector is ever stored or searched with.
pub fn normalise(vector: &mut [f32]) -> bool {
    if !vector.iter().all(|x| x.is_finite()) {
        return false;
    }
    let norm = vector
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if !norm.is_normal() {
        return false;
    }
    for x in vector.iter_mut() {
        *x = (f64::from(*x) / norm) as f32;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_found_by_text_and_replaced_by_newer_ones() {
        let mut space = Space::new(Model {
            name_hash: 7,
            dims: 2,
        });
        space.push(11, &[1.0, 0.0]);
        space.push(12, &[0.0, 1.0]);
        space.push(11, &[0.6, 0.8]);
        assert_eq!(space.get(11), Some(&[0.6f32, 0.8][..]));
        assert_eq!(space.get(12), Some(&[0.0f32, 1.0][..]));
        assert_eq!(space.get(13), None);
        assert_eq!((space.rows, space.texts()), (3, 2));
    }

    #[test]
    fn a_set_holds_any_number_of_vectors_and_none_is_not_missing() {
        let mut space = Space::new(Model {
            name_hash: 7,
            dims: 2,
        });
        space.push(11, &[1.0, 0.0, 0.0, 1.0]);
        space.push(12, &[]);
        assert_eq!(space.set_of(11).count, 2);
        assert_eq!(space.get(11), Some(&[1.0f32, 0.0, 0.0, 1.0][..]));
        assert_eq!(space.get(12), Some(&[][..]));
        assert!(!space.set_of(12).is_missing());
        assert!(space.set_of(13).is_missing());
    }

    #[test]
    fn normalise_refuses_what_cannot_be_a_direction() {
        let mut v = [3.0f32, 4.0];
        assert!(normalise(&mut v));
        assert!((v[0] - 0.6).abs() < 1e-7 && (v[1] - 0.8).abs() < 1e-7);
        assert!(!normalise(&mut [f32::NAN, 1.0]));
        assert!(!normalise(&mut [f32::INFINITY, 1.0]));
        assert!(!normalise(&mut [0.0, 0.0]));
    }
}
