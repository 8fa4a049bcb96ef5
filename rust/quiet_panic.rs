//! Catching the panics of a damaged file without printing them.
//!
//! redb may panic on a file whose bytes are damaged; membolt catches those
//! panics and reports a `CorruptStoreError` naming the file, with the panic's
//! message in it. Rust's default panic hook would also print the panic (and,
//! with `RUST_BACKTRACE`, a backtrace) to stderr, which breaks the
//! one-line errors of the CLI and the stderr of an MCP server. [`catch`]
//! silences the hook for the panics it catches; every other panic of the
//! process still reaches the hook that was installed before.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// How many [`catch`] calls are running on this thread.
    static CATCHING: Cell<u32> = const { Cell::new(0) };
}

/// Runs `body`, returning its panic as an `Err` instead of unwinding, and
/// without the panic being printed.
pub(crate) fn catch<R>(body: impl FnOnce() -> R) -> std::thread::Result<R> {
    install_hook();
    CATCHING.with(|depth| depth.set(depth.get() + 1));
    let outcome = panic::catch_unwind(AssertUnwindSafe(body));
    CATCHING.with(|depth| depth.set(depth.get() - 1));
    outcome
}

fn install_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CATCHING.with(Cell::get) == 0 {
                previous(info);
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caught_panic_is_an_error_and_the_guard_unwinds() {
        let outcome = catch(|| -> u32 { panic!("damaged page") });
        let message = outcome.unwrap_err();
        assert_eq!(message.downcast_ref::<&str>(), Some(&"damaged page"));
        assert_eq!(CATCHING.with(Cell::get), 0);
        assert_eq!(catch(|| 7).unwrap(), 7);
    }
}
