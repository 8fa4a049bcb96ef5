//! A PostgreSQL project's local image (`store/image/`): a new process of a
//! team member maps the image of the project that an earlier process on
//! this machine left under the store home, and asks the server only for
//! the rows changed since.
//!
//! * **Where**: `<image dir>/<XXH3 of server and project>.image`; the
//!   directory (under the store home, §1.1) is handed in by the glue, so
//!   the rule naming the store home lives once, in Python.
//! * **Used** as a mirror at the image's sequence: the catch-up that
//!   follows asks for the changes since, and keeps the mirror only when the
//!   project's identity is the image's and its tombstones still cover that
//!   sequence (as for any mirror); otherwise it reads every row, and the
//!   image is due for replacement.
//! * **Written** when the store's lock ends (closed, idle, process exit)
//!   from the mirror, if none matched or the changes applied since came to
//!   more than ~1,000 rows. No lock guards it: each process writes under a
//!   temporary name of its own and renames it into place, so the newest
//!   rename wins and every image is whole. It is a cache on this machine:
//!   the server's rows stay the only truth.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use xxhash_rust::xxh3::xxh3_64;

use crate::store::image::{self, Base, Image, Stamp};
use crate::store::mirror::Mirror;

/// A writer replaces an image once this many changed rows were applied on
/// top of it.
const REWRITE_AFTER_CHANGES: usize = 1024;

pub(crate) struct LocalImage {
    dir: PathBuf,
    /// The image's path without its suffix (`image::path_for` adds it).
    base_path: PathBuf,
    /// Changed rows applied on top of the image this mirror came from;
    /// `None` when the mirror did not come from a current image.
    behind: Option<usize>,
}

impl LocalImage {
    pub(crate) fn new(dir: &Path, server: &str, project: &str) -> LocalImage {
        let name = format!(
            "{:016x}",
            xxh3_64(format!("{server}\0{project}").as_bytes())
        );
        LocalImage {
            dir: dir.to_path_buf(),
            base_path: dir.join(name),
            behind: None,
        }
    }

    /// The image, if there is an intact one (images not turned off).
    pub(crate) fn load(&mut self) -> Option<(Arc<Base>, Stamp)> {
        if image::setting() == image::Setting::Off {
            return None;
        }
        let image = Image::open(&image::path_for(&self.base_path)).ok()?;
        let stamp = image.stamp().clone();
        self.behind = Some(0);
        Some((Arc::new(Base::new(image)), stamp))
    }

    /// `count` changed rows were applied to a mirror from the image.
    pub(crate) fn applied(&mut self, count: usize) {
        if let Some(behind) = &mut self.behind {
            *behind += count;
        }
    }

    /// The mirror was read whole from the server.
    pub(crate) fn loaded_whole(&mut self) {
        self.behind = None;
    }

    /// Writes the image of `mirror`, the project's state at `seq`, if it
    /// is due. A failure leaves the old image (or none): it is a cache.
    pub(crate) fn write_if_due(&mut self, mirror: &Mirror, seq: i64) {
        let setting = image::setting();
        if setting == image::Setting::Off
            || (setting == image::Setting::On && mirror.len() < image::MIN_ENTRIES)
            || self
                .behind
                .is_some_and(|behind| behind <= REWRITE_AFTER_CHANGES)
        {
            return;
        }
        let stamp = Stamp {
            store_id: mirror.store_id.clone(),
            sequence: seq as u64,
            count: mirror.len() as u64,
            position: None,
            // The project's identity and change numbers stand for its state
            // (see `catch_up`); no token.
            token: 0,
        };
        if std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .is_err()
        {
            return;
        }
        let entries: Vec<_> = mirror.iter().collect();
        let sections = image::view_sections().map_or_else(Vec::new, |sections| sections(&entries));
        if image::write::write_image_unlocked(
            &self.base_path,
            &stamp,
            mirror.clock,
            &entries,
            sections,
        )
        .is_ok()
        {
            self.behind = Some(0);
        }
    }
}
