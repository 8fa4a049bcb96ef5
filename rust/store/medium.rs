//! The seam between the store's rules and where its entries are kept.
//!
//! Everything above this trait is shared by every medium: the mirror every
//! read is served from, and the write rules ([`crate::store::rules`]) that
//! turn a request into a [`ChangeSet`]. A medium only answers four
//! questions, each for one public call, under the store's state lock:
//!
//! * `refresh`: bring the mirror up to date with every change committed
//!   before the call began (other processes' included), at a cost
//!   proportional to what changed;
//! * `begin_write`: lock the store against other writers (or find it locked
//!   by this process already) and refresh under that lock, so the rules see
//!   the latest committed state;
//! * `write`: make one change set durable, all or nothing, before the call
//!   returns;
//! * `release`: give the lock up (idle, handed over, closed, process exit).
//!
//! A medium decides how long it keeps a lock between calls (a redb lease
//! spans a burst of calls; a database transaction ends with the call). It
//! never applies a rule of its own: it stores what the rules decided.

use std::time::{Duration, Instant};

use crate::error::{Location, Result};
use crate::store::change_set::ChangeSet;
use crate::store::mirror::Mirror;
use crate::store::vectors::VectorSource;

/// One public call's time limits: a medium waiting for a lock gives up at
/// `deadline` with `StoreError::Busy`.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub started: Instant,
    pub deadline: Instant,
}

impl Call {
    pub fn new(timeout: Duration) -> Call {
        let started = Instant::now();
        Call {
            started,
            // A timeout beyond the clock's range waits "forever".
            deadline: started
                .checked_add(timeout)
                .unwrap_or_else(|| started + Duration::from_secs(1 << 32)),
        }
    }
}

pub trait Medium: Send {
    /// Where the store is, as messages name it.
    fn location(&self) -> &Location;

    /// Makes `mirror` (`None`: none yet) match every change committed
    /// before the call began.
    fn refresh(&mut self, mirror: &mut Option<Mirror>, call: &Call) -> Result<()>;

    /// Takes the write lock, unless this process holds it, and brings
    /// `mirror` up to date under it. Afterwards `mirror` is `Some`.
    fn begin_write(&mut self, mirror: &mut Option<Mirror>, call: &Call) -> Result<()>;

    /// Makes `changes` durable as one atomic unit (the write lock is held).
    /// When this fails, none of them is durable and the caller rolls the
    /// mirror back; `mirror` is the state after the changes.
    fn write(&mut self, changes: &ChangeSet, mirror: &Mirror) -> Result<()>;

    /// A write that changed nothing, or that the rules refused before
    /// anything reached the medium, ends.
    fn end_write(&mut self);

    /// Takes the write lock for a `hold()` block: other processes wait
    /// until [`Medium::release`].
    fn hold(&mut self, mirror: &mut Option<Mirror>, call: &Call) -> Result<()>;

    /// Whether a lock is held between calls, for the idle reaper to watch.
    fn holds_lock(&self) -> bool;

    /// After a public call outside a `hold()` block: gives the lock up if
    /// another process waits and this one has had its turn.
    fn after_call(&mut self, mirror: Option<&Mirror>);

    /// Gives the lock up if it has been idle long enough. Returns whether a
    /// lock is still held.
    fn release_if_idle(&mut self, now: Instant, mirror: Option<&Mirror>) -> bool;

    /// Gives the lock up, everything durable; a medium without a lock does
    /// nothing. `mirror` (the state the lock ends with, when the caller has
    /// it) lets a medium that keeps an image of the store (`store/image/`)
    /// write a new one while it still holds the lock.
    fn release(&mut self, mirror: Option<&Mirror>);

    /// In a forked child: forgets locks inherited from the parent without
    /// touching them (the parent still holds them), and trusts nothing it
    /// knew about the store.
    fn forget_inherited(&mut self);

    /// After a panic inside a call: distrusts everything it knew and lets
    /// go of its lock.
    fn distrust(&mut self);

    /// §15.4: where this medium keeps the entries' vectors, when it keeps
    /// them itself (a store kept in a file has a companion file instead,
    /// `store/vectors/file.rs`).
    fn vector_source(&mut self) -> Option<&mut dyn VectorSource> {
        None
    }
}
