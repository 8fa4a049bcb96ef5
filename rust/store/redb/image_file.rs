//! The redb medium's image (`store/image/`): `<store>.image`, which a new
//! process maps instead of loading the whole file.
//!
//! * **Used** when it names this store (its id), the file still records
//!   the image's token (below), and the image describes a state the
//!   medium can bring up to date: the file's own (the same `journal_seq`
//!   and entry count), or one the change ring still lists every change
//!   since (the same ring id, the ring not overrun since, and not behind
//!   the position the file's newest commit recorded). The keys the ring
//!   lists are re-read from the file, as any catch-up re-reads them, and
//!   the journal's pending records are applied afterwards as after a full
//!   load. A file whose `journal_seq` is below the image's (an older copy
//!   of the store put in its place) never uses it.
//! * **The token** binds the image to one history of the file: the writer
//!   draws a random number for each image it writes, puts it in the image
//!   and records it in the file's meta with the commit that ends its
//!   lease; later commits keep it. Counters cannot do this: a copy of the
//!   store that went its own way, or a backup put back, reaches the same
//!   `journal_seq`, entry count and ring position with other contents, but
//!   it does not hold the token of an image written after it parted (a
//!   crash between the image and the commit leaves the old token: the new
//!   image is then unused, and rewritten by the next lease).
//! * **A ring that went back**: the ring's pages are never synced, so a
//!   machine crash can leave older ones on disk, after which new changes
//!   reuse ring numbers the image believes it has seen. Every commit
//!   records the ring's position in the file's meta; a writer that finds
//!   the ring behind it starts a new ring (a new id, so that no image or
//!   mirror trusts the old numbers), and a reader then uses no image.
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
        if stamp.store_id != meta.store_id
            || meta.journal_seq < stamp.sequence
            || meta.image_token != Some(stamp.token)
        {
            return None;
        }
        let changed = if stamp.sequence == meta.journal_seq && stamp.count == count {
            Vec::new()
        } else {
            let now = now?;
            if ring_went_back(meta, now) {
                return None;
            }
            let [ring_id, seq, head] = stamp.position?;
            let since = Position { ring_id, seq, head };
            ring.changed_keys(since, now)?
        };
        Some((Arc::new(Base::new(image)), changed))
    }

    /// With the write lease still held, at its end: writes a new image of
    /// `mirror` (the file's state once the lease's transaction is
    /// committed as change `sequence`, the ring at `position`) if the one
    /// on disk is due for replacement, `token` being the one the file
    /// records now. Returns the new image's token, which the commit that
    /// ends the lease must record (until it does, the image is unused). A
    /// failure leaves no image behind but the old one: an image is a cache.
    pub(crate) fn write_if_due(
        &mut self,
        mirror: &Mirror,
        sequence: u64,
        position: Option<Position>,
        token: Option<u64>,
    ) -> Option<u64> {
        let setting = image::setting();
        if setting == image::Setting::Off
            || (setting == image::Setting::On && mirror.len() < image::MIN_ENTRIES)
        {
            return None;
        }
        let mut stamp = Stamp {
            store_id: mirror.store_id.clone(),
            sequence,
            count: mirror.len() as u64,
            position: position.map(stamp_position),
            token: 0,
        };
        let on_disk = image::read_stamp(&self.path).ok();
        if self
            .next_write
            .is_some_and(|next| std::time::Instant::now() < next)
            || (!self.damaged && !is_due(on_disk.as_ref(), &stamp, token))
        {
            return None;
        }
        // Never 0, which means "none".
        stamp.token = crate::random::random_u64() | 1;
        let started = std::time::Instant::now();
        let entries: Vec<_> = mirror.iter().collect();
        let sections = image::view_sections().map_or_else(Vec::new, |sections| sections(&entries));
        let written =
            image::write::write_image(&self.store, &stamp, mirror.clock, &entries, sections)
                .is_ok();
        if written {
            self.damaged = false;
        }
        self.next_write = Some(started + started.elapsed() * (WRITE_SHARE + 1));
        written.then_some(stamp.token)
    }
}

/// Whether the ring is behind the position the file's newest commit
/// recorded (same ring, fewer records): it lost records, so the changes it
/// lists since an older position may be missing some.
pub(crate) fn ring_went_back(meta: &Meta, now: Position) -> bool {
    meta.ring_mark
        .is_some_and(|[id, seq, head]| id == now.ring_id && (now.seq < seq || now.head < head))
}

/// Whether an image stamped `old` (`None`: none, or unreadable) should be
/// replaced by one of the state `new`, the file recording `token`.
fn is_due(old: Option<&Stamp>, new: &Stamp, token: Option<u64>) -> bool {
    let Some(old) = old else { return true };
    if old.store_id != new.store_id || old.sequence > new.sequence || Some(old.token) != token {
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

    const TOKEN: Option<u64> = Some(77);

    fn stamp(sequence: u64, position: Option<[u64; 3]>) -> Stamp {
        Stamp {
            store_id: vec![1; 16],
            sequence,
            count: 10,
            position,
            token: 77,
        }
    }

    #[test]
    fn an_image_is_rewritten_only_when_readers_would_pay_for_it() {
        let now = stamp(20, Some([5, 100, 4_000]));
        assert!(is_due(None, &now, TOKEN));
        assert!(!is_due(Some(&stamp(19, Some([5, 99, 3_900]))), &now, TOKEN));
        assert!(!is_due(Some(&stamp(19, Some([5, 0, 3_900]))), &now, TOKEN));
        assert!(is_due(
            Some(&stamp(1, Some([5, 1, 1]))),
            &stamp(20, Some([5, 2_000, 9_000])),
            TOKEN
        ));
        assert!(is_due(Some(&stamp(19, Some([6, 99, 3_900]))), &now, TOKEN));
        assert!(is_due(Some(&stamp(21, Some([5, 99, 3_900]))), &now, TOKEN));
        let mut other = stamp(20, Some([5, 100, 4_000]));
        other.store_id = vec![2; 16];
        assert!(is_due(Some(&other), &now, TOKEN));
        // Without a ring: only the very same state is current.
        assert!(!is_due(Some(&stamp(20, None)), &stamp(20, None), TOKEN));
        assert!(is_due(Some(&stamp(19, None)), &stamp(20, None), TOKEN));
        // An image whose token the file does not record is never used:
        // always due, however current its numbers.
        assert!(is_due(Some(&stamp(20, None)), &stamp(20, None), Some(78)));
        assert!(is_due(Some(&stamp(20, None)), &stamp(20, None), None));
        assert!(is_due(Some(&stamp(19, Some([5, 99, 3_900]))), &now, None));
    }
}
