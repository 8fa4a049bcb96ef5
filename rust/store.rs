//! The store: one redb file, an in-memory mirror, and the rules of
//! BEHAVIOUR §1 and §3 for changing it.
//!
//! # File layout (schema 1)
//! * `meta` (`&str -> &[u8]`): `format` = `membolt`, `schema` (u64 LE),
//!   `store_id` (16 random bytes, new for every new file), `clock` (i64 LE,
//!   written by transactions that delete: the newest stamp may then be gone,
//!   and the clock must never go back), `journal_seq` (u64 LE, the number
//!   of the newest change the file holds; see `journal.rs`).
//! * `entries` (`&str -> &[u8]`): key -> [`Entry::encode`].
//!
//! Beside the file: the `.sync` sidecar (`sync.rs`) and the `.journal`
//! (`journal.rs`).
//!
//! # Reading and writing
//! Reads are served from the mirror. It is known fresh while this process
//! holds the write lease, or while the `.sync` sidecar's position is the one
//! it last saw (see `sync.rs`); otherwise the file is opened read-only
//! (cheap, and it excludes writers while open) and the keys the sidecar says
//! changed since are re-read: O(changes), not O(store).
//!
//! A process's first call loads the whole file ([`load_all`]: redb walked on
//! one thread, records decoded on two) into the mirror's key map only; each
//! index is built in bulk by the first call that needs it (see `mirror.rs`).
//!
//! Writes take the write lease (replaying the journal if a previous holder
//! left changes only there) and catch up. Each change is then applied to the
//! lease's open redb write transaction, announced in the sidecar, and made
//! durable by one journal record; the mirror is updated alongside with an
//! undo log: if anything fails before the record is down, the mirror is
//! rolled back, so it never shows a change that did not return. The
//! transaction is committed when the lease ends, or durably when the journal
//! is full (or unavailable: then every change is a durable commit of its
//! own).

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redb::{
    Database, Durability, ReadOnlyDatabase, ReadableDatabase, ReadableTable, TableDefinition,
    TableHandle,
};

use crate::entry::{DecodeError, Entry, Interner};
use crate::error::{Result, StoreError};
use crate::fork_gate;
use crate::graph;
use crate::journal::{Change, Journal, Record};
use crate::lease::{self, LeaseHolder};
use crate::mirror::Mirror;
use crate::quiet_panic::catch;
use crate::render;
use crate::search;
use crate::sync::{Position, SyncFile};

pub(crate) const ENTRIES: TableDefinition<&str, &[u8]> = TableDefinition::new("entries");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// Meta key: the number of the newest change the file holds (see journal.rs).
const JOURNAL_SEQ: &str = "journal_seq";
/// The files beside a store file that belong to it (their names are the
/// store's with these appended): the sidecar and the journal.
pub const COMPANION_SUFFIXES: [&str; 2] = [crate::sync::SUFFIX, crate::journal::SUFFIX];
/// Every table a membolt store has.
pub(crate) const TABLE_NAMES: [&str; 2] = ["entries", "meta"];

/// The schema this version writes and the newest it reads. 2: changes may
/// live in the `.journal` until replayed (a version that does not know the
/// journal must not read or write such a file). Schema 1 files are read as
/// they are and marked 2 by the first write lease.
pub const SCHEMA_VERSION: u64 = 2;
const FORMAT_MARKER: &[u8] = b"membolt";

/// BEHAVIOUR §1.5.
pub const MAX_KEY_BYTES: usize = 1024;
/// BEHAVIOUR §6.7: the caps an extraction batch applies in its transaction.
pub const TOOL_RESULT_CAP: usize = 20;
pub const THINKING_CAP: usize = 20;
pub const LOW_SIGNAL_CAP: usize = 50;
const LOW_SIGNAL_TYPES: [&str; 2] = ["note", "fact"];
const THINKING_TYPE: &str = "thinking";
const TOOL_KEY_PREFIX: &str = "tool:";

pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Unix time in milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Checks a key against §1.5; the message names the problem.
pub fn validate_key(key: &str, what: &str) -> Result<()> {
    if key.is_empty() {
        return Err(StoreError::invalid(format!("{what} must not be empty")));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(StoreError::invalid(format!(
            "{what} is {} bytes long; the limit is {MAX_KEY_BYTES}",
            key.len()
        )));
    }
    Ok(())
}

/// One save, with the answers of the Python-side rule tables already filled
/// in (the core keeps no copy of them).
#[derive(Clone, Debug, Default)]
pub struct SaveRequest {
    pub key: String,
    pub value: String,
    /// An explicit type; `None` keeps an existing entry's type or uses
    /// `inferred_kind` for a new one.
    pub kind: Option<String>,
    /// `classify(key)`, used for a new key without an explicit type.
    pub inferred_kind: String,
    /// Kept on overwrite when `None`; `""` for a new key.
    pub namespace: Option<String>,
    /// Explicit parents (replacing the stored ones); `None` keeps them, or
    /// links a new key to its auto parent.
    pub references: Option<Vec<String>>,
    /// The wanted parent type (§3.1) of the new entry's type.
    pub parent_kind: Option<String>,
}

/// One operation of a `batch()` block.
#[derive(Clone, Debug)]
pub enum BatchOp {
    Save(SaveRequest),
    Delete(String),
    Link { key: String, parent: String },
    Unlink { key: String, parent: String },
}

/// What a `batch()` block did, per operation.
#[derive(Debug)]
pub enum BatchOutcome {
    Saved(Arc<Entry>),
    Deleted(bool),
    Linked(bool),
}

/// A handle on one store file. Several handles on the same file in one
/// process share one [`Shared`] (one mirror, one lease).
pub struct Store {
    shared: Arc<Shared>,
    busy_timeout: Duration,
    closed: AtomicBool,
}

struct Shared {
    path: PathBuf,
    state: Mutex<State>,
}

struct State {
    lease: Option<Lease>,
    sync: SyncFile,
    /// The sidecar position at which `mirror` was known to be fresh.
    seen: Option<Position>,
    mirror: Option<Mirror>,
    /// Set once this process has checked the file is a membolt store of a
    /// schema it reads (or created it).
    verified: bool,
    /// Depth of `hold()` blocks: while positive the lease is never released.
    holds: usize,
    /// When this process last gave the lock to a waiter.
    yielded_at: Option<Instant>,
    journal: Journal,
    /// Whether this lease's changes are made durable by the journal (see
    /// journal.rs) rather than by a redb commit each.
    journal_on: bool,
    /// The number of the newest change, known while the lease is held.
    journal_seq: u64,
}

struct Lease {
    db: Database,
    /// The write transaction the lease's journaled changes go to; committed
    /// when the lease ends (see journal.rs).
    wtx: Option<redb::WriteTransaction>,
    /// Whether `wtx` holds changes.
    uncommitted: bool,
    taken: Instant,
    last_used: Instant,
}

/// Everything one call needs besides the state.
struct CallContext<'a> {
    path: &'a Path,
    holder: Weak<dyn LeaseHolder>,
    started: Instant,
    deadline: Instant,
}

