//! No-panic fuzzing: thousands of deterministic pseudo-random inputs, from
//! raw characters to well-formed expressions, must each give a value or a
//! `QueryError`, never a panic.

// Truncating random numbers to smaller integers is the point here.
#![allow(clippy::cast_possible_truncation)]

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use membolt::query::{self, Relations};

/// xorshift64*: small, deterministic, good enough for test inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    ";",
    ".",
    "?.",
    "?",
    "??",
    "..",
    "+",
    "-",
    "*",
    "/",
    "%",
    "**",
    "^",
    "==",
    "!=",
    "<",
    ">",
    "<=",
    ">=",
    "!",
    "&&",
    "||",
    "|",
    "#",
    "#index",
    "=",
    "and",
    "or",
    "not",
    "in",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "let",
    "x",
    "nil",
    "true",
    "false",
    "0",
    "1",
    "-1",
    "2.5",
    "1e308",
    "0x",
    "9223372036854775807",
    "'s'",
    "\"k\"",
    "\"\\u00e9\"",
    "`raw`",
    "memory",
    "tool_calls",
    "tasks",
    ".key",
    ".type",
    ".value",
    ".references",
    "filter",
    "map",
    "all",
    "any",
    "none",
    "one",
    "count",
    "find",
    "len",
    "first",
    "last",
    "take",
    "sortBy",
    "groupBy",
    "keys",
    "values",
    "concat",
    "uniq",
    "lower",
    "upper",
    "trim",
    "split",
    "sum",
    "join",
    "union",
    "/*",
    "*/",
    "//",
    "\n",
    "é",
    "\"",
    "'",
    "\\",
];

const PREDICATE_FNS: &[&str] = &[
    "filter", "map", "all", "any", "none", "one", "count", "find", "sortBy", "groupBy", "sum",
];

const PLAIN_FNS: &[(&str, usize)] = &[
    ("len", 1),
    ("first", 1),
    ("last", 1),
    ("keys", 1),
    ("values", 1),
    ("uniq", 1),
    ("lower", 1),
    ("upper", 1),
    ("trim", 1),
    ("take", 2),
    ("split", 2),
    ("join", 2),
    ("concat", 2),
    ("union", 2),
    ("join", 4),
];

const BINARY_OPS: &[&str] = &[
    "+",
    "-",
    "*",
    "/",
    "%",
    "**",
    "==",
    "!=",
    "<",
    ">",
    "<=",
    ">=",
    "and",
    "or",
    "&&",
    "||",
    "in",
    "not in",
    "contains",
    "startsWith",
    "not endsWith",
    "??",
    "..",
];

/// A random well-formed expression (it may still fail at run time).
fn expression(rng: &mut Rng, depth: usize, in_predicate: bool) -> String {
    if depth == 0 || rng.below(5) == 0 {
        return atom(rng, in_predicate);
    }
    let sub = |rng: &mut Rng| expression(rng, depth - 1, in_predicate);
    match rng.below(12) {
        0 | 1 => {
            let (a, b) = (sub(rng), sub(rng));
            format!("({a} {} {b})", rng.pick(BINARY_OPS))
        }
        2 => format!("{}({})", rng.pick(&["not ", "-", "!", "+"]), sub(rng)),
        3 => format!("({} ? {} : {})", sub(rng), sub(rng), sub(rng)),
        4 => format!("[{}, {}]", sub(rng), sub(rng)),
        5 => format!("{{k: {}, \"s\": {}}}", sub(rng), sub(rng)),
        6 => {
            let base = sub(rng);
            let access = [
                "",
                ".key",
                "?.type",
                "[0]",
                "[-1]",
                "[1:2]",
                "[\"key\"]",
                ".k",
            ];
            format!("({base}){}", rng.pick(&access))
        }
        7 => {
            let list = sub(rng);
            let body = expression(rng, depth - 1, true);
            let wrapped = match rng.below(3) {
                0 => body,
                1 => format!("{{{body}}}"),
                _ => format!("{{k: {body}}}"),
            };
            format!("{}({list}, {wrapped})", rng.pick(PREDICATE_FNS))
        }
        8 => {
            let (name, arity) = PLAIN_FNS[rng.below(PLAIN_FNS.len())];
            let args: Vec<String> = (0..arity).map(|_| sub(rng)).collect();
            format!("{name}({})", args.join(", "))
        }
        9 => format!("let x = {}; [x, {}]", sub(rng), sub(rng)),
        10 => {
            let list = sub(rng);
            let key = expression(rng, depth - 1, true);
            format!("sortBy({list}, {key}, let o = \"desc\"; o)")
        }
        _ => format!(
            "{} | {}(#)",
            sub(rng),
            rng.pick(&["map", "filter", "sortBy", "any"])
        ),
    }
}

