//! All `PyO3` glue: the `membolt._core` module. Thin by design: argument
//! conversion, releasing the GIL around store calls, and mapping
//! [`StoreError`] to the exception classes of `membolt.errors` (defined in
//! Python so that `StoreBusyError` can also be a `TimeoutError`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};

use crate::entry::Entry;
use crate::error::StoreError;
use crate::query::{self, ErrorKind, Map, QueryError, Relations, Value};
use crate::store::{self, BatchOp, BatchOutcome, SaveRequest, Store};

/// The Python class for each error kind, imported once from `membolt.errors`.
fn error_class<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
) -> PyResult<&'py Bound<'py, PyType>> {
    cell.import(py, "membolt.errors", name)
}

/// The one place where core errors become Python exceptions.
#[allow(clippy::needless_pass_by_value)] // used as `map_err(|e| to_py_err(py, e))`
fn to_py_err(py: Python<'_>, error: StoreError) -> PyErr {
    static BUSY: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    static CORRUPT: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    static VERSION: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    static STORE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let message = error.to_string();
    let class = match &error {
        StoreError::InvalidArgument(_) => return PyValueError::new_err(message),
        StoreError::MissingKey(key) => return PyKeyError::new_err(key.clone()),
        StoreError::Busy { .. } => error_class(py, &BUSY, "StoreBusyError"),
        StoreError::Corrupt { .. } => error_class(py, &CORRUPT, "CorruptStoreError"),
        StoreError::NewerSchema { .. } => error_class(py, &VERSION, "StoreVersionError"),
        StoreError::Closed { .. } | StoreError::Io { .. } => error_class(py, &STORE, "StoreError"),
    };
    match class {
        Ok(class) => PyErr::from_type(class.clone(), message),
        Err(import_error) => import_error,
    }
}

/// `TypeError` that is also a `ValueError` (BEHAVIOUR §1.5 asks for a
/// `ValueError` on a non-string key; Python convention expects `TypeError`).
fn argument_type_error(py: Python<'_>, message: String) -> PyErr {
    static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    match error_class(py, &CLASS, "ArgumentTypeError") {
        Ok(class) => PyErr::from_type(class.clone(), message),
        Err(import_error) => import_error,
    }
}

/// Extracts a `str` argument, naming it in the error.
fn text_arg(value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    match value.cast::<PyString>() {
        Ok(text) => Ok(text
            .to_str()
            .map_err(|_| {
                PyValueError::new_err(format!(
                    "{what} holds a lone UTF-16 surrogate, which UTF-8 cannot store"
                ))
            })?
            .to_owned()),
        Err(_) => Err(argument_type_error(
            value.py(),
            format!("{what} must be a str, not {}", type_name(value)),
        )),
    }
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "?".into(), |n| n.to_string())
}

/// An `int` argument beyond `i64` (a budget, a clock) means the same as the
/// end of `i64` it is past, rather than an `OverflowError`.
fn clamped_int(value: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    if !value.is_instance_of::<pyo3::types::PyInt>() {
        return Err(argument_type_error(
            value.py(),
            format!("{what} must be an int, not {}", type_name(value)),
        ));
    }
    match value.extract::<i64>() {
        Ok(number) => Ok(number),
        Err(_) if value.lt(0)? => Ok(i64::MIN),
        Err(_) => Ok(i64::MAX),
    }
}

