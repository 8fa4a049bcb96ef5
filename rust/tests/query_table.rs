//! Table-driven tests: each query with its exact JSON result, or the start
//! of its error text (`compile: ...` / `run: ...`).

mod common;

/// (query, expected JSON or error prefix)
const CASES: &[(&str, &str)] = &[
    // ---- literals
    ("nil", "null"),
    ("true", "true"),
    ("42", "42"),
    ("0x1F + 0o17 + 0b11 + 1_000", "1049"),
    ("1.5", "1.5"),
    (".5 + 1e2", "100.5"),
    (r#""a\tb\u00e9\x41""#, r#""a\tbéA""#),
    (r"'single \'q\''", r#""single 'q'""#),
    (r"`raw \n`", r#""raw \\n""#),
    ("[1, \"two\", [3], nil,]", r#"[1, "two", [3], null]"#),
    (
        r#"{a: 1, "b c": 2, 3: true, (lower("D")): nil}"#,
        r#"{"3": true, "a": 1, "b c": 2, "d": null}"#,
    ),
    ("1 // a comment", "1"),
    ("/* a\nblock */ 2", "2"),
    // ---- member access, index, slice
    ("{a: {b: 5}}.a.b", "5"),
    ("{a: 1}.missing", "null"),
    ("{a: nil}.a?.b", "null"),
    ("{a: nil}.a?.b.c[0]", "null"),
    ("{a: nil}.a.b", "run: cannot fetch b from nil"),
    ("[10, 20, 30][1]", "20"),
    ("[10, 20, 30][-1]", "30"),
    (
        "[10, 20, 30][3]",
        "run: index 3 out of range (array of length 3)",
    ),
    (
        "[1, 2][5]",
        "run: index 5 out of range (array of length 2) (1:7)",
    ),
    (r#"{"k": 1}["k"]"#, "1"),
    ("[1, 2, 3, 4][1:3]", "[2, 3]"),
    ("[1, 2, 3, 4][:-1]", "[1, 2, 3]"),
    (r#""hello"[1:-1]"#, r#""ell""#),
    (r#""héllo"[1]"#, r#""é""#),
    ("memory[0].key", r#""decision:db""#),
    ("memory[0].references", "[]"),
    (r#"memory[2]["references"]"#, r#"["tool:write_users"]"#),
    ("memory.key", "run: cannot fetch key from array (1:8)"),
    ("[1][1.5]", "run: index must be an int, not float"),
    // ---- arithmetic and its precedence
    ("7 + 2 * 3", "13"),
    ("(7 + 2) * 3", "27"),
    ("7 - 2 - 1", "4"),
    ("7 / 2", "3.5"),
    ("6 / 3", "2.0"),
    ("7 % 3", "1"),
    ("-7 % 3", "-1"),
    ("2 ** 3 ** 2", "512.0"),
    ("2 ^ 10", "1024.0"),
    ("-2 ** 2", "-4.0"),
    ("+3 - -2", "5"),
    ("1 + 2.5", "3.5"),
    ("0.1 + 0.2", "0.30000000000000004"),
    (r#""ab" + "cd""#, r#""abcd""#),
    (r#""a" + 1"#, "run: invalid operation: string + int (1:5)"),
    ("7.5 % 2", "run: invalid operation: float % int"),
    ("1 % 0", "run: integer divide by zero"),
    ("9223372036854775807 + 1", "run: integer overflow"),
    ("1 / 0", "Infinity"),
    ("-1e300 * 1e300", "-Infinity"),
    ("1e16 + 1e-5", "1e+16"),
    ("0.0001 * 1", "0.0001"),
    ("123456789.0 * 10", "1234567890.0"),
    // ---- comparison
    ("1 == 1.0", "true"),
    (r#"1 == "1""#, "false"),
    ("[1, {a: 2}] == [1.0, {a: 2}]", "true"),
    (r#""a" != "b""#, "true"),
    ("1 < 2.5", "true"),
    (r#""abc" < "abd""#, "true"),
    ("2 >= 2 and 3 <= 2", "false"),
    ("1 < 2 < 3", "true"),
    ("3 > 2 > 1", "true"),
    (r#"1 < "a""#, "run: invalid operation: int < string"),
    ("nil == nil", "true"),
    ("nil == false", "false"),
    // ---- logic (and binds tighter than or; not tighter than ==)
    ("false and false or true", "true"),
    ("true && !false", "true"),
    ("not (1 > 2)", "true"),
    ("not true == false", "true"),
    ("false and 1", "false"),
    (
        "true and 1",
        "run: invalid operation: and needs bool operands, not int",
    ),
    (
        "1 or true",
        "run: invalid operation: or needs bool operands, not int",
    ),
    ("not 1", "run: invalid operation: not int"),
    // ---- membership and string operators
    ("2 in [1, 2, 3]", "true"),
    ("2.0 in [1, 2]", "true"),
    (r#""a" in {a: 1}"#, "true"),
    (r#""key" in memory[0]"#, "true"),
    (r#""x" not in ["x"]"#, "false"),
    ("1 in {a: 1}", "run: invalid operation: int in map"),
    (
        r#""abc" contains "bc" and "abc" startsWith "ab" and "abc" endsWith "c""#,
        "true",
    ),
    (r#""abc" not contains "z""#, "true"),
    (
        r#""abc" not startsWith "a" or "abc" not endsWith "c""#,
        "false",
    ),
    ("1 contains 2", "run: invalid operation: int contains int"),
    // ---- ternary, nil coalescing, range
    (r#"1 > 2 ? "a" : "b""#, r#""b""#),
    ("true ? 1 : false ? 2 : 3", "1"),
    (
        "1 ? 2 : 3",
        "run: the condition of ?: must be a bool, not int",
    ),
    (r#"nil ?? "d""#, r#""d""#),
    ("{a: nil}.a ?? {b: 2}.b", "2"),
    ("0 ?? 5", "0"),
    ("nil ?? 1 + 2", "compile: operator + and ?? cannot be mixed"),
    ("1..4", "[1, 2, 3, 4]"),
    ("3..1", "[]"),
    ("1 + 1..3", "[2, 3]"),
    // ---- pipes and let
    ("[3, 1, 2] | sortBy(#) | map(# * 10)", "[10, 20, 30]"),
    (r#""A-B" | lower() | split("-")"#, r#"["a", "b"]"#),
    ("let x = 2; let y = x + 1; x * y", "6"),
    ("let memory = 5; memory + 1", "6"),
    // ---- predicate builtins
    ("filter([1, 2, 3, 4], # % 2 == 0)", "[2, 4]"),
    ("filter([1, 2, 3], {# > 1})", "[2, 3]"),
    (
        "map([1, 2], {v: #, i: #index})",
        r#"[{"i": 0, "v": 1}, {"i": 1, "v": 2}]"#,
    ),
    ("map(tasks, .status)", r#"["done", "active", "pending"]"#),
    (
        r#"filter(memory, .namespace == "ci") | map(.key)"#,
        r#"["error:build"]"#,
    ),
    (
        "map(filter(memory, let k = .key; let t = .type; any(memory, .type == t && .key != k)), .key)",
        r#"["error:build", "error:migration"]"#,
    ),
    ("all(tasks, .rounds >= 0)", "true"),
    (r#"any(tasks, .status == "failed")"#, "false"),
    (r#"none(memory, .type == "secret")"#, "true"),
    (r#"one(tasks, .status == "active")"#, "true"),
    ("one([1, 1], # == 1)", "false"),
    ("count([true, false, true])", "2"),
    (r#"count(memory, .type == "error")"#, "2"),
    ("find(tasks, .rounds > 5)", "null"),
    ("find(tasks, .rounds > 0).desc", r#""add endpoint""#),
    ("sum([1, 2, 3])", "6"),
    ("sum([1, 2.5])", "3.5"),
    ("sum(tasks, .rounds)", "4"),
    (r#"sum(["a"])"#, "run: sum expects numbers, not string"),
    (
        "groupBy(tasks, .status) | keys()",
        r#"["active", "done", "pending"]"#,
    ),
    (
        "map(groupBy([1, 2, 3, 4], # % 2 == 0).true, # * 2)",
        "[4, 8]",
    ),
    (
        r#"sortBy(memory, .updatedAt, "desc") | map(.key) | take(2)"#,
        r#"["decision:db", "error:migration"]"#,
    ),
    (r#"sortBy(tasks, "desc") | map(.id)"#, "[1, 3, 2]"),
    ("sortBy([2.5, 1, -3], #)", "[-3, 1, 2.5]"),
    (r#"sortBy([3, 1, 2], #, let o = "desc"; o)"#, "[3, 2, 1]"),
    (
        r#"sortBy([2, 1, "a"], #)"#,
        "run: sortBy keys must be all numbers or all strings; found numbers and string",
    ),
    (
        r#"sortBy([1, 2], #, "up")"#,
        r#"run: sortBy order must be "asc" or "desc", not "up""#,
    ),
    (
        "filter([1, 2], #)",
        "run: predicate must give a bool, not int",
    ),
    ("filter(1, true)", "run: filter expects an array, not int"),
    // ---- plain builtins
    (
        r#"len("héllo") + len([1, 2]) + len({a: 1}) + len(memory[0])"#,
        "15",
    ),
    ("len(1)", "run: len expects a string, array or map, not int"),
    (r#"first([]) ?? "none""#, r#""none""#),
    ("last(memory).key", r#""tool:write_users""#),
    ("take([1, 2, 3], 5)", "[1, 2, 3]"),
    ("take([1], -1)", "run: take expects a count of 0 or more"),
    (
        "keys(memory[0])",
        r#"["createdAt", "key", "namespace", "references", "type", "updatedAt", "value"]"#,
    ),
    ("values({b: 2, a: 1})", "[1, 2]"),
    ("keys([1])", "run: keys expects a map, not array"),
    ("concat([1], [], [2, [3]])", "[1, 2, [3]]"),
    (r#"uniq([1, 1.0, "1", [1], [1.0]])"#, r#"[1, "1", [1]]"#),
    (r#"lower("ÀB") + upper("c")"#, r#""àbC""#),
    ("upper(1)", "run: upper expects a string, not int"),
    (r#"trim("  x  ") + trim("--y--", "-")"#, r#""xy""#),
    (r#"split("a,b,c", ",", 2)"#, r#"["a", "b,c"]"#),
    (r#"split("abc", "")"#, r#"["a", "b", "c"]"#),
    (r#"join(["a", "b", "c"], ", ")"#, r#""a, b, c""#),
    (r#"join(["a", "b"])"#, r#""ab""#),
    (
        r#"join([1, 2], ",")"#,
        "run: join expects a string, not int",
    ),
    // ---- relational additions
    (
        r#"join(tasks, [{task: 2, who: "ann"}, {task: "2", who: "bob"}, {task: 1.0, who: "cy"}, {who: "x"}], "id", "task") | map([.left_id, .right_who])"#,
        r#"[[1, "cy"], [2, "ann"], [2, "bob"]]"#,
    ),
    (r#"join([{a: nil}], [{b: nil}], "a", "b")"#, "[]"),
    (
        r#"join([{a: true}], [{b: "true"}], "a", "b") | map(.right_b)"#,
        r#"["true"]"#,
    ),
    (r#"join(memory, memory, "key", "key") | len()"#, "6"),
    (
        r#"join([1], [], "a", "b")"#,
        "run: join: left row 0 is int, not a map",
    ),
    (
        r#"join(memory, tasks, "key")"#,
        "compile: join takes 1 or 2 arguments (join strings) or 4 (join relations), not 3 (1:1)",
    ),
    (
        r#"union([{a: 1}, {a: 1.0}], [{a: "1"}, {a: 1}])"#,
        r#"[{"a": 1}, {"a": "1"}]"#,
    ),
    (
        r#"union(filter(memory, .type == "error"), filter(memory, .namespace == "ci")) | map(.key)"#,
        r#"["error:build", "error:migration"]"#,
    ),
    (
        r#"union(take(memory, 1), [{createdAt: 550, key: "decision:db", namespace: "", references: [], type: "decision", updatedAt: 600, value: "use postgres"}]) | len()"#,
        "1",
    ),
    (
        "union([1], 2)",
        "run: union expects arrays, but argument 2 is int",
    ),
    // ---- compile errors, with positions
    ("1 +", "compile: unexpected end of expression (1:4)"),
    ("(1 + 2", "compile: unexpected end of expression (1:7)"),
    ("foo + 1", "compile: unknown name foo (1:1)"),
    ("bogus(1)", "compile: unknown function bogus (1:1)"),
    ("filter(memory)", "compile: filter needs a predicate (1:14)"),
    ("len(1, 2)", "compile: len expects 1 argument, not 2 (1:1)"),
    (
        ".key",
        "compile: .field can only be used inside a predicate (1:1)",
    ),
    ("#", "compile: # can only be used inside a predicate (1:1)"),
    ("filter([1], #foo)", "compile: unknown pointer #foo (1:13)"),
    (r#""abc"#, "compile: string is not terminated (1:1)"),
    ("1 @ 2", "compile: unexpected character '@' (1:3)"),
    (
        r#""a" matches "b""#,
        "compile: the matches operator is not supported (1:5)",
    ),
    (
        "99999999999999999999",
        "compile: integer literal is too large (1:1)",
    ),
    (
        r#""\q""#,
        "compile: invalid escape sequence in string (1:2)",
    ),
    ("memory.key()", "compile: method calls are not supported"),
    ("1 2", "compile: unexpected token 2 (1:3)"),
    ("let true = 1; 2", "compile: true is a reserved word (1:5)"),
    ("[1,\n 2 +]", "compile: unexpected token ] (2:5)"),
    ("/* unclosed", "compile: unclosed comment (1:1)"),
];

#[test]
fn every_case_gives_its_expected_result() {
    assert!(CASES.len() >= 80, "the table must have at least 80 cases");
    let mut failures = Vec::new();
    for (query, expected) in CASES {
        let got = match common::eval(query) {
            Ok(json) => json,
            Err(message) => message,
        };
        let is_error = expected.starts_with("compile: ") || expected.starts_with("run: ");
        let ok = if is_error {
            got.starts_with(expected)
        } else {
            got == *expected
        };
        if !ok {
            failures.push(format!(
                "{query}\n    expected {expected}\n    got      {got}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A `.field OP "text"` filter is answered by a direct test of each row;
/// it must agree with the general evaluation of the same predicate (here
/// forced by a no-op `and true`), for every operator, field and row kind
/// (memory rows and plain maps mixed).
#[test]
fn the_direct_text_filter_agrees_with_the_general_path() {
    let rows = r#"concat(memory, [{type: "error", key: "map-row"}, {value: 3}])"#;
    for field in ["type", "key", "value", "namespace", "createdAt"] {
        for op in [
            "==",
            "!=",
            "<",
            ">=",
            "contains",
            "startsWith",
            "endsWith",
            "not contains",
        ] {
            for text in ["error", "tool:write_users", "", "e"] {
                let direct = format!(r#"filter({rows}, .{field} {op} "{text}")"#);
                let general = format!(r#"filter({rows}, .{field} {op} "{text}" and true)"#);
                assert_eq!(common::eval(&direct), common::eval(&general), "{direct}");
            }
        }
    }
}
