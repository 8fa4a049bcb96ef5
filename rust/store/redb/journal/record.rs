//! The journal's record format, as bytes (see the layout in `mod.rs`):
//! what a change looks like on disk, and how a run of records is read
//! back. No file is touched here, so the format is tested on its own.

use std::sync::Arc;

use super::BLOCK;

pub(super) const MAGIC: &[u8; 8] = b"mbjrec01";
pub(super) const HEADER: usize = 48;
const DELETED: u32 = u32::MAX;

/// One key a change touched and its bytes afterwards (`None`: deleted).
pub(crate) type Change = (Arc<str>, Option<Vec<u8>>);

/// A change read back from the journal.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub seq: u64,
    pub clock: i64,
    pub changes: Vec<(String, Option<Vec<u8>>)>,
}

/// One change's record: the header, then the payload (module docs).
pub(super) fn encode(seq: u64, store_id: &[u8], clock: i64, changes: &[Change]) -> Vec<u8> {
    let mut payload = Vec::new();
    for (key, value) in changes {
        payload.extend_from_slice(&(key.len() as u32).to_le_bytes());
        payload.extend_from_slice(key.as_bytes());
        match value {
            Some(bytes) => {
                payload.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                payload.extend_from_slice(bytes);
            }
            None => payload.extend_from_slice(&DELETED.to_le_bytes()),
        }
    }
    let mut record = Vec::with_capacity(HEADER + payload.len());
    record.extend_from_slice(MAGIC);
    record.extend_from_slice(&seq.to_le_bytes());
    record.extend_from_slice(&id16(store_id));
    record.extend_from_slice(&clock.to_le_bytes());
    record.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    let crc = checksum(&record, &payload);
    record.extend_from_slice(&crc.to_le_bytes());
    record.extend_from_slice(&payload);
    record
}

/// The store id as the record holds it (ids are 16 bytes; anything else is
/// padded or cut, consistently on both sides).
pub(crate) fn id16(store_id: &[u8]) -> [u8; 16] {
    let mut id = [0u8; 16];
    let n = store_id.len().min(16);
    id[..n].copy_from_slice(&store_id[..n]);
    id
}

fn checksum(head: &[u8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&head[..44]);
    hasher.update(payload);
    hasher.finalize()
}

/// The payload length of a well-formed record header `seq` of this store
/// at the start of `bytes`.
pub(super) fn parse_header(bytes: &[u8], store_id: &[u8], seq: u64) -> Option<usize> {
    let head = bytes.get(..HEADER)?;
    if &head[..8] != MAGIC
        || u64::from_le_bytes(head[8..16].try_into().ok()?) != seq
        || head[16..32] != id16(store_id)
    {
        return None;
    }
    Some(u32::from_le_bytes(head[40..44].try_into().ok()?) as usize)
}

/// Every record continuing the sequence after `durable_seq` (module docs),
/// and the offset where the sequence ends.
pub(super) fn decode_all(bytes: &[u8], store_id: &[u8], durable_seq: u64) -> (Vec<Record>, usize) {
    let mut records = Vec::new();
    let mut at = 0;
    let mut seq = durable_seq;
    while let Some(record) =
        decode_one(&bytes[at.min(bytes.len())..], store_id, seq.wrapping_add(1))
    {
        at += (HEADER + record.1).next_multiple_of(BLOCK);
        seq = record.0.seq;
        records.push(record.0);
    }
    (records, at.min(bytes.len()))
}

/// The seq and payload length of a record header of this store at the
/// start of `bytes`, whatever its seq.
pub(super) fn parse_any_header(bytes: &[u8], store_id: &[u8]) -> Option<(u64, usize)> {
    let head = bytes.get(..HEADER)?;
    if &head[..8] != MAGIC || head[16..32] != id16(store_id) {
        return None;
    }
    let seq = u64::from_le_bytes(head[8..16].try_into().ok()?);
    Some((
        seq,
        u32::from_le_bytes(head[40..44].try_into().ok()?) as usize,
    ))
}

