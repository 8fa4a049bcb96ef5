//! Keeping `fork()` away from store calls running in other threads.
//!
//! A forked child has only the thread that called `fork`: a lock another
//! thread held at that moment stays locked forever in the child, and the
//! child's first store call (or its after-fork hook) waits on it forever.
//! Store calls run without the GIL, so other Python threads can be inside
//! one when a thread forks. So the hook run before `fork` *closes* the gate:
//! it waits until no store call (and no pass of the lease reaper) is running,
//! and new ones wait at the gate until the hooks run after `fork` open it
//! again, in the parent and in the child.
//!
//! Invariant: a thread holding a [`Pass`] never asks for another one (the
//! gate is entered only at the outermost entry points), so closing the gate
//! cannot wait for a pass whose thread waits at the gate.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

struct Gate {
    /// Passes handed out and not yet dropped.
    running: usize,
    /// Between the before-fork and after-fork hooks.
    forking: bool,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    running: 0,
    forking: false,
});
static CHANGED: Condvar = Condvar::new();

fn gate() -> MutexGuard<'static, Gate> {
    GATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Held for the length of one store call.
pub(crate) struct Pass(());

/// Waits while a fork is under way, then counts the caller in.
pub(crate) fn enter() -> Pass {
    let mut state = gate();
    while state.forking {
        state = CHANGED.wait(state).unwrap_or_else(PoisonError::into_inner);
    }
    state.running += 1;
    Pass(())
}

impl Drop for Pass {
    fn drop(&mut self) {
        let mut state = gate();
        state.running -= 1;
        if state.running == 0 {
            CHANGED.notify_all();
        }
    }
}

/// Before `fork`: closes the gate and waits for every running call to end.
pub fn close() {
    let mut state = gate();
    state.forking = true;
    while state.running > 0 {
        state = CHANGED.wait(state).unwrap_or_else(PoisonError::into_inner);
    }
}

/// After `fork`, in the parent and in the child: opens the gate again.
pub fn open() {
    let mut state = gate();
    state.forking = false;
    CHANGED.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Barrier};
    use std::thread;
    use std::time::Duration;

    #[test]
    fn closing_waits_for_running_calls_and_holds_new_ones_back() {
        let pass = enter();
        let gate_closed = Arc::new(AtomicBool::new(false));
        let closer = {
            let gate_closed = gate_closed.clone();
            thread::spawn(move || {
                close();
                gate_closed.store(true, Ordering::SeqCst);
            })
        };
        thread::sleep(Duration::from_millis(50));
        assert!(
            !gate_closed.load(Ordering::SeqCst),
            "closed while a call ran"
        );
        drop(pass);
        closer.join().unwrap();
        assert!(gate_closed.load(Ordering::SeqCst));

        // While closed, a new call waits until the gate opens.
        let started = Arc::new(Barrier::new(2));
        let entered = Arc::new(AtomicBool::new(false));
        let caller = {
            let (started, entered) = (started.clone(), entered.clone());
            thread::spawn(move || {
                started.wait();
                let _pass = enter();
                entered.store(true, Ordering::SeqCst);
            })
        };
        started.wait();
        thread::sleep(Duration::from_millis(50));
        assert!(!entered.load(Ordering::SeqCst), "entered a closed gate");
        open();
        caller.join().unwrap();
        assert!(entered.load(Ordering::SeqCst));
    }
}
