//! The acknowledgement mark (§14.1): how far a lease's journaled changes
//! were acknowledged (their call returned), and so which changes a damaged
//! or short journal loses.
//!
//! A change's journal record is written with one `write`, and the change is
//! acknowledged when that returns. A write can be cut short part way: by a
//! kill, when the write is buffered (tmpfs, overlayfs, any file system that
//! refuses `O_DIRECT`: the kernel copies the record a page at a time and
//! stops at a fatal signal), or by a power cut, direct writes included. The
//! newest record then has its first page(s) new and the rest as they were
//! before, and fails its checksum exactly like an acknowledged record that
//! was damaged afterwards. Nothing in its bytes tells the two apart (a
//! flipped bit in the last page of a record looks like a write cut before
//! that page); whether its write returned does, and only the writer knew
//! that. So after each record, before the call returns, the writer moves
//! this mark's acknowledged number on: one small write into the page cache
//! of the `.sync` sidecar, which outlives a killed process (a kill loses no
//! page cache) and is never flushed.
//!
//! # Layout (past the ring of the `.sync` sidecar)
//! ```text
//! offset  size
//!      0     8  magic "mbackn01"
//!      8    16  store id (meta `store_id`, as the journal holds it)
//!     24     8  base: redb's durable `journal_seq` when the lease's journal
//!               started, or when the lease last committed durably
//!     32    24  the change ring's position then: ring id, seq, head
//!     56     8  acknowledged: the newest change whose call returned
//!     64     4  CRC-32 of bytes 0..64
//! ```
//!
//! # Invariants
//! * Only the holder of redb's write lock writes the mark: whole when a
//!   lease's journal starts and after every durable commit (then base =
//!   acknowledged = the seq redb holds), and its last 12 bytes (the number
//!   and the checksum) after every record, before the call returns.
//! * A record is written only after the previous one was acknowledged, so
//!   at most one record, the newest, is unacknowledged, and it is the only
//!   one a cut-short write can leave damaged.
//! * The mark speaks for the journal only while redb's durable
//!   `journal_seq` is its base and the store id is the file's
//!   ([`Mark::speaks_for`]): then its lease has not committed durably since,
//!   and every change from `base + 1` to `acknowledged` must be replayable
//!   from the journal; one that is not is lost. Otherwise (a later lease
//!   committed, a copy of the store file was put back, another store) it
//!   says nothing.
//! * Without a mark that speaks (the sidecar deleted, or a power cut before
//!   its page reached the disk), a damaged newest record is taken for one
//!   cut short when its header (magic, store id, next number) is whole, as
//!   such a write leaves it, and for damage otherwise.

use std::collections::BTreeSet;

use crate::store::redb::change_ring::Position;
use crate::store::redb::journal::{Pending, Record, id16};

/// The mark's size in the sidecar.
pub(crate) const MARK_LEN: usize = 68;
const MAGIC: &[u8; 8] = b"mbackn01";
/// Where the acknowledged number starts; the checksum follows it.
const ACKNOWLEDGED_AT: usize = 56;

/// The acknowledgement mark of one lease (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    store_id: [u8; 16],
    base: u64,
    /// The change ring's position at `base`: the keys announced since are
    /// the lease's.
    ring: Option<Position>,
    acknowledged: u64,
}

impl Mark {
    /// A lease's journal starting (or restarting after a durable commit)
    /// with redb holding every change up to `base`.
    pub(crate) fn new(store_id: &[u8], base: u64, ring: Option<Position>) -> Mark {
        Mark {
            store_id: id16(store_id),
            base,
            ring,
            acknowledged: base,
        }
    }

    /// redb now holds every change up to `base` durably, and the ring
    /// stood at `ring` then: the journal starts again.
    pub(crate) fn rebase(&mut self, base: u64, ring: Option<Position>) {
        self.base = base;
        self.ring = ring;
        self.acknowledged = base;
    }

    /// Change `seq` returned to its caller.
    pub(crate) fn acknowledge(&mut self, seq: u64) {
        self.acknowledged = seq;
    }

    /// The ring's position when the lease's journal started.
    pub(crate) fn ring_position(&self) -> Option<Position> {
        self.ring
    }

    /// Whether the mark describes the journal of a file whose meta says
    /// `store_id` and `durable_seq` (see the module docs).
    pub(crate) fn speaks_for(&self, store_id: &[u8], durable_seq: u64) -> bool {
        self.store_id == id16(store_id) && self.base == durable_seq
    }

