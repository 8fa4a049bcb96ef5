//! The core's error type. `python.rs` maps each variant to exactly one Python
//! exception class; nothing else in the crate knows about Python.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug)]
pub enum StoreError {
    /// Another process kept the store open past the timeout.
    Busy { path: PathBuf, waited: Duration },
    /// The file is damaged or is not a membolt store. Never modified.
    Corrupt { path: PathBuf, detail: String },
    /// The file was written by a newer membolt (higher schema version).
    NewerSchema {
        path: PathBuf,
        found: u64,
        supported: u64,
    },
    /// An argument breaks a rule of the API (empty key, self-link, ...).
    InvalidArgument(String),
    /// A key that must exist does not (`link` on a missing entry).
    MissingKey(String),
    /// The store object was closed by its owner.
    Closed { path: PathBuf },
    /// The operating system refused an operation (permissions, disk full).
    Io { path: PathBuf, detail: String },
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl StoreError {
    pub(crate) fn corrupt(path: &Path, detail: impl Into<String>) -> Self {
        StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: detail.into(),
        }
    }

    pub fn io(path: &Path, detail: impl fmt::Display) -> Self {
        StoreError::Io {
            path: path.to_path_buf(),
            detail: detail.to_string(),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        StoreError::InvalidArgument(message.into())
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Busy { path, waited } => write!(
                f,
                "memory store {} is busy: another process kept it open for {:.1} s; \
                 retry later or raise the timeout",
                path.display(),
                waited.as_secs_f64()
            ),
            StoreError::Corrupt { path, detail } => write!(
                f,
                "{} is not a readable membolt store ({detail}); it was left untouched",
                path.display()
            ),
            StoreError::NewerSchema {
                path,
                found,
                supported,
            } => write!(
                f,
                "{} was written by a newer membolt (schema {found}; this version reads up to \
                 {supported}); upgrade membolt to open it",
                path.display()
            ),
            StoreError::InvalidArgument(message) => f.write_str(message),
            StoreError::MissingKey(key) => write!(f, "no memory entry {key:?}"),
            StoreError::Closed { path } => {
                write!(f, "memory store {} is closed", path.display())
            }
            StoreError::Io { path, detail } => {
                write!(f, "cannot use memory store {}: {detail}", path.display())
            }
        }
    }
}

impl std::error::Error for StoreError {}
