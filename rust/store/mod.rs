//! The store: the rules of §1 and §3 over an in-memory mirror, kept on a
//! durable medium.
//!
//! ```text
//! Store (this file)        one handle per open; handles on the same store
//!                          in one process share one state (one mirror, one
//!                          lock), found through a registry
//!   mirror.rs              the entries in memory + core_indexes.rs
//!   rules.rs               the write rules: a Txn turns requests into a
//!                          ChangeSet (stamps, auto parents, batch links,
//!                          caps passed in as data, request.rs)
//!   change_set.rs          what crosses the seam: a transaction's changes
//!   ------------------------ the seam: medium.rs (trait Medium) ----------
//!   maintenance.rs         doctor, repair and the medium of a location, for
//!                          the glue: the rules each check applies come from here
//!   redb/                  a redb file + journal + lease + change ring
//!   postgres/              a project's rows on a PostgreSQL server (§12)
//!   vectors/               the entries' vectors (§15.4), a cache beside
//!                          them: a companion file or a table
//! ```
//!
//! The seam: everything above `Medium` is shared by every medium, so a rule
//! exists once. A call reads through [`Medium::refresh`] (the mirror is
//! then up to date) or writes through [`Medium::begin_write`] (locked and up
//! to date), runs the rules on the mirror in a [`Txn`], and hands the
//! resulting [`ChangeSet`] to [`Medium::write`]; if that fails the mirror is
//! rolled back, so it never shows a change that did not return. The store
//! knows nothing of how entries are shown: search, rendering and queries are
//! views above it (`crate::views`), reading the mirror through
//! [`Store::read`].

pub mod change_set;
pub mod core_indexes;
pub(crate) mod idle_reaper;
pub mod image;
pub mod maintenance;
pub mod medium;
pub mod mirror;
pub(crate) mod postgres;
pub(crate) mod redb;
pub mod request;
pub mod rules;
mod vector_calls;
pub mod vectors;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use crate::entry::Entry;
use crate::error::{Location, Result, StoreError};
use crate::fork_gate;
use crate::quiet_panic::catch;

pub use change_set::ChangeSet;
use idle_reaper::IdleHolder;
use medium::{Call, Medium};
use mirror::Mirror;
pub use request::{BatchOp, BatchOutcome, Cap, CapGroup, MAX_KEY_BYTES, SaveRequest, validate_key};
pub use rules::now_ms;
use rules::{Linking, Txn};
pub use vector_calls::with_vector as vector_calls_with_vector;

/// §1.4: how long a call waits for another process by default.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A handle on one store. Several handles on the same store in one process
/// share one [`Shared`] (one mirror, one lock).
pub struct Store {
    shared: Arc<Shared>,
    busy_timeout: Duration,
    closed: AtomicBool,
}

struct Shared {
    location: Location,
    /// The store file, for a medium that is one.
    path: Option<std::path::PathBuf>,
    state: Mutex<State>,
}

struct State {
    medium: Box<dyn Medium>,
    mirror: Option<Mirror>,
    /// Depth of `hold()` blocks: while positive the lock is never released.
    holds: usize,
    /// The vectors of the model last asked for (§15.4), once asked.
    vectors: Option<vectors::Vectors>,
}

impl State {
    /// Gives the medium's lock up, handing it the mirror the lock ends
    /// with.
    fn release(&mut self) {
        self.medium.release(self.mirror.as_ref());
    }
}

