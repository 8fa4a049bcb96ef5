//! membolt's core: durable, multi-process memory storage on redb, substring
//! search, the `<memory>` block renderer, and the text rules shared by the
//! Python layer.
//!
//! Everything Python-facing lives in `python.rs`, behind the `python` cargo
//! feature, so `cargo test` exercises the core without an interpreter.

pub mod doctor;
pub mod entry;
pub mod error;
pub mod fill_tree;
pub mod fork_gate;
pub mod graph;
mod journal;
mod lease;
pub mod mirror;
pub mod query;
mod quiet_panic;
pub mod render;
pub mod render_index;
pub mod search;
pub mod store;
mod sync;
#[cfg(test)]
mod test_rng;
pub mod text;
pub mod token_index;

#[cfg(feature = "python")]
mod python;

/// mimalloc instead of the system allocator: loading a store allocates a
/// few small strings per entry, and glibc's malloc spends more time in
/// bookkeeping than the load itself on a large store.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
