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
//! Other processes are kept out by a shared lock on the file (`flock`),
//! which a redb writer's exclusive lock conflicts with (redb takes the
//! whole-file lock of its older versions too); readers of the file, which
//! take shared locks, are not held up. redb's own byte-range locks are not
//! offered ([`redb::StorageBackend`]'s defaults: unsupported), since this
//! database is private to the caller.

use std::collections::BTreeMap;
use std::fs::{File, TryLockError};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use redb::StorageBackend;

use crate::error::{AtStore, Result, StoreError};
use crate::store::redb::change_ring::ChangeRing;
use crate::store::redb::lease;

/// The unit the overlay keeps written bytes in.
const BLOCK: u64 = 4096;

#[derive(Debug)]
pub(crate) struct OverlayBackend {
    /// The store file, read-only, holding the shared lock.
    file: File,
    state: Mutex<Overlay>,
}

#[derive(Debug)]
struct Overlay {
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
            file,
            state: Mutex::new(Overlay {
                len: file_len,
                file_len,
                blocks: BTreeMap::new(),
            }),
        })
    }

    fn overlay(&self) -> std::sync::MutexGuard<'_, Overlay> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Overlay {
    /// The current bytes of block `number`: written ones, else the file's
    /// (zeros past its end).
    fn block(&self, file: &File, number: u64) -> std::io::Result<Box<[u8]>> {
        if let Some(block) = self.blocks.get(&number) {
            return Ok(block.clone());
        }
        let mut block = vec![0u8; BLOCK as usize].into_boxed_slice();
        let start = number * BLOCK;
        if start < self.file_len {
            let wanted = (self.file_len - start).min(BLOCK) as usize;
            file.read_exact_at(&mut block[..wanted], start)?;
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
            return self.file.read_exact_at(out, offset);
        }
        let mut at = offset;
        while at < end {
            let number = at / BLOCK;
            let block = overlay.block(&self.file, number)?;
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
                let mut block = overlay.block(&self.file, number)?;
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
            let mut block = overlay.block(&self.file, number)?;
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
}
