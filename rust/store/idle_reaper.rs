//! The background thread that ends locks a process keeps between calls
//! (a redb lease) once they have been idle for a while, so that another
//! process can take the store even if this one never calls again.

use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::thread;
use std::time::{Duration, Instant};

/// Something holding a lock the reaper may give up.
pub(crate) trait IdleHolder: Send + Sync {
    /// Gives the lock up if it has been idle long enough. Returns whether a
    /// lock is still held afterwards.
    fn release_if_idle(&self, now: Instant) -> bool;
}

/// One background thread per process that ends idle locks. It sleeps on a
/// condition variable while no lock is held.
struct Reaper {
    held: Mutex<Vec<Weak<dyn IdleHolder>>>,
    wake: Condvar,
}

/// The reaper and the process id it was started in.
type ReaperSlot = Mutex<Option<(u32, Arc<Reaper>)>>;

static REAPER: OnceLock<ReaperSlot> = OnceLock::new();

/// Tells the reaper about a freshly taken lock.
pub(crate) fn watch(holder: Weak<dyn IdleHolder>) {
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
        .name("membolt-idle-reaper".into())
        .spawn(move || worker.run())
        .expect("cannot start the idle reaper thread");
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
