//! The change ring: the `<store>.sync` sidecar file, through which processes
//! sharing a store learn which keys the others changed (without reading the
//! whole store, and without a second redb table written by every commit),
//! and ask the holder of the write lease to let go (the want flag).
//!
//! ```text
//! offset  size
//!      0     8  magic "mbsync01"
//!      8     1  want flag: a process waiting for the lock sets it; the holder
//!               lets go at the end of its current call and clears it
//!     16     8  ring id: random, chosen when the sidecar is (re)initialised
//!     24     8  seq: number of change records ever appended
//!     32     8  head: number of ring bytes ever written
//!     64  256 KiB ring of records: seq (u64) | key length (u32) | key bytes
//!  256 KiB
//!    + 64     68  the acknowledgement mark of the lease (see `acknowledged.rs`)
//! ```
//!
//! Invariants that make it safe:
//! * Records, seq and head are written only by the holder of redb's write
//!   lock, *before* it commits; readers parse them only while holding a redb
//!   handle (which excludes writers). So a reader never sees a half-written
//!   record, and a commit is always announced before it becomes visible.
//! * A missing or unreadable sidecar is initialised (an empty ring with a new
//!   ring id) by the next writer, when it takes the write lease: no writer
//!   runs meanwhile, so "nothing changed since" is true. A reader never
//!   creates or initialises it (§14.2: readers create no file): it then
//!   reloads the store on each call until a writer has made a ring.
//! * A record only says "this key may have changed": the reader re-reads the
//!   key from redb. A writer that dies between announcing and committing
//!   costs a needless re-read, never a wrong mirror.
//! * The sidecar is never flushed to disk: it is shared through the page
//!   cache among live processes, and after a machine crash no mirror survives
//!   anyway. If it is lost, damaged or overwritten past what a reader has
//!   seen, the reader rebuilds its mirror from redb.
//! * The lock-free freshness check (`position()` equal to the one the mirror
//!   was built at) is sound because seq moves before every commit.
//! * Every look from outside a lease checks by path that the open sidecar is
//!   still the one on disk (a deleted or replaced sidecar is reopened). While
//!   a process holds the write lease, the sidecar it checked when it took the
//!   lease is used unchecked (`append`, `wanted`, `clear_want`): membolt never
//!   replaces a sidecar, and a new one, should someone delete it meanwhile,
//!   can only be initialised by a writer, i.e. after the lease; its
//!   new ring id then sends every reader (this process included) to a full
//!   refresh. This saves two `stat` calls per save.
//! * The sidecar is opened with `O_NOFOLLOW` and only when it is a regular
//!   file (§14.2): a symbolic link planted in its place is never followed
//!   (a save would otherwise write into whatever it points at); the store
//!   then works without a ring, every read reloading it.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::store::redb::acknowledged::{self, Mark};

/// Appended to the store's file name to name the sidecar.
pub(crate) const SUFFIX: &str = ".sync";
const MAGIC: &[u8; 8] = b"mbsync01";
const WANT_OFFSET: u64 = 8;
const POSITION_OFFSET: u64 = 16;
const HEADER_LEN: u64 = 64;
/// Ring capacity: about 6,000 changes of typical keys, far more than an
/// interactive process falls behind by between two calls; one that falls
/// further behind (a bulk import in between) rebuilds its mirror instead.
/// The file is made with `set_len`, so only the ring bytes written take
/// disk space.
pub(crate) const RING_LEN: u64 = 256 << 10;
const RECORD_HEADER: usize = 12;
/// Where the acknowledgement mark lies: past the ring, so that versions
/// that do not know it never read or overwrite it.
const MARK_OFFSET: u64 = HEADER_LEN + RING_LEN;

/// Where the change log stood when a mirror was last brought up to date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Position {
    pub(crate) ring_id: u64,
    pub(crate) seq: u64,
    pub(crate) head: u64,
}

