//! The fixed relations the tests query.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::sync::Arc;

use membolt::entry::Entry;
use membolt::query::{self, Relations, Value};

pub fn entry(
    key: &str,
    value: &str,
    kind: &str,
    namespace: &str,
    refs: &[&str],
    at: i64,
) -> Arc<Entry> {
    Arc::new(Entry {
        namespace: namespace.into(),
        created_at: at - 50,
        ..(*membolt::testing::entry(key, kind, value, at, refs)).clone()
    })
}

/// Six entries, sorted by key.
pub fn memory() -> Vec<Arc<Entry>> {
    vec![
        entry("decision:db", "use postgres", "decision", "", &[], 600),
        entry("error:build", "build failed", "error", "ci", &[], 400),
        entry(
            "error:migration",
            "migrate step 3 panics on nil column",
            "error",
            "",
            &["tool:write_users"],
            500,
        ),
        entry(
            "prompt:build",
            "Add /users endpoint",
            "prompt",
            "",
            &[],
            100,
        ),
        entry(
            "result:build",
            "compiles; tests pending",
            "result",
            "",
            &["tool:write_users"],
            300,
        ),
        entry(
            "tool:write_users",
            "wrote handlers/users.go",
            "tool_result",
            "",
            &["prompt:build"],
            200,
        ),
    ]
}

pub fn tool_calls() -> Vec<Value> {
    let call = |name: &str, args: &str, result: &str, timestamp: i64| {
        Value::row([
            ("name", Value::from(name)),
            ("args", Value::from(args)),
            ("result", Value::from(result)),
            ("timestamp", Value::from(timestamp)),
        ])
    };
    vec![
        call(
            "tool:write_users",
            r#"{"path": "handlers/users.go"}"#,
            "ok",
            200,
        ),
        call("search", "{}", "3 hits", 250),
        call("tool:write_users", "{}", "ok again", 260),
    ]
}

pub fn tasks() -> Vec<Value> {
    let task = |id: i64, desc: &str, status: &str, rounds: i64, note: &str| {
        Value::row([
            ("id", Value::from(id)),
            ("desc", Value::from(desc)),
            ("status", Value::from(status)),
            ("rounds", Value::from(rounds)),
            ("note", Value::from(note)),
        ])
    };
    vec![
        task(1, "add endpoint", "done", 3, ""),
        task(2, "fix migration", "active", 1, "nil column"),
        task(3, "deploy", "pending", 0, ""),
    ]
}

/// Runs `source` over the fixture: the JSON result, or the error's text.
pub fn eval(source: &str) -> Result<String, String> {
    let memory = memory;
    let relations = Relations {
        memory: &|| membolt::query::memory_rows(memory()),
        memory_cap: None,
        tool_calls: tool_calls(),
        tasks: tasks(),
    };
    query::evaluate(source, &relations)
        .map(|v| query::to_json(&v))
        .map_err(|e| e.to_string())
}