fn optional_clamped_int(value: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<i64>> {
    match value {
        Some(value) if !value.is_none() => clamped_int(value, what).map(Some),
        _ => Ok(None),
    }
}

/// A count (a limit, a number of keys): negative is a `ValueError`; one
/// beyond `usize` means "all".
fn count_arg(value: &Bound<'_, PyAny>, what: &str) -> PyResult<usize> {
    let number = clamped_int(value, what)?;
    if number < 0 {
        return Err(PyValueError::new_err(format!(
            "{what} must not be negative, not {number}"
        )));
    }
    Ok(usize::try_from(number).unwrap_or(usize::MAX))
}

fn optional_text_arg(value: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<String>> {
    match value {
        Some(value) if !value.is_none() => text_arg(value, what).map(Some),
        _ => Ok(None),
    }
}

/// A list or tuple of `str`, or `None`.
fn references_arg(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<String>>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if value.is_instance_of::<PyString>() {
        return Err(argument_type_error(
            value.py(),
            "references must be a list of keys, not a str".into(),
        ));
    }
    let mut references = Vec::new();
    for item in value
        .try_iter()
        .map_err(|_| argument_type_error(value.py(), "references must be a list of keys".into()))?
    {
        references.push(text_arg(&item?, "each reference")?);
    }
    Ok(Some(references))
}

/// A stored entry, immutable. Equal entries compare equal and hash alike.
#[pyclass(frozen, name = "Entry", module = "membolt")]
pub struct PyEntry {
    inner: Arc<Entry>,
}

impl PyEntry {
    fn wrap(entry: Arc<Entry>) -> PyEntry {
        PyEntry { inner: entry }
    }
}

#[pymethods]
impl PyEntry {
    #[getter]
    fn key(&self) -> &str {
        &self.inner.key
    }

    #[getter]
    fn value(&self) -> &str {
        &self.inner.value
    }

    #[getter(r#type)]
    fn kind(&self) -> &str {
        &self.inner.kind
    }

    #[getter]
    fn namespace(&self) -> &str {
        &self.inner.namespace
    }

    #[getter]
    fn references<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.references.iter().map(|r| &**r))
    }

    #[getter]
    fn created_at(&self) -> i64 {
        self.inner.created_at
    }

    #[getter]
    fn updated_at(&self) -> i64 {
        self.inner.updated_at
    }

    /// The JSON form of BEHAVIOUR §1.2.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        entry_dict(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        let e = &self.inner;
        format!(
            "Entry(key={:?}, type={:?}, value={:?}, references={:?}, updated_at={})",
            &*e.key, &*e.kind, &*e.value, e.references, e.updated_at
        )
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyEntry>()
            .is_ok_and(|other| *other.get().inner == *self.inner)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.inner.key.hash(&mut hasher);
        self.inner.updated_at.hash(&mut hasher);
        hasher.finish()
    }
}

/// An entry in the JSON form of BEHAVIOUR §1.2 (export, query rows).
fn entry_dict<'py>(py: Python<'py>, e: &Entry) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("key", &*e.key)?;
    dict.set_item("value", &*e.value)?;
    dict.set_item("namespace", &*e.namespace)?;
    dict.set_item("type", &*e.kind)?;
    dict.set_item(
        "references",
        PyList::new(py, e.references.iter().map(|r| &**r))?,
    )?;
    dict.set_item("createdAt", e.created_at)?;
    dict.set_item("updatedAt", e.updated_at)?;
    Ok(dict)
}

/// Rows handed in by Python (`tool_calls`, `tasks`) become query values.
/// Anything that is not JSON-like is kept as its `str()`; nesting deeper
/// than `ROW_DEPTH` likewise, so a row stays within the engine's limits.
fn to_query_value(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    const ROW_DEPTH: usize = 3;
    if obj.is_none() {
        return Ok(Value::Nil);
    }
    if let Ok(flag) = obj.cast::<pyo3::types::PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if obj.is_instance_of::<pyo3::types::PyInt>() {
        if let Ok(n) = obj.extract::<i64>() {
            return Ok(Value::Int(n));
        }
    } else if let Ok(f) = obj.cast::<pyo3::types::PyFloat>() {
        return Ok(Value::Float(f.value()));
    } else if let Ok(text) = obj.cast::<PyString>() {
        return Ok(Value::from(text.to_str()?));
    } else if depth < ROW_DEPTH {
        if let Ok(dict) = obj.cast::<PyDict>() {
            let mut pairs = Vec::with_capacity(dict.len());
            for (key, value) in dict.iter() {
                let key: Arc<str> = key.str()?.to_str()?.into();
                pairs.push((key, to_query_value(&value, depth + 1)?));
            }
            return Ok(Value::Map(Map::from_pairs(pairs)));
        }
        if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
            let items = obj
                .try_iter()?
                .map(|item| to_query_value(&item?, depth + 1))
                .collect::<PyResult<Vec<_>>>()?;
            return Ok(Value::from(items));
        }
    }
    Ok(Value::from(obj.str()?.to_str()?))
}

