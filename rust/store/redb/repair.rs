//! `membolt repair`: salvaging a damaged store file into a new one (§14,
//! §14.3).
//!
//! Every record that passes its checksum is copied into a new store, with
//! its stamps and references: the file's records (read through the
//! in-memory overlay, so the damaged file is never written to), then the
//! journal's records that redb lacks, oldest first, each checked by its own
//! checksum (records stranded behind a damaged one included).
//!
//! The file is read through redb's tree, as it is (its crash recovery run
//! in memory for a file left by a killed writer) or, when it does not open
//! so, through redb's recovery forced in memory (the allocator state
//! rebuilt from the trees; the commit before the newest used should the
//! newest fail its checksums). When that tree is not the newest commit's,
//! or some of its pages cannot be read, or no tree can be read at all, the
//! file's pages are read one by one (`page_walk.rs`) for what the tree did
//! not give, each key kept at its newest version by stamp.
//!
//! What repair says is what was lost, and only that: the keys of damaged
//! records, parts of the file it could not read, and the acknowledged
//! changes the journal cannot give back, judged as `doctor` and the next
//! open judge them (`acknowledged.rs`) and named by key where the change
//! ring tells (a key whose newest change is lost has an older value in the
//! new store, or is back after a delete, or is absent). Damaged journal
//! records that held nothing acknowledged (old ones, or a newest one whose
//! write was cut short) are not losses.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redb::{ReadOnlyDatabase, ReadableDatabase, ReadableTable};

use crate::entry::{Accept, Entry, Interner};
use crate::error::{Result, StoreError};
use crate::quiet_panic::catch;
use crate::store::medium::Call;
use crate::store::redb::acknowledged::{self, Mark};
use crate::store::redb::change_ring::ChangeRing;
use crate::store::redb::errors::AtStore;
use crate::store::redb::format::{ENTRIES, Meta, read_meta};
use crate::store::redb::journal::{Journal, Record, Snapshot};
use crate::store::redb::overlay::{InMemory, OverlayBackend};
use crate::store::redb::page_walk;

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
    /// Acknowledged changes the journal cannot give back, described.
    pub lost_changes: Vec<String>,
    /// Keys whose newest acknowledged change is among those lost: the new
    /// store has an older value for them, has them back after a delete,
    /// or lacks them.
    pub rolled_back: Vec<String>,
    /// What was repaired without losing anything, described.
    pub notes: Vec<String>,
}

/// Reads every salvageable record of the store file at `source`, waiting
/// up to `timeout` for a writer of it: the entries, sorted by key, and
/// what was lost. Writing them into a new store is the layer above's
/// (`store/maintenance.rs`): a medium builds no store.
pub(crate) fn salvage(source: &Path, timeout: Duration) -> Result<(Vec<Entry>, Salvage)> {
    let mut salvage = Salvage::default();
    let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
    read_everything(source, timeout, &mut entries, &mut salvage)?;
    salvage.lost_keys.sort();
    salvage.lost_keys.dedup();
    salvage.lost_keys.retain(|key| !entries.contains_key(key));
    salvage.saved = entries.len();
    Ok((entries.into_values().collect(), salvage))
}

/// Reads every record of the file and then of the journal that passes its
/// checksum into `entries`, noting what could not be read or is lost.
fn read_everything(
    source: &Path,
    timeout: Duration,
    entries: &mut BTreeMap<String, Entry>,
    salvage: &mut Salvage,
) -> Result<()> {
    let call = Call::new(timeout);
    let mut ring = ChangeRing::new(source);
    // A shared lock on the file for the whole repair (each attempt below
    // takes its own too): no writer changes the file, the journal or the
    // sidecar meanwhile.
    let _lock = OverlayBackend::open(source, call.deadline, call.started, &mut ring)?;
    let journal = Journal::new(source);
    let snapshot = journal
        .snapshot()
        .map_err(|e| StoreError::io(journal.path(), e))?;
    let mark = ring.mark();
    let mut context = Context {
        snapshot: snapshot.as_ref(),
        mark: mark.as_ref(),
        ring: &mut ring,
    };
    let read = |opened: Result<(Handle, Recovery)>| {
        let (db, recovery) = opened?;
        catch(|| read_tree(&db, source, recovery)).unwrap_or_else(|_| {
            Err(StoreError::corrupt(
                source,
                "the database engine failed while reading it",
            ))
        })
    };
    // Read-only first: it needs nothing but the newest commit's tree.
    let tree = read(open_read_only(source, &call))
        .or_else(|first| read(open_private(source, &call, false)).map_err(|_| first))
        .or_else(|first| read(open_private(source, &call, true)).map_err(|_| first));
    let tree = match tree {
        Ok(tree) if tree.is_whole() || tree.is_caught_up_by(&context) => {
            if tree.recovery.fell_back {
                salvage.notes.push(
                    "the file's newest commit fails its checksums, so the one before it was \
                     read, and the journal holds every acknowledged change since (the .sync \
                     sidecar says which): nothing is lost"
                        .into(),
                );
            } else if tree.recovery.forced {
                salvage.notes.push(
                    "the file does not open as it is (its allocator state is damaged); redb's \
                     own recovery rebuilt that in memory, and every record was read"
                        .into(),
                );
            }
            *entries = tree.entries;
            salvage.lost_keys = tree.lost_keys;
            let meta = tree.meta.expect("a whole tree has its meta");
            // A forced recovery is no sign of a killed writer.
            let crashed = tree.recovery.ran && !tree.recovery.forced;
            take_journal(
                &meta,
                crashed,
                Apply::InOrder,
                &mut context,
                entries,
                salvage,
            );
            return Ok(());
        }
        other => other,
    };
    read_pages(source, tree, &mut context, entries, salvage)
}

