//! Sharing one redb file between processes: when to open and close it.
//!
//! redb locks the whole file while a `Database` is open, so a process may only
//! keep it open for a short *lease*: from the first call of a burst until the
//! handle has been idle for a few milliseconds, or until another process asks
//! for it (the want flag of the `.sync` sidecar, see `change_ring.rs`) and the
//! holder has had a short turn ([`CONTENDED_QUANTUM`]).
//!
//! * [`open_database`] retries "already open" with backoff until a deadline,
//!   sleeping without the GIL (the caller has detached), raising the want
//!   flag, and returns `StoreError::Busy` after the deadline.
//! * The idle reaper (`store/idle_reaper.rs`) closes leases that went idle.
//!
//! Nothing here is needed for the consistency of the data: redb's own lock
//! and commit protocol keep the file consistent; this module only decides
//! when to open and close it.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use redb::{Database, DatabaseError};

use crate::error::{Result, StoreError};
use crate::random::random_u64;
use crate::store::redb::change_ring::ChangeRing;
use crate::store::redb::errors::AtStore;

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
    sync: &mut ChangeRing,
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
                        store: path.into(),
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

/// Opens `path` for writing (creating a database in an empty file). A file
/// left by a killed writer needs redb's crash repair, which writes to it:
/// with `Repair::Refuse` such a file is not opened (`Ok(None)`), so that the
/// caller can check it first without writing (see `overlay.rs`).
pub(crate) fn open_database(
    path: &Path,
    deadline: Instant,
    started: Instant,
    sync: &mut ChangeRing,
    repair: Repair,
) -> Result<Option<Database>> {
    let opened = open_with_retry(path, deadline, started, sync, || {
        let mut builder = redb::Builder::new();
        if repair == Repair::Refuse {
            builder.set_repair_callback(redb::RepairSession::abort);
        }
        builder.create(path)
    })?;
    match opened {
        Err(DatabaseError::RepairAborted) if repair == Repair::Refuse => Ok(None),
        other => other.map(Some).at(path),
    }
}

/// Whether [`open_database`] may run redb's crash repair on the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Repair {
    /// The caller checked the file: repair it.
    Allow,
    /// Report that the file needs repair instead.
    Refuse,
}

/// A little randomness so that processes retrying together spread out.
fn jitter(base: Duration) -> Duration {
    base + base.mul_f64((random_u64() % 1000) as f64 / 2000.0)
}
