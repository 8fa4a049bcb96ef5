//! Loading a whole store file into memory: the first call of a process, or
//! a mirror that can no longer be brought up to date by the changed keys.

use std::path::Path;
use std::sync::Arc;

use redb::ReadableTable;

use crate::entry::{Accept, DecodeError, Entry, Interner};
use crate::error::{Result, StoreError};
use crate::parallel::PARALLEL_MIN_ENTRIES;
use crate::store::redb::errors::AtStore;
use crate::store::redb::format::damaged_entry;

/// Raw records are handed between the loading threads in chunks this large.
const LOAD_CHUNK_BYTES: usize = 256 << 10;

/// Every entry of the table, decoded, sorted by key.
///
/// For a large store the scan is split: this thread walks redb (which is
/// sequential) and copies the raw records into chunks; every other chunk is
/// decoded by a second thread, the rest by this one. Decoding is where the
/// allocations are, and a fresh process pays a page fault for nearly every
/// new page it allocates, so two threads allocating halve that wait. Chunk
/// buffers are recycled, so the copies touch no fresh memory.
pub(crate) fn load_all(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    accept: Accept,
    path: &Path,
) -> Result<Vec<Arc<Entry>>> {
    let count = table.len().at(path)?;
    if count < PARALLEL_MIN_ENTRIES as u64 {
        let mut all = Vec::with_capacity(count as usize);
        let mut interner = Interner::default();
        for item in table.iter().at(path)? {
            let (key, bytes) = item.at(path)?;
            let key = key.value();
            let entry = Entry::decode_with(key, bytes.value(), &mut interner, accept)
                .map_err(|e| damaged_entry(key, &e, path))?;
            all.push(Arc::new(entry));
        }
        return whole(all, count, path);
    }
    let (decoded, scanned) = std::thread::scope(|scope| {
        let (to_decoder, chunks) = std::sync::mpsc::sync_channel::<(usize, Vec<u8>)>(2);
        let (recycle, recycled) = std::sync::mpsc::channel::<Vec<u8>>();
        let decoding = scope.spawn(move || {
            let mut interner = Interner::default();
            let mut decoded = Vec::new();
            for (number, mut chunk) in chunks {
                decoded.push((number, decode_chunk(&chunk, &mut interner, accept)));
                chunk.clear();
                let _ = recycle.send(chunk);
            }
            decoded
        });
        let mut interner = Interner::default();
        let mut mine = Vec::new();
        let mut scan = || -> Result<()> {
            let mut chunk = Vec::with_capacity(LOAD_CHUNK_BYTES + 4096);
            let mut number = 0;
            let mut flush = |chunk: &mut Vec<u8>, number: &mut usize| {
                if (*number).is_multiple_of(2) {
                    let next = recycled
                        .try_recv()
                        .unwrap_or_else(|_| Vec::with_capacity(LOAD_CHUNK_BYTES + 4096));
                    let full = std::mem::replace(chunk, next);
                    // Fails only if the decoder panicked, which its join
                    // reports below.
                    let _ = to_decoder.send((*number, full));
                } else {
                    mine.push((*number, decode_chunk(chunk, &mut interner, accept)));
                    chunk.clear();
                }
                *number += 1;
            };
            for item in table.iter().at(path)? {
                let (key, bytes) = item.at(path)?;
                let (key, bytes) = (key.value().as_bytes(), bytes.value());
                chunk.extend_from_slice(&(key.len() as u32).to_le_bytes());
                chunk.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                chunk.extend_from_slice(key);
                chunk.extend_from_slice(bytes);
                if chunk.len() >= LOAD_CHUNK_BYTES {
                    flush(&mut chunk, &mut number);
                }
            }
            if !chunk.is_empty() {
                flush(&mut chunk, &mut number);
            }
            Ok(())
        };
        let scanned = scan();
        drop(to_decoder); // ends the decoder's loop
        let mut decoded = decoding.join().expect("the decoding thread");
        decoded.append(&mut mine);
        (decoded, scanned)
    });
    scanned?;
    let mut decoded = decoded;
    decoded.sort_unstable_by_key(|&(number, _)| number);
    let mut all = Vec::with_capacity(count as usize);
    for (_, chunk) in decoded {
        match chunk {
            Ok(mut entries) => all.append(&mut entries),
            Err((key, error)) => return Err(damaged_entry(&key, &error, path)),
        }
    }
    whole(all, count, path)
}

