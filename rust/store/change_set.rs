//! What crosses the seam between the store and its media: the changes one
//! transaction made, as data.
//!
//! The write rules (`rules.rs`) produce a [`ChangeSet`]; a medium
//! (`medium.rs`) makes it durable without knowing any rule that made it;
//! catch-up hands the mirror the changes another writer made in the same
//! shape (a key and its entry now). Nothing here decides anything.

use std::sync::Arc;

use crate::entry::Entry;

/// One key a change touched and its entry afterwards (`None`: deleted); an
/// undo log holds the entry before the change instead.
pub type Change = (Arc<str>, Option<Arc<Entry>>);

/// The changes one transaction made, in order, for the medium to write.
pub struct ChangeSet {
    pub changes: Vec<Change>,
    /// The store's clock after the transaction (§1.3).
    pub clock: i64,
    /// Whether an entry was deleted (the newest stamp may be gone with it,
    /// so a medium that derives its clock from the entries must store it).
    pub deleted: bool,
}
