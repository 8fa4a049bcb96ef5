//! The layout of a membolt redb file: its tables, the meta fields, the
//! schema version, and how a new file is initialised.
//!
//! * `meta` (`&str -> &[u8]`): `format` = `membolt`, `schema` (u64 LE),
//!   `store_id` (16 random bytes, new for every new file), `clock` (i64 LE,
//!   written by transactions that delete: the newest stamp may then be gone,
//!   and the clock must never go back), `journal_seq` (u64 LE, the number
//!   of the newest change the file holds; see `journal/mod.rs`).
//! * `entries` (`&str -> &[u8]`): key -> [`Entry::encode`].

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition, TableHandle};

use crate::entry::{Accept, DecodeError, Entry, Interner};
use crate::error::{Result, StoreError};
use crate::random::random_u64;
use crate::store::redb::errors::AtStore;

pub(crate) const ENTRIES: TableDefinition<&str, &[u8]> = TableDefinition::new("entries");
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// Meta key: the number of the newest change the file holds (see journal/mod.rs).
pub(crate) const JOURNAL_SEQ: &str = "journal_seq";
/// Meta key: the persisted clock.
pub(crate) const CLOCK: &str = "clock";
/// The token of the image that describes a state of this file (see
/// `image_file.rs`): written with the commit that ends the lease whose
/// holder wrote the image, kept by later commits.
pub(crate) const IMAGE_TOKEN: &str = "image_token";
/// Where the change ring stood (id, seq, head) after the newest commit
/// redb holds: a ring found behind it lost records (its pages are never
/// synced, so a machine crash can put older ones back).
pub(crate) const RING_MARK: &str = "ring_mark";
/// Every table a membolt store has.
pub(crate) const TABLE_NAMES: [&str; 2] = ["entries", "meta"];

/// The schema this version writes and the newest it reads.
/// * 2: changes may live in the `.journal` until replayed (a version that
///   does not know the journal must not read or write such a file);
/// * 3: every record carries its checksum (entry format 2).
///
/// Files of schema 1 and 2 are read as they are (their records have no
/// checksum to check) and upgraded by their first write lease: every
/// record rewritten with its checksum, in one durable commit, under a new
/// store id (so that every process's mirror reloads). From schema 3 on, a
/// record without a checksum is damage.
pub const SCHEMA_VERSION: u64 = 3;
/// The first schema whose records all carry checksums.
const CHECKSUMMED_SCHEMA: u64 = 3;
const FORMAT_MARKER: &[u8] = b"membolt";

/// Writes the meta table of a brand-new store.
pub(crate) fn initialise(db: &Database, path: &Path) -> Result<()> {
    let wtx = db.begin_write().at(path)?;
    {
        let mut meta = wtx.open_table(META).at(path)?;
        for (name, value) in [
            ("format", FORMAT_MARKER.to_vec()),
            ("schema", SCHEMA_VERSION.to_le_bytes().to_vec()),
            ("store_id", new_store_id()),
        ] {
            meta.insert(name, value.as_slice()).at(path)?;
        }
        wtx.open_table(ENTRIES).at(path)?;
    }
    wtx.commit().at(path)
}

/// A fresh random store id.
fn new_store_id() -> Vec<u8> {
    let mut store_id = Vec::with_capacity(16);
    store_id.extend_from_slice(&random_u64().to_le_bytes());
    store_id.extend_from_slice(&random_u64().to_le_bytes());
    store_id
}

/// The meta fields of a store.
pub(crate) struct Meta {
    pub store_id: Vec<u8>,
    /// The persisted clock (`i64::MIN` until a transaction deleted something).
    pub clock: i64,
    /// The newest change redb holds (see journal/mod.rs).
    pub journal_seq: u64,
    pub schema: u64,
    /// [`IMAGE_TOKEN`], when an image was ever recorded.
    pub image_token: Option<u64>,
    /// [`RING_MARK`], when the newest commit recorded one.
    pub ring_mark: Option<[u64; 3]>,
}

impl Meta {
    /// The record formats this file may hold.
    pub fn accept(&self) -> Accept {
        if self.schema >= CHECKSUMMED_SCHEMA {
            Accept::Checksummed
        } else {
            Accept::Legacy
        }
    }
}

/// [`RING_MARK`]'s value: three little-endian u64s.
pub(crate) fn encode_ring_mark(mark: [u64; 3]) -> [u8; 24] {
    let mut bytes = [0u8; 24];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(mark) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    bytes
}

fn decode_ring_mark(bytes: &[u8]) -> Option<[u64; 3]> {
    let word = |i: usize| {
        Some(u64::from_le_bytes(
            bytes.get(i * 8..i * 8 + 8)?.try_into().ok()?,
        ))
    };
    (bytes.len() == 24).then_some([word(0)?, word(1)?, word(2)?])
}

