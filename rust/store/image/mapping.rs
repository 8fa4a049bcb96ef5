//! The one place the crate maps a file into memory (and so the one place
//! it allows `unsafe`).
//!
//! Invariant that makes the mapping sound: membolt never modifies an image
//! file in place. A writer writes a new image under another name and
//! renames it over the old one (`image/write.rs`); a mapping keeps the old
//! file's pages, which nobody writes any more, until it is dropped. A file
//! changed under the mapping by something else than membolt (another
//! program writing into `<store>.image`) could change the bytes read after
//! the checksums were verified; that is the one trust the image places in
//! its neighbours, and it can only mislead a reader about the cache, never
//! change the store.

#![allow(unsafe_code)]

use std::fs::File;
use std::ops::Deref;

/// A read-only mapping of a whole file.
pub(crate) struct Mapped(memmap2::Mmap);

impl Mapped {
    pub(crate) fn map(file: &File) -> std::io::Result<Mapped> {
        // SAFETY: see the module's invariant: the file is replaced by
        // rename, never written in place, while it may be mapped.
        let map = unsafe { memmap2::Mmap::map(file)? };
        Ok(Mapped(map))
    }
}

impl Deref for Mapped {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}
