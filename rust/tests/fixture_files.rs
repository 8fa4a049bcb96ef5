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

/// A private copy of the fixture `name`, so the committed file is never
/// opened for writing.
fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf) {
    static WRITE: std::sync::Once = std::sync::Once::new();
    WRITE.call_once(|| {
        if std::env::var_os("MEMBOLT_WRITE_FIXTURES").is_some() {
            membolt::testing::write_fixtures(&fixtures_dir()).unwrap();
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.redb");
    std::fs::copy(fixtures_dir().join(format!("{name}.redb")), &path)
        .unwrap_or_else(|e| panic!("fixture {name}: {e} (write it with MEMBOLT_WRITE_FIXTURES=1)"));
    (dir, path)
}

#[test]
fn every_fixture_is_committed() {
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

#[test]
fn the_schema_1_fixture_reads_its_entry() {
    let (_dir, path) = copy_of("schema_1");
    let store = Store::open(&path, Duration::from_secs(5)).unwrap();
    let entry = store.get("old").unwrap().unwrap();
    assert_eq!(&*entry.value, "from schema 1");
}