fn registry() -> &'static Mutex<std::collections::HashMap<PathBuf, Weak<Shared>>> {
    static REGISTRY: OnceLock<Mutex<std::collections::HashMap<PathBuf, Weak<Shared>>>> =
        OnceLock::new();
    REGISTRY.get_or_init(Mutex::default)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic inside a call is caught before it can unwind through the lock,
    // so a poisoned lock only means a bug elsewhere; the data is still valid.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Store {
    /// Opens (lazily: no file access until the first call) the store at
    /// `path`, creating missing directories with mode 0700.
    pub fn open(path: &Path, busy_timeout: Duration) -> Result<Store> {
        let _pass = fork_gate::enter();
        let path = absolute_store_path(path)?;
        let mut registry = lock(registry());
        registry.retain(|_, shared| shared.strong_count() > 0);
        let shared = if let Some(shared) = registry.get(&path).and_then(Weak::upgrade) {
            shared
        } else {
            let shared = Arc::new(Shared {
                path: path.clone(),
                state: Mutex::new(State {
                    lease: None,
                    sync: SyncFile::new(&path),
                    seen: None,
                    mirror: None,
                    verified: false,
                    holds: 0,
                    yielded_at: None,
                    journal: Journal::new(&path),
                    journal_on: false,
                    journal_seq: 0,
                }),
            });
            registry.insert(path, Arc::downgrade(&shared));
            shared
        };
        Ok(Store {
            shared,
            busy_timeout,
            closed: AtomicBool::new(false),
        })
    }

    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    pub fn busy_timeout(&self) -> Duration {
        self.busy_timeout
    }

    /// Gives up this handle; its lease (if no other handle uses it) is
    /// released. Later calls fail with `StoreError::Closed`.
    pub fn close(&self) {
        let _pass = fork_gate::enter();
        if !self.closed.swap(true, Ordering::SeqCst) {
            let mut state = lock(&self.shared.state);
            if state.holds == 0 {
                state.release();
            }
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    // ----- reads -------------------------------------------------------

    /// Runs `read` on a fresh mirror.
    pub fn read<R>(&self, read: impl FnOnce(&Mirror) -> R) -> Result<R> {
        self.call(|state, ctx| {
            state.ensure_fresh(ctx)?;
            Ok(read(
                state.mirror.as_ref().expect("fresh state has a mirror"),
            ))
        })
    }

    pub fn get(&self, key: &str) -> Result<Option<Arc<Entry>>> {
        self.read(|m| m.get(key).cloned())
    }

    pub fn len(&self) -> Result<usize> {
        self.read(Mirror::len)
    }

    pub fn is_empty(&self) -> Result<bool> {
        self.read(Mirror::is_empty)
    }

    pub fn contains(&self, key: &str) -> Result<bool> {
        self.read(|m| m.get(key).is_some())
    }

    pub fn keys(&self) -> Result<Vec<Arc<str>>> {
        self.read(|m| m.iter().map(|e| e.key.clone()).collect())
    }

    pub fn entries(&self) -> Result<Vec<Arc<Entry>>> {
        self.read(|m| m.iter().cloned().collect())
    }

    /// Entries matching `query` (BEHAVIOUR §4), sorted by key.
    pub fn search(&self, query: &str) -> Result<Vec<Arc<Entry>>> {
        self.read(|m| {
            let mut hits: Vec<_> = m.search().find(query).into_iter().map(|(e, _)| e).collect();
            hits.sort_by(|a, b| a.key.cmp(&b.key));
            hits
        })
    }

    /// The `memory_search` view: the total number of hits and the first
    /// `limit` in tool order (key hits, newest, key).
    pub fn search_ranked(&self, query: &str, limit: usize) -> Result<(usize, Vec<Arc<Entry>>)> {
        self.read(|m| {
            let mut hits = m.search().find(query);
            let total = hits.len();
            search::rank(&mut hits);
            let top = hits.into_iter().take(limit).map(|(e, _)| e).collect();
            (total, top)
        })
    }

    /// The `<memory>` block (BEHAVIOUR §5) for `focus` within `max_tokens`;
    /// ages are relative to `now_ms`, or to the current time when `None`.
    pub fn render(&self, focus: &str, max_tokens: i64, now_ms: Option<i64>) -> Result<String> {
        self.read(|m| render::render(m, focus, max_tokens, now_ms.unwrap_or_else(self::now_ms)))
    }

    /// Entries for `membolt graph`: every entry, or those related to `key`
    /// (ancestors and descendants), in the parents-first order of §5.3.
    pub fn graph(&self, key: Option<&str>) -> Result<Vec<Arc<Entry>>> {
        self.read(|m| {
            let index = m.render_index();
            let chosen = match key {
                Some(key) => graph::lineage(m, key),
                None => m.iter().filter_map(|e| index.id(&e.key)).collect(),
            };
            graph::parents_first(index, &chosen)
                .into_iter()
                .map(|id| index.entry(id).clone())
                .collect()
        })
    }

    /// The keys of the `limit` newest entries, newest first, and the number
    /// of entries, read together.
    pub fn newest_keys(&self, limit: usize) -> Result<(Vec<Arc<str>>, usize)> {
        self.read(|m| (newest_keys(m, limit), m.len()))
    }

    /// The parts of the §5.9 system-prompt section, read together so that
    /// they describe one state of the store: the `<memory>` block, the keys of
    /// the `key_limit` newest entries (newest first) and the entry count.
    pub fn prompt_parts(
        &self,
        focus: &str,
        max_tokens: i64,
        now_ms: Option<i64>,
        key_limit: usize,
    ) -> Result<(String, Vec<Arc<str>>, usize)> {
        self.read(|m| {
            let now = now_ms.unwrap_or_else(self::now_ms);
            let block = render::render(m, focus, max_tokens, now);
            (block, newest_keys(m, key_limit), m.len())
        })
    }

    /// Parents of `key` that exist, in stored order (§3.4).
    pub fn parents(&self, key: &str) -> Result<Vec<Arc<str>>> {
        self.read(|m| {
            m.get(key).map_or_else(Vec::new, |entry| {
                entry
                    .references
                    .iter()
                    .filter(|r| m.get(r).is_some())
                    .cloned()
                    .collect()
            })
        })
    }

    /// Sorted keys of the entries referencing `key`; `[]` for a missing key.
    pub fn children(&self, key: &str) -> Result<Vec<Arc<str>>> {
        self.read(|m| {
            if m.get(key).is_none() {
                return Vec::new();
            }
            m.children(key).cloned().collect()
        })
    }

    // ----- writes ------------------------------------------------------

    /// BEHAVIOUR §1.3: one save in its own transaction.
    pub fn save(&self, request: SaveRequest) -> Result<Arc<Entry>> {
        validate_save(&request)?;
        self.write(|txn| txn.save(request, Linking::Plain))
    }

    /// §3.3 and §6.7: an extraction batch, chained, with the caps applied in
    /// the same transaction when `apply_caps` is set. `then` are plain saves
    /// (§1.3 rules) made after the batch in the same transaction, such as the
    /// turn record of §6.10: one commit per hook instead of two.
    pub fn save_many(
        &self,
        requests: Vec<SaveRequest>,
        apply_caps: bool,
        then: Vec<SaveRequest>,
    ) -> Result<Vec<Arc<Entry>>> {
        for request in requests.iter().chain(&then) {
            validate_save(request)?;
        }
        self.write(|txn| {
            let mut saved = Vec::with_capacity(requests.len());
            let mut previous: Option<Arc<str>> = None;
            let mut tools = BTreeSet::new();
            for request in requests {
                let chain_to = match &previous {
                    Some(prev) if !is_tool_result(&request) => Some(prev.clone()),
                    _ => None,
                };
                if let Some(tool) = tool_of_key(&request.key) {
                    tools.insert(tool.to_string());
                }
                let entry = txn.save(request, Linking::Extraction { previous: chain_to })?;
                previous = Some(entry.key.clone());
                saved.push(entry);
            }
            for request in then {
                txn.save(request, Linking::Plain)?;
            }
            if apply_caps {
                for tool in &tools {
                    txn.cap_tool(tool)?;
                }
                txn.cap_type(&[THINKING_TYPE], THINKING_CAP)?;
                txn.cap_type(&LOW_SIGNAL_TYPES, LOW_SIGNAL_CAP)?;
            }
            Ok(saved)
        })
    }

    pub fn delete(&self, key: &str) -> Result<bool> {
        self.write(|txn| Ok(txn.remove(key)?.is_some()))
    }

    /// §3.4: both keys must exist; returns whether an edge was added.
    pub fn link(&self, key: &str, parent: &str) -> Result<bool> {
        self.write(|txn| txn.link(key, parent))
    }

    /// §3.4: returns whether an edge was removed.
    pub fn unlink(&self, key: &str, parent: &str) -> Result<bool> {
        self.write(|txn| txn.unlink(key, parent))
    }

    /// Applies the operations in order, all in one transaction; if one fails
    /// nothing is committed.
    pub fn apply_batch(&self, ops: Vec<BatchOp>) -> Result<Vec<BatchOutcome>> {
        for op in &ops {
            if let BatchOp::Save(request) = op {
                validate_save(request)?;
            }
        }
        self.write(|txn| {
            ops.into_iter()
                .map(|op| match op {
                    BatchOp::Save(request) => {
                        txn.save(request, Linking::Plain).map(BatchOutcome::Saved)
                    }
                    BatchOp::Delete(key) => {
                        txn.remove(&key).map(|e| BatchOutcome::Deleted(e.is_some()))
                    }
                    BatchOp::Link { key, parent } => {
                        txn.link(&key, &parent).map(BatchOutcome::Linked)
                    }
                    BatchOp::Unlink { key, parent } => {
                        txn.unlink(&key, &parent).map(BatchOutcome::Linked)
                    }
                })
                .collect()
        })
    }

    /// Writes entries exactly as given (timestamps and references kept), for
    /// import. Entries already present with identical content are left alone.
    /// Returns how many were written.
    pub fn put_exact(&self, entries: Vec<Entry>) -> Result<usize> {
        for entry in &entries {
            validate_key(&entry.key, "key")?;
        }
        // Importing what is already stored takes no write lease: opening the
        // file for writing would rewrite its header, a change for nothing.
        let unchanged = self.read(|mirror| {
            entries
                .iter()
                .all(|entry| mirror.get(&entry.key).is_some_and(|e| **e == *entry))
        })?;
        if unchanged {
            return Ok(0);
        }
        self.write(|txn| {
            let mut written = 0;
            for entry in entries {
                if txn.mirror.get(&entry.key).is_some_and(|e| **e == entry) {
                    continue;
                }
                txn.put(entry)?;
                written += 1;
            }
            Ok(written)
        })
    }

    // ----- holding the lock ----------------------------------------------

    /// Takes the write lease and keeps it until [`Store::unhold`], so other
    /// processes wait (and time out) meanwhile.
    pub fn hold(&self) -> Result<()> {
        self.call(|state, ctx| {
            state.acquire(ctx)?;
            state.holds += 1;
            Ok(())
        })
    }

    pub fn unhold(&self) {
        let _pass = fork_gate::enter();
        let mut state = lock(&self.shared.state);
        state.holds = state.holds.saturating_sub(1);
        if state.holds == 0 {
            state.release();
        }
    }

    // ----- plumbing ----------------------------------------------------------

    fn write<R>(&self, op: impl FnOnce(&mut Txn<'_>) -> Result<R>) -> Result<R> {
        self.call(|state, ctx| {
            state.acquire(ctx)?;
            state.commit(ctx.path, op)
        })
    }

    /// Runs one public call under the state lock, turning a panic inside redb
    /// (which it may raise on a damaged file) into `Corrupt`, and decides
    /// afterwards whether to keep the lease.
    fn call<R>(&self, body: impl FnOnce(&mut State, &CallContext<'_>) -> Result<R>) -> Result<R> {
        // Every lock below is taken inside the pass (see fork_gate.rs).
        let _pass = fork_gate::enter();
        if self.is_closed() {
            return Err(StoreError::Closed {
                path: self.shared.path.clone(),
            });
        }
        let started = Instant::now();
        let holder: Weak<dyn LeaseHolder> = Arc::downgrade(&self.shared) as Weak<dyn LeaseHolder>;
        let ctx = CallContext {
            path: &self.shared.path,
            holder,
            started,
            deadline: started + self.busy_timeout,
        };
        let mut state = lock(&self.shared.state);
        let outcome = catch(|| body(&mut state, &ctx));
        let result = outcome.unwrap_or_else(|panic| {
            // The mirror may be half-updated; drop it and the lease.
            state.mirror = None;
            state.seen = None;
            state.verified = false;
            state.release();
            Err(StoreError::corrupt(ctx.path, panic_message(&panic)))
        });
        state.after_call();
        result
    }
}

impl LeaseHolder for Shared {
    fn release_if_idle(&self, now: Instant) -> bool {
        let _pass = fork_gate::enter();
        let Ok(mut state) = self.state.try_lock() else {
            return true; // busy in a call: look again later
        };
        let Some(lease) = &state.lease else {
            return false;
        };
        if state.holds == 0 && now.duration_since(lease.last_used) >= lease::DEFAULT_LEASE_IDLE {
            state.release();
        }
        state.lease.is_some()
    }
}

/// Releases every lease of this process (interpreter exit, and before
/// `fork` with the fork gate closed).
pub fn release_all_leases() {
    let shared: Vec<Arc<Shared>> = lock(registry())
        .values()
        .filter_map(Weak::upgrade)
        .collect();
    for shared in shared {
        let mut state = lock(&shared.state);
        if state.holds == 0 {
            state.release();
        }
    }
}

/// In a forked child: forget leases inherited from the parent without closing
/// them (closing would write to a file the parent still holds) and distrust
/// every mirror.
pub fn forget_inherited_leases() {
    let shared: Vec<Arc<Shared>> = lock(registry())
        .values()
        .filter_map(Weak::upgrade)
        .collect();
    for shared in shared {
        let mut state = lock(&shared.state);
        if let Some(lease) = state.lease.take() {
            std::mem::forget(lease);
        }
        state.holds = 0;
        state.seen = None;
    }
}

impl State {
    /// Makes the mirror match the file, opening it read-only if the sidecar
    /// position moved (or was never seen).
    fn ensure_fresh(&mut self, ctx: &CallContext<'_>) -> Result<()> {
        if self.lease.is_some() && self.mirror.is_some() {
            return Ok(()); // nobody else can commit while we hold the lock
        }
        if self.mirror.is_some() && self.seen.is_some() && self.sync.position() == self.seen {
            return Ok(());
        }
        if !store_file_has_data(ctx.path)? {
            // Nothing on disk (yet, or any more): an empty store. Reading it
            // creates no file.
            self.mirror = Some(Mirror::default());
            self.seen = None;
            return Ok(());
        }
        match self.read_file(ctx) {
            Err(error @ (StoreError::Corrupt { .. } | StoreError::NewerSchema { .. }))
                if !self.verified =>
            {
                // Not a store this version can use: leave no sidecar of ours
                // next to it.
                self.sync.remove_if_unused();
                Err(error)
            }
            outcome => outcome,
        }
    }

    fn read_file(&mut self, ctx: &CallContext<'_>) -> Result<()> {
        // Another process may be initialising the file right now: only a
        // handle (which waits for its lock) may look at the contents.
        let mut db = open_read_only(ctx, &mut self.sync)?;
        if let ReadHandle::ReadOnly(_) = &db
            && self.journal_pending(&db, ctx.path)?
        {
            // A lease that ended without committing: its changes live only
            // in the journal until a write handle replays them.
            drop(db);
            db = ReadHandle::Repaired(lease::open_database(
                ctx.path,
                ctx.deadline,
                ctx.started,
                &mut self.sync,
            )?);
        }
        if let ReadHandle::Repaired(db) = &db {
            // A crashed writer: its last changes may live only in the journal.
            self.replay_journal(db, ctx.path)?;
        }
        if !self.verified {
            self.mirror = None; // load the whole file, checking every record
        }
        self.catch_up(&db, ctx.path)?;
        self.verified = true;
        Ok(())
    }

    /// Takes the write lease (if not held) and brings the mirror up to date.
    fn acquire(&mut self, ctx: &CallContext<'_>) -> Result<()> {
        if self.lease.is_some() && self.mirror.is_some() {
            return Ok(());
        }
        let had_data = store_file_has_data(ctx.path)?;
        if had_data && !self.verified {
            // Validate (and load) through a read-only handle first, so that a
            // foreign or damaged file is reported without ever being opened
            // for writing (which would modify it when closed).
            self.ensure_fresh(ctx)?;
        }
        if let Some(yielded) = self.yielded_at.take() {
            let pause = lease::YIELD_PAUSE.saturating_sub(yielded.elapsed());
            std::thread::sleep(pause.min(ctx.deadline.saturating_duration_since(Instant::now())));
        }
        prepare_file(ctx.path)?;
        let db = lease::open_database(ctx.path, ctx.deadline, ctx.started, &mut self.sync)?;
        let now = Instant::now();
        let mut lease = Lease {
            db,
            wtx: None,
            uncommitted: false,
            taken: now,
            last_used: now,
        };
        if let Err(error) = self.adopt(&mut lease, ctx.path) {
            drop(lease);
            return Err(error);
        }
        self.lease = Some(lease);
        lease::watch(ctx.holder.clone());
        Ok(())
    }

    /// With the lock just taken: initialise a new file, or catch up.
    fn adopt(&mut self, lease: &mut Lease, path: &Path) -> Result<()> {
        let is_new = {
            let rtx = lease.db.begin_read().map_err(|e| storage(path, e))?;
            rtx.list_tables()
                .map_err(|e| storage(path, e))?
                .next()
                .is_none()
        };
        if is_new {
            initialise(&lease.db, path)?;
            self.verified = true;
            self.mirror = None;
        }
        // With the write lock held, nobody else can be writing the sidecar.
        self.sync.initialise();
        // Replay before `begin_lease`, which recreates a journal of the
        // wrong size (another version's, or a damaged one) from scratch.
        self.journal_seq = self.replay_journal(&lease.db, path)?;
        mark_current_schema(&lease.db, path)?;
        self.journal_on = self.journal.begin_lease();

        self.catch_up(&lease.db, path)
    }

    /// Whether the journal holds changes the file does not (see journal.rs).
    fn journal_pending(&self, db: &impl BeginRead, path: &Path) -> Result<bool> {
        let rtx = db.read_txn().map_err(|e| storage(path, e))?;
        journal_has_changes(&rtx, &self.journal, path)
    }

    /// With a write handle just opened: re-applies the journaled changes
    /// redb lacks (a crash, or a lease that ended without committing),
    /// announcing their keys to every mirror. Returns redb's `journal_seq`
    /// afterwards.
    fn replay_journal(&mut self, db: &Database, path: &Path) -> Result<u64> {
        let (journal, sync) = (&self.journal, &mut self.sync);
        let pending = |store_id: &[u8], seq| {
            journal
                .pending(store_id, seq)
                .map_err(|e| StoreError::io(journal.path(), e))
        };
        let replayed = replay_journal(db, path, pending, |keys| {
            if let Some(now) = sync.position() {
                sync.append(now, keys.iter().copied());
            }
        })?;
        Ok(replayed.seq)
    }

    /// Brings the mirror up to the file's state, with a redb handle held (so
    /// no writer runs): re-reads the keys the sidecar says changed since the
    /// mirror's position, or rebuilds the mirror when it cannot tell (no
    /// mirror yet, another file, a new or overrun sidecar).
    fn catch_up(&mut self, db: &impl BeginRead, path: &Path) -> Result<()> {
        // A sidecar that is missing or unreadable is (re)initialised here: the
        // handle held excludes writers, so an empty ring is a true account of
        // the changes to come. Without this, a reader of a store whose sidecar
        // was lost would reload the whole store on every call until a writer
        // came along.
        let rtx = db.read_txn().map_err(|e| storage(path, e))?;
        // First whether this is a store at all: a foreign file gets no sidecar.
        let meta = read_meta(&rtx, path)?;
        let now = self.sync.position().or_else(|| self.sync.initialise());
        let entries = rtx.open_table(ENTRIES).map_err(|e| storage(path, e))?;
        let changed = match (&self.mirror, self.seen, now) {
            (Some(mirror), Some(seen), Some(now)) if mirror.store_id == meta.store_id => {
                self.sync.changed_keys(seen, now)
            }
            _ => None,
        };
        if let (Some(keys), Some(mirror)) = (changed, self.mirror.as_mut()) {
            for key in keys {
                match entries.get(key.as_str()).map_err(|e| storage(path, e))? {
                    Some(bytes) => {
                        mirror.insert(Arc::new(decode_entry(&key, bytes.value(), path)?));
                    }
                    None => {
                        mirror.remove(&key);
                    }
                }
            }
            mirror.clock = mirror.clock.max(meta.clock);
        } else {
            let all = load_all(&entries, path)?;
            self.mirror = Some(Mirror::from_entries(all, meta.store_id, meta.clock));
        }
        self.seen = now;
        Ok(())
    }

    /// Runs `op` as one atomic change and makes it durable (see the module
    /// docs): in the lease's open write transaction plus one journal record,
    /// or, without a journal, in a durable redb commit of its own.
    fn commit<R>(&mut self, path: &Path, op: impl FnOnce(&mut Txn<'_>) -> Result<R>) -> Result<R> {
        self.apply(path, op).map_err(|Failed { error, abandon }| {
            if abandon && let Some(mut lease) = self.lease.take() {
                // The lease's open transaction is gone with the failed
                // change, and with it the lease's earlier changes: they are
                // in the journal, so replay them now. Should that fail, the
                // lease ends here and the next handle replays them.
                lease.wtx = None;
                lease.uncommitted = false;
                if let Ok(seq) = self.replay_journal(&lease.db, path) {
                    self.journal_seq = seq;
                    self.journal.restart();
                    self.lease = Some(lease);
                } else {
                    let _ = lease.db.close();
                }
            }
            error
        })
    }

    fn apply<R>(
        &mut self,
        path: &Path,
        op: impl FnOnce(&mut Txn<'_>) -> Result<R>,
    ) -> std::result::Result<R, Failed> {
        let State {
            lease,
            mirror,
            sync,
            seen,
            journal,
            journal_on,
            journal_seq,
            ..
        } = self;
        let lease = lease.as_mut().expect("commit runs with the lease");
        let mirror = mirror.as_mut().expect("the lease comes with a mirror");
        lease.last_used = Instant::now();
        let saved_clock = mirror.clock;
        let wtx = match lease.wtx.take() {
            Some(wtx) => wtx,
            None => lease
                .db
                .begin_write()
                .map_err(|e| Failed::keeping_lease(storage(path, e)))?,
        };
        let seq = *journal_seq + 1;
        let mut undo = Vec::new();
        let mut record_changes = Vec::new();
        let outcome = (|| {
            let mut txn = Txn {
                entries: wtx.open_table(ENTRIES).map_err(|e| storage(path, e))?,
                mirror: &mut *mirror,
                undo: &mut undo,
                changes: &mut record_changes,
                deleted: false,
                path,
            };
            let value = op(&mut txn)?;
            if txn.deleted {
                // The newest stamp may be gone with the deleted entry.
                let mut meta = wtx.open_table(META).map_err(|e| storage(path, e))?;
                meta.insert("clock", txn.mirror.clock.to_le_bytes().as_slice())
                    .map_err(|e| storage(path, e))?;
            }
            Ok(value)
        })();
        let value = match outcome {
            Ok(value) => value,
            Err(error) if undo.is_empty() && !is_storage_failure(&error) => {
                // Refused before changing anything: the transaction (and the
                // lease's earlier changes in it) stays usable.
                lease.wtx = Some(wtx);
                return Err(Failed::keeping_lease(error));
            }
            Err(error) => {
                mirror.roll_back(undo, saved_clock);
                return Err(Failed::abandoning_lease(error)); // drops `wtx`: aborted
            }
        };
        if undo.is_empty() {
            lease.wtx = Some(wtx);
            return Ok(value); // nothing changed: nothing to make durable
        }
        // Announce the change before it becomes visible, under the lock (see
        // sync.rs); without a usable sidecar, the next read refreshes fully.
        let mut changed: Vec<&str> = undo.iter().map(|(key, _)| &**key).collect();
        changed.sort_unstable();
        changed.dedup();
        let position = seen.and_then(|from| sync.append(from, changed));
        let record = journal_on
            .then(|| journal.prepare(seq, &mirror.store_id, mirror.clock, &record_changes))
            .flatten();
        let durable = match record {
            Some(record) => match journal.write_record(&record) {
                Ok(()) => {
                    lease.wtx = Some(wtx);
                    lease.uncommitted = true;
                    Ok(())
                }
                Err(error) => Err(StoreError::io(journal.path(), error)),
            },
            // No journal, or a record too big for what is left of it: a
            // durable redb commit (of the lease's earlier changes too).
            None => commit_durably(wtx, seq, path).map(|()| {
                lease.uncommitted = false;
                journal.restart();
            }),
        };
        if let Err(error) = durable {
            mirror.roll_back(undo, saved_clock);
            return Err(Failed::abandoning_lease(error));
        }
        *seen = position;
        *journal_seq = seq;
        lease.last_used = Instant::now();
        Ok(value)
    }

    /// End of a call: keep the lease for the rest of the burst unless another
    /// process waits for it and this one has had its turn (the quantum: a
    /// hand-over costs a close and an open, so handing over after every call
    /// would spend most of the time on hand-overs).
    fn after_call(&mut self) {
        let Some(lease) = &mut self.lease else { return };
        if self.holds > 0 {
            return;
        }
        lease.last_used = Instant::now();
        if lease.taken.elapsed() >= lease::CONTENDED_QUANTUM && self.sync.wanted() {
            self.sync.clear_want();
            self.release();
            self.yielded_at = Some(Instant::now());
        }
    }

    fn release(&mut self) {
        if let Some(mut lease) = self.lease.take() {
            if let Some(wtx) = lease.wtx.take()
                && lease.uncommitted
            {
                // Non-durable: the close makes it durable. Should either
                // fail, the next holder replays the journal instead.
                let seq = self.journal_seq;
                let _ = catch(|| finish_lease(wtx, seq));
            }
            // A failed close leaves the file for the next open to repair;
            // every change is already durable (in redb or in the journal).
            let _ = lease.db.close();
        }
    }
}

/// Before this version's first change to a file of an older schema: marks
/// it with [`SCHEMA_VERSION`], durably, so that older versions refuse it
/// from now on (they would ignore its journal).
fn mark_current_schema(db: &Database, path: &Path) -> Result<()> {
    let schema = {
        let rtx = db.begin_read().map_err(|e| storage(path, e))?;
        read_meta(&rtx, path)?.schema
    };
    if schema >= SCHEMA_VERSION {
        return Ok(());
    }
    let wtx = db.begin_write().map_err(|e| storage(path, e))?;
    wtx.open_table(META)
        .map_err(|e| storage(path, e))?
        .insert("schema", SCHEMA_VERSION.to_le_bytes().as_slice())
        .map_err(|e| storage(path, e))?;
    wtx.commit().map_err(|e| storage(path, e))
}

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
        let rtx = db.begin_read().map_err(|e| storage(path, e))?;
        read_meta(&rtx, path)?
    };
    let records = pending(&meta.store_id, meta.journal_seq)?;
    let Some(last) = records.last().map(|record| record.seq) else {
        return Ok(Replayed {
            seq: meta.journal_seq,
            records: 0,
        });
    };
    let wtx = db.begin_write().map_err(|e| storage(path, e))?;
    let mut clock = meta.clock;
    {
        let mut entries = wtx.open_table(ENTRIES).map_err(|e| storage(path, e))?;
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
                .map_err(|e| storage(path, e))?;
            }
        }
        let mut meta_table = wtx.open_table(META).map_err(|e| storage(path, e))?;
        meta_table
            .insert("clock", clock.to_le_bytes().as_slice())
            .map_err(|e| storage(path, e))?;
        meta_table
            .insert(JOURNAL_SEQ, last.to_le_bytes().as_slice())
            .map_err(|e| storage(path, e))?;
    }
    let keys: BTreeSet<&str> = records
        .iter()
        .flat_map(|record| record.changes.iter().map(|(key, _)| key.as_str()))
        .collect();
    announce(&keys);
    wtx.commit().map_err(|e| storage(path, e))?;
    Ok(Replayed {
        seq: last,
        records: records.len(),
    })
}

impl Drop for State {
    /// The last handle on a store went away: end its lease as `release`
    /// does, committing its transaction (dropping the `Lease` as is would
    /// close the database first and then abort the transaction, leaving its
    /// changes to a journal replay).
    fn drop(&mut self) {
        self.release();
    }
}

/// Whether `error` came from the file rather than from the arguments: the
/// transaction it happened in cannot be trusted any more.
fn is_storage_failure(error: &StoreError) -> bool {
    matches!(error, StoreError::Io { .. } | StoreError::Corrupt { .. })
}

/// A change that could not be applied.
struct Failed {
    error: StoreError,
    /// Whether the lease's open transaction was lost with it.
    abandon: bool,
}

impl Failed {
    fn keeping_lease(error: StoreError) -> Self {
        Failed {
            error,
            abandon: false,
        }
    }

    fn abandoning_lease(error: StoreError) -> Self {
        Failed {
            error,
            abandon: true,
        }
    }
}

/// Commits `wtx` durably, recording `seq` as the newest change redb holds.
fn commit_durably(mut wtx: redb::WriteTransaction, seq: u64, path: &Path) -> Result<()> {
    wtx.open_table(META)
        .map_err(|e| storage(path, e))?
        .insert(JOURNAL_SEQ, seq.to_le_bytes().as_slice())
        .map_err(|e| storage(path, e))?;
    wtx.set_durability(Durability::Immediate)
        .map_err(|e| storage(path, e))?;
    wtx.commit().map_err(|e| storage(path, e))
}

/// Commits a lease's journaled changes at its end, recording `seq` so that
/// the next holder does not replay them (the close that follows makes the
/// commit durable).
fn finish_lease(mut wtx: redb::WriteTransaction, seq: u64) -> std::result::Result<(), redb::Error> {
    wtx.open_table(META)?
        .insert(JOURNAL_SEQ, seq.to_le_bytes().as_slice())?;
    wtx.set_durability(Durability::None)?;
    wtx.commit()?;
    Ok(())
}

/// How a save links a new entry and treats given references.
enum Linking {
    /// §1.3: given references replace the stored ones; a new key without
    /// them gets its auto parent.
    Plain,
    /// §3.3: a new key without given references links to `previous` (the
    /// previous key of the batch, when the chain rule applies) or its auto
    /// parent; an existing key keeps its references whatever is given.
    Extraction { previous: Option<Arc<str>> },
}

/// The write-side view of one transaction: tables, mirror and undo log.
pub struct Txn<'a> {
    entries: redb::Table<'a, &'static str, &'static [u8]>,
    mirror: &'a mut Mirror,
    undo: &'a mut Vec<(Arc<str>, Option<Arc<Entry>>)>,
    /// What the journal record of this transaction holds, in order.
    changes: &'a mut Vec<Change>,
    /// Whether an entry was deleted (then the clock goes to `meta`).
    deleted: bool,
    path: &'a Path,
}

