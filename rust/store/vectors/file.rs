//! The redb medium's vectors: `<store>.vectors` beside the store file, a
//! log of checksummed records appended under a lock.
//!
//! ```text
//! file    = header record*
//! header  = "MBVF" format(u32 = 1)
//! record  = "MBVR" dims(u32) model(u64) text_hash(u64) crc32(u32) set(u32)
//!           vector(dims × f32, normalised) × count
//! set     = 0 (one vector) | SET_FLAG | count (a set of 0 to MAX_SET)
//! ```
//! Every field is little-endian and 4-byte aligned, so the file is read
//! straight into the space's buffer of words and a vector is used where it
//! lies: a new process pays one read and one checksum pass, not an
//! allocation per vector. The CRC-32 covers the record from `dims` on (its
//! own word excepted, and the `set` word when it is 0: a record of one
//! vector is the same as before sets existed).
//!
//! * **Appends** take an exclusive lock on the file (`flock`), read what
//!   other processes appended, and write their records with one `write`
//!   at the end (`O_APPEND`). No `fsync`: a vector lost to a crash is
//!   computed again, and the checksum refuses what a crash garbled.
//! * **A torn tail** (a record cut short by a crash, nothing intact after
//!   it) is not read, and the next writer cuts it off under the lock
//!   before appending; a reader meets it as the end of the file.
//! * **Damage** (a record whose checksum fails, or garbage between
//!   records) is skipped to the next intact record and counted, never
//!   served.
//! * **Compaction** rewrites the file with only the vectors of the current
//!   entries when it holds far more than that (every change of a value
//!   appends a vector), into a temporary file renamed over it; readers
//!   notice the new file by its inode and read it anew, and a writer that
//!   locked the old one tries again on the new one.
//! * The file is never needed: deleting it loses only vectors, which the
//!   embedder computes again.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::space::{MAX_DIMS, MAX_SET, Space};
use super::{Row, VectorSource};
use crate::error::{Result, StoreError};
use crate::store::medium::Call;

/// The companion file's name: the store file's, with this added.
pub const SUFFIX: &str = ".vectors";

const FILE_MAGIC: u32 = u32::from_le_bytes(*b"MBVF");
const FORMAT: u32 = 1;
const FILE_HEADER_WORDS: usize = 2;
const RECORD_MAGIC: u32 = u32::from_le_bytes(*b"MBVR");
const RECORD_HEADER_WORDS: usize = 8;
/// The top bit of a record's `set` word: the rest is the set's count.
const SET_FLAG: u32 = 1 << 31;
/// How often a writer looks at a lock another process holds.
const LOCK_POLL: Duration = Duration::from_millis(1);
/// Compaction waits until the file holds this many records more than
/// twice the live ones.
pub(crate) const COMPACT_SLACK: usize = 1024;

pub struct CompanionFile {
    path: PathBuf,
    /// Device and inode of the file read so far: another means it was
    /// replaced (compacted, deleted) and is read anew.
    identity: Option<(u64, u64)>,
    /// Bytes read: the end of the last whole record.
    read_to: u64,
    /// The header names another format: the file is neither read nor
    /// written.
    foreign_format: bool,
    /// The file as last opened for appending, kept open (unlocked) between
    /// appends.
    handle: Option<File>,
}