fn rows_arg(rows: &Bound<'_, PyAny>) -> PyResult<Vec<Value>> {
    rows.try_iter()?
        .map(|row| to_query_value(&row?, 0))
        .collect()
}

/// A query value as plain Python data (`memory` rows as dicts).
fn from_query_value(py: Python<'_>, value: &Value) -> PyResult<Py<PyAny>> {
    Ok(match value {
        Value::Nil => py.None(),
        Value::Bool(flag) => pyo3::types::PyBool::new(py, *flag)
            .to_owned()
            .into_any()
            .unbind(),
        Value::Int(n) => n.into_pyobject(py)?.into_any().unbind(),
        Value::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        Value::Str(text) => PyString::new(py, text).into_any().unbind(),
        Value::List(items) => {
            let list = PyList::empty(py);
            for item in items.iter() {
                list.append(from_query_value(py, item)?)?;
            }
            list.into_any().unbind()
        }
        Value::Map(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map.iter() {
                dict.set_item(&**key, from_query_value(py, item)?)?;
            }
            dict.into_any().unbind()
        }
        Value::Entry(entry) => entry_dict(py, entry)?.into_any().unbind(),
    })
}

/// BEHAVIOUR §9.3: a list of rows becomes `{"count", "rows", "truncated"}`
/// with only the first `limit` rows converted; anything else as it is.
fn query_result(py: Python<'_>, value: &Value, limit: usize) -> PyResult<Py<PyAny>> {
    match value {
        Value::List(rows) if query::is_row_list(value) => {
            let dict = PyDict::new(py);
            let shown = PyList::empty(py);
            for row in rows.iter().take(limit) {
                shown.append(from_query_value(py, row)?)?;
            }
            dict.set_item("count", rows.len())?;
            dict.set_item("rows", shown)?;
            dict.set_item("truncated", rows.len() > limit)?;
            Ok(dict.into_any().unbind())
        }
        other => from_query_value(py, other),
    }
}

/// `membolt.errors.QueryError` with its `kind` and `position`.
fn query_error(py: Python<'_>, error: &QueryError) -> PyErr {
    static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let build = || -> PyResult<PyErr> {
        let class = error_class(py, &CLASS, "QueryError")?;
        let kwargs = PyDict::new(py);
        let kind = match error.kind {
            ErrorKind::Compile => "compile",
            ErrorKind::Run => "run",
        };
        kwargs.set_item("kind", kind)?;
        kwargs.set_item("position", error.position)?;
        let instance = class.call((error.to_string(),), Some(&kwargs))?;
        Ok(PyErr::from_value(instance))
    };
    build().unwrap_or_else(|import_error| import_error)
}

/// Stack for the evaluator's thread: its deepest accepted queries need a few
/// hundred KiB, more than a Python thread may have been given.
const QUERY_STACK_BYTES: usize = 16 << 20;

fn entries_to_list(py: Python<'_>, entries: Vec<Arc<Entry>>) -> PyResult<Bound<'_, PyList>> {
    PyList::new(py, entries.into_iter().map(PyEntry::wrap))
}

/// `(key, value, type | None, inferred type, parent type | None, references | None)`.
type SaveManyItem<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Option<Bound<'py, PyAny>>,
    String,
    Option<String>,
    Option<Bound<'py, PyAny>>,
);

