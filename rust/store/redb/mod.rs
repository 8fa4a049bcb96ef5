//! The redb medium: one redb file per store, shared between processes by
//! short leases, with a journal for cheap durable writes.
//!
//! ```text
//! mod.rs (this file)   the lease state machine: refresh, take, write, release
//! format.rs            tables, meta fields, schema, initialisation
//! load.rs              the bulk loader (a whole file into a mirror)
//! image_file.rs        the image beside the file: used at open, written
//!                      when a lease ends (see `store/image/`)
//! journal/             the `.journal` file: one synchronous record per change
//! acknowledged.rs      which journaled changes returned, so which are lost
//! replay.rs            the journal records redb lacks: checked, applied
//! lease.rs             opening the file with retries, lease timings
//! change_ring.rs       the `.sync` sidecar: which keys other processes changed
//!                      (and the acknowledgement mark)
//! overlay.rs           opening a file so that nothing is written to it
//! page_walk.rs         reading records page by page when redb cannot open a file
//! path.rs              making a store path safe to use
//! doctor.rs            `membolt doctor`: a read-only check of a file
//! repair.rs            `membolt repair`: salvaging a damaged file into a new one
//! ```
//!
//! # Reading
//! Reads are served from the mirror. It is known fresh while this process
//! holds the write lease, or while the change ring's position is the one it
//! last saw (see `change_ring.rs`); otherwise the file is opened read-only
//! (cheap, and it excludes writers while open) and the keys the ring says
//! changed since are re-read: O(changes), not O(store). A process's first
//! call maps the image beside the file when it matches (`image_file.rs`),
//! re-reading the keys changed since; otherwise it loads the whole file
//! (`load.rs`) into the mirror's key map only.
//!
//! A reader never writes a file of the store: a file left by a killed
//! writer is recovered in memory (`overlay.rs`), and journal records redb
//! lacks are applied to the mirror only; the next writer makes both
//! durable. Every record read is checked against its checksum; a store
//! found damaged is never written to again by this process (reads answer
//! from the mirror as last verified), until the file is replaced.
//!
//! # Writing
//! A write takes the write lease (replaying the journal if a previous
//! holder left changes only there) and catches up. Each change set is then
//! applied to the lease's open redb write transaction, announced in the
//! change ring, and made durable by one journal record. The transaction is
//! committed when the lease ends, or durably when the journal is full (or
//! unavailable: then every change is a durable commit of its own).

pub(crate) mod acknowledged;
pub(crate) mod change_ring;
pub mod doctor;
pub(crate) mod errors;
#[cfg(any(test, feature = "testing"))]
pub mod fixtures;
pub(crate) mod format;
pub(crate) mod image_file;
pub(crate) mod journal;
pub(crate) mod lease;
pub(crate) mod load;
pub(crate) mod overlay;
pub(crate) mod page_walk;
pub(crate) mod path;
pub mod repair;
pub(crate) mod replay;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use redb::{Database, Durability, ReadOnlyDatabase, ReadableDatabase, ReadableTableMetadata};

use crate::error::{Location, Result, StoreError};
use crate::quiet_panic::catch;
use crate::store::change_set::ChangeSet;
use crate::store::medium::{Call, Medium};
use crate::store::mirror::Mirror;
use errors::AtStore;

use acknowledged::Mark;
use change_ring::{ChangeRing, Position};
use format::{
    CLOCK, ENTRIES, IMAGE_TOKEN, JOURNAL_SEQ, META, Meta, RING_MARK, decode_entry,
    encode_ring_mark, initialise, read_meta, upgrade,
};
use image_file::ImageFile;
use journal::Journal;
use lease::Repair;
use load::load_all;
use overlay::{InMemory, OverlayBackend};
use path::{prepare_file, store_file_has_data};

pub use format::SCHEMA_VERSION;