/// The change ring of one store file.
pub(crate) struct ChangeRing {
    path: PathBuf,
    file: Option<File>,
    /// Inode of `file`: a sidecar deleted or replaced behind our back must
    /// not keep us reading the old one.
    inode: u64,
}

impl ChangeRing {
    pub(crate) fn new(store_path: &Path) -> Self {
        let mut name = store_path.as_os_str().to_owned();
        name.push(SUFFIX);
        ChangeRing {
            path: PathBuf::from(name),
            file: None,
            inode: 0,
        }
    }

    /// The sidecar, if it exists: open for reading and writing, or for
    /// reading only when the caller may not write it. Looking never creates
    /// it (only a writer does, see [`ChangeRing::initialise`]).
    fn file(&mut self) -> Option<&File> {
        let on_disk = std::fs::symlink_metadata(&self.path).ok().map(|m| m.ino());
        if self.file.is_none() || on_disk != Some(self.inode) {
            let open = |write: bool| {
                OpenOptions::new()
                    .read(true)
                    .write(write)
                    .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
                    .open(&self.path)
                    .ok()
                    .filter(|file| file.metadata().is_ok_and(|meta| meta.is_file()))
            };
            self.file = open(true).or_else(|| open(false));
            self.inode = match &self.file {
                Some(file) => file.metadata().ok()?.ino(),
                None => 0,
            };
        }
        self.file.as_ref()
    }

    /// The sidecar as opened when the lease was taken (see the module docs:
    /// only for the holder of the write lease).
    fn leased_file(&mut self) -> Option<&File> {
        if self.file.is_none() {
            return self.file();
        }
        self.file.as_ref()
    }

    /// Whether the sidecar file exists.
    pub(crate) fn exists(&self) -> bool {
        self.path.exists()
    }

