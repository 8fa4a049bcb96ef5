//! All `PyO3` glue: the `membolt._core` module. Thin by design: argument
//! conversion (`args.rs`), releasing the GIL around store calls
//! (`store.rs`), the typed requests (`requests.rs`), entries (`entry.rs`),
//! query values (`query_values.rs`), and mapping core errors to the
//! exception classes of `membolt.errors` (`errors.rs`).

mod args;
mod entry;
mod errors;
mod query_values;
mod requests;
mod store;
mod vectors;

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use args::{DEFAULT_TIMEOUT_SECONDS, busy_timeout, count_arg, text_arg};
use errors::to_py_err;

/// §6.8: a `text` longer than `limit` UTF-8 bytes is cut at the last
/// character boundary at or before `limit` and marked with `...` (so the
/// result holds at most `limit + 3` bytes); a shorter one is returned as
/// it is.
#[pyfunction]
fn truncate(text: &Bound<'_, PyAny>, limit: &Bound<'_, PyAny>) -> PyResult<String> {
    let limit = count_arg(limit, "limit")?;
    // Borrowed when it is a valid str (tool results can be megabytes).
    match text
        .cast::<pyo3::types::PyString>()
        .ok()
        .and_then(|t| t.to_str().ok())
    {
        Some(text) => Ok(crate::text::truncate(text, limit)),
        None => Ok(crate::text::truncate(&text_arg(text, "text")?, limit)),
    }
}

/// §5.4 flattening without XML escaping (`memory_search` lines).
#[pyfunction]
fn flatten_plain(text: &str) -> String {
    crate::text::flatten_plain(text).into_owned()
}

/// §5.4: flatten line breaks, escape `& < >`, replace control and bidi
/// characters, as for every name and value of the `<memory>` block.
#[pyfunction]
fn escape_line(text: &str) -> String {
    crate::text::escape_line(text).into_owned()
}

/// §15.1: every term of `text`, in order (what the ranked search indexes).
#[pyfunction]
fn terms(text: &str) -> Vec<String> {
    crate::text::terms(text)
}

/// §15.1: the significant terms of a query, each once, in order.
#[pyfunction]
fn query_terms(query: &str) -> Vec<String> {
    crate::text::query_terms(query)
}

/// §12: whether `text` names a PostgreSQL store (`postgresql://`,
/// `postgres://`) rather than a file.
#[pyfunction]
fn is_database_url(text: &str) -> bool {
    crate::store::maintenance::is_database_url(text)
}

/// `membolt doctor`: a read-only check of the store file at `path`.
#[pyfunction]
#[pyo3(signature = (path, timeout = DEFAULT_TIMEOUT_SECONDS))]
#[allow(clippy::needless_pass_by_value)] // PyO3 extracts owned arguments
fn _inspect(py: Python<'_>, path: PathBuf, timeout: f64) -> PyResult<Bound<'_, PyDict>> {
    let timeout = busy_timeout(timeout)?;
    let report = py
        .detach(|| crate::store::maintenance::inspect(&path, timeout))
        .map_err(|e| to_py_err(py, e))?;
    let dict = PyDict::new(py);
    dict.set_item("file_bytes", report.file_bytes)?;
    dict.set_item("entries", report.entries)?;
    dict.set_item("by_type", report.by_type.into_pyobject(py)?)?;
    dict.set_item("problems", report.problems)?;
    dict.set_item("problem_count", report.problem_count)?;
    dict.set_item("notes", report.notes)?;
    Ok(dict)
}

/// `membolt repair`: salvages the store file at `source` into a new store
/// at `target`, leaving `source` as it was.
#[pyfunction]
#[pyo3(signature = (source, target, timeout = DEFAULT_TIMEOUT_SECONDS))]
#[allow(clippy::needless_pass_by_value)] // PyO3 extracts owned arguments
fn _salvage(
    py: Python<'_>,
    source: PathBuf,
    target: PathBuf,
    timeout: f64,
) -> PyResult<Bound<'_, PyDict>> {
    let timeout = busy_timeout(timeout)?;
    let salvage = py
        .detach(|| crate::store::maintenance::salvage(&source, &target, timeout))
        .map_err(|e| to_py_err(py, e))?;
    let dict = PyDict::new(py);
    dict.set_item("saved", salvage.saved)?;
    dict.set_item("from_journal", salvage.from_journal)?;
    dict.set_item("lost_keys", salvage.lost_keys)?;
    dict.set_item("unreadable", salvage.unreadable)?;
    dict.set_item("lost_changes", salvage.lost_changes)?;
    dict.set_item("rolled_back", salvage.rolled_back)?;
    dict.set_item("notes", salvage.notes)?;
    Ok(dict)
}

