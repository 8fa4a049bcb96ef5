//! The store's calls for vectors (§15.4): read them beside the mirror,
//! store new ones. The vectors never take part in a write of entries: they
//! are stored after the entries they describe, by their own calls, and a
//! failure of those loses no entry.

use super::vectors::file::COMPACT_SLACK;
use super::vectors::{Model, Row, Space, Vectors, hash::text_hash};
use super::{State, Store};
use crate::error::Result;
use crate::store::mirror::Mirror;

impl Store {
    /// Runs `read` on a fresh mirror and the vectors of `model`, both
    /// brought up to date. `warm` runs on the fresh mirror first: when the
    /// vectors are read from a companion file from its start (a new
    /// process), they are read on another thread meanwhile, so that a
    /// view's first build of its indexes and the read of the vectors
    /// overlap.
    pub fn read_with_vectors<R>(
        &self,
        model: Model,
        warm: impl FnOnce(&Mirror) + Send,
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
            let vectors = Vectors::for_model(vectors, model, path.as_deref());
            if vectors.loads_a_file() {
                std::thread::scope(|scope| {
                    let loading = scope.spawn(|| vectors.sync_file(call));
                    let refreshed = medium.refresh(mirror, call);
                    if refreshed.is_ok() {
                        warm(mirror.as_ref().expect("a refreshed state has a mirror"));
                    }
                    let loaded = loading.join().expect("the vectors' thread");
                    refreshed.and(loaded)
                })?;
            } else {
                medium.refresh(mirror, call)?;
                vectors.sync(medium.as_mut(), call)?;
            }
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
            let vectors = Vectors::for_model(vectors, model, path.as_deref());
            vectors.append(medium.as_mut(), rows, call)?;
            // Compaction is decided on the mirror as it is (a count), and
            // done on the refreshed one.
            let space = &vectors.space;
            let records = space.rows + space.foreign + space.damaged;
            if mirror
                .as_ref()
                .is_some_and(|m| records > 2 * m.len() + COMPACT_SLACK)
            {
                medium.refresh(mirror, call)?;
                let keep = live_hashes(mirror.as_ref().expect("refreshed"));
                vectors.compact(&keep, call)?;
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

/// How many entries of `mirror` have their set of vectors in `space`
/// (an empty set counts: the embedder embeds nothing of that entry).
pub fn with_vector(mirror: &Mirror, space: &Space) -> usize {
    let mut buffer = Vec::new();
    mirror
        .iter()
        .filter(|entry| {
            !space
                .set_of(text_hash(&entry.key, &entry.value, &mut buffer))
                .is_missing()
        })
        .count()
}
