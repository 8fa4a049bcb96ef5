//! The seed document's `memory_query` examples (§0 F8), plus the
//! relation contract of §9.2 and F11/F12.

mod common;

use std::cell::Cell;
use std::sync::Arc;

use membolt::entry::Entry;
use membolt::query::{self, ErrorKind, Relations, Value, is_row_list, to_json};

fn row_keys(json: &str) -> Vec<String> {
    // Every row's "key" field, in order (the fixture's keys have no quotes).
    json.match_indices("\"key\": \"")
        .map(|(i, m)| {
            let rest = &json[i + m.len()..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

#[test]
fn seed_select() {
    let json = common::eval(r#"filter(memory, .type == "error")"#).unwrap();
    assert_eq!(row_keys(&json), ["error:build", "error:migration"]);
    assert!(json.starts_with(
        r#"[{"createdAt": 350, "key": "error:build", "namespace": "ci", "references": [], "type": "error", "updatedAt": 400, "value": "build failed"}"#
    ));
}

#[test]
fn seed_project_with_a_map_literal_predicate() {
    let json = common::eval("map(memory, {key: .key, value: .value})").unwrap();
    assert_eq!(
        json,
        r#"[{"key": "decision:db", "value": "use postgres"}, {"key": "error:build", "value": "build failed"}, {"key": "error:migration", "value": "migrate step 3 panics on nil column"}, {"key": "prompt:build", "value": "Add /users endpoint"}, {"key": "result:build", "value": "compiles; tests pending"}, {"key": "tool:write_users", "value": "wrote handlers/users.go"}]"#
    );
    // The closure form gives the same.
    assert_eq!(
        common::eval("map(memory, {{key: .key, value: .value}})").unwrap(),
        json
    );
}

#[test]
fn seed_join() {
    let json = common::eval(r#"join(tool_calls, memory, "name", "key")"#).unwrap();
    assert_eq!(
        json,
        r#"[{"left_args": "{\"path\": \"handlers/users.go\"}", "left_name": "tool:write_users", "left_result": "ok", "left_timestamp": 200, "right_createdAt": 150, "right_key": "tool:write_users", "right_namespace": "", "right_references": ["prompt:build"], "right_type": "tool_result", "right_updatedAt": 200, "right_value": "wrote handlers/users.go"}, {"left_args": "{}", "left_name": "tool:write_users", "left_result": "ok again", "left_timestamp": 260, "right_createdAt": 150, "right_key": "tool:write_users", "right_namespace": "", "right_references": ["prompt:build"], "right_type": "tool_result", "right_updatedAt": 200, "right_value": "wrote handlers/users.go"}]"#
    );
}

#[test]
fn seed_union() {
    let json = common::eval(
        r#"union(filter(memory, .type == "error"), filter(memory, .type == "decision"))"#,
    )
    .unwrap();
    assert_eq!(
        row_keys(&json),
        ["error:build", "error:migration", "decision:db"]
    );
}

#[test]
fn results_are_row_lists_when_they_should_be() {
    let relations = Relations {
        memory: &|| membolt::query::memory_rows(common::memory()),
        memory_cap: None,
        tool_calls: common::tool_calls(),
        tasks: common::tasks(),
    };
    let rows = |q: &str| is_row_list(&query::evaluate(q, &relations).unwrap());
    assert!(rows("memory"));
    assert!(rows(r#"filter(memory, .type == "nothing")"#)); // empty counts
    assert!(rows("map(memory, {k: .key})"));
    assert!(rows(r#"join(tool_calls, memory, "name", "key")"#));
    assert!(!rows("map(memory, .key)"));
    assert!(!rows("len(memory)"));
    assert!(!rows("memory[0]"));
}

#[test]
fn relations_work_without_an_agent_loop() {
    // F11: no tool calls or tasks fed: the relations are empty, not errors.
    let none = Vec::new;
    let relations = Relations {
        memory: &|| membolt::query::memory_rows(none()),
        memory_cap: None,
        tool_calls: Vec::new(),
        tasks: Vec::new(),
    };
    for q in [
        "tool_calls",
        "tasks",
        "memory",
        r#"join(tool_calls, memory, "name", "key")"#,
    ] {
        let value = query::evaluate(q, &relations).unwrap();
        assert_eq!(to_json(&value), "[]", "{q}");
    }
}

#[test]
fn memory_is_read_only_when_named() {
    let calls = Cell::new(0);
    let memory = || {
        calls.set(calls.get() + 1);
        common::memory()
    };
    let relations = Relations {
        memory: &|| membolt::query::memory_rows(memory()),
        memory_cap: None,
        tool_calls: common::tool_calls(),
        tasks: Vec::new(),
    };
    query::evaluate("len(tool_calls)", &relations).unwrap();
    assert_eq!(calls.get(), 0);
    query::evaluate("len(memory) + len(memory)", &relations).unwrap();
    assert_eq!(calls.get(), 1);
}

#[test]
fn memory_cap_keeps_the_newest_sorted_by_key() {
    // F12: every entry by default; a cap keeps the newest N, sorted by key.
    let entries = || {
        let mut all = common::memory();
        // Same updated_at as decision:db (600): the larger key is newer.
        all.push(common::entry("z:tie", "v", "note", "", &[], 600));
        all
    };
    let relations = Relations {
        memory: &|| membolt::query::memory_rows(entries()),
        memory_cap: Some(3),
        tool_calls: Vec::new(),
        tasks: Vec::new(),
    };
    let value = query::evaluate("map(memory, .key)", &relations).unwrap();
    assert_eq!(
        to_json(&value),
        r#"["decision:db", "error:migration", "z:tie"]"#
    );
    let uncapped = Relations {
        memory_cap: None,
        ..relations
    };
    let value = query::evaluate("len(memory)", &uncapped).unwrap();
    assert_eq!(to_json(&value), "7");
}

#[test]
fn errors_display_as_the_tool_text_expects() {
    let relations = Relations {
        memory: &|| membolt::query::memory_rows(common::memory()),
        memory_cap: None,
        tool_calls: Vec::new(),
        tasks: Vec::new(),
    };
    let err = query::compile("filter(memory, .type ==)").unwrap_err();
    assert_eq!(err.kind, ErrorKind::Compile);
    assert_eq!(err.position, Some((1, 24)));
    assert_eq!(err.to_string(), "compile: unexpected token ) (1:24)");
    let err = query::evaluate("memory[0].key + 1", &relations).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Run);
    assert_eq!(
        err.to_string(),
        "run: invalid operation: string + int (1:15)"
    );
}

#[test]
fn programs_compile_once_and_run_many_times() {
    let program = query::compile("count(memory, .type == \"error\")").unwrap();
    for n in 1..4 {
        let entries = move || {
            (0..n)
                .map(|i| {
                    Arc::new(Entry {
                        key: format!("error:{i}").into(),
                        value: "v".into(),
                        kind: "error".into(),
                        namespace: "".into(),
                        references: Vec::new(),
                        created_at: 0,
                        updated_at: i,
                    })
                })
                .collect()
        };
        let relations = Relations {
            memory: &|| membolt::query::memory_rows(entries()),
            memory_cap: None,
            tool_calls: Vec::new(),
            tasks: Vec::new(),
        };
        let value = query::run(&program, &relations).unwrap();
        assert_eq!(to_json(&value), n.to_string());
    }
}

#[test]
fn json_output_matches_python() {
    let cases: &[(Value, &str)] = &[
        (Value::Float(1.0), "1.0"),
        (Value::Float(-0.0), "-0.0"),
        (Value::Float(0.1), "0.1"),
        (Value::Float(1e16), "1e+16"),
        (Value::Float(1e15), "1000000000000000.0"),
        (Value::Float(1.5e-7), "1.5e-07"),
        (Value::Float(0.0001), "0.0001"),
        (Value::Float(123.456), "123.456"),
        (Value::Float(f64::MAX), "1.7976931348623157e+308"),
        (Value::Float(5e-324), "5e-324"),
        (Value::Float(f64::NAN), "NaN"),
        (Value::Float(f64::NEG_INFINITY), "-Infinity"),
        (Value::Int(i64::MIN), "-9223372036854775808"),
        (
            Value::from("q\"\\\n\r\t\u{8}\u{c}\u{1}\u{7f}é😀"),
            "\"q\\\"\\\\\\n\\r\\t\\b\\f\\u0001\u{7f}é😀\"",
        ),
        (Value::from(Vec::new()), "[]"),
        (Value::row(Vec::<(&str, Value)>::new()), "{}"),
        (
            Value::row([
                ("b", Value::Nil),
                ("a", Value::from(vec![Value::Bool(true)])),
            ]),
            r#"{"a": [true], "b": null}"#,
        ),
    ];
    for (value, expected) in cases {
        assert_eq!(to_json(value), *expected);
    }
}

#[test]
fn compiled_programs_and_values_cross_threads() {
    // The Python glue may cache programs and hand values between threads.
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<query::Program>();
    assert_send_sync::<Value>();
    assert_send_sync::<query::QueryError>();
}
