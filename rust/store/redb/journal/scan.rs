//! Reading a journal's bytes back after a crash: the records to replay,
//! and what lies past them (records stranded behind a damaged one, or the
//! next record damaged, torn by a write cut short or hit since).

use super::BLOCK;
use super::record::{HEADER, MAGIC, Record, decode_all, decode_one, id16, parse_any_header};

/// What a journal holds beyond redb's durable `journal_seq`. Whether any
/// of it means acknowledged changes are lost is `acknowledged::loss`'s to
/// judge, with the sidecar's mark.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// The records to replay, oldest first.
    pub records: Vec<Record>,
    /// Valid records of this store numbered after the last one of
    /// `records` that cannot be replayed, because a damaged record comes
    /// before them: acknowledged changes that would be lost.
    pub stranded: usize,
    /// The newest number among them.
    pub stranded_newest: u64,
    /// The file is shorter than a journal is made, so records may have
    /// been cut away.
    pub short: bool,
    /// Where the replayable records end lies what looks like the next
    /// record failing its checksum: either the newest record, whose write
    /// was cut short (by a kill during a buffered write, or a power cut)
    /// and never acknowledged, or an acknowledged one damaged since.
    pub damaged_next: Option<DamagedNext>,
}

/// A block where the next record would be that fails its checksum but is
/// marked as that record ([`Pending::damaged_next`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DamagedNext {
    /// The number the next record has.
    pub seq: u64,
    /// Its magic bytes, store id and number are all the next record's: a
    /// write cut short leaves them so (they lie in its first 48 bytes,
    /// written first). Otherwise the damage is in the header itself.
    pub header_whole: bool,
}

/// Every replayable record after `durable_seq`, and the valid records of
/// this store numbered past them (see [`Pending::stranded`]).
pub(super) fn scan(bytes: &[u8], store_id: &[u8], durable_seq: u64) -> Pending {
    let (records, end) = decode_all(bytes, store_id, durable_seq);
    let last = records.last().map_or(durable_seq, |record| record.seq);
    let mut stranded = 0;
    let mut stranded_newest = 0;
    let mut at = end;
    while at < bytes.len() {
        match parse_any_header(&bytes[at..], store_id) {
            Some((seq, len)) if decode_one(&bytes[at..], store_id, seq).is_some() => {
                if seq > last {
                    stranded += 1;
                    stranded_newest = stranded_newest.max(seq);
                }
                at += (HEADER + len).next_multiple_of(BLOCK);
            }
            _ => at += BLOCK,
        }
    }
    Pending {
        damaged_next: damaged_next(bytes.get(end..).unwrap_or_default(), store_id, last),
        records,
        stranded,
        stranded_newest,
        short: false,
    }
}

/// [`Pending::damaged_next`] for the bytes where the replayable records end
/// (`last`: the seq of the last one). A block counts as a damaged record
/// when it is not a valid one and two of its three identifying fields hold
/// (magic, store id, seq `last + 1`), or when it is the next record but for
/// its number, so that one flipped bit anywhere in the header is still
/// recognised; an old record (this store's, numbered `last` or below),
/// zeros, or another store's record are not.
fn damaged_next(block: &[u8], store_id: &[u8], last: u64) -> Option<DamagedNext> {
    let head = block.get(..HEADER)?;
    let next = last.wrapping_add(1);
    let seq = u64::from_le_bytes(head[8..16].try_into().ok()?);
    let magic = &head[..8] == MAGIC;
    let ours = head[16..32] == id16(store_id);
    let numbered_next = seq == next;
    let found = |header_whole| {
        Some(DamagedNext {
            seq: next,
            header_whole,
        })
    };
    if magic && ours && seq <= last {
        // An old record, unless it is the next one with its number damaged.
        let mut renumbered = block.to_vec();
        renumbered[8..16].copy_from_slice(&next.to_le_bytes());
        return decode_one(&renumbered, store_id, next).and_then(|_| found(false));
    }
    match [magic, ours, numbered_next].iter().filter(|&&b| b).count() {
        3 => found(true),
        2 => found(false),
        _ => None,
    }
}