impl Txn<'_> {
    /// A strictly increasing stamp (§1.3): `max(now, clock + 1)`.
    fn stamp(&mut self) -> i64 {
        let stamp = now_ms().max(self.mirror.clock.saturating_add(1));
        self.mirror.clock = stamp;
        stamp
    }

    fn put(&mut self, entry: Entry) -> Result<Arc<Entry>> {
        // Imports may carry stamps beyond the clock; the clock never goes back.
        self.mirror.clock = self.mirror.clock.max(entry.updated_at);
        let bytes = entry.encode();
        self.entries
            .insert(&*entry.key, bytes.as_slice())
            .map_err(|e| storage(self.path, e))?;
        self.changes.push((entry.key.clone(), Some(bytes)));
        let entry = Arc::new(entry);
        let previous = self.mirror.insert(entry.clone());
        self.undo.push((entry.key.clone(), previous));
        Ok(entry)
    }

    fn remove(&mut self, key: &str) -> Result<Option<Arc<Entry>>> {
        if self.mirror.get(key).is_none() {
            return Ok(None);
        }
        self.entries
            .remove(key)
            .map_err(|e| storage(self.path, e))?;
        self.deleted = true;
        self.changes.push((Arc::from(key), None));
        let previous = self.mirror.remove(key);
        self.undo.push((Arc::from(key), previous.clone()));
        Ok(previous)
    }

    /// §1.3, with the linking rules of `linking`.
    fn save(&mut self, request: SaveRequest, linking: Linking) -> Result<Arc<Entry>> {
        let (keeps_references, chain_to) = match linking {
            Linking::Plain => (false, None),
            Linking::Extraction { previous } => (true, previous),
        };
        let stamp = self.stamp();
        let existing = self.mirror.get(&request.key).cloned();
        let entry = if let Some(old) = existing {
            Entry {
                key: old.key.clone(),
                value: request.value.into(),
                kind: request.kind.map_or_else(|| old.kind.clone(), Arc::from),
                namespace: request
                    .namespace
                    .map_or_else(|| old.namespace.clone(), Arc::from),
                references: match request.references {
                    Some(refs) if !keeps_references => clean_references(&old.key, refs),
                    _ => old.references.clone(),
                },
                created_at: old.created_at,
                updated_at: stamp,
            }
        } else {
            {
                let key: Arc<str> = request.key.into();
                let references = match request.references {
                    Some(refs) => clean_references(&key, refs),
                    None => chain_to
                        .or_else(|| self.auto_parent(request.parent_kind.as_deref()))
                        .filter(|parent| *parent != key)
                        .into_iter()
                        .collect(),
                };
                Entry {
                    value: request.value.into(),
                    kind: request.kind.unwrap_or(request.inferred_kind).into(),
                    namespace: request.namespace.unwrap_or_default().into(),
                    references,
                    created_at: stamp,
                    updated_at: stamp,
                    key,
                }
            }
        };
        self.put(entry)
    }

    /// §3.2: the newest entry of the wanted type, else the newest entry.
    fn auto_parent(&self, wanted: Option<&str>) -> Option<Arc<str>> {
        wanted
            .and_then(|kind| self.mirror.newest_of_type(kind))
            .or_else(|| self.mirror.newest())
            .map(|entry| entry.key.clone())
    }

    fn link(&mut self, key: &str, parent: &str) -> Result<bool> {
        if key == parent {
            return Err(StoreError::invalid(format!(
                "cannot link {key:?} to itself"
            )));
        }
        let entry = self
            .mirror
            .get(key)
            .cloned()
            .ok_or_else(|| StoreError::MissingKey(key.to_string()))?;
        if self.mirror.get(parent).is_none() {
            return Err(StoreError::MissingKey(parent.to_string()));
        }
        if entry.references.iter().any(|r| &**r == parent) {
            return Ok(false);
        }
        let mut updated = (*entry).clone();
        updated.references.push(parent.into());
        updated.updated_at = self.stamp();
        self.put(updated)?;
        Ok(true)
    }

    fn unlink(&mut self, key: &str, parent: &str) -> Result<bool> {
        let Some(entry) = self.mirror.get(key).cloned() else {
            return Ok(false);
        };
        if !entry.references.iter().any(|r| &**r == parent) {
            return Ok(false);
        }
        let mut updated = (*entry).clone();
        updated.references.retain(|r| &**r != parent);
        updated.updated_at = self.stamp();
        self.put(updated)?;
        Ok(true)
    }

    /// §6.7: at most `TOOL_RESULT_CAP` `tool:<tool>:*` entries, oldest out.
    fn cap_tool(&mut self, tool: &str) -> Result<()> {
        let prefix = format!("{TOOL_KEY_PREFIX}{tool}:");
        let mut matching: Vec<(i64, Arc<str>)> = self
            .mirror
            .with_prefix(&prefix)
            .filter(|e| tool_of_key(&e.key) == Some(tool))
            .map(|e| (e.updated_at, e.key.clone()))
            .collect();
        if matching.len() <= TOOL_RESULT_CAP {
            return Ok(());
        }
        matching.sort_unstable();
        let excess = matching.len() - TOOL_RESULT_CAP;
        for (_, key) in matching.into_iter().take(excess) {
            self.remove(&key)?;
        }
        Ok(())
    }

    /// §6.7: at most `cap` entries of the given types together, oldest out.
    fn cap_type(&mut self, kinds: &[&str], cap: usize) -> Result<()> {
        let total: usize = kinds.iter().map(|k| self.mirror.count_of_type(k)).sum();
        if total <= cap {
            return Ok(());
        }
        let mut candidates: Vec<(i64, Arc<str>)> = kinds
            .iter()
            .flat_map(|kind| {
                self.mirror
                    .of_type_oldest_first(kind)
                    .take(total - cap)
                    .map(|e| (e.updated_at, e.key.clone()))
            })
            .collect();
        candidates.sort_unstable();
        for (_, key) in candidates.into_iter().take(total - cap) {
            self.remove(&key)?;
        }
        Ok(())
    }
}