/// The files beside a store file that belong to it (their names are the
/// store's with these appended): the change ring and the journal.
pub const COMPANION_SUFFIXES: [&str; 2] = [change_ring::SUFFIX, journal::SUFFIX];

/// One store file and what this process knows about it.
pub struct RedbMedium {
    path: PathBuf,
    location: Location,
    lease: Option<Lease>,
    ring: ChangeRing,
    /// The change ring's position at which the mirror was known to be fresh.
    seen: Option<Position>,
    /// The number of the newest change the mirror holds (redb's
    /// `journal_seq` when it was read, or the newest journal record or
    /// write applied to it since). Numbers are never reused within a store
    /// id, so a file whose `journal_seq` is still this one holds exactly
    /// the mirror: catch-up then needs no ring (a store whose ring a reader
    /// could not create is not loaded twice by its first writer).
    mirror_seq: Option<u64>,
    /// Set once this process has checked the file is a membolt store of a
    /// schema it reads (or created it).
    verified: bool,
    /// When this process last gave the lock to a waiter.
    yielded_at: Option<Instant>,
    journal: Journal,
    /// Whether this lease's changes are made durable by the journal (see
    /// journal/mod.rs) rather than by a redb commit each.
    journal_on: bool,
    /// The number of the newest change, known while the lease is held.
    journal_seq: u64,
    /// The acknowledgement mark of this lease's journal (see
    /// acknowledged.rs), while the journal is on.
    mark: Option<Mark>,
    /// Set when the file was found damaged: nothing is written to it any
    /// more, and reads answer from the mirror as last verified.
    damage: Option<Damage>,
    image: ImageFile,
    /// The image token the file recorded when this process last read its
    /// meta or committed one (see `image_file.rs`).
    image_token: Option<u64>,
}

/// Why a store is not written to, and which file that was.
struct Damage {
    message: String,
    /// The inode of the file found damaged: a file put in its place (a
    /// repaired copy) is a new start.
    inode: Option<u64>,
}

struct Lease {
    db: Database,
    /// The write transaction the lease's journaled changes go to; committed
    /// when the lease ends (see journal/mod.rs).
    wtx: Option<redb::WriteTransaction>,
    /// Whether `wtx` holds changes.
    uncommitted: bool,
    taken: Instant,
    last_used: Instant,
}

impl RedbMedium {
    /// The medium of the store file at `path` (absolute, checked by
    /// `path::absolute_store_path`). Nothing is opened yet.
    pub(crate) fn new(path: PathBuf) -> RedbMedium {
        RedbMedium {
            location: Location::from(path.as_path()),
            lease: None,
            ring: ChangeRing::new(&path),
            seen: None,
            mirror_seq: None,
            verified: false,
            yielded_at: None,
            journal: Journal::new(&path),
            journal_on: false,
            journal_seq: 0,
            mark: None,
            image_token: None,
            damage: None,
            image: ImageFile::new(&path),
            path,
        }
    }

    fn inode(&self) -> Option<u64> {
        std::fs::metadata(&self.path).ok().map(|meta| meta.ino())
    }

    /// Remembers that the file is damaged (`error` says how).
    fn mark_damaged(&mut self, error: &StoreError) {
        if self.damage.is_none() {
            self.damage = Some(Damage {
                message: error.to_string(),
                inode: self.inode(),
            });
        }
    }

    /// The damage found earlier, unless the file has been replaced since.
    fn known_damage(&mut self) -> Option<StoreError> {
        self.damage.as_ref()?;
        let inode = self.inode();
        let damage = self.damage.as_ref()?;
        if damage.inode != inode {
            self.damage = None;
            self.verified = false;
            self.seen = None;
            self.mirror_seq = None;
            return None;
        }
        Some(StoreError::corrupt(
            &self.path,
            format!(
                "found damaged earlier ({}), so this process does not write to it; run \
                 `membolt doctor` and `membolt repair`",
                damage.message
            ),
        ))
    }

