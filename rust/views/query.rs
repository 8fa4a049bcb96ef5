//! Running a `memory_query` expression (§9) over a store: the `memory`
//! relation comes from the mirror, `tool_calls` and `tasks` from the caller.

use std::sync::Arc;

use crate::error::StoreError;
use crate::query::{self, ErrorKind, QueryError, Relations, Value};
use crate::store::Store;

/// §9.3: rows of a result when the caller names no limit (the tool's
/// default too, which Python reads from here).
pub const DEFAULT_QUERY_LIMIT: usize = 50;

/// Stack for the evaluator's thread: its deepest accepted queries need a few
/// hundred KiB, more than the calling thread (a Python thread, say) may
/// have been given.
const QUERY_STACK_BYTES: usize = 16 << 20;

/// The rows the caller supplies and the cap on `memory`.
pub struct QueryInput {
    pub tool_calls: Vec<Value>,
    pub tasks: Vec<Value>,
    /// Only the newest this many entries form `memory` (F12: none by default).
    pub memory_cap: Option<usize>,
}

/// Compiles and runs `source` on a thread with a stack large enough for
/// any accepted query. Store errors and query errors stay apart: the outer
/// result is the store's, the inner the query's.
pub fn evaluate(
    store: &Store,
    source: &str,
    input: QueryInput,
) -> Result<Result<Value, QueryError>, StoreError> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("membolt-query".into())
            .stack_size(QUERY_STACK_BYTES)
            .spawn_scoped(scope, || evaluate_here(store, source, input))
            .map_err(|e| StoreError::io(store.location(), e))?;
        worker.join().unwrap_or_else(|_| {
            Ok(Err(QueryError {
                kind: ErrorKind::Run,
                message: "the query engine failed".into(),
                position: None,
            }))
        })
    })
}

/// Compiles and runs a query; `memory` is read from the store only when the
/// query names it.
fn evaluate_here(
    store: &Store,
    source: &str,
    input: QueryInput,
) -> Result<Result<Value, QueryError>, StoreError> {
    let program = match query::compile(source) {
        Ok(program) => program,
        Err(error) => return Ok(Err(error)),
    };
    // The rows are kept with the mirror until the next write, so queries
    // between writes share one list instead of building one each.
    let rows = if program.uses_memory() {
        store.read(crate::views::memory_rows)?
    } else {
        Arc::new(Vec::new())
    };
    let relations = Relations {
        memory: &|| rows.clone(),
        memory_cap: input.memory_cap,
        tool_calls: input.tool_calls,
        tasks: input.tasks,
    };
    Ok(query::run(&program, &relations))
}
