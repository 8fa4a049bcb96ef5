//! The core's error type: what every layer reports, whatever the medium.
//!
//! `python/errors.rs` maps each [`StoreError`] variant to exactly one Python
//! exception class; nothing else in the crate knows about Python. Each
//! medium turns its own engine's errors into these, in its own folder
//! (`store/redb/errors.rs`, `store/postgres/errors.rs`).

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