    /// Reads the file through a read-only handle (a crashed file: through
    /// an in-memory recovery), and applies the journal's pending records to
    /// the mirror only. Writes nothing.
    fn read_file(&mut self, mirror: &mut Option<Mirror>, call: &Call) -> Result<()> {
        // Another process may be initialising the file right now: only a
        // handle (which waits for its lock) may look at the contents.
        let handle = open_read_only(&self.path, call, &mut self.ring)?;
        let crashed = matches!(handle, ReadHandle::Recovered(_));
        if !self.verified {
            *mirror = None; // load the whole file, checking every record
        }
        let meta = self.catch_up(mirror, &handle)?;
        let mark = self.ring.mark();
        let records = replay::pending_records(&self.journal, &meta, mark.as_ref(), crashed)?;
        if let Some(last) = records.last().map(|record| record.seq) {
            let mirror = mirror.as_mut().expect("caught up");
            replay::replay_into_mirror(mirror, &records, self.journal.path())?;
            self.mirror_seq = Some(last);
        }
        // A reader creates no file, a missing change ring included: without
        // one, each call reloads the store until a writer makes it.
        self.verified = true;
        Ok(())
    }

    /// Takes the write lease (if not held) and brings the mirror up to date.
    fn acquire(&mut self, mirror: &mut Option<Mirror>, call: &Call) -> Result<()> {
        if let Some(damage) = self.known_damage() {
            return Err(damage);
        }
        if self.lease.is_some() && mirror.is_some() {
            return Ok(());
        }
        let had_data = store_file_has_data(&self.path)?;
        if had_data && !self.verified {
            // Validate (and load) through a read-only handle first, so that a
            // foreign or damaged file is reported without ever being opened
            // for writing (which would modify it when closed).
            self.refresh(mirror, call)?;
        }
        if let Some(yielded) = self.yielded_at.take() {
            let pause = lease::YIELD_PAUSE.saturating_sub(yielded.elapsed());
            std::thread::sleep(pause.min(call.deadline.saturating_duration_since(Instant::now())));
        }
        prepare_file(&self.path)?;
        let path = self.path.clone();
        let open = |ring: &mut ChangeRing, repair| {
            lease::open_database(&path, call.deadline, call.started, ring, repair)
        };
        let (db, crashed) = if let Some(db) = open(&mut self.ring, Repair::Refuse)? {
            (db, false)
        } else {
            // A killed writer left the file: check it (and the journal)
            // without writing first, then let redb repair it.
            self.read_file(mirror, call)?;
            let db = open(&mut self.ring, Repair::Allow)?
                .expect("a repair that is allowed is not refused");
            (db, true)
        };
        let now = Instant::now();
        let mut lease = Lease {
            db,
            wtx: None,
            uncommitted: false,
            taken: now,
            last_used: now,
        };
        if let Err(error) = self.adopt(mirror, &mut lease, crashed) {
            if error.is_damage() {
                self.mark_damaged(&error);
            }
            drop(lease);
            return Err(error);
        }
        self.lease = Some(lease);
        Ok(())
    }