fn atom(rng: &mut Rng, in_predicate: bool) -> String {
    let mut atoms = vec![
        "nil",
        "true",
        "false",
        "0",
        "1",
        "3",
        "-2",
        "2.5",
        "0.1",
        "\"error\"",
        "\"a,b\"",
        "''",
        "memory",
        "tool_calls",
        "tasks",
        "[]",
        "{}",
        "[1, 2, 3]",
        "1..4",
        "\"key\"",
    ];
    if in_predicate {
        atoms.extend([
            "#",
            ".key",
            ".type",
            ".name",
            "#index",
            ".references",
            "#?.status",
        ]);
    }
    rng.pick(&atoms).to_string()
}

fn random_chars(rng: &mut Rng) -> String {
    let len = rng.below(40);
    (0..len)
        .map(|_| match rng.below(4) {
            0 => char::from(b' ' + rng.below(95) as u8),
            1 => char::from_u32(rng.below(0x3000) as u32).unwrap_or('?'),
            _ => "()[]{}.#?:,\"'`\\|&!=<>+-*/%^0123456789ae"
                .chars()
                .nth(rng.below(41))
                .unwrap_or('x'),
        })
        .collect()
}

fn token_soup(rng: &mut Rng) -> String {
    let len = rng.below(25);
    let mut soup = String::new();
    for _ in 0..len {
        soup.push_str(rng.pick(TOKENS));
        if rng.below(3) != 0 {
            soup.push(' ');
        }
    }
    soup
}

/// Deletes, duplicates or swaps a few characters of a valid expression.
fn mutate(rng: &mut Rng, source: &str) -> String {
    let mut chars: Vec<char> = source.chars().collect();
    for _ in 0..=rng.below(3) {
        if chars.is_empty() {
            break;
        }
        let i = rng.below(chars.len());
        match rng.below(3) {
            0 => {
                chars.remove(i);
            }
            1 => {
                let c = chars[rng.below(chars.len())];
                chars.insert(i, c);
            }
            _ => {
                let j = rng.below(chars.len());
                chars.swap(i, j);
            }
        }
    }
    chars.into_iter().collect()
}

#[test]
fn no_input_panics() {
    let relations = Relations {
        memory: &|| membolt::query::memory_rows(common::memory()),
        memory_cap: None,
        tool_calls: common::tool_calls(),
        tasks: common::tasks(),
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut inputs = Vec::new();
    for _ in 0..12_000 {
        inputs.push(random_chars(&mut rng));
        inputs.push(token_soup(&mut rng));
        let depth = 1 + rng.below(4);
        let valid = expression(&mut rng, depth, false);
        inputs.push(mutate(&mut rng, &valid));
        inputs.push(valid);
    }
    // Raw bytes, decoded lossily, as an FFI caller might pass them.
    for _ in 0..4000 {
        let bytes: Vec<u8> = (0..rng.below(30)).map(|_| rng.next() as u8).collect();
        inputs.push(String::from_utf8_lossy(&bytes).into_owned());
    }

    let (mut ok, mut compile_errors, mut run_errors) = (0, 0, 0);
    let (mut panics, mut internal) = (Vec::new(), Vec::new());
    for input in &inputs {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            query::evaluate(input, &relations).map(|value| query::to_json(&value))
        }));
        match outcome {
            Ok(Ok(_)) => ok += 1,
            Ok(Err(e)) if e.kind == query::ErrorKind::Compile => compile_errors += 1,
            Ok(Err(e)) => {
                run_errors += 1;
                // An internal error means the evaluator broke an invariant.
                if e.message.contains("internal error") {
                    internal.push(format!("{input} -> {e}"));
                }
            }
            Err(_) => panics.push(input.clone()),
        }
    }
    assert!(
        panics.is_empty(),
        "{} inputs panicked, e.g. {:?}",
        panics.len(),
        &panics[..panics.len().min(5)]
    );
    assert!(internal.is_empty(), "internal errors: {internal:?}");
    // The generator must reach all three outcomes in volume, or it tests little.
    println!(
        "{} inputs: {ok} ok, {compile_errors} compile errors, {run_errors} run errors",
        inputs.len()
    );
    assert!(ok > 3000 && compile_errors > 3000 && run_errors > 3000);
}