impl Mirror {
    /// Undoes a failed transaction's changes, newest first.
    fn roll_back(&mut self, undo: Vec<(Arc<str>, Option<Arc<Entry>>)>, saved_clock: i64) {
        for (key, previous) in undo.into_iter().rev() {
            match previous {
                Some(entry) => {
                    self.insert(entry);
                }
                None => {
                    self.remove(&key);
                }
            }
        }
        self.clock = saved_clock;
    }
}

/// The keys of the `limit` newest entries, newest first.
fn newest_keys(mirror: &Mirror, limit: usize) -> Vec<Arc<str>> {
    mirror
        .newest_first()
        .take(limit)
        .map(|e| e.key.clone())
        .collect()
}

fn validate_save(request: &SaveRequest) -> Result<()> {
    validate_key(&request.key, "key")?;
    if let Some(references) = &request.references {
        for reference in references {
            validate_key(reference, "reference")?;
        }
    }
    Ok(())
}

fn is_tool_result(request: &SaveRequest) -> bool {
    let kind = request.kind.as_deref().unwrap_or(&request.inferred_kind);
    kind == "tool_result"
}

/// The tool name of a `tool:<name>:<slug>` key: everything between the prefix
/// and the last `:` (slugs never contain `:`, tool names may).
fn tool_of_key(key: &str) -> Option<&str> {
    let rest = key.strip_prefix(TOOL_KEY_PREFIX)?;
    let end = rest.rfind(':')?;
    Some(&rest[..end])
}

