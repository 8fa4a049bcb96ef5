//! Vectors of the entries, for recall by meaning (§15.4): a cache kept
//! beside the entries, never part of them.
//!
//! ```text
//! mod.rs    the source trait and the per-store state (a space and where it
//!           is read from and written to)
//! hash.rs   the stable 64-bit hashes naming a model and an entry's text
//! space.rs  the vectors of one model in memory: flat f32 rows by text hash
//! file.rs   the redb medium's companion file `<store>.vectors`
//! ```
//! (The PostgreSQL medium keeps them in a table of its own:
//! `store/postgres/vectors.rs`.)
//!
//! # Why a cache beside the entries
//! A vector is a pure function of the model and of the entry's text
//! (`key + "\n" + value`), so it is stored under the hash of that text
//! ([`hash::text_hash`]) and the model's name ([`hash::model_hash`]), not
//! inside the entry's record: the write path of the entries (the journal,
//! the change sets, the checksummed rows) stays exactly as it was, a save
//! never waits for a model, and a vector can never be served for a text it
//! was not computed from: an entry whose text changed has a new hash, so
//! its old vector is simply not found (it is *stale*, and unused). What
//! is lost (a crash, damage, a change of model) is computed again.

pub mod file;
pub mod hash;
pub mod space;

use crate::error::Result;
use crate::store::medium::{Call, Medium};

pub use space::{MAX_DIMS, MAX_SET, Model, Set, Space};

/// One entry text's set of vectors to store: the entry's key (the
/// PostgreSQL table is keyed by it), the hash of the text they were
/// computed from, and the vectors themselves, each normalised to length 1,
/// one after the other (none, one or several: `space.rs`).
pub struct Row {
    pub key: String,
    pub text_hash: u64,
    pub vectors: Vec<f32>,
}

/// Where a medium keeps its vectors.
pub trait VectorSource {
    /// Brings `space` up to date with every vector stored before the call,
    /// at a cost proportional to what was added.
    fn sync(&mut self, space: &mut Space, call: &Call) -> Result<()>;

    /// Stores `rows` (vectors of `space`'s model), then syncs `space`.
    fn append(&mut self, space: &mut Space, rows: &[Row], call: &Call) -> Result<()>;
}

/// A store's vectors in this process: one model's space and, for a store
/// kept in a file, its companion file (a medium with a source of its own,
/// PostgreSQL, answers through [`Medium::vector_source`]).
pub struct Vectors {
    pub space: Space,
    file: Option<file::CompanionFile>,
}

impl Vectors {
    /// The state for `model`, made anew when `current` holds another one.
    pub fn for_model<'a>(
        current: &'a mut Option<Vectors>,
        model: Model,
        store_path: Option<&std::path::Path>,
    ) -> &'a mut Vectors {
        if current.as_ref().is_none_or(|v| v.space.model != model) {
            *current = Some(Vectors {
                space: Space::new(model),
                file: store_path.map(file::CompanionFile::beside),
            });
        }
        current.as_mut().expect("just set")
    }

    /// Brings the space up to date.
    pub fn sync(&mut self, medium: &mut dyn Medium, call: &Call) -> Result<()> {
        let Vectors { space, file } = self;
        match file {
            Some(file) => file.sync(space, call),
            None => medium
                .vector_source()
                .map_or(Ok(()), |source| source.sync(space, call)),
        }
    }

    /// Stores `rows`, then brings the space up to date.
    pub fn append(&mut self, medium: &mut dyn Medium, rows: &[Row], call: &Call) -> Result<()> {
        let Vectors { space, file } = self;
        match file {
            Some(file) => file.append(space, rows, call),
            None => medium
                .vector_source()
                .map_or(Ok(()), |source| source.append(space, rows, call)),
        }
    }

    /// Whether the next sync reads a companion file from its start (a new
    /// process's first search with vectors), the one worth a thread.
    pub fn loads_a_file(&self) -> bool {
        self.file.is_some() && self.space.data().is_empty()
    }

    /// Brings the space up to date from the companion file, for a store
    /// kept in one (nothing otherwise).
    pub fn sync_file(&mut self, call: &Call) -> Result<()> {
        let Vectors { space, file } = self;
        file.as_mut().map_or(Ok(()), |file| file.sync(space, call))
    }

    /// How many stored vectors could not be read.
    pub fn damaged(&self) -> usize {
        self.space.damaged
    }

    /// Rewrites the companion file with only the vectors of `keep` (text
    /// hashes), when it holds far more than that; the PostgreSQL table
    /// replaces a key's vector in place and needs no compaction.
    pub fn compact(&mut self, keep: &[u64], call: &Call) -> Result<bool> {
        match &mut self.file {
            Some(file) => file.compact(&mut self.space, keep, call),
            None => Ok(false),
        }
    }
}