    /// With the lock just taken: initialise a new file, or replay what the
    /// journal holds (`crashed`: the file was left by a killed writer),
    /// upgrade an older schema, and catch up.
    fn adopt(
        &mut self,
        mirror: &mut Option<Mirror>,
        lease: &mut Lease,
        crashed: bool,
    ) -> Result<()> {
        let path = &self.path;
        let is_new = {
            let rtx = lease.db.begin_read().at(path)?;
            rtx.list_tables().at(path)?.next().is_none()
        };
        if is_new {
            initialise(&lease.db, path)?;
            self.verified = true;
            *mirror = None;
        }
        // With the write lock held, nobody else can be writing the ring.
        let ring_now = self.ring.initialise();
        // Asked before the replay, whose announcements could carry the ring
        // past the mark again.
        let ring_went_back = !is_new
            && ring_now.is_some_and(|now| {
                let rtx = lease.db.begin_read().ok();
                let meta = rtx.and_then(|rtx| read_meta(&rtx, path).ok());
                meta.is_some_and(|meta| image_file::ring_went_back(&meta, now))
            });
        // Replay before `begin_lease`, which recreates a journal of the
        // wrong size (another version's, or a damaged one) from scratch.
        self.journal_seq = self.replay_journal(&lease.db, crashed)?;
        if ring_went_back {
            // It lost records (a machine crash put older pages back): a new
            // ring, so that no mirror or image trusts the numbers it would
            // reuse.
            self.ring.restart();
        }
        if upgrade(&lease.db, &self.path)? {
            *mirror = None; // a new store id: every record was rewritten
        }
        self.journal_on = self.journal.begin_lease();
        let meta = self.catch_up(mirror, &lease.db)?;
        self.mark = None;
        if self.journal_on {
            self.start_mark(&meta.store_id, self.seen);
        }
        Ok(())
    }

    /// Writes the acknowledgement mark of a journal that starts (again)
    /// with redb holding every change up to `journal_seq`, `ring` being the
    /// change ring's position then.
    fn start_mark(&mut self, store_id: &[u8], ring: Option<Position>) {
        let mark = Mark::new(store_id, self.journal_seq, ring);
        self.mark = self.ring.write_mark(&mark).then_some(mark);
    }

    /// With a write handle just opened: re-applies the journaled changes
    /// redb lacks (a crash, or a lease that ended without committing),
    /// announcing their keys to every mirror. Returns redb's `journal_seq`
    /// afterwards.
    fn replay_journal(&mut self, db: &Database, crashed: bool) -> Result<u64> {
        let mark = self.ring.mark();
        let (journal, ring) = (&self.journal, &mut self.ring);
        let pending = |meta: &Meta| replay::pending_records(journal, meta, mark.as_ref(), crashed);
        replay::replay_into_file(db, &self.path, pending, |keys| {
            if let Some(now) = ring.position() {
                ring.append(now, keys.iter().copied());
            }
        })
    }

    /// Brings the mirror up to the file's state, with a redb handle held (so
    /// no writer runs): re-reads the keys the ring says changed since the
    /// mirror's position, or rebuilds the mirror when it cannot tell (no
    /// mirror yet, another file, a new or overrun ring).
    fn catch_up(&mut self, mirror: &mut Option<Mirror>, db: &impl BeginRead) -> Result<Meta> {
        let path = &self.path;
        let rtx = db.read_txn().at(path)?;
        let meta = read_meta(&rtx, path)?;
        self.image_token = meta.image_token;
        let now = self.ring.position();
        let entries = rtx.open_table(ENTRIES).at(path)?;
        let changed = match (mirror.as_ref(), self.seen, now) {
            (Some(mirror), Some(seen), Some(now)) if mirror.store_id == meta.store_id => {
                self.ring.changed_keys(seen, now)
            }
            _ => None,
        };
        let unchanged = mirror
            .as_ref()
            .is_some_and(|current| current.store_id == meta.store_id)
            && self.mirror_seq == Some(meta.journal_seq);
        if changed.is_none() && unchanged {
            // No ring to ask, but no change since the mirror was read.
            let current = mirror.as_mut().expect("checked above");
            current.apply_delta(Vec::<(String, _)>::new(), meta.clock);
        } else if let (Some(keys), Some(current)) = (changed, mirror.as_mut()) {
            let delta = read_keys(&entries, keys, &meta, path)?;
            current.apply_delta(delta, meta.clock);
        } else if let Some((base, keys)) =
            self.image
                .load(&meta, entries.len().at(path)?, now, &mut self.ring)
        {
            let delta = read_keys(&entries, keys, &meta, path)?;
            let mut loaded = Mirror::from_image(base, meta.store_id.clone(), meta.clock);
            loaded.apply_delta(delta, meta.clock);
            *mirror = Some(loaded);
        } else {
            let all = load_all(&entries, meta.accept(), path)?;
            Mirror::replace(mirror, all, meta.store_id.clone(), meta.clock);
        }
        self.seen = now;
        self.mirror_seq = Some(meta.journal_seq);
        Ok(meta)
    }