impl CompanionFile {
    /// The companion of the store file `store`.
    pub fn beside(store: &Path) -> CompanionFile {
        let mut name = store.as_os_str().to_owned();
        name.push(SUFFIX);
        CompanionFile {
            path: PathBuf::from(name),
            identity: None,
            read_to: 0,
            foreign_format: false,
            handle: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn reset(&mut self, space: &mut Space) {
        space.clear();
        self.identity = None;
        self.read_to = 0;
        self.foreign_format = false;
    }

    /// Reads what `file` (the file at `path`, `meta` its metadata) holds
    /// past what was read.
    fn read_new(&mut self, file: &File, meta: &fs::Metadata, space: &mut Space) -> Result<()> {
        let identity = (meta.dev(), meta.ino());
        if self.identity != Some(identity) || meta.len() < self.read_to {
            self.reset(space);
            self.identity = Some(identity);
        }
        if self.foreign_format || meta.len() <= self.read_to {
            return Ok(());
        }
        let start = (self.read_to / 4) as usize;
        let end = (meta.len() / 4) as usize;
        debug_assert_eq!(space.data().len(), start);
        // Room for the texts of a full read (record size of this model's).
        space.reserve((end - start) / (RECORD_HEADER_WORDS + space.dims()));
        let data = space.data_mut();
        if data.is_empty() {
            // Zeroed memory fresh from the system (not filled with zeros
            // word by word): the read is its first write.
            *data = vec![0; end];
        } else {
            data.resize(end, 0);
        }
        let read = file.read_exact_at(bytemuck::cast_slice_mut(&mut data[start..]), self.read_to);
        if let Err(error) = read {
            data.truncate(start);
            // Cut or replaced while being read: the next call reads again.
            return if error.kind() == ErrorKind::UnexpectedEof {
                Ok(())
            } else {
                Err(StoreError::io(&self.path, error))
            };
        }
        if cfg!(target_endian = "big") {
            for word in &mut data[start..] {
                *word = u32::from_le(*word);
            }
        }
        let parsed = self.parse(space, start);
        space.data_mut().truncate(parsed);
        self.read_to = parsed as u64 * 4;
        Ok(())
    }

    /// Indexes the records from word `from` on; returns where the whole
    /// records end.
    fn parse(&mut self, space: &mut Space, from: usize) -> usize {
        let end = space.data().len();
        let mut at = from;
        if at == 0 {
            if end < FILE_HEADER_WORDS {
                return 0;
            }
            if space.data()[..FILE_HEADER_WORDS] != [FILE_MAGIC, FORMAT] {
                self.foreign_format = true;
                return 0;
            }
            at = FILE_HEADER_WORDS;
        }
        while at < end {
            match check(space.data(), at) {
                Check::Whole(record) => {
                    if record.model == space.model.name_hash && record.dims == space.model.dims {
                        space.index(record.text_hash, at + RECORD_HEADER_WORDS, record.count);
                    } else {
                        space.foreign += 1;
                    }
                    at = record.next;
                }
                Check::Short => match next_whole(space.data(), at + 1) {
                    Some(next) => {
                        space.damaged += 1;
                        at = next;
                    }
                    // A torn tail, or a record still being written.
                    None => return at,
                },
                Check::Bad => {
                    space.damaged += 1;
                    at = next_whole(space.data(), at + 1).unwrap_or(end);
                }
            }
        }
        end
    }

    /// The file opened for appending (created if missing, or `None` when
    /// it is missing and `create` is false), with its lock held, and its
    /// metadata.
    fn locked(&mut self, create: bool, call: &Call) -> Result<Option<(File, fs::Metadata)>> {
        loop {
            let file = if let Some(file) = self.handle.take() {
                file
            } else {
                let opened = OpenOptions::new()
                    .read(true)
                    .append(true)
                    .create(create)
                    .mode(0o600)
                    .open(&self.path);
                match opened {
                    Ok(file) => file,
                    Err(error) if !create && error.kind() == ErrorKind::NotFound => {
                        return Ok(None);
                    }
                    Err(error) => return Err(StoreError::io(&self.path, error)),
                }
            };
            loop {
                match file.try_lock() {
                    Ok(()) => break,
                    Err(TryLockError::WouldBlock) if Instant::now() < call.deadline => {
                        std::thread::sleep(LOCK_POLL);
                    }
                    Err(TryLockError::WouldBlock) => {
                        return Err(StoreError::Busy {
                            store: (&self.path).into(),
                            waited: call.started.elapsed(),
                        });
                    }
                    Err(TryLockError::Error(error)) => {
                        return Err(StoreError::io(&self.path, error));
                    }
                }
            }
            // The file locked must still be the one at the path: a
            // compaction may have renamed another over it meanwhile.
            let held = self.metadata(&file)?;
            match fs::metadata(&self.path) {
                Ok(now) if (now.dev(), now.ino()) == (held.dev(), held.ino()) => {
                    return Ok(Some((file, held)));
                }
                Err(error) if !create && error.kind() == ErrorKind::NotFound => return Ok(None),
                // Replaced (or removed) meanwhile: open it again.
                _ => {}
            }
        }
    }

    fn metadata(&self, file: &File) -> Result<fs::Metadata> {
        file.metadata().map_err(|e| StoreError::io(&self.path, e))
    }

    /// Rewrites the file with only the vectors of `keep` (the text hashes
    /// of the current entries) when it holds more than twice as many
    /// records as that, plus [`COMPACT_SLACK`]. Returns whether it did.
    pub fn compact(&mut self, space: &mut Space, keep: &[u64], call: &Call) -> Result<bool> {
        let records = space.rows + space.foreign + space.damaged;
        if records <= 2 * keep.len() + COMPACT_SLACK {
            return Ok(false);
        }
        let Some((file, meta)) = self.locked(false, call)? else {
            return Ok(false);
        };
        self.read_new(&file, &meta, space)?;
        if self.foreign_format {
            return Ok(false);
        }
        let mut words = vec![FILE_MAGIC, FORMAT];
        for &hash in keep {
            if let Some(vectors) = space.get(hash) {
                push_record(&mut words, space.model, hash, vectors);
            }
        }
        let mut temporary = self.path.as_os_str().to_owned();
        temporary.push(".tmp");
        let temporary = PathBuf::from(temporary);
        let written = (|| {
            let mut out = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&temporary)?;
            out.write_all(&to_bytes(&words))?;
            out.sync_all()?;
            fs::rename(&temporary, &self.path)
        })();
        if let Err(error) = written {
            let _ = fs::remove_file(&temporary);
            return Err(StoreError::io(&self.path, error));
        }
        drop(file);
        self.reset(space);
        self.sync(space, call)?;
        Ok(true)
    }
}

impl VectorSource for CompanionFile {
    fn sync(&mut self, space: &mut Space, _call: &Call) -> Result<()> {
        // Nothing new (the common case): one `stat`, no open.
        if let Ok(meta) = fs::metadata(&self.path)
            && self.identity == Some((meta.dev(), meta.ino()))
            && meta.len() == self.read_to
        {
            return Ok(());
        }
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(error) if error.kind() == ErrorKind::NotFound => {
                if self.identity.is_some() {
                    self.reset(space);
                }
                return Ok(());
            }
            Err(error) => return Err(StoreError::io(&self.path, error)),
        };
        let meta = self.metadata(&file)?;
        self.read_new(&file, &meta, space)
    }

