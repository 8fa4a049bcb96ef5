//! `membolt doctor`: a read-only check of a store file that reports every
//! damage it can see.
//!
//! The file is opened through the in-memory overlay (`overlay.rs`), so
//! nothing is written to it or beside it, it needs no free disk space, and
//! a file the caller may only read is checked like any other. In order:
//! 1. crash recovery, as the next writer would run it (a file left by a
//!    killed writer), in memory;
//! 2. redb's page checksums, before anything is replayed on top;
//! 3. the journal: records redb lacks (a note: the next open applies them),
//!    a newest record whose write was cut short (a note: never
//!    acknowledged, the next open discards it), and acknowledged changes it
//!    cannot give back, judged as the next open judges them
//!    (`acknowledged.rs`: valid records stranded behind a damaged one,
//!    acknowledged changes damaged or cut away; problems);
//! 4. every record against its checksum, after the journal's records are
//!    applied as the next open would, and the invariants of §1.2.
//!
//! Damage is reported as problems (exit 1), odd but legal states (a
//! recovered crash, references to deleted keys) as notes. A panic of the
//! engine on a damaged file is a problem too: doctor never crashes.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableHandle};

use crate::entry::{Accept, Entry, Interner};
use crate::error::{Result, StoreError};
use crate::quiet_panic::catch;
use crate::store::medium::Call;
use crate::store::redb::acknowledged::{self, Mark};
use crate::store::redb::change_ring::ChangeRing;
use crate::store::redb::errors::AtStore;
use crate::store::redb::format::{ENTRIES, Meta, TABLE_NAMES, read_meta};
use crate::store::redb::journal::{Journal, Pending, Snapshot};
use crate::store::redb::overlay::OverlayBackend;

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

/// The store's invariants of one entry, handed in by the layer above (a
/// medium applies no rule of its own): the problems it breaks.
pub(crate) type EntryRules = fn(&Entry) -> Vec<String>;

/// Inspects the store file at `path`, waiting up to `timeout` for a writer,
/// checking each entry read by `entry_problems`.
pub(crate) fn inspect(
    path: &Path,
    timeout: Duration,
    entry_problems: EntryRules,
) -> Result<Report> {
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
    if metadata.nlink() > 1 {
        report.problem(format!(
            "the file has {} names (hard links): membolt refuses to use it, since its \
             journal is found by name; remove the other links",
            metadata.nlink()
        ));
    }
    if metadata.len() == 0 {
        report
            .notes
            .push("the file is empty: a new store with no entries".into());
        return Ok(report);
    }
    let call = Call::new(timeout);
    let mut ring = ChangeRing::new(path);
    let backend = OverlayBackend::open(path, call.deadline, call.started, &mut ring)?;
    // What the journal holds, read under the same lock as the file, so that
    // both describe one state (a writer taking over afterwards starts a
    // journal of its own).
    let journal = Journal::new(path);
    let snapshot = journal
        .snapshot()
        .map_err(|e| StoreError::io(journal.path(), e))?;
    let recovery = Arc::new(Mutex::new(Recovery::default()));
    let seen = recovery.clone();
    let opened = catch(|| {
        backend.database(|backend| {
            redb::Builder::new()
                .set_repair_callback(move |session| {
                    let mut seen = seen
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    seen.ran = true;
                    // The first report of a repair comes at 0.3 only when
                    // the newest commit fails its checksums.
                    seen.fell_back |= session.progress() < 0.5;
                })
                .create_with_backend(backend)
        })
    });
    let mut db = match opened {
        Ok(Ok(db)) => db,
        Ok(Err(error)) => return Err(error).at(path),
        Err(_) => return Err(engine_failure(path)),
    };
    let recovery = *recovery
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if recovery.ran {
        // Whether falling back loses anything is the journal's to say
        // (below): it holds every change after the commit used, unless
        // records are stranded.
        let fell_back = if recovery.fell_back {
            " (the newest commit had not reached the disk whole, so the one before it is \
             used, with the journal's changes since on top)"
        } else {
            ""
        };
        report.notes.push(format!(
            "the file was not closed cleanly (a process was killed); the crash recovery \
             that the next write runs succeeds{fell_back} (checked in memory)"
        ));
    }
    match catch(|| db.check_integrity()) {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => {
            report.problem("some pages fail their checksums: the file is damaged".into());
        }
        Ok(Err(error)) => report.problem(format!("the integrity check fails: {error}")),
        Err(_) => report.problem("the integrity check fails: the database engine failed".into()),
    }
    let crashed = recovery.ran;
    let mark = ring.mark();
    let journal_state = JournalState {
        snapshot: snapshot.as_ref(),
        journal: &journal,
        mark: mark.as_ref(),
        crashed,
    };
    let checked = catch(|| check_records(&db, path, &journal_state, entry_problems, &mut report));
    match checked {
        Ok(Ok(())) => {}
        Ok(Err(error @ (StoreError::NewerSchema { .. } | StoreError::Corrupt { .. })))
            if report.entries == 0 && report.problem_count == 0 =>
        {
            // Not a membolt store (or a newer one): say so as an error.
            return Err(error);
        }
        Ok(Err(error)) => report.problem(error.to_string()),
        Err(_) => report.problem("reading the records fails: the database engine failed".into()),
    }
    // Read-only: a missing sidecar is not created by looking at it.
    if !ring.exists() || ring.position().is_none() {
        report
            .notes
            .push("no usable .sync sidecar: the next write creates one (nothing is lost)".into());
    }
    note_image(path, &mut report);
    Ok(report)
}

