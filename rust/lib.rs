//! membolt's core: durable, multi-process memory storage, the views of it
//! (search, the `<memory>` block, the graph, queries) and the text rules the
//! Python layer shares.
//!
//! ```text
//! python/     the PyO3 glue (behind the `python` feature; nothing else
//!             knows Python)
//! views/      what readers see: search, render, graph, prompt parts, query
//! store/      the rules of §1 and §3 over a mirror, and the media below
//!             the seam (store/medium.rs): store/redb/
//! query/      the memory_query language
//! entry.rs, text/, error.rs    shared by all of the above
//! ```
//!
//! `cargo test` exercises the core without a Python interpreter.

pub mod entry;
pub mod error;
pub mod fork_gate;
mod parallel;
pub mod query;
mod quiet_panic;
mod random;
pub mod store;
#[cfg(test)]
mod test_rng;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text;
pub mod views;

#[cfg(feature = "python")]
mod python;

/// mimalloc instead of the system allocator: loading a store allocates a
/// few small strings per entry, and glibc's malloc spends more time in
/// bookkeeping than the load itself on a large store.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