/// §1.3: drop the entry's own key and duplicates, keep first-seen order.
fn clean_references(key: &str, references: Vec<String>) -> Vec<Arc<str>> {
    let mut seen = BTreeSet::new();
    references
        .into_iter()
        .filter(|r| r != key && seen.insert(r.clone()))
        .map(Arc::from)
        .collect()
}

pub(crate) fn storage(path: &Path, error: impl std::fmt::Display) -> StoreError {
    let text = error.to_string();
    if text.contains("orrupt") {
        StoreError::corrupt(path, text)
    } else {
        StoreError::io(path, text)
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown failure".into());
    format!("the database engine failed while reading it: {detail}")
}

/// Absolute path of the store file; its directory is created (mode 0700).
fn absolute_store_path(path: &Path) -> Result<PathBuf> {
    if path.as_os_str().is_empty() {
        return Err(StoreError::invalid("store path must not be empty"));
    }
    let absolute = std::path::absolute(path).map_err(|e| StoreError::io(path, e))?;
    let file_name = absolute
        .file_name()
        .ok_or_else(|| StoreError::invalid(format!("{} is not a file path", path.display())))?
        .to_owned();
    let parent = absolute.parent().unwrap_or(Path::new("/"));
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(parent)
        .map_err(|e| StoreError::io(parent, e))?;
    let parent = parent
        .canonicalize()
        .map_err(|e| StoreError::io(parent, e))?;
    let mut full = parent.join(file_name);
    if fs::symlink_metadata(&full).is_ok_and(|meta| meta.is_symlink()) {
        // The companion files are named after the store's path: every
        // process must use the same one, whatever name it was given.
        full = full.canonicalize().map_err(|e| {
            StoreError::invalid(format!(
                "{} is a symbolic link to nothing usable ({e})",
                full.display()
            ))
        })?;
    }
    if full.is_dir() {
        return Err(StoreError::invalid(format!(
            "{} is a directory",
            full.display()
        )));
    }
    // A device or a FIFO would read as an empty store (or block forever).
    if fs::metadata(&full).is_ok_and(|meta| !meta.is_file()) {
        return Err(StoreError::invalid(format!(
            "{} is not a regular file",
            full.display()
        )));
    }
    Ok(full)
}

fn store_file_has_data(path: &Path) -> Result<bool> {
    match fs::metadata(path) {
        Ok(meta) => Ok(meta.len() > 0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// Creates the file with mode 0600 if missing (redb would use the umask).
fn prepare_file(path: &Path) -> Result<()> {
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map(drop)
        .map_err(|e| StoreError::io(path, e))
}

/// redb's page cache for a read-only handle. A handle serves one refresh and
/// is closed, so its cache never serves a second call; a full load reads
/// each page once. A small cache lets the pages of a load recycle a few
/// buffers instead of filling a fresh (default 1 GiB budget) cache with a
/// copy of the whole file, which a fresh process paid for in page faults.
const READ_CACHE_BYTES: usize = 256 << 10;

/// Opens read-only, waiting (like a writer) while a writer holds the file.
/// A file that needs crash repair cannot be opened read-only; then a write
/// open (which repairs) serves the refresh instead.
fn open_read_only(ctx: &CallContext<'_>, sync: &mut SyncFile) -> Result<ReadHandle> {
    let opened = lease::open_with_retry(ctx.path, ctx.deadline, ctx.started, sync, || {
        redb::Builder::new()
            .set_cache_size(READ_CACHE_BYTES)
            .open_read_only(ctx.path)
    })?;
    match opened {
        Ok(db) => Ok(ReadHandle::ReadOnly(db)),
        Err(redb::DatabaseError::RepairAborted) => {
            let db = lease::open_database(ctx.path, ctx.deadline, ctx.started, sync)?;
            Ok(ReadHandle::Repaired(db))
        }
        Err(other) => Err(lease::map_database_error(ctx.path, other)),
    }
}

/// A database opened for one refresh.
enum ReadHandle {
    ReadOnly(ReadOnlyDatabase),
    Repaired(Database),
}

impl ReadHandle {
    fn begin_read(&self) -> Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            ReadHandle::ReadOnly(db) => db.begin_read(),
            ReadHandle::Repaired(db) => db.begin_read(),
        }
    }
}

trait BeginRead {
    fn read_txn(&self) -> Result<redb::ReadTransaction, redb::TransactionError>;
}

impl BeginRead for ReadHandle {
    fn read_txn(&self) -> Result<redb::ReadTransaction, redb::TransactionError> {
        self.begin_read()
    }
}

impl BeginRead for Database {
    fn read_txn(&self) -> Result<redb::ReadTransaction, redb::TransactionError> {
        self.begin_read()
    }
}

/// Writes the meta table of a brand-new store.
fn initialise(db: &Database, path: &Path) -> Result<()> {
    let wtx = db.begin_write().map_err(|e| storage(path, e))?;
    {
        let mut meta = wtx.open_table(META).map_err(|e| storage(path, e))?;
        let mut store_id = Vec::with_capacity(16);
        store_id.extend_from_slice(&lease::random_u64().to_le_bytes());
        store_id.extend_from_slice(&lease::random_u64().to_le_bytes());
        for (name, value) in [
            ("format", FORMAT_MARKER.to_vec()),
            ("schema", SCHEMA_VERSION.to_le_bytes().to_vec()),
            ("store_id", store_id),
        ] {
            meta.insert(name, value.as_slice())
                .map_err(|e| storage(path, e))?;
        }
        wtx.open_table(ENTRIES).map_err(|e| storage(path, e))?;
    }
    wtx.commit().map_err(|e| storage(path, e))
}

struct Meta {
    store_id: Vec<u8>,
    /// The persisted clock (`i64::MIN` until a transaction deleted something).
    clock: i64,
    /// The newest commit redb holds (see journal.rs).
    journal_seq: u64,
    schema: u64,
}

fn read_u64(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
    name: &str,
    path: &Path,
) -> Result<Option<u64>> {
    let Some(value) = meta.get(name).map_err(|e| storage(path, e))? else {
        return Ok(None);
    };
    let bytes: [u8; 8] = value
        .value()
        .try_into()
        .map_err(|_| StoreError::corrupt(path, format!("meta field {name} is malformed")))?;
    Ok(Some(u64::from_le_bytes(bytes)))
}

/// Checks the meta table: a membolt store of a schema this version reads.
pub(crate) fn check_meta(rtx: &redb::ReadTransaction, path: &Path) -> Result<()> {
    read_meta(rtx, path).map(drop)
}

/// Reads and checks the meta table: a membolt store of a schema we read.
fn read_meta(rtx: &redb::ReadTransaction, path: &Path) -> Result<Meta> {
    let meta = match rtx.open_table(META) {
        Ok(meta) => meta,
        Err(redb::TableError::TableDoesNotExist(_)) => {
            let names: Vec<String> = rtx
                .list_tables()
                .map_err(|e| storage(path, e))?
                .map(|t| t.name().to_string())
                .collect();
            return Err(StoreError::corrupt(
                path,
                format!("a redb database without membolt's tables (it has {names:?})"),
            ));
        }
        Err(e) => return Err(storage(path, e)),
    };
    let format = meta.get("format").map_err(|e| storage(path, e))?;
    if format.as_ref().map(redb::AccessGuard::value) != Some(FORMAT_MARKER) {
        return Err(StoreError::corrupt(
            path,
            "a redb database of another application",
        ));
    }
    let schema = read_u64(&meta, "schema", path)?
        .ok_or_else(|| StoreError::corrupt(path, "no schema version"))?;
    if schema > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found: schema,
            supported: SCHEMA_VERSION,
        });
    }
    let store_id = meta
        .get("store_id")
        .map_err(|e| storage(path, e))?
        .map(|v| v.value().to_vec())
        .ok_or_else(|| StoreError::corrupt(path, "no store id"))?;
    let clock = read_u64(&meta, "clock", path)?.map_or(i64::MIN, |c| c as i64);
    let journal_seq = read_u64(&meta, JOURNAL_SEQ, path)?.unwrap_or(0);
    Ok(Meta {
        store_id,
        clock,
        journal_seq,
        schema,
    })
}

