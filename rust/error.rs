//! The core's error type, and the one place where the storage engine's errors
//! become it.
//!
//! `python/errors.rs` maps each [`StoreError`] variant to exactly one Python
//! exception class; nothing else in the crate knows about Python.
//!
//! redb reports damage, I/O failures and misuse through several error enums
//! (one per operation). [`EngineError`] sorts them by *variant* into what
//! membolt tells its callers (damage or I/O); the [`AtStore`] extension then
//! names the store the failure happened in, so code reads
//! `table.insert(..).at(&location)?`.

use std::fmt;
use std::path::Path;
use std::time::Duration;

/// Where a store lives, as messages show it: a file path, or a database
/// address without its password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location(String);

impl Location {
    pub fn new(text: impl Into<String>) -> Self {
        Location(text.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Self {
        Location(path.display().to_string())
    }
}

impl From<&std::path::PathBuf> for Location {
    fn from(path: &std::path::PathBuf) -> Self {
        Location::from(path.as_path())
    }
}

impl From<&Location> for Location {
    fn from(location: &Location) -> Self {
        location.clone()
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug)]
pub enum StoreError {
    /// Another process kept the store locked past the timeout.
    Busy { store: Location, waited: Duration },
    /// The file is damaged or is not a membolt store. Never modified.
    Corrupt { store: Location, detail: String },
    /// The store was written by a newer membolt (higher schema version).
    NewerSchema {
        store: Location,
        found: u64,
        supported: u64,
    },
    /// An argument breaks a rule of the API (empty key, self-link, ...).
    InvalidArgument(String),
    /// A key that must exist does not (`link` on a missing entry).
    MissingKey(String),
    /// The store object was closed by its owner.
    Closed { store: Location },
    /// The operating system refused an operation (permissions, disk full).
    Io { store: Location, detail: String },
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl StoreError {
    pub(crate) fn corrupt(store: impl Into<Location>, detail: impl Into<String>) -> Self {
        StoreError::Corrupt {
            store: store.into(),
            detail: detail.into(),
        }
    }

    pub fn io(store: impl Into<Location>, detail: impl fmt::Display) -> Self {
        StoreError::Io {
            store: store.into(),
            detail: detail.to_string(),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        StoreError::InvalidArgument(message.into())
    }

    /// Whether the failure says the store itself is damaged.
    pub fn is_damage(&self) -> bool {
        matches!(self, StoreError::Corrupt { .. })
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Busy { store, waited } => write!(
                f,
                "memory store {store} is busy: another process kept it open for {:.1} s; \
                 retry later or raise the timeout",
                waited.as_secs_f64()
            ),
            StoreError::Corrupt { store, detail } => write!(
                f,
                "{store} is not a readable membolt store ({detail}); it was left untouched"
            ),
            StoreError::NewerSchema {
                store,
                found,
                supported,
            } => write!(
                f,
                "{store} was written by a newer membolt (schema {found}; this version reads up \
                 to {supported}); upgrade membolt to open it"
            ),
            StoreError::InvalidArgument(message) => f.write_str(message),
            StoreError::MissingKey(key) => write!(f, "no memory entry {key:?}"),
            StoreError::Closed { store } => write!(f, "memory store {store} is closed"),
            StoreError::Io { store, detail } => {
                write!(f, "cannot use memory store {store}: {detail}")
            }
        }
    }
}

impl std::error::Error for StoreError {}

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