/// Closes every lease this process holds (at exit).
#[pyfunction]
fn _release_all(py: Python<'_>) {
    py.detach(crate::store::release_all_leases);
}

/// Before `fork`: waits for the store calls of other threads to end, holds
/// new ones back (see `fork_gate.rs`) and closes every lease.
#[pyfunction]
fn _before_fork(py: Python<'_>) {
    py.detach(|| {
        crate::fork_gate::close();
        crate::store::release_all_leases();
    });
}

/// After `fork`, in the parent: lets store calls run again.
#[pyfunction]
fn _after_fork_in_parent() {
    crate::fork_gate::open();
}

/// In a forked child: drop inherited leases without touching the file, then
/// let store calls run.
#[pyfunction]
fn _after_fork_in_child() {
    crate::store::forget_inherited_leases();
    crate::fork_gate::open();
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Images written by this process carry the views' indexes, even when
    // it only saves (a hook), so the next process need not build them.
    crate::views::register_image_sections();
    m.add_class::<entry::PyEntry>()?;
    m.add_class::<store::PyStore>()?;
    m.add_class::<requests::PySaveRequest>()?;
    m.add_class::<requests::PyCap>()?;
    m.add_function(wrap_pyfunction!(truncate, m)?)?;
    m.add_function(wrap_pyfunction!(flatten_plain, m)?)?;
    m.add_function(wrap_pyfunction!(escape_line, m)?)?;
    m.add_function(wrap_pyfunction!(terms, m)?)?;
    m.add_function(wrap_pyfunction!(query_terms, m)?)?;
    m.add_function(wrap_pyfunction!(_release_all, m)?)?;
    m.add_function(wrap_pyfunction!(_before_fork, m)?)?;
    m.add_function(wrap_pyfunction!(_after_fork_in_parent, m)?)?;
    m.add_function(wrap_pyfunction!(_after_fork_in_child, m)?)?;
    m.add_function(wrap_pyfunction!(_inspect, m)?)?;
    m.add_function(wrap_pyfunction!(_salvage, m)?)?;
    m.add_function(wrap_pyfunction!(is_database_url, m)?)?;
    m.add(
        "POSTGRES_SCHEMA_VERSION",
        crate::store::maintenance::DATABASE_SCHEMA_VERSION,
    )?;
    m.add(
        "SCHEMA_VERSION",
        crate::store::maintenance::FILE_SCHEMA_VERSION,
    )?;
    // Benchmarks refuse to report figures of an unoptimised build.
    m.add("DEBUG_BUILD", cfg!(debug_assertions))?;
    m.add("MAX_KEY_BYTES", crate::store::MAX_KEY_BYTES)?;
    m.add(
        "STORE_COMPANION_SUFFIXES",
        PyTuple::new(m.py(), crate::store::maintenance::COMPANION_SUFFIXES)?,
    )?;
    m.add("DEFAULT_TIMEOUT", DEFAULT_TIMEOUT_SECONDS)?;
    m.add(
        "DEFAULT_QUERY_LIMIT",
        crate::views::query::DEFAULT_QUERY_LIMIT,
    )?;
    m.add(
        "DEFAULT_MAX_TOKENS",
        crate::views::render::DEFAULT_MAX_TOKENS,
    )?;
    m.add(
        "ENTRY_FIELDS",
        PyTuple::new(m.py(), entry::json_field_names())?,
    )?;
    Ok(())
}