    /// The work of [`Medium::write`]: returns the ring's position after the
    /// change set was announced.
    fn record(
        &mut self,
        changes: &ChangeSet,
        mirror: &Mirror,
        seq: u64,
    ) -> std::result::Result<Option<Position>, WriteFailure> {
        let RedbMedium {
            path,
            lease,
            ring,
            seen,
            journal,
            journal_on,
            mark,
            ..
        } = self;
        let lease = lease.as_mut().expect("a write runs with the lease");
        let wtx = match lease.wtx.take() {
            Some(wtx) => wtx,
            None => lease
                .db
                .begin_write()
                .at(&*path)
                .map_err(WriteFailure::Untouched)?,
        };
        let encoded: Vec<journal::Change> = changes
            .changes
            .iter()
            .map(|(key, entry)| (key.clone(), entry.as_ref().map(|e| e.encode())))
            .collect();
        // A failure from here on drops `wtx`: aborted, with the lease's
        // earlier changes.
        apply_changes(&wtx, &encoded, changes, path).map_err(WriteFailure::TransactionLost)?;
        // Announce the change before it becomes visible, under the lock
        // (see change_ring.rs); without a usable ring, the next read
        // refreshes fully.
        let mut keys: Vec<&str> = encoded.iter().map(|(key, _)| &**key).collect();
        keys.sort_unstable();
        keys.dedup();
        let position = seen.and_then(|from| ring.append(from, keys));
        let record = journal_on
            .then(|| journal.prepare(seq, &mirror.store_id, changes.clock, &encoded))
            .flatten();
        if let Some(record) = record {
            journal
                .write_record(&record)
                .map_err(|e| WriteFailure::TransactionLost(StoreError::io(journal.path(), e)))?;
            lease.wtx = Some(wtx);
            lease.uncommitted = true;
            // Acknowledged from here: say so before the call returns.
            if let Some(mark) = mark {
                mark.acknowledge(seq);
                ring.write_acknowledged(mark);
            }
        } else {
            // No journal, or a record too big for what is left of it: a
            // durable redb commit (of the lease's earlier changes too).
            commit_durably(wtx, seq, position, path).map_err(WriteFailure::TransactionLost)?;
            lease.uncommitted = false;
            journal.restart();
            if let Some(mark) = mark {
                mark.rebase(seq, position);
                ring.write_mark(mark);
            }
        }
        Ok(position)
    }

    /// A change set reached the lease's transaction but could not be made
    /// durable: the transaction is gone, and with it the lease's earlier
    /// changes. They are in the journal, so replay them now; should that
    /// fail, the lease ends here and the next handle replays them.
    fn abandon_transaction(&mut self) {
        let Some(mut lease) = self.lease.take() else {
            return;
        };
        lease.wtx = None;
        lease.uncommitted = false;
        if let Ok(seq) = self.replay_journal(&lease.db, false) {
            self.journal_seq = seq;
            self.journal.restart();
            if let Some(mark) = &mut self.mark {
                mark.rebase(seq, self.ring.position());
                self.ring.write_mark(mark);
            }
            self.lease = Some(lease);
        } else {
            let _ = lease.db.close();
        }
    }
}

impl Medium for RedbMedium {
    fn location(&self) -> &Location {
        &self.location
    }

