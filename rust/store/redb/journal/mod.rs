//! The `<store>.journal` file: durable changes for the price of one small
//! synchronous write.
//!
//! A durable redb commit writes every page it changed (for one key in a 100k
//! store about eight scattered pages: the B-tree path, the table tree, the
//! freed tree) plus the header, then flushes the file, and its CPU cost is
//! as large as everything else a save does. So while a process holds the
//! write lease, its changes go into one redb write transaction kept open for
//! the whole lease, and each change is made durable by writing its result
//! (the bytes of every key it touched) as one record here. The record goes
//! out with `O_DIRECT | O_DSYNC` into blocks written before: one device
//! write and a cache flush, no page-cache writeback, no file metadata. The
//! transaction is committed when the lease ends (and the close makes it
//! durable), or durably when the journal is full.
//!
//! # Layout
//! [`JOURNAL_BYTES`] in blocks of [`BLOCK`] bytes, zero-filled when created.
//! Records start on a block boundary, the first at offset 0, and follow one
//! another:
//!
//! ```text
//! offset  size
//!      0     8  magic "mbjrec01"
//!      8     8  seq: the change's number
//!     16    16  store id (meta `store_id`): a journal never feeds another store
//!     32     8  the clock after the change (i64)
//!     40     4  payload length
//!     44     4  CRC-32 of bytes 0..44 and the payload
//!     48        payload: per change, in the order made: key length (u32),
//!               key, then `u32::MAX` for a delete, or the value length
//!               (u32) and the value (`Entry::encode`)
//! ```
//!
//! # Invariants
//! * Only the holder of redb's write lock writes or replays the journal.
//! * redb's meta `journal_seq` is the number of the newest change it holds,
//!   written by every commit that ends a lease or fills the journal.
//! * When a lease starts, redb's durable state holds every change (the last
//!   holder committed and closed, or this one just replayed the journal and
//!   committed durably); the lease's records are written from offset 0 with
//!   seq = `journal_seq` + 1, + 2, … A change whose record does not fit in
//!   the rest of the file is committed durably instead (with the lease's
//!   earlier ones), and the next record starts at offset 0 again.
//! * So after a crash, the changes redb lost are exactly the records read
//!   from offset 0 with seq = durable `journal_seq` + 1, + 2, … (CRC valid,
//!   same store id); the first record that breaks the sequence ends them,
//!   and whatever lies beyond is stale. Replaying sets every key to the
//!   bytes it had after each change, in order, so replaying records redb
//!   already holds (a lease whose final commit failed) changes nothing.
//! * A change returns only once its record is down, and once the
//!   acknowledgement mark in the `.sync` sidecar counts it
//!   (`acknowledged.rs`). A record whose write fails is taken back (its
//!   first block zeroed, best effort) and its place reused, so a crash does
//!   not replay a change that reported an error.
//! * A write cut short (a kill during a buffered write, which copies a page
//!   at a time; a power cut during any write) can leave the newest record
//!   with its first page(s) new and the rest old. Its change was never
//!   acknowledged, so the records before it are all there is to replay;
//!   the mark tells such a record from an acknowledged one damaged since.

//!
//! # Files
//! `record.rs` is the format as bytes, `scan.rs` reads a journal's bytes
//! back after a crash, `direct_io.rs` reaches the device; this file is the
//! journal's life through a lease.

mod direct_io;
mod record;
mod scan;

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use direct_io::{AlignedBuffer, inode_and_len, open_synchronous, read_up_to, write_at};
pub(crate) use record::{Change, Record, id16};
use record::{HEADER, decode_one, encode, parse_any_header};
#[cfg(test)]
pub(crate) use scan::DamagedNext;
pub(crate) use scan::Pending;
use scan::scan;

/// The unit of every journal write: `O_DIRECT` needs offsets, lengths and
/// buffers aligned to the device's logical block, which 4 KiB covers.
pub(crate) const BLOCK: usize = 4096;
/// Room for 128 one-block records: a lease that saves more than that pays
/// one durable redb commit (the save that finds the journal full) per 129
/// saves.
pub(crate) const JOURNAL_BYTES: usize = 128 * BLOCK;
/// Appended to the store's file name to name the journal.
pub(crate) const SUFFIX: &str = ".journal";

/// A record laid out (in the journal's buffer) in whole blocks, ready to
/// write; only [`Journal::prepare`] makes one.
pub(crate) struct Prepared {
    len: usize,
}