/// What the journal side of a repair reads: taken under the file's lock.
struct Context<'a> {
    snapshot: Option<&'a Snapshot>,
    mark: Option<&'a Mark>,
    ring: &'a mut ChangeRing,
}

/// How redb opened the file.
#[derive(Clone, Copy, Default)]
struct Recovery {
    /// Crash recovery ran (a file left by a killed writer, or `forced`).
    ran: bool,
    /// The recovery was forced ([`OverlayBackend::force_recovery`]).
    forced: bool,
    /// The newest commit failed its checksums; the one before was used.
    fell_back: bool,
}

/// A database opened over the file without writing to it.
enum Handle {
    ReadOnly(ReadOnlyDatabase),
    Private(InMemory),
}

impl Handle {
    fn begin_read(&self) -> std::result::Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            Handle::ReadOnly(db) => db.begin_read(),
            Handle::Private(db) => db.begin_read(),
        }
    }
}

/// The file through redb read-only, when it needs no crash recovery.
fn open_read_only(source: &Path, call: &Call) -> Result<(Handle, Recovery)> {
    let mut ring = ChangeRing::new(source);
    let backend = OverlayBackend::open(source, call.deadline, call.started, &mut ring)?;
    let opened = catch(|| redb::Builder::new().open_read_only_with_backend(backend));
    match opened {
        Ok(opened) => Ok((Handle::ReadOnly(opened.at(source)?), Recovery::default())),
        Err(_) => Err(StoreError::corrupt(
            source,
            "the database engine failed while opening it",
        )),
    }
}

