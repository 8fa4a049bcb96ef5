//! Replaying the journal: the changes a lease made durable only in the
//! `.journal` (its writer was killed, or its final commit failed) are
//! applied to the file by whoever next opens it for writing (see
//! `journal.rs` for why exactly the records after redb's `journal_seq` are
//! the missing ones).

use std::collections::BTreeSet;
use std::path::Path;

use redb::{Database, ReadableDatabase};

use crate::error::{AtStore, Result, StoreError};
use crate::store::redb::format::{CLOCK, ENTRIES, JOURNAL_SEQ, META, read_meta};
use crate::store::redb::journal::{Journal, Record};

/// Whether `journal` holds changes the store (as `rtx` sees it) lacks.
pub(crate) fn journal_has_changes(
    rtx: &redb::ReadTransaction,
    journal: &Journal,
    path: &Path,
) -> Result<bool> {
    let meta = read_meta(rtx, path)?;
    journal
        .has_pending(&meta.store_id, meta.journal_seq)
        .map_err(|e| StoreError::io(journal.path(), e))
}

/// What [`replay_journal`] did.
pub(crate) struct Replayed {
    /// redb's `journal_seq` afterwards.
    pub seq: u64,
    /// How many journal records were applied.
    pub records: usize,
}

/// With a write handle on the store: applies, in one durable commit, the
/// journal records that follow redb's `journal_seq` (see journal.rs), as
/// `pending(store id, journal_seq)` gives them, calling `announce` with their
/// keys just before the commit.
pub(crate) fn replay_journal(
    db: &Database,
    path: &Path,
    pending: impl FnOnce(&[u8], u64) -> Result<Vec<Record>>,
    announce: impl FnOnce(&BTreeSet<&str>),
) -> Result<Replayed> {
    let meta = {
        let rtx = db.begin_read().at(path)?;
        read_meta(&rtx, path)?
    };
    let records = pending(&meta.store_id, meta.journal_seq)?;
    let Some(last) = records.last().map(|record| record.seq) else {
        return Ok(Replayed {
            seq: meta.journal_seq,
            records: 0,
        });
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
    Ok(Replayed {
        seq: last,
        records: records.len(),
    })
}