/// The journal of one store file.
pub(crate) struct Journal {
    path: PathBuf,
    /// Open for synchronous writes while usable (see [`Journal::begin_lease`]).
    file: Option<File>,
    /// Inode of `file`, checked before every record: records written to a
    /// journal deleted or replaced behind our back would be read by nobody.
    inode: u64,
    /// Whether `file` was opened with `O_DIRECT`.
    direct: bool,
    /// Where the next record goes.
    next: usize,
    /// Reused for every record (a fresh aligned allocation per save cost
    /// page faults).
    buffer: AlignedBuffer,
    /// Test hook: the next record write fails.
    #[cfg(test)]
    fail_next_write: bool,
}

impl Journal {
    pub(crate) fn new(store_path: &Path) -> Self {
        let mut name = store_path.as_os_str().to_owned();
        name.push(SUFFIX);
        Journal {
            path: PathBuf::from(name),
            file: None,
            inode: 0,
            direct: false,
            next: 0,
            buffer: AlignedBuffer::zeroed(BLOCK),
            #[cfg(test)]
            fail_next_write: false,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Starts a lease: records go from offset 0 again. Returns whether the
    /// journal can be used; if not (it cannot be created or opened, or this
    /// platform has no `O_DSYNC` writes we trust), every change is a durable
    /// redb commit. (A journal that cannot be *read* is an error earlier, in
    /// the replay: it may hold changes.)
    pub(crate) fn begin_lease(&mut self) -> bool {
        self.next = 0;
        if !cfg!(target_os = "linux") {
            return false;
        }
        if !self.is_current() {
            self.file = None;
            if self.open().is_err() {
                self.file = None; // this lease commits durably instead
            }
        }
        self.file.is_some()
    }

    /// Opens the journal for synchronous writes, creating (zero-filled and
    /// flushed, directory entry included) a missing or short one. Anything
    /// but a regular file in its place (a symbolic link planted there, say)
    /// is replaced, never written through.
    fn open(&mut self) -> io::Result<()> {
        let whole = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|meta| meta.is_file() && meta.len() == JOURNAL_BYTES as u64);
        if !whole {
            self.create()?;
        }
        let (file, direct) = open_synchronous(&self.path)?;
        self.inode = file.metadata()?.ino();
        self.file = Some(file);
        self.direct = direct;
        Ok(())
    }

    /// Creates the journal zero-filled beside its place and renames it in,
    /// so that no reader sees a journal of the wrong size; the file beside
    /// is removed again if that fails (a full disk, say).
    fn create(&self) -> io::Result<()> {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".new");
        let fresh = PathBuf::from(name);
        let made = (|| {
            // A new file of our own: whatever was left at that name (a
            // symbolic link planted there included) is removed, not followed.
            match std::fs::remove_file(&fresh) {
                Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
                _ => {}
            }
            let file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&fresh)?;
            file.write_all_at(&vec![0u8; JOURNAL_BYTES], 0)?;
            file.sync_all()?;
            std::fs::rename(&fresh, &self.path)
        })();
        if let Err(error) = made {
            let _ = std::fs::remove_file(&fresh);
            return Err(error);
        }
        if let Some(dir) = self.path.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    }

    /// Writes one commit's record and waits until it is on stable storage.
    /// `Ok(false)`: it does not fit in the rest of the journal.
    #[cfg(test)]
    pub(crate) fn append(
        &mut self,
        seq: u64,
        store_id: &[u8],
        clock: i64,
        changes: &[Change],
    ) -> io::Result<bool> {
        match self.prepare(seq, store_id, clock, changes) {
            Some(record) => self.write_record(&record).map(|()| true),
            None => Ok(false),
        }
    }

    /// Lays out one commit's record for [`Journal::write_record`]; `None`:
    /// it does not fit in the rest of the journal (the caller commits
    /// durably and calls [`Journal::restart`]).
    pub(crate) fn prepare(
        &mut self,
        seq: u64,
        store_id: &[u8],
        clock: i64,
        changes: &[Change],
    ) -> Option<Prepared> {
        if !self.is_current() {
            if self.next > 0 {
                // This lease's records so far are in the lost file: the
                // caller's durable commit makes them unnecessary.
                return None;
            }
            if self.open().is_err() {
                self.file = None;
                return None;
            }
        }
        let record = encode(seq, store_id, clock, changes);
        let len = record.len().next_multiple_of(BLOCK);
        if self.next + len > JOURNAL_BYTES {
            return None;
        }
        if self.buffer.len < len {
            self.buffer = AlignedBuffer::zeroed(len);
        }
        let bytes = &mut self.buffer.bytes_mut()[..len];
        bytes[..record.len()].copy_from_slice(&record);
        bytes[record.len()..].fill(0);
        Some(Prepared { len })
    }

    /// Whether the open journal is still the file at its path, whole.
    fn is_current(&self) -> bool {
        self.file.is_some()
            && inode_and_len(&self.path)
                .is_ok_and(|(inode, len)| inode == self.inode && len == JOURNAL_BYTES as u64)
    }

    /// Writes the prepared record after the previous one and waits until it
    /// is on stable storage. If that fails, the record is taken back (best
    /// effort: its first block zeroed, so that a crash cannot replay a
    /// change that reported an error) and the next one goes in its place.
    pub(crate) fn write_record(&mut self, record: &Prepared) -> io::Result<()> {
        let at = self.next;
        let bytes = &self.buffer.bytes()[..record.len];
        let written = write_at(&mut self.file, &mut self.direct, &self.path, bytes, at);
        #[cfg(test)]
        let written = if std::mem::take(&mut self.fail_next_write) {
            Err(io::Error::other("injected failure"))
        } else {
            written
        };
        if let Err(error) = written {
            let zero = AlignedBuffer::zeroed(BLOCK);
            let _ = self.write(zero.bytes(), at);
            return Err(error);
        }
        self.next = at + record.len;
        Ok(())
    }

    /// After a durable redb commit: nothing before it is needed any more.
    pub(crate) fn restart(&mut self) {
        self.next = 0;
    }

    fn write(&mut self, bytes: &[u8], offset: usize) -> io::Result<()> {
        write_at(&mut self.file, &mut self.direct, &self.path, bytes, offset)
    }

    /// The records that follow redb's durable `journal_seq` (see the module
    /// docs), oldest first, and any sign that acknowledged changes are
    /// missing from them. A missing journal has none.
    pub(crate) fn pending(&self, store_id: &[u8], durable_seq: u64) -> io::Result<Pending> {
        let Some(file) = self.open_for_reading()? else {
            return Ok(Pending::default());
        };
        let file_len = file.metadata()?.len();
        let short = file_len < JOURNAL_BYTES as u64;
        // The common case costs one block: a valid first record that redb
        // already holds. Records follow one another from offset 0 and a
        // durable commit mid-lease starts them at 0 again, so then every
        // record of the file is in redb and none can be stranded.
        let mut head = vec![0u8; BLOCK];
        let read = read_up_to(&file, &mut head, 0)?;
        head.truncate(read);
        if let Some((seq, len)) = parse_any_header(&head, store_id)
            && seq <= durable_seq
            && HEADER + len <= BLOCK
            && decode_one(&head, store_id, seq).is_some()
        {
            return Ok(Pending {
                short,
                ..Pending::default()
            });
        }
        let mut bytes = vec![0u8; JOURNAL_BYTES];
        let read = read_up_to(&file, &mut bytes, 0)?;
        bytes.truncate(read);
        Ok(Pending {
            short,
            ..scan(&bytes, store_id, durable_seq)
        })
    }

    /// The whole journal as it is now, to read records from later (`None`:
    /// there is no journal).
    pub(crate) fn snapshot(&self) -> io::Result<Option<Snapshot>> {
        let Some(file) = self.open_for_reading()? else {
            return Ok(None);
        };
        let mut bytes = vec![0u8; JOURNAL_BYTES];
        let read = read_up_to(&file, &mut bytes, 0)?;
        bytes.truncate(read);
        Ok(Some(Snapshot(bytes)))
    }

    /// The journal file, if any, open for reading.
    fn open_for_reading(&self) -> io::Result<Option<File>> {
        // Non-blocking: a FIFO put in the journal's place must not hang us.
        // A symbolic link is not followed: it may point anywhere.
        let opened = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
            .open(&self.path);
        let file = match opened {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) if error.raw_os_error() == Some(libc::ELOOP) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "not a regular file (a symbolic link)",
                ));
            }
            Err(error) => return Err(error),
        };
        if !file.metadata()?.is_file() {
            // It may have replaced a journal holding changes: refuse to guess.
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a regular file",
            ));
        }
        Ok(Some(file))
    }
}

