//! The store files under `tests/fixtures/stores/` that the Python tests
//! copy: each is what its name says, as this version reads it.
//!
//! `MEMBOLT_WRITE_FIXTURES=1 cargo test --test fixture_files` writes them
//! again (after a change of the file format, say).

use std::path::{Path, PathBuf};
use std::time::Duration;

use membolt::error::StoreError;
use membolt::store::Store;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stores")
}

/// Writes the fixtures again when asked to (once per run).
fn write_if_asked() {
    static WRITE: std::sync::Once = std::sync::Once::new();
    WRITE.call_once(|| {
        if std::env::var_os("MEMBOLT_WRITE_FIXTURES").is_some() {
            membolt::testing::write_fixtures(&fixtures_dir()).unwrap();
        }
    });
}

/// A private copy of the fixture `name`, so the committed file is never
/// opened for writing.
fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf) {
    write_if_asked();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.redb");
    std::fs::copy(fixtures_dir().join(format!("{name}.redb")), &path)
        .unwrap_or_else(|e| panic!("fixture {name}: {e} (write it with MEMBOLT_WRITE_FIXTURES=1)"));
    (dir, path)
}

#[test]
fn every_fixture_is_committed() {
    write_if_asked();
    for name in membolt::testing::FIXTURES {
        assert!(
            fixtures_dir().join(format!("{name}.redb")).is_file(),
            "{name}"
        );
    }
}

#[test]
fn the_foreign_fixture_is_refused_as_not_a_store() {
    let (_dir, path) = copy_of("foreign");
    let store = Store::open(&path, Duration::from_secs(5)).unwrap();
    let error = store.len().unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    assert!(
        error.to_string().contains("without membolt's tables"),
        "{error}"
    );
}

#[test]
fn the_newer_schema_fixture_is_refused_as_newer() {
    let (_dir, path) = copy_of("newer_schema");
    let store = Store::open(&path, Duration::from_secs(5)).unwrap();
    let error = store.len().unwrap_err();
    assert!(matches!(error, StoreError::NewerSchema { .. }), "{error}");
}

/// The stores of older versions are read as they are (their records have
/// no checksum yet) and upgraded by the first write: every record then
/// carries its checksum, the file says schema 3, and nothing changed.
#[test]
fn the_old_schema_fixtures_are_read_and_upgraded_by_the_first_write() {
    for (name, schema) in [("schema_1", 1), ("schema_2", 2)] {
        let (_dir, path) = copy_of(name);
        let expected = membolt::testing::old_entries(schema);
        let store = Store::open(&path, Duration::from_secs(5)).unwrap();
        let read: Vec<_> = store
            .entries()
            .unwrap()
            .iter()
            .map(|e| (**e).clone())
            .collect();
        assert_eq!(read, expected, "{name} read as it is");
        store
            .save(membolt::store::SaveRequest {
                key: "new".into(),
                value: "after the upgrade".into(),
                inferred_kind: "note".into(),
                ..Default::default()
            })
            .unwrap();
        store.close();
        membolt::store::release_all_leases();
        drop(store);
        let copy = path.with_file_name("copy.redb");
        std::fs::copy(&path, &copy).unwrap();
        let reopened = Store::open(&copy, Duration::from_secs(5)).unwrap();
        let after: Vec<_> = reopened
            .entries()
            .unwrap()
            .iter()
            .map(|e| (**e).clone())
            .collect();
        assert_eq!(after.len(), expected.len() + 1, "{name}");
        for entry in &expected {
            assert!(after.contains(entry), "{name}: {} kept", entry.key);
        }
        assert_eq!(
            membolt::testing::file_schema(&copy),
            membolt::store::maintenance::FILE_SCHEMA_VERSION
        );
        assert!(membolt::testing::every_record_checksummed(&copy), "{name}");
    }
}