/// The image is a cache (`store/image/`): damage to it is a note, never a
/// problem of the store.
fn note_image(path: &Path, report: &mut Report) {
    let image = crate::store::image::path_for(path);
    if let Err(crate::store::image::Problem::Damaged(why)) =
        crate::store::image::Image::open(&image)
    {
        report.notes.push(format!(
            "the image beside the file ({}) fails its checks ({why}): it is a cache, never \
             used while so, and the next write replaces it (nothing is lost)",
            image.display()
        ));
    }
}

/// What redb's repair callback saw while opening the file.
#[derive(Clone, Copy, Default)]
struct Recovery {
    /// Crash recovery ran.
    ran: bool,
    /// The newest commit failed its checksums; the previous one was used.
    fell_back: bool,
}

/// The journal beside the file, as read under the file's lock.
struct JournalState<'a> {
    snapshot: Option<&'a Snapshot>,
    journal: &'a Journal,
    /// The sidecar's acknowledgement mark (acknowledged.rs).
    mark: Option<&'a Mark>,
    /// The file was left by a killed writer.
    crashed: bool,
}

/// Checks the meta table and the tables, applies the journal's pending
/// records as the next open would, and checks every resulting entry.
fn check_records(
    db: &Database,
    path: &Path,
    journal: &JournalState<'_>,
    entry_problems: EntryRules,
    report: &mut Report,
) -> Result<()> {
    let rtx = db.begin_read().at(path)?;
    let meta = read_meta(&rtx, path)?;
    for table in rtx.list_tables().at(path)? {
        if !TABLE_NAMES.contains(&table.name()) {
            report
                .notes
                .push(format!("an extra table {:?} (not membolt's)", table.name()));
        }
    }
    let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
    let table = rtx.open_table(ENTRIES).at(path)?;
    let count = table.len().at(path)?;
    let mut interner = Interner::default();
    let mut read = 0u64;
    for item in table.iter().at(path)? {
        let (key, bytes) = match item {
            Ok(item) => item,
            Err(error) => {
                report.problem(format!("the records cannot all be read: {error}"));
                break;
            }
        };
        read += 1;
        let key = key.value();
        match Entry::decode_with(key, bytes.value(), &mut interner, meta.accept()) {
            Ok(entry) => {
                entries.insert(key.to_string(), entry);
            }
            Err(error) => report.problem(format!("entry {key:?} is damaged: {error}")),
        }
    }
    if read != count {
        report.problem(format!(
            "the file says it holds {count} records, but {read} could be read"
        ));
    }
    if let Some(snapshot) = journal.snapshot {
        let pending = snapshot.pending(&meta.store_id, meta.journal_seq);
        check_journal(
            &pending,
            &meta,
            journal,
            &mut interner,
            &mut entries,
            report,
        );
    }
    let mut referenced = BTreeSet::new();
    for entry in entries.values() {
        check_entry(entry, entry_problems, report, &mut referenced);
    }
    report.entries = entries.len();
    let dangling = referenced
        .iter()
        .filter(|key| !entries.contains_key(*key))
        .count();
    if dangling > 0 {
        report.notes.push(format!(
            "{dangling} referenced keys do not exist (deleted parents; rendering skips them)"
        ));
    }
    Ok(())
}

/// Reports what the journal's records beyond redb's put at risk, and
/// applies the replayable ones to `entries` as the next open would.
fn check_journal(
    pending: &Pending,
    meta: &Meta,
    state: &JournalState<'_>,
    interner: &mut Interner,
    entries: &mut BTreeMap<String, Entry>,
    report: &mut Report,
) {
    let loss = acknowledged::loss(
        pending,
        state.mark,
        &meta.store_id,
        meta.journal_seq,
        state.crashed,
    );
    if let Some(loss) = &loss {
        report.problem(format!("{} (they would be lost)", loss.describe()));
    } else {
        if let Some(damaged) = pending.damaged_next {
            report.notes.push(format!(
                "the journal's newest record (change {}) was cut short as it was written \
                 (its writer was killed, or the power failed), so its change never returned \
                 to its caller; the next open discards it",
                damaged.seq
            ));
        }
        if pending.short {
            report.notes.push(format!(
                "the journal is shorter than membolt makes it ({}), but held no \
                 acknowledged change the file lacks; the next writer makes a new one",
                state.journal.path().display()
            ));
        }
    }
    if !pending.records.is_empty() {
        report.notes.push(format!(
            "{} change(s) are only in the journal (their writer ended without committing \
             them to the file, e.g. it was killed); the next open applies them (checked in \
             memory)",
            pending.records.len()
        ));
    }
    for record in &pending.records {
        for (key, value) in &record.changes {
            match value {
                Some(bytes) => match Entry::decode_with(key, bytes, interner, Accept::Legacy) {
                    Ok(entry) => {
                        entries.insert(key.clone(), entry);
                    }
                    Err(error) => {
                        report.problem(format!("entry {key:?} in the journal is damaged: {error}"));
                    }
                },
                None => {
                    entries.remove(key);
                }
            }
        }
    }
}

/// A panic inside redb means damage it did not report as an error.
fn engine_failure(path: &Path) -> StoreError {
    StoreError::corrupt(path, "the database engine failed while reading the file")
}

fn check_entry(
    entry: &Entry,
    entry_problems: EntryRules,
    report: &mut Report,
    referenced: &mut BTreeSet<String>,
) {
    *report
        .by_type
        .entry(if entry.kind.is_empty() {
            "note".into()
        } else {
            entry.kind.to_string()
        })
        .or_default() += 1;
    for problem in entry_problems(entry) {
        report.problem(problem);
    }
    for reference in &entry.references {
        referenced.insert(reference.to_string());
    }
}