/// Requests from `_save_many` items (see [`SaveManyItem`]).
fn save_many_requests(items: &Bound<'_, PyAny>) -> PyResult<Vec<SaveRequest>> {
    let mut requests = Vec::new();
    for item in items.try_iter()? {
        let (key, value, kind, inferred, parent, references): SaveManyItem<'_> = item?.extract()?;
        requests.push(save_request(
            &key,
            &value,
            kind.as_ref(),
            inferred,
            None,
            references.as_ref(),
            parent,
        )?);
    }
    Ok(requests)
}

/// The store engine. `membolt.MemoryStore` subclasses it and adds the
/// Python-side rules (type inference, parent types) before calling the
/// underscore methods.
#[pyclass(subclass, frozen, name = "Store", module = "membolt._core")]
pub struct PyStore {
    inner: Store,
}

impl PyStore {
    /// Runs a store call without the GIL, mapping its error.
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        call: impl FnOnce(&Store) -> Result<T, StoreError> + Send,
    ) -> PyResult<T> {
        let store = &self.inner;
        py.detach(|| call(store)).map_err(|e| to_py_err(py, e))
    }
}

fn save_request(
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    kind: Option<&Bound<'_, PyAny>>,
    inferred_kind: String,
    namespace: Option<&Bound<'_, PyAny>>,
    references: Option<&Bound<'_, PyAny>>,
    parent_kind: Option<String>,
) -> PyResult<SaveRequest> {
    Ok(SaveRequest {
        key: text_arg(key, "key")?,
        value: text_arg(value, "value")?,
        kind: optional_text_arg(kind, "type")?,
        inferred_kind,
        namespace: optional_text_arg(namespace, "namespace")?,
        references: references_arg(references)?,
        parent_kind,
    })
}

/// §1.4's busy timeout in seconds, the default of every `timeout` argument.
const DEFAULT_TIMEOUT_SECONDS: f64 = store::DEFAULT_BUSY_TIMEOUT.as_secs_f64();
/// The longest accepted timeout (about 31 years): a deadline past it could
/// overflow the clock.
const MAX_TIMEOUT_SECONDS: f64 = 1e9;

/// A `timeout` argument as a duration, or a `ValueError` naming the range.
fn busy_timeout(seconds: f64) -> PyResult<Duration> {
    if seconds.is_finite() && (0.0..=MAX_TIMEOUT_SECONDS).contains(&seconds) {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(PyValueError::new_err(format!(
            "timeout must be a number of seconds from 0 to {MAX_TIMEOUT_SECONDS:e}, not {seconds}"
        )))
    }
}

#[pymethods]
impl PyStore {
    #[new]
    #[pyo3(signature = (path, *, timeout = DEFAULT_TIMEOUT_SECONDS))]
    #[allow(clippy::needless_pass_by_value)] // PyO3 extracts owned arguments
    fn new(py: Python<'_>, path: PathBuf, timeout: f64) -> PyResult<Self> {
        let inner = Store::open(&path, busy_timeout(timeout)?).map_err(|e| to_py_err(py, e))?;
        Ok(PyStore { inner })
    }

    /// The absolute path of the store file.
    #[getter]
    fn path(&self) -> PathBuf {
        self.inner.path().to_path_buf()
    }

    /// Seconds to wait for another process before `StoreBusyError`.
    #[getter]
    fn timeout(&self) -> f64 {
        self.inner.busy_timeout().as_secs_f64()
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    fn get(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<PyEntry>> {
        let key = text_arg(key, "key")?;
        Ok(self.run(py, |s| s.get(&key))?.map(PyEntry::wrap))
    }

    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = text_arg(key, "key")?;
        self.run(py, |s| s.delete(&key))
    }

    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let keys = self.run(py, Store::keys)?;
        PyList::new(py, keys.iter().map(|k| &**k))
    }