/// Stores at least this large are decoded on two threads.
const PARALLEL_LOAD_MIN: u64 = 16_384;
/// Raw records are handed between the loading threads in chunks this large.
const LOAD_CHUNK_BYTES: usize = 256 << 10;

/// Every entry of the table, decoded, sorted by key.
///
/// For a large store the scan is split: this thread walks redb (which is
/// sequential) and copies the raw records into chunks; every other chunk is
/// decoded by a second thread, the rest by this one. Decoding is where the
/// allocations are, and a fresh process pays a page fault for nearly every
/// new page it allocates, so two threads allocating halve that wait. Chunk
/// buffers are recycled, so the copies touch no fresh memory.
fn load_all(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    path: &Path,
) -> Result<Vec<Arc<Entry>>> {
    let count = table.len().map_err(|e| storage(path, e))?;
    if count < PARALLEL_LOAD_MIN {
        let mut all = Vec::with_capacity(count as usize);
        let mut interner = Interner::default();
        for item in table.iter().map_err(|e| storage(path, e))? {
            let (key, bytes) = item.map_err(|e| storage(path, e))?;
            let key = key.value();
            let entry = Entry::decode_with(key, bytes.value(), &mut interner)
                .map_err(|e| damaged_entry(key, &e, path))?;
            all.push(Arc::new(entry));
        }
        return Ok(all);
    }
    let (decoded, scanned) = std::thread::scope(|scope| {
        let (to_decoder, chunks) = std::sync::mpsc::sync_channel::<(usize, Vec<u8>)>(2);
        let (recycle, recycled) = std::sync::mpsc::channel::<Vec<u8>>();
        let decoding = scope.spawn(move || {
            let mut interner = Interner::default();
            let mut decoded = Vec::new();
            for (number, mut chunk) in chunks {
                decoded.push((number, decode_chunk(&chunk, &mut interner)));
                chunk.clear();
                let _ = recycle.send(chunk);
            }
            decoded
        });
        let mut interner = Interner::default();
        let mut mine = Vec::new();
        let mut scan = || -> Result<()> {
            let mut chunk = Vec::with_capacity(LOAD_CHUNK_BYTES + 4096);
            let mut number = 0;
            let mut flush = |chunk: &mut Vec<u8>, number: &mut usize| {
                if (*number).is_multiple_of(2) {
                    let next = recycled
                        .try_recv()
                        .unwrap_or_else(|_| Vec::with_capacity(LOAD_CHUNK_BYTES + 4096));
                    let full = std::mem::replace(chunk, next);
                    // Fails only if the decoder panicked, which its join
                    // reports below.
                    let _ = to_decoder.send((*number, full));
                } else {
                    mine.push((*number, decode_chunk(chunk, &mut interner)));
                    chunk.clear();
                }
                *number += 1;
            };
            for item in table.iter().map_err(|e| storage(path, e))? {
                let (key, bytes) = item.map_err(|e| storage(path, e))?;
                let (key, bytes) = (key.value().as_bytes(), bytes.value());
                chunk.extend_from_slice(&(key.len() as u32).to_le_bytes());
                chunk.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                chunk.extend_from_slice(key);
                chunk.extend_from_slice(bytes);
                if chunk.len() >= LOAD_CHUNK_BYTES {
                    flush(&mut chunk, &mut number);
                }
            }
            if !chunk.is_empty() {
                flush(&mut chunk, &mut number);
            }
            Ok(())
        };
        let scanned = scan();
        drop(to_decoder); // ends the decoder's loop
        let mut decoded = decoding.join().expect("the decoding thread");
        decoded.append(&mut mine);
        (decoded, scanned)
    });
    scanned?;
    let mut decoded = decoded;
    decoded.sort_unstable_by_key(|&(number, _)| number);
    let mut all = Vec::with_capacity(count as usize);
    for (_, chunk) in decoded {
        match chunk {
            Ok(mut entries) => all.append(&mut entries),
            Err((key, error)) => return Err(damaged_entry(&key, &error, path)),
        }
    }
    if all.len() as u64 != count {
        // Every record is decoded exactly once; anything else is a bug here,
        // reported rather than turned into a wrong mirror.
        return Err(StoreError::corrupt(
            path,
            format!("read {} records of {count}", all.len()),
        ));
    }
    Ok(all)
}

