//! Where a store file is, made safe to use: an absolute path whose
//! directory exists (mode 0700), symbolic links resolved so that every
//! process finds the same companion files, and anything but a regular file
//! refused.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};

/// Absolute path of the store file; its directory is created (mode 0700).
pub(crate) fn absolute_store_path(path: &Path) -> Result<PathBuf> {
    if path.as_os_str().is_empty() {
        return Err(StoreError::invalid("store path must not be empty"));
    }
    let absolute = std::path::absolute(path).map_err(|e| StoreError::io(path, e))?;
    let file_name = absolute
        .file_name()
        .ok_or_else(|| StoreError::invalid(format!("{} is not a file path", path.display())))?
        .to_owned();
    let parent = absolute.parent().unwrap_or(Path::new("/"));
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(parent)
        .map_err(|e| StoreError::io(parent, e))?;
    let parent = parent
        .canonicalize()
        .map_err(|e| StoreError::io(parent, e))?;
    let mut full = parent.join(file_name);
    if fs::symlink_metadata(&full).is_ok_and(|meta| meta.is_symlink()) {
        // The companion files are named after the store's path: every
        // process must use the same one, whatever name it was given.
        full = full.canonicalize().map_err(|e| {
            StoreError::invalid(format!(
                "{} is a symbolic link to nothing usable ({e})",
                full.display()
            ))
        })?;
    }
    if full.is_dir() {
        return Err(StoreError::invalid(format!(
            "{} is a directory",
            full.display()
        )));
    }
    // A device or a FIFO would read as an empty store (or block forever).
    if fs::metadata(&full).is_ok_and(|meta| !meta.is_file()) {
        return Err(StoreError::invalid(format!(
            "{} is not a regular file",
            full.display()
        )));
    }
    Ok(full)
}

/// Whether the store file exists and holds anything. A file with more than
/// one name (hard links) is refused: its companion files are found by the
/// name used, so two names would give one file two journals, and a writer
/// killed while using one name would lose its acknowledged changes for
/// whoever opens the other.
pub(crate) fn store_file_has_data(path: &Path) -> Result<bool> {
    match fs::metadata(path) {
        Ok(meta) if meta.nlink() > 1 => Err(StoreError::io(
            path,
            format!(
                "the file has {} names (hard links), and a store must have exactly one: \
                 its journal and change ring are found by its name; remove the other \
                 links, or copy the file instead of linking it",
                meta.nlink()
            ),
        )),
        Ok(meta) => Ok(meta.len() > 0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// Creates the file with mode 0600 if missing (redb would use the umask).
pub(crate) fn prepare_file(path: &Path) -> Result<()> {
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map(drop)
        .map_err(|e| StoreError::io(path, e))
}
