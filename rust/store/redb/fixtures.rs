//! Store files the test suites need and the public API cannot make: a redb
//! database of another application, a store as the versions before the
//! journal wrote it (schema 1), and a store of a future schema. The Python
//! tests read copies committed under `tests/fixtures/stores/`, written by
//! `rust/tests/fixture_files.rs`. Only in builds with the `testing` feature.

use std::path::Path;

use redb::{Database, TableDefinition};

use crate::entry::Entry;
use crate::error::{AtStore, Result, StoreError};
use crate::store::redb::format::{ENTRIES, META, SCHEMA_VERSION, initialise};

/// The fixtures [`write_fixture`] knows.
pub const FIXTURES: [&str; 3] = ["foreign", "schema_1", "newer_schema"];

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
        "schema_1" => {
            // A store as the versions before the journal wrote it.
            initialise(&db, path)?;
            let wtx = db.begin_write().at(path)?;
            {
                let mut meta = wtx.open_table(META).at(path)?;
                meta.insert("schema", 1u64.to_le_bytes().as_slice())
                    .at(path)?;
                let entry = Entry {
                    key: "old".into(),
                    value: "from schema 1".into(),
                    kind: "note".into(),
                    namespace: "".into(),
                    references: Vec::new(),
                    created_at: 1,
                    updated_at: 1,
                };
                wtx.open_table(ENTRIES)
                    .at(path)?
                    .insert("old", entry.encode().as_slice())
                    .at(path)?;
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