/// Decodes a chunk of `key length (u32) | value length (u32) | key | value`
/// records; on damage, the key of the damaged record and why.
fn decode_chunk(
    mut chunk: &[u8],
    interner: &mut Interner,
) -> std::result::Result<Vec<Arc<Entry>>, (String, DecodeError)> {
    let mut entries = Vec::with_capacity(chunk.len() / 200);
    while let Some((lengths, rest)) = chunk.split_first_chunk::<8>() {
        let key_len = u32::from_le_bytes(lengths[..4].try_into().expect("4 bytes")) as usize;
        let value_len = u32::from_le_bytes(lengths[4..].try_into().expect("4 bytes")) as usize;
        let (key, rest) = rest.split_at(key_len);
        let (value, rest) = rest.split_at(value_len);
        chunk = rest;
        // redb checked the key when it read it.
        let key = std::str::from_utf8(key).expect("redb keys are UTF-8");
        let entry =
            Entry::decode_with(key, value, interner).map_err(|error| (key.to_string(), error))?;
        entries.push(Arc::new(entry));
    }
    Ok(entries)
}

fn decode_entry(key: &str, bytes: &[u8], path: &Path) -> Result<Entry> {
    Entry::decode(key, bytes).map_err(|e| damaged_entry(key, &e, path))
}