    fn entries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let entries = self.run(py, Store::entries)?;
        entries_to_list(py, entries)
    }

    fn search<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let query = text_arg(query, "query")?;
        let hits = self.run(py, |s| s.search(&query))?;
        entries_to_list(py, hits)
    }

    /// `(total, first limit hits in memory_search order)`.
    fn search_ranked<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'_, PyAny>,
        limit: &Bound<'_, PyAny>,
    ) -> PyResult<(usize, Bound<'py, PyList>)> {
        let query = text_arg(query, "query")?;
        let limit = count_arg(limit, "limit")?;
        let (total, hits) = self.run(py, |s| s.search_ranked(&query, limit))?;
        Ok((total, entries_to_list(py, hits)?))
    }

    fn link(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        parent: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let (key, parent) = (text_arg(key, "key")?, text_arg(parent, "parent")?);
        self.run(py, |s| s.link(&key, &parent))
    }

    fn unlink(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        parent: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let (key, parent) = (text_arg(key, "key")?, text_arg(parent, "parent")?);
        self.run(py, |s| s.unlink(&key, &parent))
    }

    fn parents<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let key = text_arg(key, "key")?;
        let keys = self.run(py, |s| s.parents(&key))?;
        PyList::new(py, keys.iter().map(|k| &**k))
    }

    fn children<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let key = text_arg(key, "key")?;
        let keys = self.run(py, |s| s.children(&key))?;
        PyList::new(py, keys.iter().map(|k| &**k))
    }

    /// The `<memory>` block (BEHAVIOUR §5); `now_ms` pins the clock.
    #[pyo3(
        signature = (focus = None, max_tokens = None, now_ms = None),
        text_signature = "($self, focus='', max_tokens=500, now_ms=None)"
    )]
    fn render(
        &self,
        py: Python<'_>,
        focus: Option<&Bound<'_, PyAny>>,
        max_tokens: Option<&Bound<'_, PyAny>>,
        now_ms: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let focus = optional_text_arg(focus, "focus")?.unwrap_or_default();
        let max_tokens = optional_clamped_int(max_tokens, "max_tokens")?
            .unwrap_or(crate::render::DEFAULT_MAX_TOKENS);
        let now_ms = optional_clamped_int(now_ms, "now_ms")?;
        self.run(py, |s| s.render(&focus, max_tokens, now_ms))
    }

    /// Entries in parents-first order: all, or those related to `key`.
    #[pyo3(signature = (key = None))]
    fn graph<'py>(
        &self,
        py: Python<'py>,
        key: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let key = optional_text_arg(key, "key")?;
        let entries = self.run(py, |s| s.graph(key.as_deref()))?;
        entries_to_list(py, entries)
    }

    /// The keys of the `n` newest entries, newest first.
    fn newest_keys<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let n = count_arg(n, "n")?;
        let (keys, _) = self.run(py, |s| s.newest_keys(n))?;
        PyList::new(py, keys.iter().map(|k| &**k))
    }

    /// `(block, newest keys, entry count)` for the §5.9 section, from one
    /// read of the store.
    fn _prompt_parts<'py>(
        &self,
        py: Python<'py>,
        focus: &Bound<'_, PyAny>,
        max_tokens: &Bound<'_, PyAny>,
        now_ms: Option<&Bound<'_, PyAny>>,
        key_limit: usize,
    ) -> PyResult<(String, Bound<'py, PyList>, usize)> {
        let focus = text_arg(focus, "focus")?;
        let max_tokens = clamped_int(max_tokens, "max_tokens")?;
        let now_ms = optional_clamped_int(now_ms, "now_ms")?;
        let (block, keys, total) = self.run(py, |s| {
            s.prompt_parts(&focus, max_tokens, now_ms, key_limit)
        })?;
        Ok((block, PyList::new(py, keys.iter().map(|k| &**k))?, total))
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.run(py, Store::len)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(key) = key.cast::<PyString>() else {
            return Ok(false);
        };
        let key = key.to_str()?.to_owned();
        self.run(py, |s| s.contains(&key))
    }

    fn close(&self) {
        self.inner.close();
    }

    /// Takes the write lock and keeps it until `_unhold` (see `hold()`).
    fn _hold(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, Store::hold)
    }

    fn _unhold(&self, py: Python<'_>) {
        let store = &self.inner;
        py.detach(|| store.unhold());
    }

    /// One save; the caller supplies `classify(key)` and the wanted parent type.
    #[pyo3(signature = (key, value, kind, inferred_kind, namespace, references, parent_kind))]
    #[allow(clippy::too_many_arguments)]
    fn _save(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        kind: Option<&Bound<'_, PyAny>>,
        inferred_kind: String,
        namespace: Option<&Bound<'_, PyAny>>,
        references: Option<&Bound<'_, PyAny>>,
        parent_kind: Option<String>,
    ) -> PyResult<PyEntry> {
        let request = save_request(
            key,
            value,
            kind,
            inferred_kind,
            namespace,
            references,
            parent_kind,
        )?;
        self.run(py, |s| s.save(request)).map(PyEntry::wrap)
    }

    /// The §3.3 batch: items are `(key, value, type | None, inferred type,
    /// parent type | None, references | None)`; `then` holds plain saves of
    /// the same shape made after the batch, in the same transaction.
    #[pyo3(signature = (items, apply_caps, then = None))]
    fn _save_many<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'_, PyAny>,
        apply_caps: bool,
        then: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let requests = save_many_requests(items)?;
        let then = then
            .map(save_many_requests)
            .transpose()?
            .unwrap_or_default();
        let saved = self.run(py, |s| s.save_many(requests, apply_caps, then))?;
        entries_to_list(py, saved)
    }

    /// Applies `batch()` operations in one transaction. Each op is a tuple:
    /// `("save", key, value, type, inferred, namespace, references, parent)`,
    /// `("delete", key)`, `("link", key, parent)` or `("unlink", key, parent)`.
    fn _apply_batch<'py>(
        &self,
        py: Python<'py>,
        ops: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut batch = Vec::new();
        for op in ops.try_iter()? {
            let op = op?;
            let op = op.cast::<PyTuple>()?;
            let name: String = op.get_item(0)?.extract()?;
            let arg = |i: usize| op.get_item(i);
            batch.push(match name.as_str() {
                "save" => {
                    let (kind, namespace, references) = (arg(3)?, arg(5)?, arg(6)?);
                    BatchOp::Save(save_request(
                        &arg(1)?,
                        &arg(2)?,
                        Some(&kind),
                        arg(4)?.extract()?,
                        Some(&namespace),
                        Some(&references),
                        arg(7)?.extract()?,
                    )?)
                }
                "delete" => BatchOp::Delete(text_arg(&arg(1)?, "key")?),
                "link" => BatchOp::Link {
                    key: text_arg(&arg(1)?, "key")?,
                    parent: text_arg(&arg(2)?, "parent")?,
                },
                "unlink" => BatchOp::Unlink {
                    key: text_arg(&arg(1)?, "key")?,
                    parent: text_arg(&arg(2)?, "parent")?,
                },
                other => {
                    return Err(PyValueError::new_err(format!(
                        "unknown batch operation {other:?}"
                    )));
                }
            });
        }
        let outcomes = self.run(py, |s| s.apply_batch(batch))?;
        let list = PyList::empty(py);
        for outcome in outcomes {
            match outcome {
                BatchOutcome::Saved(entry) => list.append(PyEntry::wrap(entry))?,
                BatchOutcome::Deleted(done) | BatchOutcome::Linked(done) => list.append(done)?,
            }
        }
        Ok(list)
    }

    /// Runs a `memory_query` expression (BEHAVIOUR §9) over this store and
    /// the given `tool_calls` and `tasks` rows; returns the §9.3 result.
    #[pyo3(signature = (source, tool_calls, tasks, limit, memory_cap = None))]
    fn _query(
        &self,
        py: Python<'_>,
        source: &str,
        tool_calls: &Bound<'_, PyAny>,
        tasks: &Bound<'_, PyAny>,
        limit: usize,
        memory_cap: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let memory_cap = match memory_cap {
            Some(cap) if !cap.is_none() => Some(count_arg(cap, "memory_cap")?),
            _ => None,
        };
        let relations = (rows_arg(tool_calls)?, rows_arg(tasks)?);
        let store = &self.inner;
        let outcome = py.detach(|| {
            std::thread::scope(|scope| {
                let worker = std::thread::Builder::new()
                    .name("membolt-query".into())
                    .stack_size(QUERY_STACK_BYTES)
                    .spawn_scoped(scope, || {
                        evaluate_query(store, source, relations, memory_cap)
                    })
                    .map_err(|e| StoreError::io(store.path(), e))?;
                worker.join().unwrap_or_else(|_| {
                    Ok(Err(QueryError {
                        kind: ErrorKind::Run,
                        message: "the query engine failed".into(),
                        position: None,
                    }))
                })
            })
        });
        match outcome {
            Ok(Ok(value)) => query_result(py, &value, limit),
            Ok(Err(error)) => Err(query_error(py, &error)),
            Err(error) => Err(to_py_err(py, error)),
        }
    }

    /// Writes entries verbatim (import): dicts in the JSON form of §1.2.
    /// Returns how many changed the store.
    fn _put_exact(&self, py: Python<'_>, entries: &Bound<'_, PyAny>) -> PyResult<usize> {
        let mut batch = Vec::new();
        for item in entries.try_iter()? {
            let item = item?;
            let field = |name: &str| item.get_item(name);
            let references = references_arg(Some(&field("references")?))?.unwrap_or_default();
            batch.push(Entry {
                key: text_arg(&field("key")?, "key")?.into(),
                value: text_arg(&field("value")?, "value")?.into(),
                kind: text_arg(&field("type")?, "type")?.into(),
                namespace: text_arg(&field("namespace")?, "namespace")?.into(),
                references: references.into_iter().map(Arc::from).collect(),
                created_at: field("createdAt")?.extract()?,
                updated_at: field("updatedAt")?.extract()?,
            });
        }
        self.run(py, |s| s.put_exact(batch))
    }
}

