//! When bulk work is worth a second thread.
//!
//! Loading a store and building an index over it allocate a few small
//! objects per entry; a fresh process pays a page fault for most new pages,
//! and two threads halve that wait. Below this size a second thread costs
//! more to start and join than it saves.

/// Stores at least this large are loaded and indexed on two threads.
pub const PARALLEL_MIN_ENTRIES: usize = 16_384;