/// A copy of a journal's bytes ([`Journal::snapshot`]).
pub(crate) struct Snapshot(Vec<u8>);

impl Snapshot {
    /// The records that follow `durable_seq`, as [`Journal::pending`].
    pub(crate) fn pending(&self, store_id: &[u8], durable_seq: u64) -> Pending {
        Pending {
            short: self.0.len() < JOURNAL_BYTES,
            ..scan(&self.0, store_id, durable_seq)
        }
    }
}

impl Snapshot {
    /// Every valid record of this store numbered after `durable_seq`, in
    /// the order of their numbers, whether or not a replay would reach it:
    /// what `membolt repair` can salvage from a damaged journal.
    pub(crate) fn every_record_after(&self, store_id: &[u8], durable_seq: u64) -> Vec<Record> {
        let bytes = &self.0;
        let mut found: BTreeMap<u64, Record> = BTreeMap::new();
        let mut at = 0;
        while at < bytes.len() {
            match parse_any_header(&bytes[at..], store_id) {
                Some((seq, len)) => {
                    if let Some((record, _)) = decode_one(&bytes[at..], store_id, seq) {
                        if seq > durable_seq {
                            found.insert(seq, record);
                        }
                        at += (HEADER + len).next_multiple_of(BLOCK);
                    } else {
                        // Its length may be damaged too: look in the next block.
                        at += BLOCK;
                    }
                }
                None => at += BLOCK,
            }
        }
        found.into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    const ID: [u8; 16] = *b"0123456789abcdef";

    fn journal() -> (tempfile::TempDir, Journal) {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(&dir.path().join("store.redb"));
        (dir, journal)
    }

    /// A journal in a lease, holding one small record for each of `seqs`.
    fn journal_with(seqs: impl IntoIterator<Item = u64>) -> (tempfile::TempDir, Journal) {
        let (dir, mut journal) = journal();
        assert!(journal.begin_lease());
        for seq in seqs {
            let key = format!("k{seq}");
            assert!(
                journal
                    .append(seq, &ID, 5, &[change(&key, Some(b"v"))])
                    .unwrap()
            );
        }
        (dir, journal)
    }

    fn change(key: &str, value: Option<&[u8]>) -> Change {
        (Arc::from(key), value.map(<[u8]>::to_vec))
    }

    #[test]
    fn records_after_the_durable_seq_are_read_back_in_order() {
        let (_dir, mut journal) = journal();
        assert!(journal.begin_lease());
        assert_eq!(
            std::fs::metadata(journal.path()).unwrap().len(),
            JOURNAL_BYTES as u64
        );
        let big = vec![7u8; 3 * BLOCK]; // a record spanning four blocks
        assert!(
            journal
                .append(11, &ID, 5, &[change("a", Some(b"1"))])
                .unwrap()
        );
        assert!(
            journal
                .append(12, &ID, 6, &[change("b", Some(&big)), change("a", None)])
                .unwrap()
        );
        assert!(
            journal
                .append(13, &ID, 7, &[change("ключ", Some(b""))])
                .unwrap()
        );
        let all = journal.pending(&ID, 10).unwrap().records;
        assert_eq!(all.iter().map(|r| r.seq).collect::<Vec<_>>(), [11, 12, 13]);
        assert_eq!(all[1].changes[0], ("b".to_string(), Some(big)));
        assert_eq!(all[1].changes[1], ("a".to_string(), None));
        assert_eq!(all[2].changes[0].0, "ключ");
        assert_eq!(all[2].clock, 7);
    }

    #[test]
    fn nothing_is_pending_once_redb_holds_the_first_record() {
        let (_dir, journal) = journal_with([11, 12]);
        assert!(journal.pending(&ID, 12).unwrap().records.is_empty());
        let after_11 = journal.pending(&ID, 11).unwrap();
        // 12 is not at offset 0, so redb's 11 means the lease committed.
        assert!(after_11.records.is_empty());
        assert_eq!(after_11.stranded, 0);
    }

    #[test]
    fn another_stores_journal_is_never_replayed() {
        let (_dir, journal) = journal_with([1]);
        let other = journal.pending(b"another store id", 0).unwrap();
        assert!(other.records.is_empty());
        assert_eq!(other.stranded, 0);
    }

    #[test]
    fn the_sequence_ends_at_a_stale_or_torn_record() {
        let (_dir, mut journal) = journal_with(1..=4);
        // A new lease overwrites the start: 5 and 6 follow a durable 4, and
        // the old 3 and 4 beyond them are stale.
        journal.begin_lease();
        journal
            .append(5, &ID, 0, &[change("k", Some(b"w"))])
            .unwrap();
        journal
            .append(6, &ID, 0, &[change("k", Some(b"x"))])
            .unwrap();
        let seqs: Vec<u64> = journal
            .pending(&ID, 4)
            .unwrap()
            .records
            .iter()
            .map(|r| r.seq)
            .collect();
        assert_eq!(seqs, [5, 6]);
        // A flipped byte in record 6 ends the sequence before it.
        let file = OpenOptions::new().write(true).open(journal.path()).unwrap();
        file.write_all_at(b"X", (BLOCK + HEADER + 2) as u64)
            .unwrap();
        let seqs: Vec<u64> = journal
            .pending(&ID, 4)
            .unwrap()
            .records
            .iter()
            .map(|r| r.seq)
            .collect();
        assert_eq!(seqs, [5]);
    }

    #[test]
    fn a_record_whose_write_fails_is_taken_back_and_its_place_reused() {
        let (_dir, mut journal) = journal();
        journal.begin_lease();
        journal
            .append(1, &ID, 0, &[change("a", Some(b"1"))])
            .unwrap();
        journal.fail_next_write = true; // written, then reported as failed
        assert!(
            journal
                .append(2, &ID, 0, &[change("b", Some(b"1"))])
                .is_err()
        );
        assert_eq!(journal.pending(&ID, 0).unwrap().records.len(), 1);
        journal
            .append(2, &ID, 0, &[change("c", Some(b"1"))])
            .unwrap();
        let pending = journal.pending(&ID, 0).unwrap().records;
        assert_eq!(pending.len(), 2);
        assert_eq!(pending[1].changes[0].0, "c");
    }

    #[test]
    fn a_full_journal_refuses_the_record_and_restarts_at_the_front() {
        let (_dir, mut journal) = journal();
        journal.begin_lease();
        let value = vec![1u8; 100];
        let mut seq = 0;
        while journal
            .append(seq + 1, &ID, 0, &[change("k", Some(&value))])
            .unwrap()
        {
            seq += 1;
        }
        assert_eq!(seq as usize, JOURNAL_BYTES / BLOCK);
        let too_big = vec![1u8; JOURNAL_BYTES];
        journal.restart();
        assert!(
            !journal
                .append(1, &ID, 0, &[change("k", Some(&too_big))])
                .unwrap()
        );
        assert!(
            journal
                .append(seq + 2, &ID, 0, &[change("k", Some(b"v"))])
                .unwrap()
        );
        assert_eq!(journal.pending(&ID, seq + 1).unwrap().records.len(), 1);
    }

    #[test]
    fn a_missing_journal_has_nothing_pending_and_a_short_one_is_recreated() {
        let (_dir, mut journal) = journal();
        assert!(journal.pending(&ID, 0).unwrap().records.is_empty());
        std::fs::write(journal.path(), b"short").unwrap();
        assert!(journal.pending(&ID, 0).unwrap().short);
        assert!(journal.begin_lease());
        assert_eq!(
            std::fs::metadata(journal.path()).unwrap().len(),
            JOURNAL_BYTES as u64
        );
    }

    /// A damaged record with valid records of the lease after it: those are
    /// acknowledged changes no replay reaches, and they are counted.
    #[test]
    fn records_past_a_damaged_one_are_counted_as_stranded() {
        for damaged_block in [0, 1] {
            let (_dir, journal) = journal_with(1..=4);
            let file = OpenOptions::new().write(true).open(journal.path()).unwrap();
            file.write_all_at(b"X", (damaged_block * BLOCK + HEADER + 2) as u64)
                .unwrap();
            let pending = journal.pending(&ID, 0).unwrap();
            assert_eq!(pending.records.len(), damaged_block);
            assert_eq!(pending.stranded, 3 - damaged_block, "block {damaged_block}");
        }
        // A gap between redb and the journal strands every record after it.
        let (_dir, journal) = journal_with([11, 12]);
        let gap = journal.pending(&ID, 9).unwrap();
        assert!(gap.records.is_empty());
        assert_eq!(gap.stranded, 2);
    }

    /// A flipped bit in the seq of a first record that redb lacks is not
    /// taken for a record redb holds.
    #[test]
    fn a_first_record_with_a_damaged_seq_is_not_taken_for_a_committed_one() {
        let (_dir, journal) = journal_with(5..=6);
        let file = OpenOptions::new().write(true).open(journal.path()).unwrap();
        file.write_all_at(&2u64.to_le_bytes(), 8).unwrap(); // seq 5 -> 2
        let pending = journal.pending(&ID, 4).unwrap();
        assert!(pending.records.is_empty());
        assert_eq!(pending.stranded, 1);
    }

    /// One flipped bit anywhere in the newest record (header included) is
    /// seen as a damaged next record; old records, zeros and the unused
    /// rest of a block are not.
    #[test]
    fn a_damaged_newest_record_is_recognised_wherever_the_bit_is() {
        let (_dir, journal) = journal_with(5..=6);
        let pristine = std::fs::read(journal.path()).unwrap();
        let clean = journal.pending(&ID, 4).unwrap();
        assert_eq!((clean.records.len(), clean.damaged_next), (2, None));
        let used = HEADER + 4 + 2 + 4 + 1; // "k6" -> "v"
        for offset in BLOCK..BLOCK + used {
            let mut bytes = pristine.clone();
            bytes[offset] ^= 0x10;
            std::fs::write(journal.path(), &bytes).unwrap();
            let pending = journal.pending(&ID, 4).unwrap();
            assert_eq!(pending.records.len(), 1, "offset {offset}");
            let damaged = pending.damaged_next.expect("found");
            assert_eq!(damaged.seq, 6, "offset {offset}");
            // Magic, number and store id lie in the first 32 bytes.
            let identifying = offset < BLOCK + 32;
            assert_eq!(damaged.header_whole, !identifying, "offset {offset}");
        }
        // Past the record, in the block's unused rest: nothing is damaged.
        let mut bytes = pristine.clone();
        bytes[2 * BLOCK - 1] ^= 0x10;
        std::fs::write(journal.path(), &bytes).unwrap();
        assert_eq!(journal.pending(&ID, 4).unwrap().damaged_next, None);
        // Committed records (redb at 6) are old, damaged or not.
        std::fs::write(journal.path(), &pristine).unwrap();
        assert_eq!(journal.pending(&ID, 6).unwrap().damaged_next, None);
        // Another store's records are not this store's next one.
        assert_eq!(journal.pending(&[7; 16], 0).unwrap().damaged_next, None);
    }

    /// A multi-block record whose write was cut short after some of its
    /// pages (the rest as an older lease left them): the records before it
    /// are all there is, and it is found as a damaged next record with its
    /// header whole, at every page boundary.
    #[test]
    fn a_record_cut_short_at_any_page_is_the_damaged_next_with_its_header_whole() {
        let big = vec![9u8; 5 * BLOCK];
        let (_dir, mut journal) = journal();
        journal.begin_lease();
        // An older lease: big records of its own all over the journal.
        for seq in 1..=3 {
            journal
                .append(seq, &ID, 0, &[change("old", Some(&big))])
                .unwrap();
        }
        let old = std::fs::read(journal.path()).unwrap();
        journal.begin_lease();
        journal
            .append(4, &ID, 0, &[change("a", Some(b"1"))])
            .unwrap();
        journal
            .append(5, &ID, 0, &[change("b", Some(&big))])
            .unwrap();
        let new = std::fs::read(journal.path()).unwrap();
        for pages in 1..6 {
            let mut torn = new.clone();
            let cut = BLOCK + pages * BLOCK; // record 5 starts in block 1
            torn[cut..].copy_from_slice(&old[cut..]);
            std::fs::write(journal.path(), &torn).unwrap();
            let pending = journal.pending(&ID, 3).unwrap();
            assert_eq!(pending.records.len(), 1, "{pages} pages");
            assert_eq!(pending.stranded, 0, "{pages} pages");
            assert_eq!(
                pending.damaged_next,
                Some(DamagedNext {
                    seq: 5,
                    header_whole: true
                }),
                "{pages} pages"
            );
        }
    }

    #[test]
    fn a_truncated_journal_is_reported_short() {
        let (_dir, journal) = journal_with(1..=3);
        let file = OpenOptions::new().write(true).open(journal.path()).unwrap();
        file.set_len((2 * BLOCK) as u64).unwrap();
        let pending = journal.pending(&ID, 0).unwrap();
        assert!(pending.short);
        assert_eq!(pending.records.len(), 2);
    }
}