/// Compiles and runs a query; `memory` is read from the store only when the
/// query names it. Store errors and query errors stay apart.
fn evaluate_query(
    store: &Store,
    source: &str,
    (tool_calls, tasks): (Vec<Value>, Vec<Value>),
    memory_cap: Option<usize>,
) -> Result<Result<Value, QueryError>, StoreError> {
    let program = match query::compile(source) {
        Ok(program) => program,
        Err(error) => return Ok(Err(error)),
    };
    let entries = if program.uses_memory() {
        store.entries()?
    } else {
        Vec::new()
    };
    // The engine asks for `memory` once per run; hand over the vector
    // instead of copying 100k pointers.
    let entries = std::sync::Mutex::new(Some(entries));
    let relations = Relations {
        memory: &|| {
            entries
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
                .unwrap_or_default()
        },
        memory_cap,
        tool_calls,
        tasks,
    };
    Ok(query::run(&program, &relations))
}

/// BEHAVIOUR §6.8: cut `text` to at most `limit` UTF-8 bytes at a character
/// boundary and mark the cut with `...`.
#[pyfunction]
fn truncate(text: &Bound<'_, PyAny>, limit: &Bound<'_, PyAny>) -> PyResult<String> {
    let limit = count_arg(limit, "limit")?;
    // Borrowed when it is a valid str (tool results can be megabytes).
    match text.cast::<PyString>().ok().and_then(|t| t.to_str().ok()) {
        Some(text) => Ok(crate::text::truncate(text, limit)),
        None => Ok(crate::text::truncate(&text_arg(text, "text")?, limit)),
    }
}