    /// The current position, or `None` when the sidecar is missing, not yet
    /// initialised, or unreadable (every such case means "refresh").
    pub(crate) fn position(&mut self) -> Option<Position> {
        let mut header = [0u8; 40];
        let file = self.file()?;
        if file.read_at(&mut header, 0).ok()? != header.len() || &header[..8] != MAGIC {
            return None;
        }
        let word = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().expect("8 bytes"));
        let position = Position {
            ring_id: word(16),
            seq: word(24),
            head: word(32),
        };
        (position.ring_id != 0).then_some(position)
    }

    /// Makes sure the sidecar exists and is initialised; called by the
    /// holder of the write lease. Returns the position now on file.
    pub(crate) fn initialise(&mut self) -> Option<Position> {
        if let Some(position) = self.position() {
            return Some(position);
        }
        let created = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
            .open(&self.path)
            .ok()
            .filter(|file| file.metadata().is_ok_and(|meta| meta.is_file()))?;
        drop(created);
        let file = self.file()?;
        // Zeros in the mark's place too: no mark is a valid one.
        file.set_len(HEADER_LEN + RING_LEN).ok()?;
        file.set_len(MARK_OFFSET + acknowledged::MARK_LEN as u64)
            .ok()?;
        self.restart()
    }

    /// Starts an empty ring with a new ring id (by the holder of the write
    /// lease): every process that saw the old one rebuilds instead of
    /// trusting its numbers. The acknowledgement mark is left as it is.
    pub(crate) fn restart(&mut self) -> Option<Position> {
        let ring_id = crate::random::random_u64() | 1;
        let mut header = [0u8; HEADER_LEN as usize];
        header[..8].copy_from_slice(MAGIC);
        header[16..24].copy_from_slice(&ring_id.to_le_bytes());
        self.file()?.write_all_at(&header, 0).ok()?;
        self.position()
    }

    /// Writes the whole acknowledgement mark (by the holder of the write
    /// lease; see `acknowledged.rs`). Returns whether it is on file.
    pub(crate) fn write_mark(&mut self, mark: &Mark) -> bool {
        self.leased_file()
            .is_some_and(|file| file.write_all_at(&mark.encode(), MARK_OFFSET).is_ok())
    }

    /// Moves the mark's acknowledged number to `mark`'s: one small write
    /// into the page cache per save (the number and the checksum, which
    /// lie together at the end of the mark).
    pub(crate) fn write_acknowledged(&mut self, mark: &Mark) -> bool {
        let (at, bytes) = mark.encode_acknowledged();
        self.leased_file()
            .is_some_and(|file| file.write_all_at(&bytes, MARK_OFFSET + at as u64).is_ok())
    }

    /// The acknowledgement mark on file, if any whole one is there.
    pub(crate) fn mark(&mut self) -> Option<Mark> {
        let mut bytes = [0u8; acknowledged::MARK_LEN];
        let file = self.file()?;
        file.read_exact_at(&mut bytes, MARK_OFFSET).ok()?;
        Mark::decode(&bytes)
    }

    /// Appends one record per key after `from` (the current position, which
    /// the caller holds the write lock for) and returns the new position.
    pub(crate) fn append<'k>(
        &mut self,
        from: Position,
        keys: impl IntoIterator<Item = &'k str>,
    ) -> Option<Position> {
        let mut records = Vec::new();
        let mut seq = from.seq;
        for key in keys {
            seq += 1;
            records.extend_from_slice(&seq.to_le_bytes());
            records.extend_from_slice(&(key.len() as u32).to_le_bytes());
            records.extend_from_slice(key.as_bytes());
        }
        let file = self.leased_file()?;
        write_ring(file, from.head, &records)?;
        let to = Position {
            ring_id: from.ring_id,
            seq,
            head: from.head + records.len() as u64,
        };
        let mut position = [0u8; 24];
        position[..8].copy_from_slice(&to.ring_id.to_le_bytes());
        position[8..16].copy_from_slice(&to.seq.to_le_bytes());
        position[16..24].copy_from_slice(&to.head.to_le_bytes());
        file.write_all_at(&position, POSITION_OFFSET).ok()?;
        Some(to)
    }

    /// The keys changed between two positions, or `None` when the ring can
    /// no longer tell (another ring, overwritten, damaged): rebuild instead.
    pub(crate) fn changed_keys(&mut self, since: Position, now: Position) -> Option<Vec<String>> {
        if since.ring_id != now.ring_id || now.seq < since.seq || now.head < since.head {
            return None;
        }
        let span = now.head - since.head;
        if span > RING_LEN {
            return None;
        }
        let mut bytes = vec![0u8; span as usize];
        read_ring(self.file()?, since.head, &mut bytes)?;
        let mut keys = Vec::new();
        let mut expected = since.seq;
        let mut at = 0;
        while at < bytes.len() {
            let header = bytes.get(at..at + RECORD_HEADER)?;
            let seq = u64::from_le_bytes(header[..8].try_into().ok()?);
            let len = u32::from_le_bytes(header[8..].try_into().ok()?) as usize;
            expected += 1;
            if seq != expected {
                return None;
            }
            let key = bytes.get(at + RECORD_HEADER..at + RECORD_HEADER + len)?;
            keys.push(String::from_utf8(key.to_vec()).ok()?);
            at += RECORD_HEADER + len;
        }
        (expected == now.seq).then_some(keys)
    }

    /// Whether another process is waiting for the lock (asked by the holder
    /// of the write lease).
    pub(crate) fn wanted(&mut self) -> bool {
        let mut flag = [0u8; 1];
        self.leased_file()
            .is_some_and(|f| matches!(f.read_at(&mut flag, WANT_OFFSET), Ok(1)) && flag[0] != 0)
    }

    pub(crate) fn raise_want(&mut self) {
        if let Some(file) = self.file() {
            let _ = file.write_all_at(&[1], WANT_OFFSET);
        }
    }

    /// Clears the want flag (by the holder of the write lease).
    pub(crate) fn clear_want(&mut self) {
        if let Some(file) = self.leased_file() {
            let _ = file.write_all_at(&[0], WANT_OFFSET);
        }
    }
}

