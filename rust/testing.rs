//! What the Rust tests (unit and integration) share: the one entry builder,
//! and the writer of the store files the Python tests use as fixtures.
//! Compiled for `cargo test` (the `testing` feature, enabled by the crate's
//! dev-dependency on itself), never into the wheel.

use std::path::Path;
use std::sync::Arc;

use crate::entry::Entry;

/// An entry with no namespace, created and updated at `at`.
pub fn entry(key: &str, kind: &str, value: &str, at: i64, refs: &[&str]) -> Arc<Entry> {
    Arc::new(Entry {
        key: key.into(),
        value: value.into(),
        kind: kind.into(),
        namespace: "".into(),
        references: refs.iter().map(|r| Arc::from(*r)).collect(),
        created_at: at,
        updated_at: at,
    })
}

/// The store files the test suites need and the public API cannot make.
pub use crate::store::redb::fixtures::{
    FIXTURES, every_record_checksummed, file_schema, old_entries, write_fixture,
};

/// Writes every fixture into `dir` as `<name>.redb`.
pub fn write_fixtures(dir: &Path) -> crate::error::Result<()> {
    for name in FIXTURES {
        let path = dir.join(format!("{name}.redb"));
        let _ = std::fs::remove_file(&path);
        write_fixture(&path, name)?;
    }
    Ok(())
}
