//! The store through its Rust API (no Python): §1 and §3 rules,
//! persistence across reopening, atomicity, refusing foreign files.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use membolt::error::StoreError;
use membolt::store::{BatchOp, Cap, CapGroup, SaveRequest, Store};
use membolt::views::search::{search, search_ranked};

fn open(path: &Path) -> Store {
    Store::open(path, Duration::from_secs(5)).unwrap()
}

fn request(key: &str, value: &str, inferred: &str, parent: Option<&str>) -> SaveRequest {
    SaveRequest {
        key: key.into(),
        value: value.into(),
        inferred_kind: inferred.into(),
        parent_kind: parent.map(Into::into),
        ..SaveRequest::default()
    }
}

fn temp_store() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("memory.redb");
    (dir, path)
}

fn refs(store: &Store, key: &str) -> Vec<String> {
    let entry = store.get(key).unwrap().unwrap();
    entry.references.iter().map(ToString::to_string).collect()
}

#[test]
fn golden_chain_of_auto_parents() {
    let (_dir, path) = temp_store();
    let store = open(&path);
    store
        .save(request(
            "prompt:build",
            "Add /users endpoint",
            "prompt",
            None,
        ))
        .unwrap();
    store
        .save(request(
            "tool:write_users",
            "wrote",
            "tool_result",
            Some("progress"),
        ))
        .unwrap();
    store
        .save(request(
            "result:build",
            "compiles",
            "result",
            Some("tool_result"),
        ))
        .unwrap();
    store
        .save(request("status:ci", "waiting", "status", Some("result")))
        .unwrap();
    store
        .save(request(
            "error:migration",
            "panics",
            "error",
            Some("tool_result"),
        ))
        .unwrap();
    assert!(refs(&store, "prompt:build").is_empty());
    assert_eq!(refs(&store, "tool:write_users"), ["prompt:build"]);
    assert_eq!(refs(&store, "result:build"), ["tool:write_users"]);
    assert_eq!(refs(&store, "status:ci"), ["result:build"]);
    assert_eq!(refs(&store, "error:migration"), ["tool:write_users"]);
    let children: Vec<String> = store
        .children("tool:write_users")
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(children, ["error:migration", "result:build"]);
}

#[test]
fn overwrite_keeps_created_type_and_references_and_stamps_increase() {
    let (_dir, path) = temp_store();
    let store = open(&path);
    let mut first = request("k", "v1", "note", Some("result"));
    first.references = Some(vec!["p".into(), "k".into(), "p".into()]);
    let first = store.save(first).unwrap();
    assert_eq!(first.references, vec![Arc::<str>::from("p")]);
    let second = store.save(request("k", "v2", "decision", None)).unwrap();
    assert_eq!(&*second.kind, "note");
    assert_eq!(second.created_at, first.created_at);
    assert!(second.updated_at > first.updated_at);
    assert_eq!(second.references, first.references);
}

#[test]
fn everything_survives_reopening() {
    let (_dir, path) = temp_store();
    let stamp = {
        let store = open(&path);
        store.save(request("a", "1", "note", None)).unwrap();
        store.save(request("b", "2", "note", None)).unwrap();
        let last = store
            .save(request("c", "3", "note", None))
            .unwrap()
            .updated_at;
        assert!(store.delete("c").unwrap());
        store.close();
        last
    };
    let store = open(&path);
    let keys: Vec<String> = store
        .keys()
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(keys, ["a", "b"]);
    // The clock never goes back, even though the newest entry was deleted.
    assert!(
        store
            .save(request("d", "4", "note", None))
            .unwrap()
            .updated_at
            > stamp
    );
}

#[test]
fn a_failing_batch_commits_nothing() {
    let (_dir, path) = temp_store();
    let store = open(&path);
    store.save(request("keep", "x", "note", None)).unwrap();
    let result = store.apply_batch(vec![
        BatchOp::Save(request("a", "1", "note", None)),
        BatchOp::Delete("keep".into()),
        BatchOp::Link {
            key: "a".into(),
            parent: "missing".into(),
        },
    ]);
    assert!(matches!(result, Err(StoreError::MissingKey(key)) if key == "missing"));
    let keys: Vec<String> = store
        .keys()
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(keys, ["keep"]);
    drop(store);
    let reopened = open(&path);
    assert_eq!(reopened.len().unwrap(), 1);
}

#[test]
fn links_follow_the_rules() {
    let (_dir, path) = temp_store();
    let store = open(&path);
    store.save(request("a", "1", "note", None)).unwrap();
    store.save(request("b", "2", "note", None)).unwrap();
    assert!(matches!(
        store.link("a", "a"),
        Err(StoreError::InvalidArgument(_))
    ));
    assert!(matches!(
        store.link("a", "zz"),
        Err(StoreError::MissingKey(_))
    ));
    assert!(store.link("a", "b").unwrap());
    assert!(!store.link("a", "b").unwrap());
    assert!(store.unlink("a", "b").unwrap());
    assert!(!store.unlink("a", "b").unwrap());
}

