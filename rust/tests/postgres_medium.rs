//! The PostgreSQL medium (§12) through the store's Rust API, on a real
//! server: what survives a reopen, tombstones, projects kept apart, two
//! handles of one process, `hold()`, and the errors of a bad address.
//!
//! The server is the throwaway one the Python tests use
//! (`tests/support/postgres_server.py`, started as a subprocess), so the
//! recipe for starting a server exists once. Without PostgreSQL binaries
//! the test fails, as the Python tests do, unless `MEMBOLT_SKIP_POSTGRES=1`
//! asks a local run to skip it.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use membolt::error::StoreError;
use membolt::store::{SaveRequest, Store};

/// A running throwaway server; stopped (and its directory removed) on drop.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    /// Starts a server, or `None` when the run asked to skip PostgreSQL.
    fn start() -> Option<Server> {
        if std::env::var("MEMBOLT_SKIP_POSTGRES").as_deref() == Ok("1") {
            eprintln!("MEMBOLT_SKIP_POSTGRES=1: the PostgreSQL medium test is skipped");
            return None;
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/postgres_server.py");
        let mut child = Command::new("python3")
            .arg(&script)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 runs tests/support/postgres_server.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .expect("the server script's first line");
        if !line.starts_with("postgresql://") {
            let mut stderr = String::new();
            let _ = child
                .stderr
                .take()
                .map(|mut e| e.read_to_string(&mut stderr));
            let _ = child.wait();
            panic!("no throwaway PostgreSQL server: {stderr}");
        }
        Some(Server {
            child,
            url: line.trim().to_owned(),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGTERM (not `Child::kill`'s SIGKILL) lets the script stop the
        // server and delete its directory; `kill(1)` sends it, since the
        // crate denies `unsafe`.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

fn request(key: &str, value: &str, kind: &str) -> SaveRequest {
    SaveRequest {
        key: key.into(),
        value: value.into(),
        inferred_kind: kind.into(),
        ..SaveRequest::default()
    }
}

/// A request whose new entry links to the newest entry of `parent_kind`
/// (§3.2; Python passes the §3.1 table's answer the same way).
fn child_request(key: &str, value: &str, kind: &str, parent_kind: &str) -> SaveRequest {
    SaveRequest {
        parent_kind: Some(parent_kind.into()),
        ..request(key, value, kind)
    }
}

fn open(url: &str, project: &str) -> Store {
    Store::open_postgres(url, project, Duration::from_secs(10), None)
        .expect("an address that parses")
}

fn keys(store: &Store) -> Vec<String> {
    store
        .keys()
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn the_postgres_medium_keeps_the_store_rules() {
    let Some(server) = Server::start() else {
        return;
    };
    let url = &server.url;

    // Writes survive the handle: a new handle loads them from the server.
    {
        let store = open(url, "alpha");
        store
            .save(request("goal:ship", "ship 0.3", "prompt"))
            .unwrap();
        store
            .save(child_request(
                "progress:api",
                "handler written",
                "progress",
                "prompt",
            ))
            .unwrap();
        store
            .save(request("note:old", "to be deleted", "note"))
            .unwrap();
        assert!(store.delete("note:old").unwrap());
        assert!(!store.delete("note:old").unwrap());
        // A second handle of this process shares the first one's state.
        let twin = open(url, "alpha");
        assert_eq!(keys(&twin), ["goal:ship", "progress:api"]);
        store.close();
        twin.close();
    }
    let reopened = open(url, "alpha");
    assert_eq!(keys(&reopened), ["goal:ship", "progress:api"]);
    let progress = reopened.get("progress:api").unwrap().unwrap();
    assert_eq!(&*progress.value, "handler written");
    assert_eq!(&*progress.kind, "progress");
    // §3.2: the automatic parent, stored with the entry, comes back.
    let parents: Vec<String> = reopened
        .parents("progress:api")
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(parents, ["goal:ship"]);

    // Projects are kept apart on one server.
    let beta = open(url, "beta");
    assert!(beta.keys().unwrap().is_empty());
    beta.save(request("goal:other", "another project", "prompt"))
        .unwrap();
    assert_eq!(keys(&reopened), ["goal:ship", "progress:api"]);
    assert_eq!(keys(&beta), ["goal:other"]);

    // An overwrite keeps the creation stamp and moves the update stamp.
    let before = reopened.get("goal:ship").unwrap().unwrap();
    let after = reopened
        .save(request("goal:ship", "ship 0.3 today", "prompt"))
        .unwrap();
    assert_eq!(after.created_at, before.created_at);
    assert!(after.updated_at > before.updated_at);

    // hold() and its release; writes inside a hold are kept.
    reopened.hold().unwrap();
    reopened
        .save(request("status:ci", "green", "status"))
        .unwrap();
    reopened.unhold();
    reopened.close();
    assert_eq!(
        keys(&open(url, "alpha")),
        ["goal:ship", "progress:api", "status:ci"]
    );

    // A wrong password is a store error naming the server, never the password.
    let wrong = url.replacen(":s3cret", ":not-the-password", 1);
    assert_ne!(&wrong, url, "the test server's password is in its URL");
    let refused = open(&wrong, "gamma").keys().unwrap_err();
    let message = refused.to_string();
    assert!(matches!(refused, StoreError::Io { .. }), "{message}");
    assert!(message.contains("postgresql://"), "{message}");
    assert!(!message.contains("not-the-password"), "{message}");
}
