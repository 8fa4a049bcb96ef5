//! The journal's changes that redb lacks (their writer was killed, or its
//! final commit failed): found, checked, and applied either to the file (by
//! whoever next opens it for writing) or only to a mirror (by a reader,
//! which never writes). See `journal/mod.rs` for why exactly the records after
//! redb's `journal_seq` are the missing ones.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use redb::{Database, ReadableDatabase};

use crate::entry::{Accept, Entry, Interner};
use crate::error::{Result, StoreError};
use crate::store::mirror::Mirror;
use crate::store::redb::acknowledged::{self, Mark};
use crate::store::redb::errors::AtStore;
use crate::store::redb::format::{CLOCK, ENTRIES, JOURNAL_SEQ, META, Meta, read_meta};
use crate::store::redb::journal::{Journal, Pending, Record};

/// The records to replay after `meta`'s `journal_seq`, or `Corrupt` when the
/// journal cannot give back every acknowledged change (judged with the
/// sidecar's acknowledgement `mark`, see `acknowledged.rs`; `crashed`: the
/// file was left by a killed writer). A newest record whose write was cut
/// short is not among them, and costs nothing: it was never acknowledged.
pub(crate) fn pending_records(
    journal: &Journal,
    meta: &Meta,
    mark: Option<&Mark>,
    crashed: bool,
) -> Result<Vec<Record>> {
    let pending = journal
        .pending(&meta.store_id, meta.journal_seq)
        .map_err(|e| StoreError::io(journal.path(), e))?;
    checked(pending, meta, mark, journal.path(), crashed)
}

/// [`Pending`] as a result: its records, or why changes are missing.
pub(crate) fn checked(
    pending: Pending,
    meta: &Meta,
    mark: Option<&Mark>,
    journal: &Path,
    crashed: bool,
) -> Result<Vec<Record>> {
    match acknowledged::loss(&pending, mark, &meta.store_id, meta.journal_seq, crashed) {
        Some(loss) => Err(StoreError::corrupt(journal, loss.describe())),
        None => Ok(pending.records),
    }
}

/// With a write handle on the store: applies the journal's pending records
/// (as `pending(meta)` gives them) in one durable commit, calling
/// `announce` with their keys just before the commit. Returns redb's
/// `journal_seq` afterwards.
pub(crate) fn replay_into_file(
    db: &Database,
    path: &Path,
    pending: impl FnOnce(&Meta) -> Result<Vec<Record>>,
    announce: impl FnOnce(&BTreeSet<&str>),
) -> Result<u64> {
    let meta = {
        let rtx = db.begin_read().at(path)?;
        read_meta(&rtx, path)?
    };
    let records = pending(&meta)?;
    let Some(last) = records.last().map(|record| record.seq) else {
        return Ok(meta.journal_seq);
    };
    let wtx = db.begin_write().at(path)?;
    let mut clock = meta.clock;
    {
        let mut entries = wtx.open_table(ENTRIES).at(path)?;
        for Record {
            changes, clock: at, ..
        } in &records
        {
            clock = clock.max(*at);
            for (key, value) in changes {
                match value {
                    Some(bytes) => entries.insert(key.as_str(), bytes.as_slice()).map(drop),
                    None => entries.remove(key.as_str()).map(drop),
                }
                .at(path)?;
            }
        }
        let mut meta_table = wtx.open_table(META).at(path)?;
        meta_table
            .insert(CLOCK, clock.to_le_bytes().as_slice())
            .at(path)?;
        meta_table
            .insert(JOURNAL_SEQ, last.to_le_bytes().as_slice())
            .at(path)?;
    }
    let keys: BTreeSet<&str> = records
        .iter()
        .flat_map(|record| record.changes.iter().map(|(key, _)| key.as_str()))
        .collect();
    announce(&keys);
    wtx.commit().at(path)?;
    Ok(last)
}

/// Applies `records` to `mirror` only (a reader's view of what the next
/// writer will replay). A record's value is checked by the record's own
/// checksum, so values of either record format are taken.
pub(crate) fn replay_into_mirror(
    mirror: &mut Mirror,
    records: &[Record],
    journal: &Path,
) -> Result<()> {
    let mut interner = Interner::default();
    for record in records {
        mirror.clock = mirror.clock.max(record.clock);
        for (key, value) in &record.changes {
            match value {
                Some(bytes) => {
                    let entry = Entry::decode_with(key, bytes, &mut interner, Accept::Legacy)
                        .map_err(|e| {
                            StoreError::corrupt(journal, format!("entry {key:?} is damaged: {e}"))
                        })?;
                    mirror.insert(Arc::new(entry));
                }
                None => {
                    mirror.remove(key);
                }
            }
        }
    }
    Ok(())
}