    fn append(&mut self, space: &mut Space, rows: &[Row], call: &Call) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let (mut file, meta) = self.locked(true, call)?.expect("created");
        self.read_new(&file, &meta, space)?;
        if self.foreign_format {
            return Err(StoreError::invalid(format!(
                "{} was written by another version of membolt",
                self.path.display()
            )));
        }
        let mut words = Vec::with_capacity(
            FILE_HEADER_WORDS
                + rows
                    .iter()
                    .map(|row| RECORD_HEADER_WORDS + row.vectors.len())
                    .sum::<usize>(),
        );
        if self.read_to == 0 {
            // Empty (or a header cut short): start the file.
            file.set_len(0).map_err(|e| StoreError::io(&self.path, e))?;
            words.extend([FILE_MAGIC, FORMAT]);
        } else if meta.len() > self.read_to {
            // A torn tail left by a crash: cut it off before appending.
            file.set_len(self.read_to)
                .map_err(|e| StoreError::io(&self.path, e))?;
        }
        for row in rows {
            push_record(&mut words, space.model, row.text_hash, &row.vectors);
        }
        file.write_all(&to_bytes(&words))
            .map_err(|e| StoreError::io(&self.path, e))?;
        // Under the lock the file is now exactly what was read, then these
        // words: take them as read, without reading them back.
        let start = space.data().len();
        debug_assert_eq!(start as u64 * 4, self.read_to);
        space.data_mut().extend_from_slice(&words);
        let parsed = self.parse(space, start);
        space.data_mut().truncate(parsed);
        self.read_to = parsed as u64 * 4;
        if file.unlock().is_ok() {
            self.handle = Some(file);
        }
        Ok(())
    }
}

/// One record parsed.
struct Record {
    model: u64,
    dims: u32,
    text_hash: u64,
    /// How many vectors follow.
    count: u32,
    /// Where the next record starts.
    next: usize,
}

enum Check {
    Whole(Record),
    /// A record header (or its start) whose record the data ends within.
    Short,
    Bad,
}

fn pair(low: u32, high: u32) -> u64 {
    u64::from(low) | (u64::from(high) << 32)
}

/// The record at word `at` of `data`.
fn check(data: &[u32], at: usize) -> Check {
    let rest = &data[at..];
    if rest[0] != RECORD_MAGIC {
        return Check::Bad;
    }
    if rest.len() < RECORD_HEADER_WORDS {
        return Check::Short;
    }
    let dims = rest[1];
    let count = match rest[7] {
        0 => 1,
        set if set & SET_FLAG != 0 && set & !SET_FLAG <= MAX_SET => set & !SET_FLAG,
        _ => return Check::Bad,
    };
    if dims == 0 || dims > MAX_DIMS {
        return Check::Bad;
    }
    let len = RECORD_HEADER_WORDS + (dims * count) as usize;
    if rest.len() < len {
        return Check::Short;
    }
    if checksum(&rest[1..6], rest[7], &rest[RECORD_HEADER_WORDS..len]) != rest[6] {
        return Check::Bad;
    }
    Check::Whole(Record {
        model: pair(rest[2], rest[3]),
        dims,
        text_hash: pair(rest[4], rest[5]),
        count,
        next: at + len,
    })
}