    /// Makes the mirror match the file, opening it read-only if the ring's
    /// position moved (or was never seen).
    fn refresh(&mut self, mirror: &mut Option<Mirror>, call: &Call) -> Result<()> {
        if let Some(damage) = self.known_damage() {
            // What verified before the damage was found is still true.
            return if mirror.is_some() {
                Ok(())
            } else {
                Err(damage)
            };
        }
        if self.lease.is_some() && mirror.is_some() {
            return Ok(()); // nobody else can commit while we hold the lock
        }
        if mirror.is_some() && self.seen.is_some() && self.ring.position() == self.seen {
            return Ok(());
        }
        if !store_file_has_data(&self.path)? {
            // Nothing on disk (yet, or any more): an empty store. Reading it
            // creates no file.
            *mirror = Some(Mirror::default());
            self.seen = None;
            self.mirror_seq = None;
            return Ok(());
        }
        let outcome = self.read_file(mirror, call);
        if let Err(error) = &outcome
            && error.is_damage()
        {
            self.mark_damaged(error);
            *mirror = None;
        }
        outcome
    }

    fn begin_write(&mut self, mirror: &mut Option<Mirror>, call: &Call) -> Result<()> {
        self.acquire(mirror, call)?;
        if let Some(lease) = &mut self.lease {
            lease.last_used = Instant::now();
        }
        Ok(())
    }

    /// Applies `changes` to the lease's open transaction and makes them
    /// durable with one journal record, or, without a journal (or when the
    /// record does not fit), a durable redb commit of their own.
    fn write(&mut self, changes: &ChangeSet, mirror: &Mirror) -> Result<()> {
        let seq = self.journal_seq + 1;
        match self.record(changes, mirror, seq) {
            Ok(position) => {
                self.seen = position;
                self.mirror_seq = Some(seq);
                self.journal_seq = seq;
                self.end_write();
                Ok(())
            }
            Err(WriteFailure::Untouched(error)) => Err(error),
            Err(WriteFailure::TransactionLost(error)) => {
                self.abandon_transaction();
                Err(error)
            }
        }
    }

    fn end_write(&mut self) {
        if let Some(lease) = &mut self.lease {
            lease.last_used = Instant::now();
        }
    }

    fn hold(&mut self, mirror: &mut Option<Mirror>, call: &Call) -> Result<()> {
        self.acquire(mirror, call)
    }

    fn holds_lock(&self) -> bool {
        self.lease.is_some()
    }

    /// Keeps the lease for the rest of the burst unless another process
    /// waits for it and this one has had its turn (the quantum: a hand-over
    /// costs a close and an open, so handing over after every call would
    /// spend most of the time on hand-overs).
    fn after_call(&mut self, _mirror: Option<&Mirror>) {
        let Some(lease) = &mut self.lease else { return };
        lease.last_used = Instant::now();
        if lease.taken.elapsed() >= lease::CONTENDED_QUANTUM && self.ring.wanted() {
            self.ring.clear_want();
            // A process waits: no image is written on its time.
            self.release(None);
            self.yielded_at = Some(Instant::now());
        }
    }

    fn release_if_idle(&mut self, now: Instant, mirror: Option<&Mirror>) -> bool {
        let Some(lease) = &self.lease else {
            return false;
        };
        if now.duration_since(lease.last_used) >= lease::DEFAULT_LEASE_IDLE {
            self.release(mirror);
        }
        self.lease.is_some()
    }

