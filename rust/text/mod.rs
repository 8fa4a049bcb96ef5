//! Pure text functions of membolt (§5.4–§5.8, §6.8).
//!
//! Everything here is a total function of its arguments: no I/O, no clock, no
//! `unsafe`, and no panic on any input. The spec's conventions are followed
//! literally:
//!
//! * "bytes" are UTF-8 bytes (`str::len`);
//! * "whitespace" is the Unicode `White_Space` property, i.e.
//!   [`char::is_whitespace`] (U+001C–U+001F are *not* whitespace here, unlike
//!   Python's `str.split()`); "trim" is [`str::trim`], which uses that same set;
//! * "lower" is Python's `str.lower()`, see [`lower`] for the one known
//!   difference.
//!
//! ```text
//! truncate.rs    cutting to a byte budget (§6.8)
//! whitespace.rs  the contract's whitespace and trim
//! escape.rs      flattening, escaping and neutralising (§5.4)
//! words.rs       lowering and word tokens
//! markers.rs     done and resolved (§5.5)
//! focus.rs       significant words, stopwords, scores (§5.6)
//! block.rs       entry cost, duplicates, relative age (§5.1, §5.3, §5.8)
//! ```

mod block;
mod escape;
mod focus;
mod markers;
mod truncate;
mod whitespace;
mod words;

pub use block::*;
pub use escape::*;
pub use focus::*;
pub use markers::*;
pub use truncate::*;
pub use whitespace::*;
pub use words::*;

#[cfg(test)]
mod tests;
