//! The redb medium's image (`store/image/`): `<store>.image`, which a new
//! process maps instead of loading the whole file.
//!
//! * **Used** when it names this store (its id) and a state the medium can
//!   bring up to date: the file's own (the same `journal_seq` and entry
//!   count), or one the change ring still lists every change since (the
//!   same ring id, and the ring not overrun since). The keys the ring
//!   lists are re-read from the file, as any catch-up re-reads them, and
//!   the journal's pending records are applied afterwards as after a full
//!   load. A file whose `journal_seq` is below the image's (an older copy
//!   of the store put in its place) never uses it.
//! * **Written** by the holder of the write lease when the lease ends, with
//!   the lock still held (so no two writers share `<store>.image.new`),
//!   from the mirror, which is then exactly the file plus the journal. Only
//!   when the image on disk is missing, damaged, of another store, or far
//!   enough behind that readers would re-read many keys (or lose the ring
//!   position they need): most leases end without writing one.
//! * **Ignored** when it fails a check; readers never write it (§14.2).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::store::image::{self, Base, Image, Problem, Stamp};
use crate::store::mirror::Mirror;
use crate::store::redb::change_ring::{ChangeRing, Position, RING_LEN};
use crate::store::redb::format::Meta;

/// A reader catching up from the image re-reads at most about this many
/// keys before a writer writes a new image.
const REWRITE_AFTER_CHANGES: u64 = 1024;

/// A process spends at most about one part in this many of its time
/// writing images: after a write that took `d`, the next waits `d` times
/// this. (A write costs O(store), ~0.7 s at 100k entries; a bulk import
/// whose lease ends between its chunks would otherwise rewrite the image
/// after every chunk.)
const WRITE_SHARE: u32 = 10;

pub(crate) struct ImageFile {
    store: PathBuf,
    path: PathBuf,
    /// Set when this process found the image damaged: the next lease that
    /// ends writes a new one.
    damaged: bool,
    /// No image is written before this (see [`WRITE_SHARE`]).
    next_write: Option<std::time::Instant>,
}

fn stamp_position(position: Position) -> [u64; 3] {
    [position.ring_id, position.seq, position.head]
}

impl ImageFile {
    pub(crate) fn new(store: &Path) -> ImageFile {
        ImageFile {
            store: store.to_path_buf(),
            path: image::path_for(store),
            damaged: false,
            next_write: None,
        }
    }

    /// The image, if it can stand for the file whose meta is `meta` and
    /// whose entry table holds `count` records, with the keys changed since
    /// (to be re-read from the file).
    pub(crate) fn load(
        &mut self,
        meta: &Meta,
        count: u64,
        now: Option<Position>,
        ring: &mut ChangeRing,
    ) -> Option<(Arc<Base>, Vec<String>)> {
        if image::setting() == image::Setting::Off {
            return None;
        }
        let image = match Image::open(&self.path) {
            Ok(image) => image,
            Err(Problem::Missing) => return None,
            Err(Problem::Damaged(_)) => {
                self.damaged = true;
                return None;
            }
        };
        let stamp = image.stamp();
        if stamp.store_id != meta.store_id || meta.journal_seq < stamp.sequence {
            return None;
        }
        let changed = if stamp.sequence == meta.journal_seq && stamp.count == count {
            Vec::new()
        } else {
            let [ring_id, seq, head] = stamp.position?;
            let since = Position { ring_id, seq, head };
            ring.changed_keys(since, now?)?
        };
        Some((Arc::new(Base::new(image)), changed))
    }

    /// With the write lease still held, at its end: writes a new image of
    /// `mirror` (the file's state once the lease's transaction is
    /// committed as change `sequence`, the ring at `position`) if the one
    /// on disk is due for replacement. A failure leaves no image behind
    /// but the old one: an image is a cache.
    pub(crate) fn write_if_due(
        &mut self,
        mirror: &Mirror,
        sequence: u64,
        position: Option<Position>,
    ) {
        let setting = image::setting();
        if setting == image::Setting::Off
            || (setting == image::Setting::On && mirror.len() < image::MIN_ENTRIES)
        {
            return;
        }
        let stamp = Stamp {
            store_id: mirror.store_id.clone(),
            sequence,
            count: mirror.len() as u64,
            position: position.map(stamp_position),
        };
        if self
            .next_write
            .is_some_and(|next| std::time::Instant::now() < next)
            || (!self.damaged && !is_due(image::read_stamp(&self.path).ok().as_ref(), &stamp))
        {
            return;
        }
        let started = std::time::Instant::now();
        let entries: Vec<_> = mirror.iter().collect();
        let sections = image::view_sections().map_or_else(Vec::new, |sections| sections(&entries));
        if image::write::write_image(&self.store, &stamp, mirror.clock, &entries, sections).is_ok()
        {
            self.damaged = false;
        }
        self.next_write = Some(started + started.elapsed() * (WRITE_SHARE + 1));
    }
}

/// Whether an image stamped `old` (`None`: none, or unreadable) should be
/// replaced by one of the state `new`.
fn is_due(old: Option<&Stamp>, new: &Stamp) -> bool {
    let Some(old) = old else { return true };
    if old.store_id != new.store_id || old.sequence > new.sequence {
        return true;
    }
    match (old.position, new.position) {
        (Some([old_id, old_seq, old_head]), Some([id, seq, head])) if old_id == id => {
            seq < old_seq
                || head < old_head
                || seq - old_seq > REWRITE_AFTER_CHANGES
                || head - old_head > RING_LEN / 2
        }
        _ => old.sequence != new.sequence || old.count != new.count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(sequence: u64, position: Option<[u64; 3]>) -> Stamp {
        Stamp {
            store_id: vec![1; 16],
            sequence,
            count: 10,
            position,
        }
    }

    #[test]
    fn an_image_is_rewritten_only_when_readers_would_pay_for_it() {
        let now = stamp(20, Some([5, 100, 4_000]));
        assert!(is_due(None, &now));
        assert!(!is_due(Some(&stamp(19, Some([5, 99, 3_900]))), &now));
        assert!(!is_due(Some(&stamp(19, Some([5, 0, 3_900]))), &now));
        assert!(is_due(
            Some(&stamp(1, Some([5, 1, 1]))),
            &stamp(20, Some([5, 2_000, 9_000]))
        ));
        assert!(is_due(Some(&stamp(19, Some([6, 99, 3_900]))), &now));
        assert!(is_due(Some(&stamp(21, Some([5, 99, 3_900]))), &now));
        let mut other = stamp(20, Some([5, 100, 4_000]));
        other.store_id = vec![2; 16];
        assert!(is_due(Some(&other), &now));
        // Without a ring: only the very same state is current.
        assert!(!is_due(Some(&stamp(20, None)), &stamp(20, None)));
        assert!(is_due(Some(&stamp(19, None)), &stamp(20, None)));
    }
}