    fn release(&mut self, mirror: Option<&Mirror>) {
        let mut new_token = None;
        if let Some(mirror) = mirror
            && self.lease.is_some()
            && self.damage.is_none()
        {
            // With the lock still held: the state the lease ends with is
            // the mirror's, change `journal_seq`, the ring at `seen`.
            new_token =
                self.image
                    .write_if_due(mirror, self.journal_seq, self.seen, self.image_token);
        }
        if let Some(mut lease) = self.lease.take() {
            let seq = self.journal_seq;
            let ring = self.seen;
            // A panic of the engine here (a damaged file) must not escape:
            // every change is already durable (in redb or in the journal),
            // and the next open repairs or replays.
            let ended = catch(move || {
                let wtx = match lease.wtx.take() {
                    Some(wtx) if lease.uncommitted || new_token.is_some() => Some(wtx),
                    None if new_token.is_some() => lease.db.begin_write().ok(),
                    _ => None,
                };
                // Non-durable: the close makes it durable. Should either
                // fail, the next holder replays the journal instead (and
                // the new image, whose token the file lacks, goes unused).
                let committed =
                    wtx.is_some_and(|wtx| finish_lease(wtx, seq, ring, new_token).is_ok());
                let _ = lease.db.close();
                committed
            });
            if matches!(ended, Ok(true)) && new_token.is_some() {
                self.image_token = new_token;
            }
            if ended.is_err() {
                self.mark_damaged(&StoreError::corrupt(
                    &self.path,
                    "the database engine failed while closing it",
                ));
            }
        }
    }

    fn forget_inherited(&mut self) {
        if let Some(lease) = self.lease.take() {
            std::mem::forget(lease);
        }
        self.seen = None;
        self.mirror_seq = None;
    }

    fn distrust(&mut self) {
        self.seen = None;
        self.mirror_seq = None;
        self.verified = false;
        self.mark_damaged(&StoreError::corrupt(
            &self.path,
            "the database engine failed while reading it",
        ));
        self.release(None);
    }
}

impl Drop for RedbMedium {
    /// The last handle on a store went away: end its lease as `release`
    /// does, committing its transaction (dropping the `Lease` as is would
    /// close the database first and then abort the transaction, leaving its
    /// changes to a journal replay).
    fn drop(&mut self) {
        self.release(None);
    }
}

/// The entries of `keys` in the file now (`None`: deleted), each checked.
fn read_keys(
    entries: &impl redb::ReadableTable<&'static str, &'static [u8]>,
    keys: Vec<String>,
    meta: &Meta,
    path: &Path,
) -> Result<Vec<(String, Option<std::sync::Arc<crate::entry::Entry>>)>> {
    let mut delta = Vec::with_capacity(keys.len());
    for key in keys {
        let entry = match entries.get(key.as_str()).at(path)? {
            Some(bytes) => Some(std::sync::Arc::new(decode_entry(
                &key,
                bytes.value(),
                meta.accept(),
                path,
            )?)),
            None => None,
        };
        delta.push((key, entry));
    }
    Ok(delta)
}

/// Why a change set was not made durable.
enum WriteFailure {
    /// Nothing reached the lease's transaction; the lease stays usable.
    Untouched(StoreError),
    /// The transaction (holding the lease's earlier, journaled changes) is
    /// lost.
    TransactionLost(StoreError),
}

/// Writes the encoded `changes` into `wtx`, and the clock when an entry was
/// deleted (the newest stamp may be gone with it).
fn apply_changes(
    wtx: &redb::WriteTransaction,
    encoded: &[journal::Change],
    changes: &ChangeSet,
    path: &Path,
) -> Result<()> {
    let mut entries = wtx.open_table(ENTRIES).at(path)?;
    for (key, bytes) in encoded {
        match bytes {
            Some(bytes) => entries.insert(&**key, bytes.as_slice()).map(drop),
            None => entries.remove(&**key).map(drop),
        }
        .at(path)?;
    }
    if changes.deleted {
        wtx.open_table(META)
            .at(path)?
            .insert(CLOCK, changes.clock.to_le_bytes().as_slice())
            .at(path)?;
    }
    Ok(())
}

/// Commits `wtx` durably, recording `seq` as the newest change redb holds
/// and `ring` as where the change ring stood after it.
fn commit_durably(
    mut wtx: redb::WriteTransaction,
    seq: u64,
    ring: Option<Position>,
    path: &Path,
) -> Result<()> {
    record_commit(&wtx, seq, ring, None).at(path)?;
    wtx.set_durability(Durability::Immediate).at(path)?;
    wtx.commit().at(path)
}