#[test]
fn extraction_batch_chains_and_caps() {
    let (_dir, path) = temp_store();
    let store = open(&path);
    let batch: Vec<SaveRequest> = (0..25)
        .map(|i| {
            request(
                &format!("tool:bash:r{i:02}"),
                "out",
                "tool_result",
                Some("progress"),
            )
        })
        .chain([
            request("n1", "x", "note", Some("result")),
            request("n2", "y", "note", None),
        ])
        .collect();
    let caps = [Cap {
        group: CapGroup::KeysUnder("tool:bash:".into()),
        keep: 20,
    }];
    let saved = store.save_many(batch, &caps, Vec::new()).unwrap();
    assert_eq!(saved.len(), 27);
    assert_eq!(refs(&store, "n2"), ["n1"]);
    let tools = store
        .keys()
        .unwrap()
        .iter()
        .filter(|k| k.starts_with("tool:bash:"))
        .count();
    assert_eq!(tools, 20);
}

#[test]
fn bad_keys_are_refused_and_write_nothing() {
    let (_dir, path) = temp_store();
    let store = open(&path);
    for key in [String::new(), "k".repeat(1025)] {
        let error = store.save(request(&key, "v", "note", None)).unwrap_err();
        assert!(matches!(error, StoreError::InvalidArgument(_)), "{error}");
    }
    assert_eq!(store.len().unwrap(), 0);
    assert!(!path.exists(), "reading and refused writes create no file");
}

#[test]
fn foreign_and_future_files_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, check) in [
        (
            "foreign",
            (|e: &StoreError| matches!(e, StoreError::Corrupt { .. })) as fn(&_) -> bool,
        ),
        ("newer_schema", |e: &StoreError| {
            matches!(e, StoreError::NewerSchema { .. })
        }),
    ] {
        let path = dir.path().join(format!("{kind}.redb"));
        membolt::testing::write_fixture(&path, kind).unwrap();
        let before = std::fs::read(&path).unwrap();
        let store = open(&path);
        assert!(check(&store.get("k").unwrap_err()), "{kind} read");
        assert!(
            check(&store.save(request("k", "v", "note", None)).unwrap_err()),
            "{kind} write"
        );
        drop(store);
        assert_eq!(std::fs::read(&path).unwrap(), before, "{kind} was modified");
    }
}

#[test]
fn search_and_ranking() {
    let (_dir, path) = temp_store();
    let store = open(&path);
    store
        .save(request("zzz", "mentions Build", "note", None))
        .unwrap();
    store
        .save(request("prompt:build", "x", "prompt", None))
        .unwrap();
    store
        .save(request("result:build", "y", "result", None))
        .unwrap();
    let (total, ranked) = store.read(|m| search_ranked(m, "BUILD", 2)).unwrap();
    assert_eq!(total, 3);
    let keys: Vec<&str> = ranked.iter().map(|e| &*e.key).collect();
    assert_eq!(keys, ["result:build", "prompt:build"]);
    let sorted: Vec<String> = store
        .read(|m| search(m, "build"))
        .unwrap()
        .iter()
        .map(|e| e.key.to_string())
        .collect();
    assert_eq!(sorted, ["prompt:build", "result:build", "zzz"]);
}

/// The keys of the `entries` table as the store file alone holds them (no
/// journal replay).
fn keys_in_file(path: &Path) -> Vec<String> {
    use redb::{ReadableDatabase, ReadableTable, TableDefinition};
    const ENTRIES: TableDefinition<&str, &[u8]> = TableDefinition::new("entries");
    let db = redb::ReadOnlyDatabase::open(path).unwrap();
    let rtx = db.begin_read().unwrap();
    let table = rtx.open_table(ENTRIES).unwrap();
    table
        .iter()
        .unwrap()
        .map(|row| row.unwrap().0.value().to_string())
        .collect()
}

#[test]
fn a_store_dropped_without_close_leaves_a_complete_file() {
    // Changes made while holding the store wait in one redb transaction
    // (durable through the journal); the last handle going away commits it.
    let (_dir, path) = temp_store();
    let store = open(&path);
    store.save(request("a", "1", "note", None)).unwrap();
    store.delete("a").unwrap();
    store.save(request("b", "2", "note", None)).unwrap();
    drop(store);
    assert_eq!(keys_in_file(&path), ["b"]);
}

#[test]
fn a_closed_store_leaves_a_complete_file() {
    let (_dir, path) = temp_store();
    let store = open(&path);
    store.save(request("a", "1", "note", None)).unwrap();
    store.close();
    assert_eq!(keys_in_file(&path), ["a"]);
}

fn schema_in_file(path: &Path) -> u64 {
    membolt::testing::file_schema(path)
}

#[test]
fn a_schema_1_store_is_read_as_it_is_and_marked_by_the_first_write() {
    // Versions before the journal ignore it: once this version may leave
    // changes there, the file must say so, and they refuse it.
    let (_dir, path) = temp_store();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    membolt::testing::write_fixture(&path, "schema_1").unwrap();
    let store = open(&path);
    assert_eq!(&*store.get("old").unwrap().unwrap().value, "from schema 1");
    store.close();
    assert_eq!(schema_in_file(&path), 1); // reading changes nothing
    let store = open(&path);
    store.save(request("new", "x", "note", None)).unwrap();
    store.close();
    assert_eq!(
        schema_in_file(&path),
        membolt::store::maintenance::FILE_SCHEMA_VERSION
    );
    assert_eq!(membolt::store::maintenance::FILE_SCHEMA_VERSION, 3);
    assert_eq!(keys_in_file(&path), ["new", "old"]);
}