/// Test support: writes a file the public API cannot produce (see
/// `store::write_test_fixture`).
#[pyfunction]
#[allow(clippy::needless_pass_by_value)] // PyO3 extracts owned arguments
fn _write_test_fixture(py: Python<'_>, path: PathBuf, kind: &str) -> PyResult<()> {
    store::write_test_fixture(&path, kind).map_err(|e| to_py_err(py, e))
}

/// BEHAVIOUR §5.4 flattening without XML escaping (`memory_search` lines).
#[pyfunction]
fn flatten_plain(text: &str) -> String {
    crate::text::flatten_plain(text).into_owned()
}

/// `membolt doctor`: a read-only check of the store file at `path`.
#[pyfunction]
#[pyo3(signature = (path, timeout = DEFAULT_TIMEOUT_SECONDS))]
#[allow(clippy::needless_pass_by_value)] // PyO3 extracts owned arguments
fn _inspect(py: Python<'_>, path: PathBuf, timeout: f64) -> PyResult<Bound<'_, PyDict>> {
    let timeout = busy_timeout(timeout)?;
    let report = py
        .detach(|| crate::doctor::inspect(&path, timeout))
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

/// BEHAVIOUR §5.4: flatten line breaks, escape `& < >`, replace control
/// and bidi characters, as for every name and value of the `<memory>` block.
#[pyfunction]
fn escape_line(text: &str) -> String {
    crate::text::escape_line(text).into_owned()
}

/// Closes every lease this process holds (at exit).
#[pyfunction]
fn _release_all(py: Python<'_>) {
    py.detach(store::release_all_leases);
}

/// Before `fork`: waits for the store calls of other threads to end, holds
/// new ones back (see `fork_gate.rs`) and closes every lease.
#[pyfunction]
fn _before_fork(py: Python<'_>) {
    py.detach(|| {
        crate::fork_gate::close();
        store::release_all_leases();
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
    store::forget_inherited_leases();
    crate::fork_gate::open();
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEntry>()?;
    m.add_class::<PyStore>()?;
    m.add_function(wrap_pyfunction!(truncate, m)?)?;
    m.add_function(wrap_pyfunction!(flatten_plain, m)?)?;
    m.add_function(wrap_pyfunction!(escape_line, m)?)?;
    m.add_function(wrap_pyfunction!(_release_all, m)?)?;
    m.add_function(wrap_pyfunction!(_before_fork, m)?)?;
    m.add_function(wrap_pyfunction!(_after_fork_in_parent, m)?)?;
    m.add_function(wrap_pyfunction!(_after_fork_in_child, m)?)?;
    m.add_function(wrap_pyfunction!(_write_test_fixture, m)?)?;
    m.add_function(wrap_pyfunction!(_inspect, m)?)?;
    m.add("SCHEMA_VERSION", store::SCHEMA_VERSION)?;
    // Benchmarks refuse to report figures of an unoptimised build.
    m.add("DEBUG_BUILD", cfg!(debug_assertions))?;
    m.add("MAX_KEY_BYTES", store::MAX_KEY_BYTES)?;
    m.add(
        "STORE_COMPANION_SUFFIXES",
        PyTuple::new(m.py(), store::COMPANION_SUFFIXES)?,
    )?;
    m.add("DEFAULT_TIMEOUT", DEFAULT_TIMEOUT_SECONDS)?;
    m.add("DEFAULT_MAX_TOKENS", crate::render::DEFAULT_MAX_TOKENS)?;
    m.add("TOOL_RESULT_CAP", store::TOOL_RESULT_CAP)?;
    m.add("THINKING_CAP", store::THINKING_CAP)?;
    m.add("LOW_SIGNAL_CAP", store::LOW_SIGNAL_CAP)?;
    Ok(())
}
