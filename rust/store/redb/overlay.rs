//! Opening a store file so that nothing is ever written to it: an
//! in-memory overlay under redb.
//!
//! redb repairs a file left by a killed writer when it opens it, and checks
//! page checksums (`check_integrity`) by rewriting allocator state: both
//! write. A reader, `doctor` and `repair` must not change a byte of a file
//! that may be damaged, nor need free disk space for a copy, so they open
//! the file through [`OverlayBackend`]: reads come from the file (opened
//! read-only), and every write redb makes lands in memory over it.
//!
//! A database opened so is wrapped in [`InMemory`], which never closes it:
//! redb's close commits, walking the freed-page tree, and on a damaged one
//! redb panics and panics again while unwinding, which aborts the process
//! (no `catch_unwind` helps). Nothing of such a database is meant to last,
//! so it is forgotten instead, after the file (and its lock) and the
//! overlay's bytes are let go: what stays behind is redb's bookkeeping and
//! at most its page cache (as small as the caller chose).
//!
//! Other processes are kept out by a shared lock on the file (`flock`),
//! which a redb writer's exclusive lock conflicts with (redb takes the
//! whole-file lock of its older versions too); readers of the file, which
//! take shared locks, are not held up. redb's own byte-range locks are not
//! offered ([`redb::StorageBackend`]'s defaults: unsupported), since this
//! database is private to the caller.

use std::collections::BTreeMap;
use std::fs::{File, TryLockError};
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use redb::{Database, StorageBackend};

use crate::error::{Result, StoreError};
use crate::store::redb::change_ring::ChangeRing;
use crate::store::redb::errors::AtStore;
use crate::store::redb::lease;

/// The unit the overlay keeps written bytes in.
const BLOCK: u64 = 4096;
/// See [`OverlayBackend::force_recovery`].
const GOD_BYTE: usize = 9;
const RECOVERY_REQUIRED: u8 = 2;
const TWO_PHASE_COMMIT: u8 = 4;

#[derive(Debug)]
pub(crate) struct OverlayBackend {
    state: Arc<Mutex<Overlay>>,
}

#[derive(Debug)]
struct Overlay {
    /// The store file, read-only, holding the shared lock; `None` once let
    /// go ([`InMemory`]).
    file: Option<File>,
    /// The length redb sees.
    len: u64,
    /// The length of the file underneath.
    file_len: u64,
    /// Blocks written by redb, by block number, each `BLOCK` bytes.
    blocks: BTreeMap<u64, Box<[u8]>>,
}

impl OverlayBackend {
    /// Opens `path` read-only and takes a shared lock on it, waiting (like a
    /// writer would) until `deadline` while a writer holds it.
    pub(crate) fn open(
        path: &Path,
        deadline: Instant,
        started: Instant,
        ring: &mut ChangeRing,
    ) -> Result<OverlayBackend> {
        let file = lease::open_with_retry(path, deadline, started, ring, || {
            let file = File::open(path).map_err(redb::StorageError::from)?;
            match file.try_lock_shared() {
                Ok(()) => Ok(file),
                Err(TryLockError::WouldBlock) => Err(redb::DatabaseError::DatabaseAlreadyOpen),
                Err(TryLockError::Error(error)) => Err(redb::StorageError::from(error).into()),
            }
        })?
        .at(path)?;
        let file_len = file.metadata().map_err(|e| StoreError::io(path, e))?.len();
        Ok(OverlayBackend {
            state: Arc::new(Mutex::new(Overlay {
                file: Some(file),
                len: file_len,
                file_len,
                blocks: BTreeMap::new(),
            })),
        })
    }

    /// Opens redb over this backend (`open`: a `redb::Builder` call), as an
    /// [`InMemory`] database that is never closed.
    pub(crate) fn database<E>(
        self,
        open: impl FnOnce(OverlayBackend) -> std::result::Result<Database, E>,
    ) -> std::result::Result<InMemory, E> {
        let state = self.state.clone();
        let db = open(self)?;
        Ok(InMemory {
            db: ManuallyDrop::new(db),
            state,
        })
    }

    /// Makes redb take the file for one left by a killed writer, so that
    /// opening it runs redb's own recovery, here in memory: the newest
    /// commit is checked (the one before used should it fail) and the
    /// allocator state is rebuilt from the trees instead of read. For
    /// `membolt repair`, when the file does not open as it is.
    pub(crate) fn force_recovery(&self) -> std::io::Result<()> {
        let mut overlay = self.overlay();
        let mut header = overlay.block(0)?;
        // redb 4's file header: byte 9 holds its flags; 2 = "recovery
        // required", 4 = "the newest commit was two-phase" (with it, a
        // newest commit failing its checksums is refused outright rather
        // than passed over for the one before).
        header[GOD_BYTE] = (header[GOD_BYTE] | RECOVERY_REQUIRED) & !TWO_PHASE_COMMIT;
        overlay.blocks.insert(0, header);
        Ok(())
    }

    /// Whether both of the file's commit slots point at the same tree of
    /// tables: then falling back from the newest commit to the one before
    /// (see [`OverlayBackend::force_recovery`]) loses no record.
    pub(crate) fn commits_share_their_tables(&self) -> std::io::Result<bool> {
        let header = self.overlay().block(0)?;
        // redb 4's file header: commit slots of 128 bytes at 64 and 192;
        // in each, byte 1 says whether the tables' root exists, and bytes
        // 8..40 are that root (page number, checksum, length).
        let tables = |slot: usize| {
            let at = 64 + 128 * slot;
            (header[at + 1], &header[at + 8..at + 40])
        };
        Ok(tables(0) == tables(1))
    }