    pub(crate) fn encode(&self) -> [u8; MARK_LEN] {
        let mut bytes = [0u8; MARK_LEN];
        bytes[..8].copy_from_slice(MAGIC);
        bytes[8..24].copy_from_slice(&self.store_id);
        bytes[24..32].copy_from_slice(&self.base.to_le_bytes());
        if let Some(ring) = self.ring {
            bytes[32..40].copy_from_slice(&ring.ring_id.to_le_bytes());
            bytes[40..48].copy_from_slice(&ring.seq.to_le_bytes());
            bytes[48..56].copy_from_slice(&ring.head.to_le_bytes());
        }
        bytes[ACKNOWLEDGED_AT..64].copy_from_slice(&self.acknowledged.to_le_bytes());
        let crc = crc32fast::hash(&bytes[..64]);
        bytes[64..].copy_from_slice(&crc.to_le_bytes());
        bytes
    }

    /// The acknowledged number and the checksum, and their offset in the
    /// mark: all that a record changes.
    pub(crate) fn encode_acknowledged(&self) -> (usize, [u8; MARK_LEN - ACKNOWLEDGED_AT]) {
        let mut tail = [0u8; MARK_LEN - ACKNOWLEDGED_AT];
        tail.copy_from_slice(&self.encode()[ACKNOWLEDGED_AT..]);
        (ACKNOWLEDGED_AT, tail)
    }

    /// A whole mark, or `None` (zeros, damage, a write cut short).
    pub(crate) fn decode(bytes: &[u8; MARK_LEN]) -> Option<Mark> {
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        if &bytes[..8] != MAGIC
            || crc32fast::hash(&bytes[..64]).to_le_bytes() != bytes[64..MARK_LEN]
        {
            return None;
        }
        let ring = Position {
            ring_id: word(32),
            seq: word(40),
            head: word(48),
        };
        Some(Mark {
            store_id: bytes[8..24].try_into().expect("16 bytes"),
            base: word(24),
            ring: (ring.ring_id != 0).then_some(ring),
            acknowledged: word(ACKNOWLEDGED_AT),
        })
    }
}

/// Acknowledged changes that a journal cannot give back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Loss {
    /// Valid records of the lease follow a damaged one, which was therefore
    /// acknowledged: replay cannot pass it.
    Stranded {
        count: usize,
        /// The replayable records end at this change.
        last: u64,
        /// The newest stranded change.
        newest: u64,
    },
    /// The mark says changes up to `acknowledged` returned, and the
    /// replayable records end at `last`: the ones between are damaged or
    /// cut away.
    Missing { last: u64, acknowledged: u64 },
    /// No mark speaks, and the record after the last replayable one is
    /// damaged where a write cut short leaves a record whole (its header).
    DamagedNewest { seq: u64 },
    /// No mark speaks, and the journal is shorter than membolt makes it
    /// while a killed writer's changes may have been in it.
    Short { last: u64 },
}

impl Loss {
    /// What is lost, for messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Loss::Stranded { count, .. } => format!(
                "{count} acknowledged change(s) in the journal follow a damaged record and \
                 cannot be replayed"
            ),
            Loss::Missing { last, acknowledged } => format!(
                "the journal's changes end at number {last}, but changes up to {acknowledged} \
                 were acknowledged (the .sync sidecar records each one): {} acknowledged \
                 change(s) are damaged or cut away",
                acknowledged - last
            ),
            Loss::DamagedNewest { seq } => format!(
                "the journal's record of change {seq} fails its checksum in its header, which \
                 a write cut short leaves whole: an acknowledged change of the writer that \
                 was killed is damaged"
            ),
            Loss::Short { .. } => "the journal is shorter than membolt makes it while it may hold \
                                   a killed writer's acknowledged changes"
                .into(),
        }
    }

    /// The numbers of the changes that may be lost; the upper end is
    /// unknown for a short journal without a mark.
    pub(crate) fn changes(&self) -> (u64, Option<u64>) {
        match *self {
            Loss::Stranded { last, newest, .. } => (last + 1, Some(newest)),
            Loss::Missing { last, acknowledged } => (last + 1, Some(acknowledged)),
            Loss::DamagedNewest { seq } => (seq, Some(seq)),
            Loss::Short { last } => (last + 1, None),
        }
    }
}

