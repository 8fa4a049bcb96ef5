//! The store's calls for vectors (§15.4): read them beside the mirror,
//! store new ones. The vectors never take part in a write of entries: they
//! are stored after the entries they describe, by their own calls, and a
//! failure of those loses no entry.

use super::vectors::{self, Model, Row, Space, Vectors, hash::text_hash};
use super::{State, Store};
use crate::error::Result;
use crate::store::mirror::Mirror;

impl Store {
    /// Runs `read` on a fresh mirror and the vectors of `model`, both
    /// brought up to date.
    pub fn read_with_vectors<R>(
        &self,
        model: Model,
        read: impl FnOnce(&Mirror, &mut Space) -> R,
    ) -> Result<R> {
        let path = self.shared.path.clone();
        self.call(|state, call| {
            let State {
                medium,
                mirror,
                vectors,
                ..
            } = state;
            medium.refresh(mirror, call)?;
            let vectors = Vectors::for_model(vectors, model, path.as_deref());
            vectors.sync(medium.as_mut(), call)?;
            let mirror = mirror.as_ref().expect("a refreshed state has a mirror");
            Ok(read(mirror, &mut vectors.space))
        })
    }

    /// Stores `rows` (normalised vectors of `model`); a file that holds far
    /// more vectors than entries is compacted afterwards.
    pub fn put_vectors(&self, model: Model, rows: &[Row]) -> Result<()> {
        let path = self.shared.path.clone();
        self.call(|state, call| {
            let State {
                medium,
                mirror,
                vectors,
                ..
            } = state;
            medium.refresh(mirror, call)?;
            let vectors = Vectors::for_model(vectors, model, path.as_deref());
            vectors.append(medium.as_mut(), rows, call)?;
            let space = &vectors.space;
            let mirror = mirror.as_ref().expect("a refreshed state has a mirror");
            if space.rows + space.foreign + space.damaged > 2 * mirror.len() + 1024 {
                vectors.compact(&live_hashes(mirror), call)?;
            }
            Ok(())
        })
    }
}

/// The text hashes of every entry of `mirror`.
pub(crate) fn live_hashes(mirror: &Mirror) -> Vec<u64> {
    let mut buffer = Vec::new();
    mirror
        .iter()
        .map(|entry| text_hash(&entry.key, &entry.value, &mut buffer))
        .collect()
}

/// How many entries of `mirror` have a vector in `space`.
pub fn with_vector(mirror: &Mirror, space: &Space) -> usize {
    let mut buffer = Vec::new();
    mirror
        .iter()
        .filter(|entry| {
            space.row_of(text_hash(&entry.key, &entry.value, &mut buffer)) != vectors::space::NO_ROW
        })
        .count()
}