fn damaged_entry(key: &str, error: &DecodeError, path: &Path) -> StoreError {
    StoreError::corrupt(path, format!("entry {key:?} is damaged: {error}"))
}

/// Writes files the test-suite needs and the public API cannot make: a redb
/// database of another application (`"foreign"`) and a membolt store of a
/// future schema (`"newer_schema"`). Not part of the API.
pub fn write_test_fixture(path: &Path, kind: &str) -> Result<()> {
    const OTHER: TableDefinition<&str, &[u8]> = TableDefinition::new("documents");
    let db = Database::create(path).map_err(|e| lease::map_database_error(path, e))?;
    match kind {
        "foreign" => {
            let wtx = db.begin_write().map_err(|e| storage(path, e))?;
            wtx.open_table(OTHER)
                .map_err(|e| storage(path, e))?
                .insert("doc", b"not membolt".as_slice())
                .map_err(|e| storage(path, e))?;
            wtx.commit().map_err(|e| storage(path, e))?;
        }
        "schema_1" => {
            // A store as the versions before the journal wrote it.
            initialise(&db, path)?;
            let wtx = db.begin_write().map_err(|e| storage(path, e))?;
            {
                let mut meta = wtx.open_table(META).map_err(|e| storage(path, e))?;
                meta.insert("schema", 1u64.to_le_bytes().as_slice())
                    .map_err(|e| storage(path, e))?;
                let entry = Entry {
                    key: "old".into(),
                    value: "from schema 1".into(),
                    kind: "note".into(),
                    namespace: "".into(),
                    references: Vec::new(),
                    created_at: 1,
                    updated_at: 1,
                };
                wtx.open_table(ENTRIES)
                    .map_err(|e| storage(path, e))?
                    .insert("old", entry.encode().as_slice())
                    .map_err(|e| storage(path, e))?;
            }
            wtx.commit().map_err(|e| storage(path, e))?;
        }
        "newer_schema" => {
            initialise(&db, path)?;
            let wtx = db.begin_write().map_err(|e| storage(path, e))?;
            wtx.open_table(META)
                .map_err(|e| storage(path, e))?
                .insert("schema", (SCHEMA_VERSION + 1).to_le_bytes().as_slice())
                .map_err(|e| storage(path, e))?;
            wtx.commit().map_err(|e| storage(path, e))?;
        }
        other => return Err(StoreError::invalid(format!("unknown fixture {other:?}"))),
    }
    db.close().map_err(|e| lease::map_database_error(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: usize) -> Entry {
        Entry {
            key: format!("key:{i:06}").into(),
            value: format!("Value {i} with some words").into(),
            kind: ["note", "result", "progress"][i % 3].into(),
            namespace: if i.is_multiple_of(5) { "ns" } else { "" }.into(),
            references: (i > 0)
                .then(|| Arc::from(format!("key:{:06}", i - 1)))
                .into_iter()
                .collect(),
            created_at: i as i64,
            updated_at: 1_000 + i as i64,
        }
    }

    /// A store large enough for the two-thread load reads back exactly,
    /// every record once, in key order; so does a small one.
    #[test]
    fn a_fresh_load_reads_every_entry_once() {
        for count in [10, PARALLEL_LOAD_MIN as usize + 1234] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("memory.redb");
            let store = Store::open(&path, DEFAULT_BUSY_TIMEOUT).unwrap();
            let written: Vec<Entry> = (0..count).map(entry).collect();
            assert_eq!(store.put_exact(written.clone()).unwrap(), count);
            store.close();
            release_all_leases();
            drop(store);
            // Another file path, so that no mirror is shared: a fresh load.
            let copy = dir.path().join("copy.redb");
            std::fs::copy(&path, &copy).unwrap();
            let fresh = Store::open(&copy, DEFAULT_BUSY_TIMEOUT).unwrap();
            let read = fresh.entries().unwrap();
            assert_eq!(read.len(), count);
            for (got, want) in read.iter().zip(&written) {
                assert_eq!(**got, *want);
            }
            fresh.close();
        }
    }

    /// A damaged record is reported by key, whichever thread decodes it.
    #[test]
    fn a_damaged_record_is_reported_by_key() {
        let count = PARALLEL_LOAD_MIN as usize + 5000;
        for damaged in [3, count / 2, count - 2] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("memory.redb");
            let store = Store::open(&path, DEFAULT_BUSY_TIMEOUT).unwrap();
            store.put_exact((0..count).map(entry).collect()).unwrap();
            store.close();
            release_all_leases();
            drop(store);
            let key = format!("key:{damaged:06}");
            {
                let db = Database::open(&path).unwrap();
                let wtx = db.begin_write().unwrap();
                wtx.open_table(ENTRIES)
                    .unwrap()
                    .insert(key.as_str(), [9u8, 9, 9].as_slice())
                    .unwrap();
                wtx.commit().unwrap();
            }
            let copy = dir.path().join("copy.redb");
            std::fs::copy(&path, &copy).unwrap();
            let fresh = Store::open(&copy, DEFAULT_BUSY_TIMEOUT).unwrap();
            let error = fresh.len().unwrap_err().to_string();
            assert!(error.contains(&key), "{error}");
        }
    }
}
