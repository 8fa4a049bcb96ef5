//! `membolt doctor`: a read-only integrity check of a store file.
//!
//! It opens the file read-only (never writing, never repairing), reads every
//! record, and reports what it finds: damage (records that do not decode,
//! broken invariants) as problems, odd but legal states (references to
//! deleted keys) as notes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use redb::{ReadOnlyDatabase, ReadableDatabase, ReadableTable, TableHandle};

use crate::entry::Entry;
use crate::error::{Result, StoreError};
use crate::lease;
use crate::store::{self, MAX_KEY_BYTES};
use crate::sync::SyncFile;

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
    let mut sync = SyncFile::new(path);
    let opened = lease::open_with_retry(path, started + timeout, started, &mut sync, || {
        ReadOnlyDatabase::open(path)
    })?;
    let db = match opened {
        Ok(db) => db,
        Err(redb::DatabaseError::RepairAborted) => {
            report.notes.push(
                "the file was not closed cleanly (a process was killed); it was not read, \
                 because checking it needs the crash recovery that the next write runs"
                    .into(),
            );
            return Ok(report);
        }
        Err(other) => return Err(lease::map_database_error(path, other)),
    };
    // A panic inside redb means damage it did not report as an error.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        read_everything(&db, path, &mut report)
    }))
    .unwrap_or_else(|_| {
        Err(StoreError::corrupt(
            path,
            "the database engine failed while reading the file",
        ))
    })?;
    if sync.position().is_none() {
        report
            .notes
            .push("no usable .sync sidecar: the next write creates one (nothing is lost)".into());
    }
    Ok(report)
}

fn read_everything(db: &ReadOnlyDatabase, path: &Path, report: &mut Report) -> Result<()> {
    let storage = |e: &dyn std::fmt::Display| StoreError::corrupt(path, e.to_string());
    let rtx = db.begin_read().map_err(|e| storage(&e))?;
    store::check_meta(&rtx, path)?;
    for table in rtx.list_tables().map_err(|e| storage(&e))? {
        if !store::TABLE_NAMES.contains(&table.name()) {
            report
                .notes
                .push(format!("an extra table {:?} (not membolt's)", table.name()));
        }
    }
    let entries = rtx.open_table(store::ENTRIES).map_err(|e| storage(&e))?;
    let mut keys = BTreeSet::new();
    let mut referenced = BTreeSet::new();
    for item in entries.iter().map_err(|e| storage(&e))? {
        let (key, bytes) = item.map_err(|e| storage(&e))?;
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