/// Commits a lease's journaled changes at its end, recording `seq` so that
/// the next holder does not replay them, `ring` as where the change ring
/// stood, and the token of the image the lease wrote, if it wrote one (the
/// close that follows makes the commit durable).
fn finish_lease(
    mut wtx: redb::WriteTransaction,
    seq: u64,
    ring: Option<Position>,
    image_token: Option<u64>,
) -> std::result::Result<(), errors::EngineError> {
    record_commit(&wtx, seq, ring, image_token)?;
    wtx.set_durability(Durability::None)?;
    wtx.commit()?;
    Ok(())
}

/// The meta fields a commit that ends with change `seq` records.
fn record_commit(
    wtx: &redb::WriteTransaction,
    seq: u64,
    ring: Option<Position>,
    image_token: Option<u64>,
) -> std::result::Result<(), errors::EngineError> {
    let mut meta = wtx.open_table(META)?;
    meta.insert(JOURNAL_SEQ, seq.to_le_bytes().as_slice())?;
    if let Some(ring) = ring {
        let mark = encode_ring_mark([ring.ring_id, ring.seq, ring.head]);
        meta.insert(RING_MARK, mark.as_slice())?;
    }
    if let Some(token) = image_token {
        meta.insert(IMAGE_TOKEN, token.to_le_bytes().as_slice())?;
    }
    Ok(())
}

/// redb's page cache for a read-only handle. A handle serves one refresh and
/// is closed, so its cache never serves a second call; a full load reads
/// each page once. A small cache lets the pages of a load recycle a few
/// buffers instead of filling a fresh (default 1 GiB budget) cache with a
/// copy of the whole file, which a fresh process paid for in page faults.
const READ_CACHE_BYTES: usize = 256 << 10;

/// Opens read-only, waiting (like a writer) while a writer holds the file.
/// A file that needs crash repair cannot be opened read-only; it is then
/// recovered in memory (see `overlay.rs`), the file untouched.
fn open_read_only(path: &Path, call: &Call, ring: &mut ChangeRing) -> Result<ReadHandle> {
    let opened = lease::open_with_retry(path, call.deadline, call.started, ring, || {
        redb::Builder::new()
            .set_cache_size(READ_CACHE_BYTES)
            .open_read_only(path)
    })?;
    match opened {
        Ok(db) => Ok(ReadHandle::ReadOnly(db)),
        Err(redb::DatabaseError::RepairAborted) => {
            recover_in_memory(path, call, ring).map(ReadHandle::Recovered)
        }
        Err(other) => Err(other).at(path),
    }
}

/// The file at `path`, as redb's crash recovery makes it, with nothing
/// written to the file.
pub(crate) fn recover_in_memory(
    path: &Path,
    call: &Call,
    ring: &mut ChangeRing,
) -> Result<InMemory> {
    let backend = OverlayBackend::open(path, call.deadline, call.started, ring)?;
    backend
        .database(|backend| {
            redb::Builder::new()
                .set_cache_size(READ_CACHE_BYTES)
                .create_with_backend(backend)
        })
        .at(path)
}

/// A database opened for one refresh.
enum ReadHandle {
    ReadOnly(ReadOnlyDatabase),
    /// A crashed file, recovered in memory.
    Recovered(InMemory),
}

trait BeginRead {
    fn read_txn(&self) -> Result<redb::ReadTransaction, redb::TransactionError>;
}

impl BeginRead for ReadHandle {
    fn read_txn(&self) -> Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            ReadHandle::ReadOnly(db) => db.begin_read(),
            ReadHandle::Recovered(db) => db.begin_read(),
        }
    }
}

impl BeginRead for Database {
    fn read_txn(&self) -> Result<redb::ReadTransaction, redb::TransactionError> {
        self.begin_read()
    }
}
