//! `membolt doctor`: a read-only integrity check of a store file.
//!
//! It opens the file read-only (never writing, never repairing), reads every
//! record, and reports what it finds: damage (records that do not decode,
//! broken invariants) as problems, odd but legal states (references to
//! deleted keys) as notes. Then, on a private copy of the file (recovery
//! and the check both write, and the file itself stays untouched), redb's
//! integrity check verifies every page checksum, which catches damage inside
//! values that still decode. A file that was not closed cleanly can only be
//! read after redb's crash recovery: that runs on the copy too.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use redb::{
    Database, DatabaseError, ReadOnlyDatabase, ReadableDatabase, ReadableTable, StorageError,
    TableHandle,
};

use crate::entry::Entry;
use crate::error::{AtStore, Result, StoreError};
use crate::quiet_panic::catch;
use crate::store::MAX_KEY_BYTES;
use crate::store::redb::change_ring::ChangeRing;
use crate::store::redb::format::{ENTRIES, TABLE_NAMES, read_meta};
use crate::store::redb::journal::Journal;
use crate::store::redb::{lease, replay};

/// At most this many problems are listed; the count is always exact.
const LISTED_PROBLEMS: usize = 20;

#[derive(Debug, Default)]
pub struct Report {
    pub file_bytes: u64,
    pub entries: usize,
    pub by_type: BTreeMap<String, usize>,
    /// Damage or broken invariants: the store is not healthy.
    pub problems: Vec<String>,
    pub problem_count: usize,
    /// Legal states worth knowing about.
    pub notes: Vec<String>,
}

impl Report {
    fn problem(&mut self, message: String) {
        self.problem_count += 1;
        if self.problems.len() < LISTED_PROBLEMS {
            self.problems.push(message);
        }
    }
}