/// `all`, if it holds the `count` records the table says it has: a damaged
/// branch page can hide records from a scan without an error, and a mirror
/// without them would answer "no such entry" for saved keys.
fn whole(all: Vec<Arc<Entry>>, count: u64, path: &Path) -> Result<Vec<Arc<Entry>>> {
    if all.len() as u64 != count {
        return Err(StoreError::corrupt(
            path,
            format!(
                "read {} records of the {count} the file says it holds",
                all.len()
            ),
        ));
    }
    Ok(all)
}

/// Decodes a chunk of `key length (u32) | value length (u32) | key | value`
/// records; on damage, the key of the damaged record and why.
fn decode_chunk(
    mut chunk: &[u8],
    interner: &mut Interner,
    accept: Accept,
) -> std::result::Result<Vec<Arc<Entry>>, (String, DecodeError)> {
    let mut entries = Vec::with_capacity(chunk.len() / 200);
    while let Some((lengths, rest)) = chunk.split_first_chunk::<8>() {
        let key_len = u32::from_le_bytes(lengths[..4].try_into().expect("4 bytes")) as usize;
        let value_len = u32::from_le_bytes(lengths[4..].try_into().expect("4 bytes")) as usize;
        let (key, rest) = rest.split_at(key_len);
        let (value, rest) = rest.split_at(value_len);
        chunk = rest;
        // redb checked the key when it read it.
        let key = std::str::from_utf8(key).expect("redb keys are UTF-8");
        let entry = Entry::decode_with(key, value, interner, accept)
            .map_err(|error| (key.to_string(), error))?;
        entries.push(Arc::new(entry));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::store::redb::format::ENTRIES;
    use crate::store::{DEFAULT_BUSY_TIMEOUT, Store, release_all_leases};
    use ::redb::Database;

    fn entry(i: usize) -> Entry {
        let previous = format!("key:{:06}", i.wrapping_sub(1));
        let refs: &[&str] = if i > 0 { &[&previous] } else { &[] };
        Entry {
            namespace: if i.is_multiple_of(5) { "ns" } else { "" }.into(),
            created_at: i as i64,
            ..(*crate::testing::entry(
                &format!("key:{i:06}"),
                ["note", "result", "progress"][i % 3],
                &format!("Value {i} with some words"),
                1_000 + i as i64,
                refs,
            ))
            .clone()
        }
    }

    /// A store large enough for the two-thread load reads back exactly,
    /// every record once, in key order; so does a small one.
    #[test]
    fn a_fresh_load_reads_every_entry_once() {
        for count in [10, PARALLEL_MIN_ENTRIES + 1234] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("memory.redb");
            let store = Store::open(&path, DEFAULT_BUSY_TIMEOUT).unwrap();
            let written: Vec<Entry> = (0..count).map(entry).collect();
            assert_eq!(store.put_exact(written.clone()).unwrap(), count);
            store.close();
            release_all_leases();
            drop(store);
            // Another file path, so that no mirror is shared: a fresh load.
            let copy = dir.path().join("copy.redb");
            std::fs::copy(&path, &copy).unwrap();
            let fresh = Store::open(&copy, DEFAULT_BUSY_TIMEOUT).unwrap();
            let read = fresh.entries().unwrap();
            assert_eq!(read.len(), count);
            for (got, want) in read.iter().zip(&written) {
                assert_eq!(**got, *want);
            }
            fresh.close();
        }
    }

    /// A damaged record is reported by key, whichever thread decodes it.
    #[test]
    fn a_damaged_record_is_reported_by_key() {
        let count = PARALLEL_MIN_ENTRIES + 5000;
        for damaged in [3, count / 2, count - 2] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("memory.redb");
            let store = Store::open(&path, DEFAULT_BUSY_TIMEOUT).unwrap();
            store.put_exact((0..count).map(entry).collect()).unwrap();
            store.close();
            release_all_leases();
            drop(store);
            let key = format!("key:{damaged:06}");
            {
                let db = Database::open(&path).unwrap();
                let wtx = db.begin_write().unwrap();
                wtx.open_table(ENTRIES)
                    .unwrap()
                    .insert(key.as_str(), [9u8, 9, 9].as_slice())
                    .unwrap();
                wtx.commit().unwrap();
            }
            let copy = dir.path().join("copy.redb");
            std::fs::copy(&path, &copy).unwrap();
            let fresh = Store::open(&copy, DEFAULT_BUSY_TIMEOUT).unwrap();
            let error = fresh.len().unwrap_err().to_string();
            assert!(error.contains(&key), "{error}");
        }
    }
}
