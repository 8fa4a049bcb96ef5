//! Store files the test suites need and the public API cannot make: a redb
//! database of another application, stores as older versions wrote them
//! (schema 1: before the journal; schema 2: before record checksums), and a
//! store of a future schema. The Python
//! tests read copies committed under `tests/fixtures/stores/`, written by
//! `rust/tests/fixture_files.rs`. Only in builds with the `testing` feature.

use std::path::Path;

use redb::{Database, TableDefinition};

use crate::entry::Entry;
use crate::error::{Result, StoreError};
use crate::store::redb::errors::AtStore;
use crate::store::redb::format::{ENTRIES, META, SCHEMA_VERSION, initialise};

/// The fixtures [`write_fixture`] knows.
pub const FIXTURES: [&str; 4] = ["foreign", "schema_1", "schema_2", "newer_schema"];

/// The entries of the old-schema fixtures (records without checksums).
pub fn old_entries(schema: u64) -> Vec<Entry> {
    let entry = |key: &str, value: String, at: i64, refs: &[&str]| Entry {
        key: key.into(),
        value: value.into(),
        kind: "note".into(),
        namespace: "".into(),
        references: refs.iter().map(|r| (*r).into()).collect(),
        created_at: at,
        updated_at: at,
    };
    match schema {
        1 => vec![entry("old", "from schema 1".into(), 1, &[])],
        _ => (0..30)
            .map(|i| {
                let previous = format!("old:{:02}", i.max(1) - 1);
                let refs: &[&str] = if i > 0 { &[previous.as_str()] } else { &[] };
                entry(
                    &format!("old:{i:02}"),
                    format!("from schema 2, number {i}"),
                    100 + i,
                    refs,
                )
            })
            .collect(),
    }
}

/// Writes the fixture `kind` (one of [`FIXTURES`]) at `path`.
pub fn write_fixture(path: &Path, kind: &str) -> Result<()> {
    const OTHER: TableDefinition<&str, &[u8]> = TableDefinition::new("documents");
    let db = Database::create(path).at(path)?;
    match kind {
        "foreign" => {
            let wtx = db.begin_write().at(path)?;
            wtx.open_table(OTHER)
                .at(path)?
                .insert("doc", b"not membolt".as_slice())
                .at(path)?;
            wtx.commit().at(path)?;
        }
        "schema_1" | "schema_2" => {
            let schema: u64 = if kind == "schema_1" { 1 } else { 2 };
            initialise(&db, path)?;
            let wtx = db.begin_write().at(path)?;
            {
                let mut meta = wtx.open_table(META).at(path)?;
                meta.insert("schema", schema.to_le_bytes().as_slice())
                    .at(path)?;
                let mut entries = wtx.open_table(ENTRIES).at(path)?;
                for entry in old_entries(schema) {
                    entries
                        .insert(&*entry.key, entry.encode_legacy().as_slice())
                        .at(path)?;
                }
            }
            wtx.commit().at(path)?;
        }
        "newer_schema" => {
            initialise(&db, path)?;
            let wtx = db.begin_write().at(path)?;
            wtx.open_table(META)
                .at(path)?
                .insert("schema", (SCHEMA_VERSION + 1).to_le_bytes().as_slice())
                .at(path)?;
            wtx.commit().at(path)?;
        }
        other => return Err(StoreError::invalid(format!("unknown fixture {other:?}"))),
    }
    db.close().at(path)
}

/// The schema a store file says it has.
pub fn file_schema(path: &Path) -> u64 {
    use redb::ReadableDatabase;
    let db = redb::ReadOnlyDatabase::open(path).expect("a store file");
    let rtx = db.begin_read().expect("a read");
    crate::store::redb::format::read_meta(&rtx, path)
        .map(|meta| meta.schema)
        .expect("meta")
}

/// Whether every record of the store file carries its checksum.
pub fn every_record_checksummed(path: &Path) -> bool {
    use redb::{ReadableDatabase, ReadableTable};
    let db = redb::ReadOnlyDatabase::open(path).expect("a store file");
    let rtx = db.begin_read().expect("a read");
    let table = rtx.open_table(ENTRIES).expect("entries");
    table.iter().expect("records").all(|item| {
        let (key, bytes) = item.expect("a record");
        Entry::decode(key.value(), bytes.value()).is_ok()
    })
}
