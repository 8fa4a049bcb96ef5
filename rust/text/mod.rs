//! Pure text functions of membolt (§5.4–§5.8, §6.8, §15.1).
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
//! terms.rs       the terms of the ranked search (§15.1)
//! stopwords.rs   the words a query drops (§15.1)
//! block.rs       entry cost, duplicates, relative age (§5.1, §5.3, §5.8)
//! ```

mod block;
mod escape;
mod markers;
mod stopwords;
mod terms;
mod truncate;
mod whitespace;
mod words;

pub use block::*;
pub use escape::*;
pub use markers::*;
pub use stopwords::*;
pub use terms::*;
pub use truncate::*;
pub use whitespace::*;
pub use words::*;

#[cfg(test)]
mod tests;