/// Writes `bytes` at ring offset `head`, wrapping at the end of the ring.
fn write_ring(file: &File, head: u64, bytes: &[u8]) -> Option<()> {
    let mut done = 0;
    while done < bytes.len() {
        let offset = (head + done as u64) % RING_LEN;
        let room = (RING_LEN - offset) as usize;
        let chunk = &bytes[done..bytes.len().min(done + room)];
        file.write_all_at(chunk, HEADER_LEN + offset).ok()?;
        done += chunk.len();
    }
    Some(())
}

fn read_ring(file: &File, head: u64, bytes: &mut [u8]) -> Option<()> {
    let mut done = 0;
    while done < bytes.len() {
        let offset = (head + done as u64) % RING_LEN;
        let room = (RING_LEN - offset) as usize;
        let end = bytes.len().min(done + room);
        file.read_exact_at(&mut bytes[done..end], HEADER_LEN + offset)
            .ok()?;
        done = end;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sidecar() -> (tempfile::TempDir, ChangeRing) {
        let dir = tempfile::tempdir().unwrap();
        let sync = ChangeRing::new(&dir.path().join("memory.redb"));
        (dir, sync)
    }

    #[test]
    fn missing_sidecar_has_no_position_until_initialised() {
        let (_dir, mut sync) = sidecar();
        assert_eq!(sync.position(), None);
        let start = sync.initialise().unwrap();
        assert_eq!(sync.position(), Some(start));
        assert_eq!(
            sync.initialise(),
            Some(start),
            "initialising twice keeps the ring"
        );
    }

    #[test]
    fn appended_keys_are_read_back_in_order() {
        let (_dir, mut sync) = sidecar();
        let start = sync.initialise().unwrap();
        let middle = sync.append(start, ["a", "ключ"]).unwrap();
        let end = sync.append(middle, ["b"]).unwrap();
        assert_eq!(sync.position(), Some(end));
        assert_eq!(sync.changed_keys(start, end).unwrap(), ["a", "ключ", "b"]);
        assert_eq!(sync.changed_keys(middle, end).unwrap(), ["b"]);
        assert_eq!(sync.changed_keys(end, end).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn wrapping_works_and_overwritten_history_is_refused() {
        let (_dir, mut sync) = sidecar();
        let start = sync.initialise().unwrap();
        let key = "k".repeat(1000);
        let mut position = start;
        let mut recent = position;
        for i in 0..2000 {
            if i == 1990 {
                recent = position;
            }
            position = sync.append(position, [key.as_str()]).unwrap();
        }
        assert!(position.head > RING_LEN, "the ring wrapped");
        assert_eq!(sync.changed_keys(recent, position).unwrap().len(), 10);
        assert!(sync.changed_keys(start, position).is_none());
    }

    #[test]
    fn another_ring_or_damage_means_rebuild() {
        let (dir, mut sync) = sidecar();
        let start = sync.initialise().unwrap();
        let end = sync.append(start, ["a"]).unwrap();
        std::fs::remove_file(dir.path().join("memory.redb.sync")).unwrap();
        let mut fresh = ChangeRing::new(&dir.path().join("memory.redb"));
        let other = fresh.initialise().unwrap();
        assert!(fresh.changed_keys(end, other).is_none());

        // A record whose sequence number does not follow is damage.
        let moved = fresh.append(other, ["x"]).unwrap();
        let file = fresh.file().unwrap();
        file.write_all_at(&99u64.to_le_bytes(), HEADER_LEN).unwrap();
        assert!(fresh.changed_keys(other, moved).is_none());
    }

    #[test]
    fn want_flag_round_trip() {
        let (_dir, mut sync) = sidecar();
        sync.initialise().unwrap();
        assert!(!sync.wanted());
        sync.raise_want();
        assert!(sync.wanted());
        sync.clear_want();
        assert!(!sync.wanted());
    }
}