/// Inspects the store file at `path`, waiting up to `timeout` for a writer.
pub fn inspect(path: &Path, timeout: Duration) -> Result<Report> {
    let metadata = std::fs::metadata(path).map_err(|e| StoreError::io(path, e))?;
    if !metadata.is_file() {
        return Err(StoreError::invalid(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let mut report = Report {
        file_bytes: metadata.len(),
        ..Report::default()
    };
    if metadata.len() == 0 {
        report
            .notes
            .push("the file is empty: a new store with no entries".into());
        return Ok(report);
    }
    let started = Instant::now();
    let deadline = started + timeout;
    let mut sync = ChangeRing::new(path);
    let opened = catch(|| {
        lease::open_with_retry(path, deadline, started, &mut sync, || {
            ReadOnlyDatabase::open(path)
        })
    })
    .unwrap_or_else(|_| Err(engine_failure(path)))?;
    let journal = Journal::new(path);
    let state = match opened {
        Ok(db) => {
            // Changes only the journal holds are read after a replay on the
            // copy, as the next open will see them.
            let pending = catch(|| {
                let rtx = db.begin_read().at(path)?;
                replay::journal_has_changes(&rtx, &journal, path)
            })
            .unwrap_or_else(|_| Err(engine_failure(path)))?;
            if pending {
                FileState::CleanWithJournal
            } else {
                catch(|| read_everything(&db, path, &mut report))
                    .unwrap_or_else(|_| Err(engine_failure(path)))?;
                FileState::ReadAlready
            }
        }
        Err(DatabaseError::RepairAborted) => FileState::NeedsRecovery,
        Err(other) => return Err(other).at(path),
    };
    check_copy(path, (started, deadline), &mut sync, state, &mut report)?;
    // Read-only: a missing sidecar is not created by looking at it.
    if !sync.exists() || sync.position().is_none() {
        report
            .notes
            .push("no usable .sync sidecar: the next write creates one (nothing is lost)".into());
    }
    Ok(report)
}

/// Checks a private copy of `path`: crash recovery when it needs one, redb's
/// page checksums, and (unless `read_already`) membolt's own checks. The
/// copy is taken under a shared lock of the file, which a writer (holding it
/// exclusively while open) excludes, so it is one consistent state; it is
/// deleted afterwards.
fn check_copy(
    path: &Path,
    (started, deadline): (Instant, Instant),
    sync: &mut ChangeRing,
    state: FileState,
    report: &mut Report,
) -> Result<()> {
    let read_already = state == FileState::ReadAlready;
    let source = lease::open_with_retry(path, deadline, started, sync, || {
        let file = File::open(path).map_err(StorageError::from)?;
        match file.try_lock_shared() {
            Ok(()) => Ok(file),
            Err(TryLockError::WouldBlock) => Err(DatabaseError::DatabaseAlreadyOpen),
            Err(TryLockError::Error(error)) => Err(StorageError::from(error).into()),
        }
    })?
    .at(path)?;
    let copy = match TemporaryCopy::of(path) {
        Ok(copy) => copy,
        Err(error) if read_already => {
            report.notes.push(format!(
                "page checksums not checked: no room for a copy ({error})"
            ));
            return Ok(());
        }
        Err(error) => return Err(error),
    };
    // The journal is read under the same lock, so that it matches the copy
    // (a writer taking over afterwards starts a journal of its own).
    let journal = Journal::new(path);
    let snapshot = if read_already {
        None
    } else {
        journal
            .snapshot()
            .map_err(|e| StoreError::io(journal.path(), e))?
    };
    drop(source); // releases the lock
    let opened = catch(|| Database::open(&copy.0));
    let mut db = match opened {
        Ok(Ok(db)) => db,
        Ok(Err(error)) if read_already => {
            report.problem(format!("the database engine cannot open a copy: {error}"));
            return Ok(());
        }
        Ok(Err(error)) => {
            return Err(StoreError::corrupt(
                path,
                format!("crash recovery fails: {error}"),
            ));
        }
        Err(_) => return Err(engine_failure(path)),
    };
    if state == FileState::NeedsRecovery {
        report.notes.push(
            "the file was not closed cleanly (a process was killed); the crash recovery \
             that the next write runs succeeds (checked on a copy)"
                .into(),
        );
    }
    if !read_already {
        let pending = |store_id: &[u8], seq| {
            Ok(snapshot
                .as_ref()
                .map_or_else(Vec::new, |journal| journal.pending(store_id, seq)))
        };
        let replayed = catch(|| replay::replay_journal(&db, path, pending, |_| {}))
            .unwrap_or_else(|_| Err(engine_failure(path)))?;
        if replayed.records > 0 {
            report.notes.push(format!(
                "{} change(s) are only in the journal (their writer ended without \
                 committing them to the file, e.g. it was killed); the next open applies \
                 them (checked on a copy)",
                replayed.records
            ));
        }
    }
    let damage = match catch(|| db.check_integrity()) {
        Ok(Ok(true)) => None,
        Ok(Ok(false)) => Some("some pages fail their checksums: the file is damaged".into()),
        Ok(Err(error)) => Some(format!("the integrity check fails: {error}")),
        Err(_) => Some("the integrity check fails: the database engine failed".into()),
    };
    if let Some(problem) = damage {
        report.problem(problem);
    }
    if read_already {
        return Ok(());
    }
    catch(|| read_everything(&db, path, report)).unwrap_or_else(|_| Err(engine_failure(path)))
}

/// What the read-only open found.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FileState {
    /// Clean and complete: read through the read-only handle.
    ReadAlready,
    /// Clean, but the journal holds changes it lacks.
    CleanWithJournal,
    /// Left by a killed writer: readable only after crash recovery.
    NeedsRecovery,
}

/// A panic inside redb means damage it did not report as an error.
fn engine_failure(path: &Path) -> StoreError {
    StoreError::corrupt(path, "the database engine failed while reading the file")
}

/// A copy of a store file in the temporary directory, deleted when dropped.
struct TemporaryCopy(PathBuf);

impl TemporaryCopy {
    fn of(path: &Path) -> Result<TemporaryCopy> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let copy = std::env::temp_dir().join(format!(
            "membolt-doctor-{}-{nanos}.redb",
            std::process::id()
        ));
        let copy = TemporaryCopy(copy);
        fs::copy(path, &copy.0).map_err(|e| StoreError::io(&copy.0, e))?;
        Ok(copy)
    }
}

impl Drop for TemporaryCopy {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

fn read_everything(db: &impl ReadableDatabase, path: &Path, report: &mut Report) -> Result<()> {
    let rtx = db.begin_read().at(path)?;
    read_meta(&rtx, path)?;
    for table in rtx.list_tables().at(path)? {
        if !TABLE_NAMES.contains(&table.name()) {
            report
                .notes
                .push(format!("an extra table {:?} (not membolt's)", table.name()));
        }
    }
    let entries = rtx.open_table(ENTRIES).at(path)?;
    let mut keys = BTreeSet::new();
    let mut referenced = BTreeSet::new();
    for item in entries.iter().at(path)? {
        let (key, bytes) = item.at(path)?;
        let key = key.value();
        match Entry::decode(key, bytes.value()) {
            Ok(entry) => check_entry(&entry, report, &mut referenced),
            Err(error) => report.problem(format!("entry {key:?} is damaged: {error}")),
        }
        keys.insert(key.to_string());
    }
    report.entries = keys.len();
    let dangling = referenced.difference(&keys).count();
    if dangling > 0 {
        report.notes.push(format!(
            "{dangling} referenced keys do not exist (deleted parents; rendering skips them)"
        ));
    }
    Ok(())
}

fn check_entry(entry: &Entry, report: &mut Report, referenced: &mut BTreeSet<String>) {
    *report
        .by_type
        .entry(if entry.kind.is_empty() {
            "note".into()
        } else {
            entry.kind.to_string()
        })
        .or_default() += 1;
    let key = &entry.key;
    if key.len() > MAX_KEY_BYTES {
        report.problem(format!("key {key:?} is longer than {MAX_KEY_BYTES} bytes"));
    }
    if entry.created_at > entry.updated_at {
        report.problem(format!("entry {key:?} was updated before it was created"));
    }
    let mut seen = BTreeSet::new();
    for reference in &entry.references {
        if reference == key {
            report.problem(format!("entry {key:?} references itself"));
        } else if !seen.insert(reference.as_ref()) {
            report.problem(format!("entry {key:?} references {reference:?} twice"));
        }
        referenced.insert(reference.to_string());
    }
}