/// Open stores of this process, by the identity of their medium.
fn registry() -> &'static Mutex<HashMap<String, Weak<Shared>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<String, Weak<Shared>>>> = OnceLock::new();
    REGISTRY.get_or_init(Mutex::default)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic inside a call is caught before it can unwind through the lock,
    // so a poisoned lock only means a bug elsewhere; the data is still valid.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Store {
    /// Opens (lazily: no file access until the first call) the redb store
    /// file at `path`, creating missing directories with mode 0700.
    pub fn open(path: &std::path::Path, busy_timeout: Duration) -> Result<Store> {
        let _pass = fork_gate::enter();
        let path = redb::path::absolute_store_path(path)?;
        let identity = format!("file:{}", path.display());
        Ok(Store::with_medium(
            identity,
            busy_timeout,
            Some(path.clone()),
            || Box::new(redb::RedbMedium::new(path)),
        ))
    }

    /// Opens (lazily: nothing is connected until the first call) the
    /// project `project` on the PostgreSQL server at `url` (§12), keeping
    /// its image (`store/image/`) in `image_dir` when given.
    pub fn open_postgres(
        url: &str,
        project: &str,
        busy_timeout: Duration,
        image_dir: Option<&std::path::Path>,
    ) -> Result<Store> {
        let _pass = fork_gate::enter();
        request::validate_project(project)?;
        let address = postgres::Address::parse(url)?;
        let identity = address.identity(project);
        Ok(Store::with_medium(identity, busy_timeout, None, || {
            Box::new(postgres::PostgresMedium::new(address, project, image_dir))
        }))
    }

    /// The handle on the store `identity` names, sharing the state of any
    /// open handle on it, or a new state over `medium()`.
    fn with_medium(
        identity: String,
        busy_timeout: Duration,
        path: Option<std::path::PathBuf>,
        medium: impl FnOnce() -> Box<dyn Medium>,
    ) -> Store {
        let mut registry = lock(registry());
        registry.retain(|_, shared| shared.strong_count() > 0);
        let shared = if let Some(shared) = registry.get(&identity).and_then(Weak::upgrade) {
            shared
        } else {
            let medium = medium();
            let shared = Arc::new(Shared {
                location: medium.location().clone(),
                path,
                state: Mutex::new(State {
                    medium,
                    mirror: None,
                    holds: 0,
                    vectors: None,
                }),
            });
            registry.insert(identity, Arc::downgrade(&shared));
            shared
        };
        Store {
            shared,
            busy_timeout,
            closed: AtomicBool::new(false),
        }
    }

    /// Where the store is, as messages name it.
    pub fn location(&self) -> &Location {
        &self.shared.location
    }

    /// The store file, for a store kept in one.
    pub fn path(&self) -> Option<&std::path::Path> {
        self.shared.path.as_deref()
    }

    pub fn busy_timeout(&self) -> Duration {
        self.busy_timeout
    }

    /// Gives up this handle; its lock (if no other handle uses it) is
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
        self.call(|state, call| {
            let State { medium, mirror, .. } = state;
            medium.refresh(mirror, call)?;
            Ok(read(
                mirror.as_ref().expect("a refreshed state has a mirror"),
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

    /// §1.3: one save in its own transaction.
    pub fn save(&self, request: SaveRequest) -> Result<Arc<Entry>> {
        request.validate()?;
        self.write(|txn| Ok(txn.save(request, Linking::Plain)))
    }

    /// §3.3: an extraction batch, chained, then `caps` applied in the same
    /// transaction. `then` are plain saves (§1.3 rules) made after the batch
    /// in the same transaction, such as the turn record of §6.10: one
    /// commit per hook instead of two.
    pub fn save_many(
        &self,
        requests: Vec<SaveRequest>,
        caps: &[Cap],
        then: Vec<SaveRequest>,
    ) -> Result<Vec<Arc<Entry>>> {
        for request in requests.iter().chain(&then) {
            request.validate()?;
        }
        for cap in caps {
            cap.validate()?;
        }
        self.write(|txn| {
            let saved = txn.save_batch(requests);
            for request in then {
                txn.save(request, Linking::Plain);
            }
            for cap in caps {
                txn.apply_cap(cap);
            }
            Ok(saved)
        })
    }

    pub fn delete(&self, key: &str) -> Result<bool> {
        self.write(|txn| Ok(txn.remove(key).is_some()))
    }

    /// §3.4: both keys must exist; returns whether an edge was added.
    pub fn link(&self, key: &str, parent: &str) -> Result<bool> {
        self.write(|txn| txn.link(key, parent))
    }

    /// §3.4: returns whether an edge was removed.
    pub fn unlink(&self, key: &str, parent: &str) -> Result<bool> {
        self.write(|txn| Ok(txn.unlink(key, parent)))
    }

    /// Applies the operations in order, all in one transaction; if one fails
    /// nothing is written.
    pub fn apply_batch(&self, ops: Vec<BatchOp>) -> Result<Vec<BatchOutcome>> {
        for op in &ops {
            if let BatchOp::Save(request) = op {
                request.validate()?;
            }
        }
        self.write(|txn| {
            ops.into_iter()
                .map(|op| match op {
                    BatchOp::Save(request) => {
                        Ok(BatchOutcome::Saved(txn.save(request, Linking::Plain)))
                    }
                    BatchOp::Delete(key) => Ok(BatchOutcome::Deleted(txn.remove(&key).is_some())),
                    BatchOp::Link { key, parent } => {
                        txn.link(&key, &parent).map(BatchOutcome::Linked)
                    }
                    BatchOp::Unlink { key, parent } => {
                        Ok(BatchOutcome::Linked(txn.unlink(&key, &parent)))
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
            for reference in &entry.references {
                validate_key(reference, "reference")?;
            }
        }
        // Importing what is already stored takes no write lock: opening the
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
                txn.put(entry);
                written += 1;
            }
            Ok(written)
        })
    }

    // ----- holding the lock ----------------------------------------------

    /// Takes the write lock and keeps it until [`Store::unhold`], so other
    /// processes wait (and time out) meanwhile.
    pub fn hold(&self) -> Result<()> {
        self.call(|state, call| {
            let State { medium, mirror, .. } = state;
            medium.hold(mirror, call)?;
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

    /// One atomic change: the rules run on the mirror (locked and up to
    /// date), the medium makes the result durable, or the mirror is rolled
    /// back.
    fn write<R>(&self, op: impl FnOnce(&mut Txn<'_>) -> Result<R>) -> Result<R> {
        self.call(|state, call| {
            let State { medium, mirror, .. } = state;
            medium.begin_write(mirror, call)?;
            let mirror = mirror.as_mut().expect("a write lock comes with a mirror");
            let mut txn = Txn::new(mirror);
            let outcome = op(&mut txn);
            match outcome {
                Ok(value) if txn.is_unchanged() => {
                    medium.end_write();
                    Ok(value)
                }
                Ok(value) => {
                    let changes = txn.change_set();
                    match medium.write(&changes, txn.mirror) {
                        Ok(()) => Ok(value),
                        Err(error) => {
                            txn.roll_back();
                            Err(error)
                        }
                    }
                }
                Err(error) => {
                    txn.roll_back();
                    medium.end_write();
                    Err(error)
                }
            }
        })
    }

    /// Runs one public call under the state lock, turning a panic inside the
    /// engine (which it may raise on a damaged file) into `Corrupt`, and
    /// lets the medium decide afterwards whether to keep its lock.
    fn call<R>(&self, body: impl FnOnce(&mut State, &Call) -> Result<R>) -> Result<R> {
        // Every lock below is taken inside the pass (see fork_gate.rs).
        let _pass = fork_gate::enter();
        if self.is_closed() {
            return Err(StoreError::Closed {
                store: self.shared.location.clone(),
            });
        }
        let call = Call::new(self.busy_timeout);
        let mut state = lock(&self.shared.state);
        let was_locked = state.medium.holds_lock();
        let outcome = catch(|| body(&mut state, &call));
        let result = outcome.unwrap_or_else(|panic| {
            // The mirror may be half-updated; drop it, and the lock.
            state.mirror = None;
            state.medium.distrust();
            Err(StoreError::corrupt(
                &self.shared.location,
                panic_message(&panic),
            ))
        });
        if state.holds == 0 {
            let State { medium, mirror, .. } = &mut *state;
            medium.after_call(mirror.as_ref());
        }
        if !was_locked && state.medium.holds_lock() {
            idle_reaper::watch(Arc::downgrade(&self.shared) as Weak<dyn IdleHolder>);
        }
        result
    }
}

impl IdleHolder for Shared {
    fn release_if_idle(&self, now: Instant) -> bool {
        let _pass = fork_gate::enter();
        let Ok(mut state) = self.state.try_lock() else {
            return true; // busy in a call: look again later
        };
        if state.holds > 0 {
            return state.medium.holds_lock();
        }
        let State { medium, mirror, .. } = &mut *state;
        medium.release_if_idle(now, mirror.as_ref())
    }
}

/// The open stores of this process.
fn open_stores() -> Vec<Arc<Shared>> {
    lock(registry())
        .values()
        .filter_map(Weak::upgrade)
        .collect()
}

/// Releases every lock of this process (interpreter exit, and before
/// `fork` with the fork gate closed).
pub fn release_all_leases() {
    for shared in open_stores() {
        let mut state = lock(&shared.state);
        if state.holds == 0 {
            state.release();
        }
    }
}

/// In a forked child: forget locks inherited from the parent without
/// releasing them (that would write to a store the parent still holds) and
/// distrust every mirror.
pub fn forget_inherited_leases() {
    for shared in open_stores() {
        let mut state = lock(&shared.state);
        state.medium.forget_inherited();
        state.holds = 0;
        // The companion file's handle is the parent's open file, whose
        // lock the parent shares: forget it with the vectors read.
        state.vectors = None;
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