pub(super) fn decode_one(bytes: &[u8], store_id: &[u8], seq: u64) -> Option<(Record, usize)> {
    let payload_len = parse_header(bytes, store_id, seq)?;
    let payload = bytes.get(HEADER..HEADER.checked_add(payload_len)?)?;
    let stored = u32::from_le_bytes(bytes[44..48].try_into().ok()?);
    if checksum(bytes, payload) != stored {
        return None; // torn or overwritten: the sequence ends here
    }
    let clock = i64::from_le_bytes(bytes[32..40].try_into().ok()?);
    let mut changes = Vec::new();
    let mut rest = payload;
    while !rest.is_empty() {
        let (key_len, after) = take_u32(rest)?;
        let key = std::str::from_utf8(after.get(..key_len as usize)?).ok()?;
        let (value_len, after) = take_u32(&after[key_len as usize..])?;
        if value_len == DELETED {
            changes.push((key.to_string(), None));
            rest = after;
        } else {
            let value = after.get(..value_len as usize)?;
            changes.push((key.to_string(), Some(value.to_vec())));
            rest = &after[value_len as usize..];
        }
    }
    Some((
        Record {
            seq,
            clock,
            changes,
        },
        payload_len,
    ))
}

fn take_u32(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let head = bytes.get(..4)?;
    Some((u32::from_le_bytes(head.try_into().ok()?), &bytes[4..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: [u8; 16] = *b"0123456789abcdef";

    fn change(key: &str, value: Option<&[u8]>) -> Change {
        (key.into(), value.map(<[u8]>::to_vec))
    }

    /// Records laid end to end on block boundaries, as the journal writes them.
    fn laid_out(records: &[Vec<u8>]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for record in records {
            bytes.extend_from_slice(record);
            bytes.resize(bytes.len().next_multiple_of(BLOCK), 0);
        }
        bytes
    }

    #[test]
    fn a_record_round_trips_with_its_deletes_and_empty_values() {
        let changes = [
            change("k", Some(b"value")),
            change("gone", None),
            change("empty", Some(b"")),
            change("unicode \u{2028}", Some(&[0xff, 0, 1])),
        ];
        let bytes = encode(7, &ID, -3, &changes);
        assert_eq!(&bytes[..8], MAGIC);
        assert_eq!(
            parse_any_header(&bytes, &ID),
            Some((7, bytes.len() - HEADER))
        );
        let (record, len) = decode_one(&bytes, &ID, 7).unwrap();
        assert_eq!(len, bytes.len() - HEADER);
        assert_eq!(record.seq, 7);
        assert_eq!(record.clock, -3);
        let want: Vec<(String, Option<Vec<u8>>)> = changes
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        assert_eq!(record.changes, want);
    }

    #[test]
    fn any_changed_byte_or_wrong_identity_refuses_the_record() {
        let bytes = encode(3, &ID, 1, &[change("key", Some(b"some value"))]);
        for at in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x10;
            assert!(decode_one(&flipped, &ID, 3).is_none(), "byte {at}");
        }
        assert!(decode_one(&bytes, &ID, 4).is_none(), "another number");
        assert!(decode_one(&bytes, b"another store id", 3).is_none());
        assert!(
            decode_one(&bytes[..bytes.len() - 1], &ID, 3).is_none(),
            "cut"
        );
        assert!(parse_any_header(&bytes[..HEADER - 1], &ID).is_none());
    }

    #[test]
    fn a_run_of_records_ends_where_the_sequence_breaks() {
        let bytes = laid_out(&[
            encode(5, &ID, 1, &[change("a", Some(b"1"))]),
            encode(6, &ID, 2, &[change("b", Some(&[7; 5000]))]),
            encode(9, &ID, 3, &[change("c", None)]),
        ]);
        let (records, end) = decode_all(&bytes, &ID, 4);
        assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), [5, 6]);
        // The second record takes two blocks; the stale one starts at the fourth.
        assert_eq!(end, 3 * BLOCK);
        // Numbers at or before the durable one are not replayed.
        assert!(decode_all(&bytes, &ID, 5).0.is_empty());
        // A record cut after its first block ends the sequence there.
        let mut torn = bytes.clone();
        torn[BLOCK + BLOCK + 10] ^= 1;
        let (records, end) = decode_all(&torn, &ID, 4);
        assert_eq!(records.len(), 1);
        assert_eq!(end, BLOCK);
    }

    #[test]
    fn store_ids_are_kept_as_sixteen_bytes() {
        assert_eq!(id16(b"short"), *b"short\0\0\0\0\0\0\0\0\0\0\0");
        assert_eq!(id16(b"0123456789abcdefXYZ"), ID);
    }
}
