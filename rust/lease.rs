//! Sharing one redb file between processes: when to open and close it.
//!
//! redb locks the whole file while a `Database` is open, so a process may only
//! keep it open for a short *lease*: from the first call of a burst until the
//! handle has been idle for a few milliseconds, or until another process asks
//! for it (the want flag of the `.sync` sidecar, see `sync.rs`) and the
//! holder has had a short turn ([`CONTENDED_QUANTUM`]).
//!
//! * [`open_database`] retries "already open" with backoff until a deadline,
//!   sleeping without the GIL (the caller has detached), raising the want
//!   flag, and returns `StoreError::Busy` after the deadline.
//! * The [`Reaper`] thread closes leases that went idle.
//!
//! Nothing here is needed for the consistency of the data: redb's own lock
//! and commit protocol keep the file consistent; this module only decides
//! when to open and close it.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::thread;
use std::time::{Duration, Instant};

use redb::{Database, DatabaseError};

use crate::error::{Result, StoreError};
use crate::sync::SyncFile;

/// How long an unused lease is kept before the reaper closes it.
pub const DEFAULT_LEASE_IDLE: Duration = Duration::from_millis(5);
/// After giving the lock away, wait this long before taking it back, so the
/// waiter (polling at most this often) gets its turn.
pub const YIELD_PAUSE: Duration = Duration::from_millis(2);
/// While another process waits, a lease is kept at least this long before it
/// is handed over (a waiter waits at most about this much per process ahead).
/// A hand-over costs a clean close and an open (several fsyncs); 25 ms gave
/// 4 writers about 15% more saves per second than 10 ms, 50 ms no more.
pub const CONTENDED_QUANTUM: Duration = Duration::from_millis(25);

const FIRST_BACKOFF: Duration = Duration::from_micros(200);
const MAX_BACKOFF: Duration = Duration::from_millis(1);

/// Calls `open` until it stops answering "already open" or `deadline`
/// passes (then `StoreError::Busy`). While waiting, the want flag of `sync`
/// asks the holder to let go. Other open errors are handed back as they are.
pub(crate) fn open_with_retry<T>(
    path: &Path,
    deadline: Instant,
    started: Instant,
    sync: &mut SyncFile,
    mut open: impl FnMut() -> Result<T, DatabaseError>,
) -> Result<Result<T, DatabaseError>> {
    let mut backoff = FIRST_BACKOFF;
    loop {
        match open() {
            Err(DatabaseError::DatabaseAlreadyOpen | DatabaseError::LockProtocolMismatch) => {
                sync.raise_want();
                let now = Instant::now();
                if now >= deadline {
                    return Err(StoreError::Busy {
                        path: path.to_path_buf(),
                        waited: now - started,
                    });
                }
                thread::sleep(jitter(backoff).min(deadline - now));
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            other => return Ok(other),
        }
    }
}

/// Opens `path` for writing (creating a database in an empty file).
pub(crate) fn open_database(
    path: &Path,
    deadline: Instant,
    started: Instant,
    sync: &mut SyncFile,
) -> Result<Database> {
    open_with_retry(path, deadline, started, sync, || Database::create(path))?
        .map_err(|error| map_database_error(path, error))
}

/// Maps a redb open error that is not contention.
pub(crate) fn map_database_error(path: &Path, error: DatabaseError) -> StoreError {
    match error {
        DatabaseError::Storage(redb::StorageError::Io(io))
            if io.kind() == std::io::ErrorKind::InvalidData =>
        {
            StoreError::corrupt(path, format!("not a redb database: {io}"))
        }
        DatabaseError::Storage(redb::StorageError::Io(io))
            if io.kind() == std::io::ErrorKind::UnexpectedEof =>
        {
            StoreError::corrupt(path, "the file is truncated")
        }
        DatabaseError::Storage(redb::StorageError::Io(io)) => StoreError::io(path, io),
        DatabaseError::UpgradeRequired(version) => {
            StoreError::corrupt(path, format!("unsupported redb file format {version}"))
        }
        other => StoreError::corrupt(path, other.to_string()),
    }
}

/// A little randomness so that processes retrying together spread out.
fn jitter(base: Duration) -> Duration {
    base + base.mul_f64((random_u64() % 1000) as f64 / 2000.0)
}

/// A random 64-bit value without a dependency: std's `RandomState` is seeded
/// from the OS per process and per call.
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(Instant::now().elapsed().as_nanos());
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// Something holding a lease the reaper may close.
pub(crate) trait LeaseHolder: Send + Sync {
    /// Closes the lease if it has been idle long enough or is wanted.
    /// Returns whether a lease is still held afterwards.
    fn release_if_idle(&self, now: Instant) -> bool;
}

/// One background thread per process that closes idle leases. It sleeps on a
/// condition variable while no lease is held.
struct Reaper {
    held: Mutex<Vec<Weak<dyn LeaseHolder>>>,
    wake: Condvar,
}

/// The reaper and the process id it was started in.
type ReaperSlot = Mutex<Option<(u32, Arc<Reaper>)>>;

static REAPER: OnceLock<ReaperSlot> = OnceLock::new();

/// Tells the reaper about a freshly taken lease.
pub(crate) fn watch(holder: Weak<dyn LeaseHolder>) {
    let reaper = reaper();
    let mut held = reaper
        .held
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    held.push(holder);
    reaper.wake.notify_one();
}

/// The reaper of this process, started on first use and again in a forked
/// child (threads do not survive `fork`).
fn reaper() -> Arc<Reaper> {
    let slot = REAPER.get_or_init(|| Mutex::new(None));
    let mut slot = slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let pid = std::process::id();
    if let Some((owner, reaper)) = slot.as_ref()
        && *owner == pid
    {
        return reaper.clone();
    }
    let reaper = Arc::new(Reaper {
        held: Mutex::new(Vec::new()),
        wake: Condvar::new(),
    });
    let worker = reaper.clone();
    thread::Builder::new()
        .name("membolt-lease-reaper".into())
        .spawn(move || worker.run())
        .expect("cannot start the lease reaper thread");
    *slot = Some((pid, reaper.clone()));
    reaper
}

impl Reaper {
    fn run(&self) {
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            while held.is_empty() {
                held = self
                    .wake
                    .wait(held)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            let holders: Vec<_> = held.drain(..).collect();
            drop(held);
            thread::sleep(Duration::from_millis(1));
            let now = Instant::now();
            let still: Vec<_> = holders
                .into_iter()
                .filter(|weak| weak.upgrade().is_some_and(|h| h.release_if_idle(now)))
                .collect();
            held = self
                .held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            held.extend(still);
        }
    }
}
