//! Sharing one redb file between processes.
//!
//! redb locks the whole file while a `Database` is open, so a process may only
//! keep it open for a short *lease*: from the first call of a burst until the
//! handle has been idle for a few milliseconds, or until another process asks
//! for it. Three pieces make that work:
//!
//! * [`open_database`] retries "already open" with backoff until a deadline,
//!   sleeping without the GIL (the caller has detached), and raises
//!   `StoreError::Busy` after it.
//! * [`SyncFile`], a 16-byte sidecar `<store>.sync`:
//!   bytes 0..8 hold a *generation*, a random value every writer stores while
//!   it holds the lock and before it commits; byte 8 is the *want* flag a
//!   waiting process raises so that the holder lets go at the end of its
//!   current call. A process whose mirror was built at generation G knows
//!   nothing was committed since as long as the file still says G, which costs
//!   one `pread` instead of opening the database. Because the generation
//!   changes before the commit and only under the lock, a reader that sees the
//!   new value and then takes the lock always sees the commit.
//! * The [`Reaper`] thread closes idle leases.
//!
//! Nothing here is needed for correctness of the data: redb's own lock and
//! commit protocol keep the file consistent; this module only decides when to
//! open and close it and when a mirror must be refreshed.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::thread;
use std::time::{Duration, Instant};

use redb::{Database, DatabaseError};

use crate::error::{Result, StoreError};

/// How long an unused lease is kept before the reaper closes it.
pub const DEFAULT_LEASE_IDLE: Duration = Duration::from_millis(5);
/// After giving the lock away, wait this long before taking it back, so the
/// waiter (polling at most this often) gets its turn.
pub const YIELD_PAUSE: Duration = Duration::from_millis(2);

const FIRST_BACKOFF: Duration = Duration::from_micros(200);
const MAX_BACKOFF: Duration = Duration::from_millis(1);

/// Opens `path` for writing, retrying while another handle holds it.
///
/// `sync` gets the want flag raised while waiting. Errors other than "already
/// open" are returned at once; the caller maps them (corruption, I/O).
pub(crate) fn open_database(
    path: &Path,
    deadline: Instant,
    started: Instant,
    sync: &mut SyncFile,
) -> Result<Database> {
    let mut backoff = FIRST_BACKOFF;
    loop {
        match Database::create(path) {
            Ok(db) => return Ok(db),
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
            Err(other) => return Err(map_database_error(path, other)),
        }
    }
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

/// The `<store>.sync` sidecar (see the module comment).
pub(crate) struct SyncFile {
    path: PathBuf,
    file: Option<File>,
}

const SYNC_LEN: usize = 16;
const WANT_OFFSET: u64 = 8;

impl SyncFile {
    pub(crate) fn new(store_path: &Path) -> Self {
        let mut name = store_path.as_os_str().to_owned();
        name.push(".sync");
        SyncFile {
            path: PathBuf::from(name),
            file: None,
        }
    }

    fn file(&mut self) -> Option<&File> {
        if self.file.is_none() {
            self.file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&self.path)
                .ok();
        }
        self.file.as_ref()
    }

    /// The current generation, or `None` when the sidecar cannot be read
    /// (then every call must refresh: correct, only slower).
    pub(crate) fn generation(&mut self) -> Option<u64> {
        let mut buf = [0u8; SYNC_LEN];
        let file = self.file()?;
        match file.read_at(&mut buf, 0) {
            Ok(SYNC_LEN) => Some(u64::from_le_bytes(buf[..8].try_into().ok()?)),
            // A new, still empty sidecar: nobody wrote since it appeared.
            Ok(0) => Some(0),
            _ => None,
        }
    }

    /// Whether another process is waiting for the lock.
    pub(crate) fn wanted(&mut self) -> bool {
        let mut flag = [0u8; 1];
        self.file()
            .is_some_and(|f| matches!(f.read_at(&mut flag, WANT_OFFSET), Ok(1)) && flag[0] != 0)
    }

    /// Stores a new generation; called with the database lock held, before
    /// the commit. Returns the value written (or `None` if it failed, in which
    /// case the caller must not trust its mirror without a refresh).
    pub(crate) fn bump_generation(&mut self) -> Option<u64> {
        let generation = random_u64();
        let mut buf = [0u8; SYNC_LEN];
        buf[..8].copy_from_slice(&generation.to_le_bytes());
        let file = self.file()?;
        // Keep the want byte as it is: a waiter may have raised it.
        file.write_all_at(&buf[..8], 0).ok()?;
        if file.metadata().ok()?.len() < SYNC_LEN as u64 {
            file.write_all_at(&buf[8..], WANT_OFFSET).ok()?;
        }
        Some(generation)
    }

    pub(crate) fn raise_want(&mut self) {
        if let Some(file) = self.file() {
            let _ = file.write_all_at(&[1], WANT_OFFSET);
        }
    }

    pub(crate) fn clear_want(&mut self) {
        if let Some(file) = self.file() {
            let _ = file.write_all_at(&[0], WANT_OFFSET);
        }
    }
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
