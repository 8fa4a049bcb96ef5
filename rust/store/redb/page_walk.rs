//! Reading a store file's records without redb, for `membolt repair`
//! (§14.3) when redb cannot read the file's tree whole (its commit slots,
//! or pages of the tree, damaged): every page is tried as a B-tree leaf of
//! `&str -> &[u8]` pairs, and every pair that decodes as an entry passing
//! its own checksum is a value its key once had.
//!
//! A leaf page, in redb 4's layout for keys and values of variable width:
//!
//! ```text
//! offset         size
//!      0            1  page type: 1 = leaf
//!      2            2  n, the number of pairs
//!      4        4 * n  the end offset of each key
//!  4 + 4n       4 * n  the end offset of each value
//!  4 + 8n              the keys, one after another, then the values
//! ```
//!
//! Pages start on 4 KiB boundaries and a leaf holding a large value spans
//! several. Any page is tried (its type byte may be the damaged one); what
//! is not a leaf fails to parse, or its "records" fail their checksums.
//!
//! Without the tree, nothing tells which page is current: freed pages keep
//! older versions of keys, and deleted keys. So of all the
//! versions found, the newest (`updated_at` strictly increases over a
//! store's writes) is kept, and the caller must say that a deleted key may
//! be back. The meta table's leaf (its `format` is `membolt`) gives the
//! store id and `journal_seq` the journal is read against.

use std::collections::BTreeMap;

use crate::entry::{Accept, Entry, Interner};

/// The unit pages are allocated in.
const PAGE: usize = 4096;

/// What the pages of a file hold.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// The newest version found of each key.
    pub entries: BTreeMap<String, Entry>,
    /// Every version of the meta table found: (`store_id`, `journal_seq`).
    pub metas: Vec<(Vec<u8>, u64)>,
}

/// Walks every page of `file` (the whole store file's bytes).
pub(crate) fn walk(file: &[u8]) -> Found {
    let mut found = Found::default();
    let mut interner = Interner::default();
    let mut at = PAGE; // the first page holds redb's header
    while at < file.len() {
        let mut next = at + PAGE;
        if let Some(pairs) = leaf_pairs(&file[at..]) {
            let mut whole = true;
            let mut meta: BTreeMap<&str, &[u8]> = BTreeMap::new();
            for (key, value) in &pairs {
                let Ok(key) = std::str::from_utf8(key) else {
                    whole = false;
                    continue;
                };
                meta.insert(key, value);
                match Entry::decode_with(key, value, &mut interner, Accept::Checksummed) {
                    Ok(entry) => keep_newest(&mut found.entries, entry),
                    Err(_) => whole = false,
                }
            }
            if let Some(version) = meta_version(&meta) {
                found.metas.push(version);
            }
            if whole {
                // Every record of the page passed its checksum: no other
                // page was written over it since, so none starts inside it.
                let end = pairs
                    .last()
                    .map_or(0, |(_, value)| value_end(&file[at..], value));
                next = next.max(at + end.next_multiple_of(PAGE));
            }
        }
        at = next;
    }
    found
}

/// `entry`, unless a newer version of its key is kept already.
pub(crate) fn keep_newest(entries: &mut BTreeMap<String, Entry>, entry: Entry) {
    match entries.get(&*entry.key) {
        Some(kept) if kept.updated_at >= entry.updated_at => {}
        _ => {
            entries.insert(entry.key.to_string(), entry);
        }
    }
}

/// Where `value` (a slice of `page`) ends, as an offset into `page`.
fn value_end(page: &[u8], value: &[u8]) -> usize {
    value.as_ptr() as usize - page.as_ptr() as usize + value.len()
}

/// The pairs of the leaf at the start of `bytes`, if it parses as one.
/// The page type is not checked: a damaged type byte must not cost the
/// page's records, which carry checksums of their own.
fn leaf_pairs(bytes: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    let n = usize::from(u16::from_le_bytes(bytes.get(2..4)?.try_into().ok()?));
    if n == 0 {
        return None;
    }
    let word = |at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?) as usize)
    };
    let mut start = 4 + 8 * n;
    let mut keys = Vec::with_capacity(n);
    for i in 0..n {
        let end = word(4 + 4 * i)?;
        keys.push(bytes.get(start..end)?);
        start = end;
    }
    let mut pairs = Vec::with_capacity(n);
    for (i, key) in keys.into_iter().enumerate() {
        let end = word(4 + 4 * n + 4 * i)?;
        pairs.push((key, bytes.get(start..end)?));
        start = end;
    }
    Some(pairs)
}

/// The (`store_id`, `journal_seq`) of a leaf of membolt's meta table.
fn meta_version(pairs: &BTreeMap<&str, &[u8]>) -> Option<(Vec<u8>, u64)> {
    if pairs.get("format").copied() != Some(b"membolt".as_slice()) {
        return None;
    }
    let store_id = pairs.get("store_id")?.to_vec();
    let journal_seq = pairs
        .get("journal_seq")
        .and_then(|bytes| Some(u64::from_le_bytes((*bytes).try_into().ok()?)))
        .unwrap_or(0);
    Some((store_id, journal_seq))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redb::format::{ENTRIES, META};
    use ::redb::{Database, ReadableDatabase, ReadableTable};

    fn entry(key: &str, value: &str, at: i64) -> Entry {
        Entry {
            key: key.into(),
            value: value.into(),
            kind: "note".into(),
            namespace: "".into(),
            references: vec![],
            created_at: at,
            updated_at: at,
        }
    }

    #[test]
    fn every_record_is_found_and_the_newest_version_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.redb");
        let db = Database::create(&path).unwrap();
        for (round, at) in [(0, 10), (1, 20)] {
            let wtx = db.begin_write().unwrap();
            {
                let mut entries = wtx.open_table(ENTRIES).unwrap();
                for i in 0..200 {
                    let value = format!("round {round} value {i} {}", "x".repeat(i * 7));
                    let bytes = entry(&format!("k{i:03}"), &value, at + i as i64).encode();
                    entries
                        .insert(format!("k{i:03}").as_str(), bytes.as_slice())
                        .unwrap();
                }
                let big = entry("big", &"b".repeat(30_000), at).encode();
                entries.insert("big", big.as_slice()).unwrap();
                let mut meta = wtx.open_table(META).unwrap();
                meta.insert("format", b"membolt".as_slice()).unwrap();
                meta.insert("store_id", [7u8; 16].as_slice()).unwrap();
                meta.insert("journal_seq", (5 + round as u64).to_le_bytes().as_slice())
                    .unwrap();
            }
            wtx.commit().unwrap();
        }
        let expected: BTreeMap<String, Entry> = {
            let rtx = db.begin_read().unwrap();
            let table = rtx.open_table(ENTRIES).unwrap();
            table
                .iter()
                .unwrap()
                .map(|item| {
                    let (key, value) = item.unwrap();
                    (
                        key.value().to_string(),
                        Entry::decode(key.value(), value.value()).unwrap(),
                    )
                })
                .collect()
        };
        drop(db);
        let found = walk(&std::fs::read(&path).unwrap());
        assert_eq!(found.entries, expected);
        assert!(found.metas.contains(&(vec![7u8; 16], 6)));
    }

    #[test]
    fn pages_that_are_not_leaves_are_passed_over() {
        let mut bytes = vec![0u8; 4 * PAGE];
        bytes[PAGE] = 1;
        bytes[PAGE + 2] = 200; // 200 pairs whose offsets point nowhere
        bytes[2 * PAGE] = 2; // a branch
        bytes[3 * PAGE..].fill(0x55);
        assert!(walk(&bytes).entries.is_empty());
    }
}