fn read_u64(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
    name: &str,
    path: &Path,
) -> Result<Option<u64>> {
    let Some(value) = meta.get(name).at(path)? else {
        return Ok(None);
    };
    let bytes: [u8; 8] = value
        .value()
        .try_into()
        .map_err(|_| StoreError::corrupt(path, format!("meta field {name} is malformed")))?;
    Ok(Some(u64::from_le_bytes(bytes)))
}

/// Reads and checks the meta table: a membolt store of a schema we read.
pub(crate) fn read_meta(rtx: &redb::ReadTransaction, path: &Path) -> Result<Meta> {
    let meta = match rtx.open_table(META) {
        Ok(meta) => meta,
        Err(redb::TableError::TableDoesNotExist(_)) => {
            let names: Vec<String> = rtx
                .list_tables()
                .at(path)?
                .map(|t| t.name().to_string())
                .collect();
            return Err(StoreError::corrupt(
                path,
                format!("a redb database without membolt's tables (it has {names:?})"),
            ));
        }
        Err(e) => return Err(e).at(path),
    };
    let format = meta.get("format").at(path)?;
    if format.as_ref().map(redb::AccessGuard::value) != Some(FORMAT_MARKER) {
        return Err(StoreError::corrupt(
            path,
            "a redb database of another application",
        ));
    }
    let schema = read_u64(&meta, "schema", path)?
        .ok_or_else(|| StoreError::corrupt(path, "no schema version"))?;
    if schema > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            store: path.into(),
            found: schema,
            supported: SCHEMA_VERSION,
        });
    }
    let store_id = meta
        .get("store_id")
        .at(path)?
        .map(|v| v.value().to_vec())
        .ok_or_else(|| StoreError::corrupt(path, "no store id"))?;
    let clock = read_u64(&meta, CLOCK, path)?.map_or(i64::MIN, |c| c as i64);
    let journal_seq = read_u64(&meta, JOURNAL_SEQ, path)?.unwrap_or(0);
    let image_token = read_u64(&meta, IMAGE_TOKEN, path)?;
    // Only a cache's helpers: a malformed mark is no mark (the ring and
    // the image are then not trusted), never an error.
    let ring_mark = meta
        .get(RING_MARK)
        .at(path)?
        .and_then(|value| decode_ring_mark(value.value()));
    Ok(Meta {
        store_id,
        clock,
        journal_seq,
        schema,
        image_token,
        ring_mark,
    })
}

/// Before this version's first change to a file of an older schema: every
/// record is rewritten with its checksum, the file marked [`SCHEMA_VERSION`]
/// (so that older versions refuse it from now on: they would ignore its
/// journal) and given a new store id, all in one durable commit. Returns
/// whether the file was upgraded.
pub(crate) fn upgrade(db: &Database, path: &Path) -> Result<bool> {
    let meta = {
        let rtx = db.begin_read().at(path)?;
        read_meta(&rtx, path)?
    };
    if meta.schema >= SCHEMA_VERSION {
        return Ok(false);
    }
    let wtx = db.begin_write().at(path)?;
    {
        let mut entries = wtx.open_table(ENTRIES).at(path)?;
        let mut interner = Interner::default();
        let mut rewritten = Vec::new();
        for item in entries.iter().at(path)? {
            let (key, bytes) = item.at(path)?;
            let key = key.value();
            let entry = Entry::decode_with(key, bytes.value(), &mut interner, meta.accept())
                .map_err(|e| damaged_entry(key, &e, path))?;
            rewritten.push(entry);
        }
        for entry in rewritten {
            entries
                .insert(&*entry.key, entry.encode().as_slice())
                .at(path)?;
        }
        let mut meta_table = wtx.open_table(META).at(path)?;
        meta_table
            .insert("schema", SCHEMA_VERSION.to_le_bytes().as_slice())
            .at(path)?;
        meta_table
            .insert("store_id", new_store_id().as_slice())
            .at(path)?;
    }
    wtx.commit().at(path)?;
    Ok(true)
}

/// Decodes the record stored under `key` in a file whose records are of
/// the formats `accept` allows.
pub(crate) fn decode_entry(key: &str, bytes: &[u8], accept: Accept, path: &Path) -> Result<Entry> {
    Entry::decode_with(key, bytes, &mut Interner::default(), accept)
        .map_err(|e| damaged_entry(key, &e, path))
}

pub(crate) fn damaged_entry(key: &str, error: &DecodeError, path: &Path) -> StoreError {
    StoreError::corrupt(path, format!("entry {key:?} is damaged: {error}"))
}
