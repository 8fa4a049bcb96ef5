//! Where redb's errors become the core's [`StoreError`].
//!
//! redb reports damage, I/O failures and misuse through several error enums
//! (one per operation). [`EngineError`] sorts them by *variant* into what
//! membolt tells its callers (damage or I/O); the [`AtStore`] extension then
//! names the store the failure happened in, so code reads
//! `table.insert(..).at(&location)?`. (PostgreSQL's errors have their own
//! module beside their medium.)

use crate::error::{Location, Result, StoreError};

/// A failure of the storage engine, sorted by what it means for the store.
#[derive(Debug)]
pub(crate) enum EngineError {
    /// The engine found the file damaged (or not one of its files).
    Damaged(String),
    /// The operating system failed an operation; the file may be fine.
    Io(String),
}

impl EngineError {
    /// The error at the store `store`.
    pub(crate) fn at(self, store: impl Into<Location>) -> StoreError {
        match self {
            EngineError::Damaged(detail) => StoreError::corrupt(store, detail),
            EngineError::Io(detail) => StoreError::io(store, detail),
        }
    }
}

impl From<redb::StorageError> for EngineError {
    fn from(error: redb::StorageError) -> Self {
        match error {
            redb::StorageError::Corrupted(detail) => EngineError::Damaged(detail),
            redb::StorageError::Io(io) => io_error(&io),
            // A value too large for the engine, a lock poisoned by a panic
            // inside it, a closed database, an earlier I/O failure: the
            // store cannot be used now, but its file is not known to be
            // damaged.
            other => EngineError::Io(other.to_string()),
        }
    }
}

/// An I/O error of the engine: data the engine cannot parse is damage.
fn io_error(io: &std::io::Error) -> EngineError {
    match io.kind() {
        std::io::ErrorKind::InvalidData => {
            EngineError::Damaged(format!("not a redb database: {io}"))
        }
        std::io::ErrorKind::UnexpectedEof => EngineError::Damaged("the file is truncated".into()),
        _ => EngineError::Io(io.to_string()),
    }
}

impl From<redb::DatabaseError> for EngineError {
    fn from(error: redb::DatabaseError) -> Self {
        match error {
            redb::DatabaseError::Storage(storage) => storage.into(),
            redb::DatabaseError::UpgradeRequired(version) => {
                EngineError::Damaged(format!("unsupported redb file format {version}"))
            }
            // Contention is retried before it gets here; a repair the caller
            // refused means the file needs one.
            other => EngineError::Damaged(other.to_string()),
        }
    }
}

impl From<redb::TransactionError> for EngineError {
    fn from(error: redb::TransactionError) -> Self {
        match error {
            redb::TransactionError::Storage(storage) => storage.into(),
            other => EngineError::Io(other.to_string()),
        }
    }
}

impl From<redb::TableError> for EngineError {
    fn from(error: redb::TableError) -> Self {
        match error {
            redb::TableError::Storage(storage) => storage.into(),
            // A table of another type or shape under membolt's name: not
            // a membolt store.
            other => EngineError::Damaged(other.to_string()),
        }
    }
}

impl From<redb::CommitError> for EngineError {
    fn from(error: redb::CommitError) -> Self {
        match error {
            redb::CommitError::Storage(storage) => storage.into(),
            other => EngineError::Io(other.to_string()),
        }
    }
}

impl From<redb::SetDurabilityError> for EngineError {
    fn from(error: redb::SetDurabilityError) -> Self {
        EngineError::Io(error.to_string())
    }
}

/// Names the store an engine failure happened in.
pub(crate) trait AtStore<T> {
    fn at(self, store: impl Into<Location>) -> Result<T>;
}

impl<T, E: Into<EngineError>> AtStore<T> for std::result::Result<T, E> {
    fn at(self, store: impl Into<Location>) -> Result<T> {
        self.map_err(|error| error.into().at(store))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn engine_errors_are_sorted_by_variant() {
        let damaged: EngineError = redb::StorageError::Corrupted("bad page".into()).into();
        assert!(matches!(damaged, EngineError::Damaged(ref d) if d == "bad page"));
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        assert!(matches!(
            EngineError::from(redb::StorageError::Io(io)),
            EngineError::Io(_)
        ));
        let garbage = std::io::Error::new(std::io::ErrorKind::InvalidData, "magic");
        assert!(matches!(
            EngineError::from(redb::DatabaseError::Storage(redb::StorageError::Io(
                garbage
            ))),
            EngineError::Damaged(_)
        ));
        assert!(matches!(
            EngineError::from(redb::TableError::TableDoesNotExist("x".into())),
            EngineError::Damaged(_)
        ));
        // A message that merely mentions corruption is not damage.
        let io = std::io::Error::other("corrupted cable");
        assert!(matches!(
            EngineError::from(redb::StorageError::Io(io)),
            EngineError::Io(_)
        ));
    }

    #[test]
    fn at_names_the_store() {
        let failed: std::result::Result<(), redb::StorageError> =
            Err(redb::StorageError::Corrupted("bad page".into()));
        let error = failed.at(Path::new("/tmp/x.redb")).unwrap_err();
        assert!(error.is_damage());
        assert!(error.to_string().contains("/tmp/x.redb"), "{error}");
    }
}