/// The start of the first whole record at or after word `from`.
fn next_whole(data: &[u32], from: usize) -> Option<usize> {
    (from..data.len())
        .filter(|&at| data[at] == RECORD_MAGIC)
        .find(|&at| matches!(check(data, at), Check::Whole(_)))
}

/// The CRC-32 of a record: its header words from `dims` to the text hash,
/// its `set` word unless it is 0, and its vectors.
fn checksum(header: &[u32], set: u32, vectors: &[u32]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&to_bytes(header));
    if set != 0 {
        hasher.update(&set.to_le_bytes());
    }
    hasher.update(&to_bytes(vectors));
    hasher.finalize()
}

/// Words as the file holds them (little-endian).
fn to_bytes(words: &[u32]) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        std::borrow::Cow::Borrowed(bytemuck::cast_slice(words))
    } else {
        std::borrow::Cow::Owned(words.iter().flat_map(|w| w.to_le_bytes()).collect())
    }
}

/// Appends the record of `text_hash`'s set `vectors` (`model.dims` floats
/// each): a set of one is written as a plain record.
fn push_record(words: &mut Vec<u32>, model: super::Model, text_hash: u64, vectors: &[f32]) {
    let count = vectors.len() / model.dims as usize;
    let set = if count == 1 {
        0
    } else {
        SET_FLAG | count as u32
    };
    let start = words.len();
    words.extend([
        RECORD_MAGIC,
        model.dims,
        model.name_hash as u32,
        (model.name_hash >> 32) as u32,
        text_hash as u32,
        (text_hash >> 32) as u32,
        0,
        set,
    ]);
    words.extend(vectors.iter().map(|x| x.to_bits()));
    words[start + 6] = checksum(
        &words[start + 1..start + 6],
        set,
        &words[start + RECORD_HEADER_WORDS..],
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::vectors::Model;

    const MODEL: Model = Model {
        name_hash: 0x1234_5678_9abc_def0,
        dims: 3,
    };

    fn call() -> Call {
        Call::new(Duration::from_secs(1))
    }

    fn row(hash: u64, x: f32) -> Row {
        let mut vector = vec![x, 1.0, 0.5];
        assert!(super::super::space::normalise(&mut vector));
        Row {
            key: format!("k{hash}"),
            text_hash: hash,
            vectors: vector,
        }
    }

    fn fresh(path: &Path) -> (CompanionFile, Space) {
        let mut file = CompanionFile::beside(path);
        let mut space = Space::new(MODEL);
        file.sync(&mut space, &call()).unwrap();
        (file, space)
    }

    #[test]
    fn appends_are_read_by_another_reader_and_replaced_files_reread() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("m.redb");
        let (mut a, mut space_a) = fresh(&store);
        a.append(&mut space_a, &[row(1, 0.1), row(2, 0.2)], &call())
            .unwrap();
        let (mut b, mut space_b) = fresh(&store);
        assert_eq!(space_b.texts(), 2);
        assert_eq!(space_b.get(2), space_a.get(2));
        b.append(&mut space_b, &[row(3, 0.3)], &call()).unwrap();
        a.sync(&mut space_a, &call()).unwrap();
        assert_eq!((space_a.texts(), space_a.rows), (3, 3));
        // Compaction keeps only the live texts; the other reader rereads.
        let mut many = Vec::new();
        for hash in 10..1100 {
            many.push(row(hash, 0.5));
        }
        assert!(!a.compact(&mut space_a, &[1, 2, 3], &call()).unwrap());
        b.sync(&mut space_b, &call()).unwrap();
        a.append(&mut space_a, &many, &call()).unwrap();
        assert!(a.compact(&mut space_a, &[1, 3], &call()).unwrap());
        assert_eq!(space_a.texts(), 2);
        b.sync(&mut space_b, &call()).unwrap();
        assert_eq!(space_b.texts(), 2);
        assert!(space_b.get(2).is_none());
        assert_eq!(space_b.damaged, 0);
    }

    #[test]
    fn a_torn_tail_is_not_read_and_is_cut_by_the_next_writer() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("m.redb");
        let (mut a, mut space) = fresh(&store);
        a.append(&mut space, &[row(1, 0.1), row(2, 0.2)], &call())
            .unwrap();
        let path = a.path().to_path_buf();
        let whole = fs::metadata(&path).unwrap().len();
        // A crash halfway through the second record.
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(whole - 6)
            .unwrap();
        let (mut b, mut space_b) = fresh(&store);
        assert_eq!((space_b.texts(), space_b.damaged), (1, 0));
        b.append(&mut space_b, &[row(3, 0.3)], &call()).unwrap();
        let (_, space_c) = fresh(&store);
        assert_eq!((space_c.texts(), space_c.damaged), (2, 0));
        assert!(space_c.get(2).is_none() && space_c.get(3).is_some());
    }

    #[test]
    fn damage_is_skipped_and_counted_never_served() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("m.redb");
        let (mut a, mut space) = fresh(&store);
        a.append(
            &mut space,
            &[row(1, 0.1), row(2, 0.2), row(3, 0.3)],
            &call(),
        )
        .unwrap();
        let path = a.path().to_path_buf();
        let mut bytes = fs::read(&path).unwrap();
        let record = (RECORD_HEADER_WORDS + 3) * 4;
        for flip in [8 + record + 4 * 9, 8 + 4, 8 + record + 4] {
            // A bit in the second record's vector, the first's dims, the
            // second's dims: each time only what it hit is lost.
            let mut damaged = bytes.clone();
            damaged[flip] ^= 0x10;
            fs::write(&path, &damaged).unwrap();
            let (_, space) = fresh(&store);
            assert_eq!(space.damaged, 1, "flip at {flip}");
            assert_eq!(space.texts(), 2, "flip at {flip}");
        }
        // A file of another format is neither read nor written.
        bytes[4] = 9;
        fs::write(&path, &bytes).unwrap();
        let (mut other, mut space) = fresh(&store);
        assert_eq!(space.texts(), 0);
        assert!(other.append(&mut space, &[row(4, 0.4)], &call()).is_err());
        assert_eq!(fs::read(&path).unwrap(), bytes);
    }

    #[test]
    fn sets_of_several_vectors_and_of_none_are_read_back_and_kept_by_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("m.redb");
        let (mut a, mut space) = fresh(&store);
        let mut two = row(1, 0.1).vectors;
        two.extend(row(1, 0.9).vectors);
        let rows = [
            Row {
                key: "two".into(),
                text_hash: 1,
                vectors: two.clone(),
            },
            Row {
                key: "none".into(),
                text_hash: 2,
                vectors: Vec::new(),
            },
            row(3, 0.3),
        ];
        a.append(&mut space, &rows, &call()).unwrap();
        let (_, read) = fresh(&store);
        assert_eq!(read.get(1), Some(&two[..]));
        assert_eq!(read.get(2), Some(&[][..]));
        assert_eq!(read.get(3), Some(&row(3, 0.3).vectors[..]));
        assert_eq!((read.texts(), read.damaged), (3, 0));
        // A record of one vector is the layout from before sets.
        let bytes = fs::read(a.path()).unwrap();
        let one = 8 + (RECORD_HEADER_WORDS + 6) * 4 + RECORD_HEADER_WORDS * 4;
        assert_eq!(&bytes[one + 28..one + 32], &[0, 0, 0, 0]);
        // The count is covered by the checksum.
        let mut damaged = bytes.clone();
        damaged[8 + 28] ^= 0x01;
        fs::write(a.path(), &damaged).unwrap();
        let (_, read) = fresh(&store);
        assert_eq!((read.texts(), read.damaged), (2, 1));
        fs::write(a.path(), &bytes).unwrap();
        let (mut a, mut space) = fresh(&store);
        let many: Vec<Row> = (10..1100).map(|hash| row(hash, 0.5)).collect();
        a.append(&mut space, &many, &call()).unwrap();
        assert!(a.compact(&mut space, &[1, 2], &call()).unwrap());
        assert_eq!(space.get(1), Some(&two[..]));
        assert_eq!(space.get(2), Some(&[][..]));
        assert_eq!(space.texts(), 2);
    }

    #[test]
    fn records_of_other_models_are_kept_apart() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("m.redb");
        let (mut a, mut space) = fresh(&store);
        a.append(&mut space, &[row(1, 0.1)], &call()).unwrap();
        let mut other = CompanionFile::beside(&store);
        let mut other_space = Space::new(Model {
            name_hash: 99,
            dims: 3,
        });
        other.sync(&mut other_space, &call()).unwrap();
        assert_eq!((other_space.texts(), other_space.foreign), (0, 1));
        other
            .append(&mut other_space, &[row(1, 0.9)], &call())
            .unwrap();
        a.sync(&mut space, &call()).unwrap();
        assert_eq!((space.texts(), space.foreign), (1, 1));
        assert_ne!(space.get(1), other_space.get(1));
    }
}