    fn overlay(&self) -> std::sync::MutexGuard<'_, Overlay> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Overlay {
    /// The file underneath, unless it was let go.
    fn file(&self) -> std::io::Result<&File> {
        self.file
            .as_ref()
            .ok_or_else(|| std::io::Error::other("the store file was let go"))
    }

    /// The current bytes of block `number`: written ones, else the file's
    /// (zeros past its end).
    fn block(&self, number: u64) -> std::io::Result<Box<[u8]>> {
        if let Some(block) = self.blocks.get(&number) {
            return Ok(block.clone());
        }
        let mut block = vec![0u8; BLOCK as usize].into_boxed_slice();
        let start = number * BLOCK;
        if start < self.file_len {
            let wanted = (self.file_len - start).min(BLOCK) as usize;
            self.file()?.read_exact_at(&mut block[..wanted], start)?;
        }
        Ok(block)
    }
}

impl StorageBackend for OverlayBackend {
    fn len(&self) -> std::io::Result<u64> {
        Ok(self.overlay().len)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
        let overlay = self.overlay();
        let end = offset + out.len() as u64;
        if end > overlay.len {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        }
        let written_in_range = overlay
            .blocks
            .range(offset / BLOCK..end.div_ceil(BLOCK))
            .next()
            .is_some();
        if !written_in_range && end <= overlay.file_len {
            // The common case: untouched bytes, straight from the file.
            return overlay.file()?.read_exact_at(out, offset);
        }
        let mut at = offset;
        while at < end {
            let number = at / BLOCK;
            let block = overlay.block(number)?;
            let from = (at - number * BLOCK) as usize;
            let count = ((end - at) as usize).min(BLOCK as usize - from);
            let done = (at - offset) as usize;
            out[done..done + count].copy_from_slice(&block[from..from + count]);
            at += count as u64;
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> std::io::Result<()> {
        let mut overlay = self.overlay();
        if len < overlay.len {
            // Bytes past the new end read as zeros if the file grows again.
            let first_gone = len.div_ceil(BLOCK);
            overlay.blocks.split_off(&first_gone);
            if !len.is_multiple_of(BLOCK) {
                let number = len / BLOCK;
                let mut block = overlay.block(number)?;
                block[(len % BLOCK) as usize..].fill(0);
                overlay.blocks.insert(number, block);
            }
            overlay.file_len = overlay.file_len.min(len);
        }
        overlay.len = len;
        Ok(())
    }

    fn sync_data(&self) -> std::io::Result<()> {
        Ok(()) // nothing of it is meant to last
    }

    fn write(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        let mut overlay = self.overlay();
        let end = offset + data.len() as u64;
        let mut at = offset;
        while at < end {
            let number = at / BLOCK;
            let mut block = overlay.block(number)?;
            let from = (at - number * BLOCK) as usize;
            let count = ((end - at) as usize).min(BLOCK as usize - from);
            let done = (at - offset) as usize;
            block[from..from + count].copy_from_slice(&data[done..done + count]);
            overlay.blocks.insert(number, block);
            at += count as u64;
        }
        overlay.len = overlay.len.max(end);
        Ok(())
    }
}

/// A redb database over an [`OverlayBackend`], never closed (see the module
/// docs): dropping it lets the file and the overlay's bytes go and forgets
/// the rest.
pub(crate) struct InMemory {
    db: ManuallyDrop<Database>,
    state: Arc<Mutex<Overlay>>,
}

impl Deref for InMemory {
    type Target = Database;

    fn deref(&self) -> &Database {
        &self.db
    }
}

impl DerefMut for InMemory {
    fn deref_mut(&mut self) -> &mut Database {
        &mut self.db
    }
}

impl Drop for InMemory {
    fn drop(&mut self) {
        let mut overlay = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        overlay.file = None; // closes it: the shared lock ends
        overlay.blocks = BTreeMap::new();
        // `db` stays in its `ManuallyDrop`: never closed, never freed.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redb::format::ENTRIES;
    use ::redb::ReadableDatabase;

    #[test]
    fn redb_writes_land_in_memory_and_the_file_stays_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.redb");
        {
            let db = ::redb::Database::create(&path).unwrap();
            let wtx = db.begin_write().unwrap();
            wtx.open_table(ENTRIES)
                .unwrap()
                .insert("k", b"on disk".as_slice())
                .unwrap();
            wtx.commit().unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let now = Instant::now();
        let mut ring = ChangeRing::new(&path);
        let backend = OverlayBackend::open(&path, now, now, &mut ring).unwrap();
        let db = ::redb::Builder::new().create_with_backend(backend).unwrap();
        let wtx = db.begin_write().unwrap();
        wtx.open_table(ENTRIES)
            .unwrap()
            .insert("k", b"in memory only".as_slice())
            .unwrap();
        wtx.commit().unwrap();
        let rtx = db.begin_read().unwrap();
        let table = rtx.open_table(ENTRIES).unwrap();
        assert_eq!(table.get("k").unwrap().unwrap().value(), b"in memory only");
        drop((table, rtx, db));
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn a_database_in_memory_lets_the_file_and_its_lock_go_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.redb");
        drop(::redb::Database::create(&path).unwrap());
        let now = Instant::now();
        let mut ring = ChangeRing::new(&path);
        let backend = OverlayBackend::open(&path, now, now, &mut ring).unwrap();
        let db = backend
            .database(|backend| ::redb::Builder::new().create_with_backend(backend))
            .unwrap();
        let other = File::open(&path).unwrap();
        assert!(other.try_lock().is_err(), "the shared lock is held");
        drop(db);
        assert!(
            other.try_lock().is_ok(),
            "the shared lock ended with the database"
        );
    }
}