/// The file through redb, in memory over the file (nothing written to it),
/// with redb's recovery `forced` or not.
fn open_private(source: &Path, call: &Call, forced: bool) -> Result<(Handle, Recovery)> {
    let mut ring = ChangeRing::new(source);
    let backend = OverlayBackend::open(source, call.deadline, call.started, &mut ring)?;
    let mut same_tables = false;
    if forced {
        same_tables = backend
            .commits_share_their_tables()
            .map_err(|e| StoreError::io(source, e))?;
        backend
            .force_recovery()
            .map_err(|e| StoreError::io(source, e))?;
    }
    let seen = Arc::new(Mutex::new(Recovery {
        forced,
        ..Recovery::default()
    }));
    let track = seen.clone();
    let opened = catch(|| {
        backend.database(|backend| {
            redb::Builder::new()
                .set_repair_callback(move |session| {
                    let mut seen = track
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
    let db = match opened {
        Ok(opened) => opened.at(source)?,
        Err(_) => {
            return Err(StoreError::corrupt(
                source,
                "the database engine failed while opening it",
            ));
        }
    };
    let mut recovery = *seen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // Falling back to a commit with the same tables (the newest changed
    // only redb's own pages, e.g. the allocator state) loses nothing.
    recovery.fell_back &= !same_tables;
    Ok((Handle::Private(db), recovery))
}

/// What redb's tree of the file gave.
struct TreeRead {
    entries: BTreeMap<String, Entry>,
    /// Keys whose record failed its checksum.
    lost_keys: Vec<String>,
    /// The keys strictly between these (`None`: the start, the end) lie in
    /// damaged pages; `None` when every page was read.
    gap: Option<(Option<String>, Option<String>)>,
    /// The meta table, unless it is damaged.
    meta: Option<Meta>,
    recovery: Recovery,
}

impl TreeRead {
    /// Whether this is the file's newest state, read whole.
    fn is_whole(&self) -> bool {
        self.gap.is_none() && self.meta.is_some() && !self.recovery.fell_back
    }

    /// Whether this is an older commit read whole, and the journal holds
    /// every acknowledged change since: the acknowledgement mark speaks for
    /// this very commit (it was the base of the lease the newest commit
    /// ended) and nothing it counts is missing.
    fn is_caught_up_by(&self, context: &Context<'_>) -> bool {
        let (Some(meta), Some(snapshot), Some(mark)) = (&self.meta, context.snapshot, context.mark)
        else {
            return false;
        };
        let pending = snapshot.pending(&meta.store_id, meta.journal_seq);
        self.gap.is_none()
            && mark.speaks_for(&meta.store_id, meta.journal_seq)
            && acknowledged::loss(&pending, Some(mark), &meta.store_id, meta.journal_seq, true)
                .is_none()
    }
}

/// Reads the file's records through redb's tree: forwards until the first
/// page that cannot be read, then backwards from the end up to it, so that
/// only what lies under a damaged page is out of reach.
fn read_tree(db: &Handle, source: &Path, recovery: Recovery) -> Result<TreeRead> {
    let rtx = db.begin_read().at(source)?;
    let meta = read_meta(&rtx, source).ok();
    let accept = meta.as_ref().map_or(Accept::Legacy, Meta::accept);
    let table = rtx.open_table(ENTRIES).at(source)?;
    let mut read = TreeRead {
        entries: BTreeMap::new(),
        lost_keys: Vec::new(),
        gap: None,
        meta,
        recovery,
    };
    let mut interner = Interner::default();
    let mut take = |key: &str, bytes: &[u8], read: &mut TreeRead| match Entry::decode_with(
        key,
        bytes,
        &mut interner,
        accept,
    ) {
        Ok(entry) => {
            read.entries.insert(key.to_string(), entry);
        }
        Err(_) => read.lost_keys.push(key.to_string()),
    };
    let mut last_forward: Option<String> = None;
    let mut broke = false;
    for item in table.iter().at(source)? {
        let Ok((key, bytes)) = item else {
            broke = true;
            break;
        };
        last_forward = Some(key.value().to_string());
        take(key.value(), bytes.value(), &mut read);
    }
    if broke {
        let mut reached = None;
        for item in table.iter().at(source)?.rev() {
            let Ok((key, bytes)) = item else { break };
            if last_forward.as_deref() >= Some(key.value()) {
                break;
            }
            reached = Some(key.value().to_string());
            take(key.value(), bytes.value(), &mut read);
        }
        read.gap = Some((last_forward, reached));
    }
    Ok(read)
}

/// How journal records are applied.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Apply {
    /// In the order of their numbers, after the file's state they follow.
    InOrder,
    /// Where they are newer than the version kept (see [`apply_by_stamp`]):
    /// the file's state is not known exactly.
    ByStamp,
}

/// Applies the journal's records that redb lacks and that pass their
/// checksums, and notes the acknowledged changes lost (judged as the next
/// open judges them), with the keys they rolled back.
fn take_journal(
    meta: &Meta,
    crashed: bool,
    apply: Apply,
    context: &mut Context<'_>,
    entries: &mut BTreeMap<String, Entry>,
    salvage: &mut Salvage,
) {
    let Some(snapshot) = context.snapshot else {
        return;
    };
    let all = snapshot.every_record_after(&meta.store_id, meta.journal_seq);
    match apply {
        Apply::InOrder => apply_records(&all, entries, salvage),
        Apply::ByStamp => {
            let mut interner = Interner::default();
            for record in &all {
                apply_by_stamp(record, entries, &mut interner, salvage);
            }
        }
    }
    let pending = snapshot.pending(&meta.store_id, meta.journal_seq);
    let Some(loss) = acknowledged::loss(
        &pending,
        context.mark,
        &meta.store_id,
        meta.journal_seq,
        crashed,
    ) else {
        return;
    };
    let unsaved = acknowledged::unsalvaged(&loss, &all);
    if unsaved.as_ref().is_some_and(Vec::is_empty) {
        return; // every change it concerns was found further on
    }
    let count = unsaved.as_ref().map_or_else(
        || "an unknown number of".into(),
        |seqs| seqs.len().to_string(),
    );
    // The keys the lease announced, if the mark says where it began.
    let announced = context
        .mark
        .filter(|mark| mark.speaks_for(&meta.store_id, meta.journal_seq))
        .and_then(Mark::ring_position)
        .and_then(|since| {
            let now = context.ring.position()?;
            context.ring.changed_keys(since, now)
        });
    let newest_lost = unsaved.as_ref().and_then(|seqs| seqs.last().copied());
    let which = match (&announced, newest_lost) {
        (Some(announced), Some(newest_lost)) => {
            salvage.rolled_back =
                acknowledged::keys_at_risk(newest_lost, announced, &pending.records, &all);
            "the keys whose newest change may be among them are listed as rolled back"
        }
        _ => "which keys they changed cannot be told (the .sync sidecar does not say)",
    };
    salvage.lost_changes.push(format!(
        "{}; {count} acknowledged change(s) could not be saved; {which}",
        loss.describe()
    ));
}

/// Applies journal records (oldest first) to `entries`.
fn apply_records(records: &[Record], entries: &mut BTreeMap<String, Entry>, salvage: &mut Salvage) {
    let mut interner = Interner::default();
    for record in records {
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

/// When redb's tree of the file cannot be read whole: the file's pages
/// read one by one (`page_walk.rs`), each key kept at its newest version by
/// stamp, over what the tree gave (`tree`), then the journal's records by
/// stamp too. Which keys exist is then known only where the tree was read
/// from the file's newest commit, so this is said as a part that could not
/// be read.
fn read_pages(
    source: &Path,
    tree: Result<TreeRead>,
    context: &mut Context<'_>,
    entries: &mut BTreeMap<String, Entry>,
    salvage: &mut Salvage,
) -> Result<()> {
    let bytes = std::fs::read(source).map_err(|e| StoreError::io(source, e))?;
    let found = page_walk::walk(&bytes);
    // The meta of the newest state the pages hold.
    let newest_meta =
        found
            .metas
            .iter()
            .max_by_key(|(_, seq)| *seq)
            .map(|(store_id, journal_seq)| Meta {
                store_id: store_id.clone(),
                clock: i64::MIN,
                journal_seq: *journal_seq,
                schema: crate::store::redb::format::SCHEMA_VERSION,
                image_token: None,
                ring_mark: None,
            });
    let (meta, why, crashed) = match tree {
        Ok(tree) => {
            let crashed = tree.recovery.ran && !tree.recovery.forced && !tree.recovery.fell_back;
            *entries = tree.entries;
            salvage.lost_keys = tree.lost_keys;
            // Keys the newest commit's tree was read for are as it says;
            // from the pages, only keys it could not reach are taken.
            let reach = |key: &str| match (&tree.gap, tree.recovery.fell_back) {
                (_, true) => true,
                (Some((low, high)), false) => {
                    low.as_deref().is_none_or(|low| low < key)
                        && high.as_deref().is_none_or(|high| key < high)
                }
                (None, false) => false,
            };
            for (key, entry) in found.entries {
                if reach(&key) {
                    page_walk::keep_newest(entries, entry);
                }
            }
            let why = match (&tree.gap, tree.recovery.fell_back) {
                (_, true) => "the file's newest commit fails its checksums".to_string(),
                (Some((low, high)), false) => format!(
                    "records between {} and {} lie in damaged pages",
                    low.as_ref()
                        .map_or_else(|| "the start".into(), |k| format!("{k:?}")),
                    high.as_ref()
                        .map_or_else(|| "the end".into(), |k| format!("{k:?}")),
                ),
                (None, false) => "the file's meta table is damaged".to_string(),
            };
            let meta = if tree.recovery.fell_back {
                newest_meta
            } else {
                tree.meta.or(newest_meta)
            };
            (meta, why, crashed)
        }
        Err(error) => {
            *entries = found.entries;
            (
                newest_meta,
                format!(
                    "redb cannot read the file's tables, even through its own recovery ({error})"
                ),
                false,
            )
        }
    };
    match &meta {
        Some(meta) => take_journal(meta, crashed, Apply::ByStamp, context, entries, salvage),
        None => salvage.unreadable.push(
            "the journal cannot be matched to the file, whose meta table cannot be read".into(),
        ),
    }
    salvage.unreadable.push(format!(
        "{why}: the file's pages were read one by one instead, keeping the newest version \
         found of each key there: a key deleted before may be back, and a key whose every \
         version lay in a damaged page is missing"
    ));
    Ok(())
}

/// Applies one journal record where it is newer than what `entries` has:
/// a value by its stamp, a delete when the record's clock (the newest
/// stamp given out when it was made) is not older than the version kept.
fn apply_by_stamp(
    record: &Record,
    entries: &mut BTreeMap<String, Entry>,
    interner: &mut Interner,
    salvage: &mut Salvage,
) {
    for (key, value) in &record.changes {
        match value {
            Some(bytes) => match Entry::decode_with(key, bytes, interner, Accept::Legacy) {
                Ok(entry) => {
                    let newer = entries
                        .get(key)
                        .is_none_or(|kept| kept.updated_at < entry.updated_at);
                    if newer {
                        salvage.from_journal += 1;
                        page_walk::keep_newest(entries, entry);
                    }
                }
                Err(_) => salvage.lost_keys.push(key.clone()),
            },
            None => {
                if entries
                    .get(key)
                    .is_some_and(|kept| kept.updated_at <= record.clock)
                {
                    entries.remove(key);
                }
            }
        }
    }
}