/// The acknowledged changes `pending` (the journal read after redb's
/// durable `durable_seq`) cannot give back, judged by `mark` when it speaks
/// for this file, else by the record's header (module docs). `crashed`:
/// the file was left by a killed writer (without a mark, only then, or with
/// records pending, can changes be missing).
pub(crate) fn loss(
    pending: &Pending,
    mark: Option<&Mark>,
    store_id: &[u8],
    durable_seq: u64,
    crashed: bool,
) -> Option<Loss> {
    let last = pending
        .records
        .last()
        .map_or(durable_seq, |record| record.seq);
    let speaking = mark.filter(|mark| mark.speaks_for(store_id, durable_seq));
    if pending.stranded > 0 {
        let acknowledged = speaking.map_or(0, |mark| mark.acknowledged);
        return Some(Loss::Stranded {
            count: pending.stranded,
            last,
            newest: pending.stranded_newest.max(acknowledged),
        });
    }
    if let Some(mark) = speaking {
        return (mark.acknowledged > last).then_some(Loss::Missing {
            last,
            acknowledged: mark.acknowledged,
        });
    }
    let at_risk = crashed || !pending.records.is_empty();
    if let Some(damaged) = &pending.damaged_next
        && at_risk
        && !damaged.header_whole
    {
        return Some(Loss::DamagedNewest { seq: damaged.seq });
    }
    (pending.short && at_risk).then_some(Loss::Short { last })
}

/// The keys whose newest acknowledged change may be among the lost ones
/// (the newest of which is `newest_lost`), as far as the change ring
/// tells: the keys announced since the mark's ring position, past those of
/// the replayable records (`replayed`, oldest first, which announced
/// theirs first), and not written again by a salvaged record newer than
/// every lost change.
pub(crate) fn keys_at_risk(
    newest_lost: u64,
    announced: &[String],
    replayed: &[Record],
    salvaged: &[Record],
) -> Vec<String> {
    let mut rest = announced;
    for record in replayed {
        let keys: BTreeSet<&str> = record.changes.iter().map(|(key, _)| key.as_str()).collect();
        let Some(after) = rest.get(keys.len()..) else {
            rest = announced;
            break;
        };
        if !rest
            .iter()
            .map(String::as_str)
            .zip(&keys)
            .all(|(a, b)| a == *b)
        {
            // Not announced as expected (a ring that missed a change):
            // every key of the lease is at risk.
            rest = announced;
            break;
        }
        rest = after;
    }
    let settled: BTreeSet<&str> = salvaged
        .iter()
        .filter(|record| record.seq > newest_lost)
        .flat_map(|record| record.changes.iter().map(|(key, _)| key.as_str()))
        .collect();
    let at_risk: BTreeSet<&str> = rest
        .iter()
        .map(String::as_str)
        .filter(|key| !settled.contains(key))
        .collect();
    at_risk.into_iter().map(str::to_string).collect()
}

