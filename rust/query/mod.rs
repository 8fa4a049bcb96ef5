//! `memory_query`: a subset of expr-lang over the `memory`, `tool_calls`
//! and `tasks` relations (§9), in pure Rust.
//!
//! `compile` turns the text into a resolved syntax tree (every syntax
//! error, unknown name and wrong argument count is found here); `run`
//! evaluates it under the §9.3 budgets. Nothing reachable from query text
//! panics: errors of both phases come back as `QueryError`.
//!
//! Modules: `lexer` → `parser` (→ `ast`) for compiling; `eval` with
//! `ops` (operators), `builtins` (named in `functions`) and `relational`
//! (`join`, `union`) for
//! running, all metered by `budget`; `value` is the runtime value and
//! `json` its output form.

mod ast;
mod budget;
mod builtins;
mod error;
mod eval;
mod functions;
mod json;
mod lexer;
mod ops;
mod parser;
mod relational;
mod value;

use std::sync::Arc;

use crate::entry::Entry;

pub use error::{ErrorKind, QueryError};
pub use json::to_json;
pub use value::{Map, Value};

/// The data a query runs over. `memory` is called only when the query
/// names `memory`, and must return every entry sorted by key, as rows
/// ([`memory_rows`]): a caller that keeps them between queries hands out a
/// shared list instead of building one per query.
pub struct Relations<'a> {
    pub memory: &'a dyn Fn() -> Arc<Vec<Value>>,
    /// Keep only the newest N entries (by `updated_at`, then key), still
    /// sorted by key. `None`: every entry (§0 F12).
    pub memory_cap: Option<usize>,
    /// Rows (maps) with `name, args, result, timestamp`.
    pub tool_calls: Vec<Value>,
    /// Rows (maps) with `id, desc, status, rounds, note`.
    pub tasks: Vec<Value>,
}

/// A compiled query; compile once, run any number of times.
#[derive(Debug)]
pub struct Program {
    root: ast::Expr,
    uses_memory: bool,
}

impl Program {
    /// Whether running it reads the `memory` relation.
    pub fn uses_memory(&self) -> bool {
        self.uses_memory
    }
}

/// The `memory` relation's rows: every entry (sorted by key) as a row.
pub fn memory_rows(entries: Vec<Arc<Entry>>) -> Arc<Vec<Value>> {
    Arc::new(entries.into_iter().map(Value::Entry).collect())
}

pub fn compile(source: &str) -> Result<Program, QueryError> {
    let parsed = parser::parse(source)?;
    Ok(Program {
        root: parsed.root,
        uses_memory: parsed.uses_memory,
    })
}

pub fn run(program: &Program, relations: &Relations<'_>) -> Result<Value, QueryError> {
    let memory = if program.uses_memory {
        relational::memory_relation((relations.memory)(), relations.memory_cap)
    } else {
        Value::from(Vec::new())
    };
    let mut evaluator = eval::Evaluator::new(
        memory,
        Value::from(relations.tool_calls.clone()),
        Value::from(relations.tasks.clone()),
    );
    let result = evaluator.eval(&program.root)?;
    if !json::fits_result_limit(&result) {
        return Err(QueryError {
            kind: ErrorKind::Run,
            message: format!(
                "the result is too large (over {} MiB as JSON); narrow the query",
                json::MAX_RESULT_BYTES >> 20
            ),
            position: None,
        });
    }
    Ok(result)
}

/// `compile` then `run`.
pub fn evaluate(source: &str, relations: &Relations<'_>) -> Result<Value, QueryError> {
    run(&compile(source)?, relations)
}

/// Whether `value` is a list of rows (maps or `memory` entries); an empty
/// list counts. Such a result becomes `{"count", "rows", "truncated"}`.
pub fn is_row_list(value: &Value) -> bool {
    matches!(value, Value::List(items) if items.iter().all(Value::is_row))
}
