//! `membolt repair`: salvaging a damaged store file into a new one.
//!
//! Every record that passes its checksum is copied into a new store, with
//! its stamps and references: the file's records (read through the
//! in-memory overlay, so the damaged file is never written to), then the
//! journal's records that redb lacks, oldest first, each checked by its own
//! checksum (records stranded behind a damaged one included). What could
//! not be saved is listed: the keys of damaged records, and the parts of
//! the file or journal that could not be read at all.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use redb::{ReadableDatabase, ReadableTable};

use crate::entry::{Accept, Entry, Interner};
use crate::error::{AtStore, Result, StoreError};
use crate::quiet_panic::catch;
use crate::store::Store;
use crate::store::medium::Call;
use crate::store::redb::change_ring::ChangeRing;
use crate::store::redb::format::{ENTRIES, Meta, read_meta};
use crate::store::redb::journal::{AllRecords, Journal};
use crate::store::redb::recover_in_memory;

/// What [`salvage`] did.
#[derive(Debug, Default)]
pub struct Salvage {
    /// Entries written to the new store.
    pub saved: usize,
    /// Of those, how many came from the journal.
    pub from_journal: usize,
    /// Keys whose record failed its checksum (or did not decode).
    pub lost_keys: Vec<String>,
    /// Parts that could not be read at all, described.
    pub unreadable: Vec<String>,
}

/// Salvages the store file at `source` into a new store at `target`
/// (which must not exist yet or be empty), waiting up to `timeout` for a
/// writer of `source`.
pub fn salvage(source: &Path, target: &Path, timeout: Duration) -> Result<Salvage> {
    let target_taken = std::fs::metadata(target).is_ok_and(|meta| meta.len() > 0);
    if target_taken {
        return Err(StoreError::invalid(format!(
            "{} already exists: repair writes a new store and never overwrites one",
            target.display()
        )));
    }
    if std::fs::canonicalize(source).ok() == std::fs::canonicalize(target).ok() {
        return Err(StoreError::invalid(
            "the repaired store must be another file than the damaged one",
        ));
    }
    let mut salvage = Salvage::default();
    let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
    let read = catch(|| read_everything(source, timeout, &mut entries, &mut salvage));
    match read {
        Ok(Ok(())) => {}
        Ok(Err(error)) => return Err(error),
        Err(_) => salvage
            .unreadable
            .push("the database engine failed part way through reading the file".into()),
    }
    salvage.lost_keys.sort();
    salvage.lost_keys.dedup();
    salvage.lost_keys.retain(|key| !entries.contains_key(key));
    let store = Store::open(target, timeout)?;
    salvage.saved = entries.len();
    store.put_exact(entries.into_values().collect())?;
    store.close();
    Ok(salvage)
}

/// Reads every record of the file and then of the journal that passes its
/// checksum into `entries`, noting what could not be read.
fn read_everything(
    source: &Path,
    timeout: Duration,
    entries: &mut BTreeMap<String, Entry>,
    salvage: &mut Salvage,
) -> Result<()> {
    let call = Call::new(timeout);
    let mut ring = ChangeRing::new(source);
    // The journal as it is now, read while the file is locked.
    let journal = Journal::new(source);
    let db = recover_in_memory(source, &call, &mut ring)?;
    let rtx = db.begin_read().at(source)?;
    let meta = read_meta(&rtx, source);
    let accept = meta.as_ref().map_or(Accept::Legacy, Meta::accept);
    let table = rtx.open_table(ENTRIES).at(source)?;
    let mut interner = Interner::default();
    let mut take = |key: &str, bytes: &[u8], salvage: &mut Salvage| match Entry::decode_with(
        key,
        bytes,
        &mut interner,
        accept,
    ) {
        Ok(entry) => {
            entries.insert(key.to_string(), entry);
        }
        Err(_) => salvage.lost_keys.push(key.to_string()),
    };
    // Forwards until the first page that cannot be read, then backwards
    // from the end up to it: only what lies under a damaged page is out
    // of reach.
    let mut last_forward: Option<String> = None;
    let mut broke = false;
    for item in table.iter().at(source)? {
        let Ok((key, bytes)) = item else {
            broke = true;
            break;
        };
        last_forward = Some(key.value().to_string());
        take(key.value(), bytes.value(), salvage);
    }
    if broke {
        let mut reached = None;
        for item in table.iter().at(source)?.rev() {
            let Ok((key, bytes)) = item else { break };
            if last_forward.as_deref() >= Some(key.value()) {
                break;
            }
            reached = Some(key.value().to_string());
            take(key.value(), bytes.value(), salvage);
        }
        salvage.unreadable.push(format!(
            "records between {} and {} lie in damaged pages",
            last_forward.map_or_else(|| "the start".into(), |k| format!("{k:?}")),
            reached.map_or_else(|| "the end".into(), |k| format!("{k:?}")),
        ));
    }
    match meta {
        Ok(meta) => {
            let snapshot = journal
                .snapshot()
                .map_err(|e| StoreError::io(journal.path(), e))?;
            if let Some(snapshot) = snapshot {
                take_journal(
                    &snapshot.every_record_after(&meta.store_id, meta.journal_seq),
                    entries,
                    salvage,
                );
            }
        }
        Err(error) => salvage.unreadable.push(format!(
            "the journal cannot be matched to the file, whose meta table is damaged ({error})"
        )),
    }
    Ok(())
}

/// Applies the journal's records that pass their checksums, oldest first.
fn take_journal(
    records: &AllRecords,
    entries: &mut BTreeMap<String, Entry>,
    salvage: &mut Salvage,
) {
    if records.damaged > 0 {
        salvage.unreadable.push(format!(
            "{} journal record(s) fail their checksums",
            records.damaged
        ));
    }
    let mut interner = Interner::default();
    for record in &records.records {
        for (key, value) in &record.changes {
            match value {
                Some(bytes) => {
                    match Entry::decode_with(key, bytes, &mut interner, Accept::Legacy) {
                        Ok(entry) => {
                            salvage.from_journal += 1;
                            entries.insert(key.clone(), entry);
                        }
                        Err(_) => salvage.lost_keys.push(key.clone()),
                    }
                }
                None => {
                    entries.remove(key);
                }
            }
        }
    }
}