/// The numbers of the changes of `loss` that none of `salvaged` (every
/// valid record found) holds; `None` when they are unknown.
pub(crate) fn unsalvaged(loss: &Loss, salvaged: &[Record]) -> Option<Vec<u64>> {
    let (first, newest) = loss.changes();
    let newest = newest?;
    let held: BTreeSet<u64> = salvaged.iter().map(|record| record.seq).collect();
    Some((first..=newest).filter(|seq| !held.contains(seq)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redb::journal::DamagedNext;

    const ID: [u8; 16] = *b"0123456789abcdef";

    fn record(seq: u64, keys: &[&str]) -> Record {
        Record {
            seq,
            clock: 0,
            changes: keys.iter().map(|k| ((*k).to_string(), None)).collect(),
        }
    }

    fn pending(seqs: std::ops::RangeInclusive<u64>, damaged_next: Option<DamagedNext>) -> Pending {
        Pending {
            records: seqs.map(|seq| record(seq, &["k"])).collect(),
            damaged_next,
            ..Pending::default()
        }
    }

    fn torn(seq: u64) -> DamagedNext {
        DamagedNext {
            seq,
            header_whole: true,
        }
    }

    #[test]
    fn a_mark_round_trips_and_damage_to_it_is_no_mark() {
        let ring = Position {
            ring_id: 3,
            seq: 4,
            head: 5,
        };
        let mut mark = Mark::new(&ID, 10, Some(ring));
        mark.acknowledge(12);
        let bytes = mark.encode();
        assert_eq!(Mark::decode(&bytes), Some(mark.clone()));
        // The per-save write is the tail of the whole mark.
        let (at, tail) = mark.encode_acknowledged();
        assert_eq!(&bytes[at..], &tail);
        for offset in 0..MARK_LEN {
            let mut damaged = bytes;
            damaged[offset] ^= 0x01;
            assert_eq!(Mark::decode(&damaged), None, "offset {offset}");
        }
        assert_eq!(Mark::decode(&[0; MARK_LEN]), None);
    }

    #[test]
    fn a_newest_record_cut_short_after_the_last_acknowledged_is_no_loss() {
        let mut mark = Mark::new(&ID, 4, None);
        mark.acknowledge(6);
        let judged = |pending: &Pending| loss(pending, Some(&mark), &ID, 4, true);
        // 5 and 6 replay, 7 was being written: nothing lost.
        assert_eq!(judged(&pending(5..=6, Some(torn(7)))), None);
        // 6 acknowledged but damaged (header whole or not): lost.
        let missing = Some(Loss::Missing {
            last: 5,
            acknowledged: 6,
        });
        assert_eq!(judged(&pending(5..=5, Some(torn(6)))), missing);
        assert_eq!(judged(&pending(5..=5, None)), missing); // cut away
        // A mark of another lease or store says nothing: the header decides.
        assert_eq!(
            loss(&pending(5..=5, Some(torn(6))), Some(&mark), &ID, 5, true),
            None
        );
        assert_eq!(
            loss(
                &pending(5..=5, Some(torn(6))),
                Some(&mark),
                &[1; 16],
                4,
                true
            ),
            None
        );
        let header_damaged = Some(DamagedNext {
            seq: 6,
            header_whole: false,
        });
        assert_eq!(
            loss(&pending(5..=5, header_damaged), None, &ID, 4, true),
            Some(Loss::DamagedNewest { seq: 6 })
        );
    }

    #[test]
    fn stranded_records_and_short_journals_are_losses() {
        let mut stranded = pending(5..=5, None);
        stranded.stranded = 2;
        stranded.stranded_newest = 8;
        assert_eq!(
            loss(&stranded, None, &ID, 4, false),
            Some(Loss::Stranded {
                count: 2,
                last: 5,
                newest: 8
            })
        );
        let mut short = pending(5..=5, None);
        short.short = true;
        assert_eq!(
            loss(&short, None, &ID, 4, true),
            Some(Loss::Short { last: 5 })
        );
        // On a file closed cleanly with nothing pending, nothing was at risk.
        short.records.clear();
        assert_eq!(loss(&short, None, &ID, 4, false), None);
        // With a mark, a short journal that still holds every acknowledged
        // change loses nothing.
        let mut mark = Mark::new(&ID, 4, None);
        mark.acknowledge(5);
        let mut short = pending(5..=5, None);
        short.short = true;
        assert_eq!(loss(&short, Some(&mark), &ID, 4, true), None);
    }

    #[test]
    fn keys_at_risk_are_those_announced_after_the_replayed_records() {
        let loss = Loss::Missing {
            last: 5,
            acknowledged: 7,
        };
        let announced: Vec<String> = ["a", "b", "c", "a", "d", "e"]
            .iter()
            .map(|k| (*k).to_string())
            .collect();
        // 5 announced "a", "b"; 6 and 7 (lost) announced the rest.
        let replayed = [record(5, &["b", "a"])];
        let keys = keys_at_risk(7, &announced, &replayed, &[]);
        assert_eq!(keys, ["a", "c", "d", "e"]);
        // A salvaged record newer than every lost one settles its keys.
        let keys = keys_at_risk(7, &announced, &replayed, &[record(8, &["d"])]);
        assert_eq!(keys, ["a", "c", "e"]);
        // A ring that does not match the records: every key is at risk.
        let keys = keys_at_risk(7, &announced, &[record(5, &["z"])], &[]);
        assert_eq!(keys, ["a", "b", "c", "d", "e"]);
        assert_eq!(unsalvaged(&loss, &[record(6, &["c"])]), Some(vec![7]));
        assert_eq!(unsalvaged(&Loss::Short { last: 5 }, &[]), None);
    }
}
