//! The store's maintenance calls, in one place for the glue: `membolt
//! doctor` ([`inspect`]), `membolt repair` ([`salvage`]), and which
//! medium a location names ([`is_database_url`]).
//!
//! The media read and check their own files; the rules a check applies to
//! each entry, and the new store a repair writes, come from this layer, so
//! no medium knows a rule or builds a store.

use std::path::Path;
use std::time::Duration;

use crate::error::{Result, StoreError};
use crate::store::Store;
use crate::store::redb::{doctor, repair};
use crate::store::rules::entry_problems;

pub use crate::store::redb::doctor::Report;
pub use crate::store::redb::repair::Salvage;

/// The schema version a store file of this version is written in.
pub const FILE_SCHEMA_VERSION: u64 = crate::store::redb::SCHEMA_VERSION;
/// The schema version of membolt's tables on a PostgreSQL server.
pub const DATABASE_SCHEMA_VERSION: u64 = crate::store::postgres::SCHEMA_VERSION;
/// The files a store file keeps beside it, by suffix.
pub const COMPANION_SUFFIXES: [&str; 2] = crate::store::redb::COMPANION_SUFFIXES;

/// §12: whether `text` names a PostgreSQL store (`postgresql://`,
/// `postgres://`) rather than a file.
pub fn is_database_url(text: &str) -> bool {
    crate::store::postgres::is_database_url(text)
}

/// `membolt doctor`: a read-only check of the store file at `path`, every
/// entry checked against the store's invariants (§14).
pub fn inspect(path: &Path, timeout: Duration) -> Result<Report> {
    doctor::inspect(path, timeout, entry_problems)
}

/// `membolt repair`: every record of the store file at `source` that
/// passes its checksum, written into a new store at `target` (which must
/// not exist yet, or be empty); `source` is left as it was (§14).
pub fn salvage(source: &Path, target: &Path, timeout: Duration) -> Result<Salvage> {
    let target_taken = std::fs::metadata(target).is_ok_and(|meta| meta.len() > 0);
    if target_taken {
        return Err(StoreError::invalid(format!(
            "{} already exists: repair writes a new store and never overwrites one",
            target.display()
        )));
    }
    if std::fs::canonicalize(source).ok() == std::fs::canonicalize(target).ok() {
        return Err(StoreError::invalid(
            "the repaired store must be another file than the damaged one",
        ));
    }
    let (entries, salvage) = repair::salvage(source, timeout)?;
    let store = Store::open(target, timeout)?;
    store.put_exact(entries)?;
    store.close();
    Ok(salvage)
}
