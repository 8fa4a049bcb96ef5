//! `membolt._core.Store`: the store engine. `membolt.MemoryStore` subclasses
//! it and adds the Python-side rules (type inference, parent types, the
//! extraction caps) before calling the underscore methods. Every call runs
//! without the GIL.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use super::args::{
    DEFAULT_TIMEOUT_SECONDS, busy_timeout, clamped_int, count_arg, optional_clamped_int,
    optional_count_arg, optional_text_arg, text_arg,
};
use super::entry::PyEntry;
use super::errors::{query_error, to_py_err};
use super::query_values::{query_result, rows_arg};
use super::requests::{PyCap, PySaveRequest};
use super::vectors::{QueryVector, floats, model_arg, query_vector, to_bytes};
use crate::entry::Entry;
use crate::error::StoreError;
use crate::store::maintenance::is_database_url;
use crate::store::mirror::Mirror;
use crate::store::vectors::hash::text_hash;
use crate::store::vectors::space::normalise;
use crate::store::vectors::{MAX_SET, Row, Space};
use crate::store::{BatchOp, BatchOutcome, SaveRequest, Store};
use crate::views::query::{DEFAULT_QUERY_LIMIT, QueryInput, evaluate};
use crate::views::render::DEFAULT_MAX_TOKENS;
use crate::views::semantic::{self, Meaning};
use crate::views::{graph, prompt, render, search};

/// An entry with its ranked-search score.
type Scored = (Arc<Entry>, f64);

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

    /// Runs `read` on the mirror, with the meaning of `query` (§15.4) when
    /// a query vector is given, without the GIL.
    /// The ranked search behind the three `search_words*` methods: how
    /// many entries qualify, and the first `limit` with their scores.
    fn ranked(
        &self,
        py: Python<'_>,
        query: &Bound<'_, PyAny>,
        limit: Option<usize>,
        embedding: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(usize, Vec<Scored>)> {
        let query = text_arg(query, "query")?;
        let embedding = query_vector(embedding)?;
        self.read_meaning(py, embedding, |m, meaning| {
            semantic::ranked_search(m, &query, meaning, limit)
        })
    }

    fn read_meaning<T: Send>(
        &self,
        py: Python<'_>,
        query: Option<QueryVector>,
        read: impl FnOnce(&Mirror, Option<&Meaning<'_>>) -> T + Send,
    ) -> PyResult<T> {
        match query {
            None => self.run(py, |s| s.read(|m| read(m, None))),
            Some(query) => self.run(py, |s| {
                s.read_with_vectors(query.model, semantic::warm, |m, space| {
                    let meaning = semantic::meaning(m, space, query.vector);
                    read(m, meaning.as_ref())
                })
            }),
        }
    }

    /// Runs `read` on the mirror and the vectors of `model`.
    fn read_space<T: Send>(
        &self,
        py: Python<'_>,
        model: &str,
        dims: usize,
        read: impl FnOnce(&Mirror, &mut Space) -> T + Send,
    ) -> PyResult<T> {
        let model = model_arg(model, dims)?;
        self.run(py, |s| s.read_with_vectors(model, |_| {}, read))
    }
}

/// Lists of at least this many entries are built with Python's cyclic
/// garbage collector paused (see [`entries_to_list`]).
const BULK_OBJECTS: usize = 4096;

/// The entries as a list of `Entry` objects. Every `Entry` is an object
/// the cyclic collector tracks, so building 100k of them would run a young
/// collection every few hundred and let it rescan the heap; nothing they
/// hold can form a cycle, so the collector is paused while a large list is
/// built (and restored as it was).
fn entries_to_list(py: Python<'_>, entries: Vec<Arc<Entry>>) -> PyResult<Bound<'_, PyList>> {
    if entries.len() < BULK_OBJECTS {
        return PyList::new(py, entries.into_iter().map(PyEntry::wrap));
    }
    let gc = py.import("gc")?;
    let was_enabled: bool = gc.call_method0("isenabled")?.extract()?;
    if was_enabled {
        gc.call_method0("disable")?;
    }
    let list = PyList::new(py, entries.into_iter().map(PyEntry::wrap));
    if was_enabled {
        gc.call_method0("enable")?;
    }
    list
}

fn keys_to_list<'py>(py: Python<'py>, keys: &[Arc<str>]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, keys.iter().map(|k| &**k))
}

/// The requests of a sequence of `SaveRequest`s.
fn requests_arg(items: &Bound<'_, PyAny>) -> PyResult<Vec<SaveRequest>> {
    items
        .try_iter()?
        .map(|item| Ok(item?.cast::<PySaveRequest>()?.get().inner.clone()))
        .collect()
}

#[pymethods]
impl PyStore {
    /// A store file at `path`, or (§12) the project `project` on the
    /// PostgreSQL server a `postgresql://` URL names.
    ///
    /// `image_dir`: where this machine keeps a PostgreSQL project's image
    /// (`store/image/`); a store file keeps its own beside it.
    #[new]
    #[pyo3(signature = (path, *, project = None, timeout = DEFAULT_TIMEOUT_SECONDS, image_dir = None))]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        project: Option<&Bound<'_, PyAny>>,
        timeout: f64,
        image_dir: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let image_dir: Option<std::path::PathBuf> =
            image_dir.map(PyAnyMethods::extract).transpose()?;
        let timeout = busy_timeout(timeout)?;
        let url = path
            .cast::<PyString>()
            .ok()
            .and_then(|text| text.to_str().ok())
            .filter(|text| is_database_url(text));
        let project = optional_text_arg(project, "project")?;
        let inner = match (url, project) {
            (Some(url), Some(project)) => {
                Store::open_postgres(url, &project, timeout, image_dir.as_deref())
            }
            (Some(_), None) => {
                return Err(PyValueError::new_err(
                    "a PostgreSQL store needs a project: MemoryStore(url, project=\"name\")",
                ));
            }
            (None, Some(_)) => {
                return Err(PyValueError::new_err(
                    "project names a project of a PostgreSQL store; a store file holds one",
                ));
            }
            (None, None) => Store::open(&path.extract::<PathBuf>()?, timeout),
        };
        Ok(PyStore {
            inner: inner.map_err(|e| to_py_err(py, e))?,
        })
    }

    /// The absolute path of the store file; `None` for a PostgreSQL store.
    #[getter]
    fn path(&self) -> Option<PathBuf> {
        self.inner.path().map(std::path::Path::to_path_buf)
    }

    /// Where the store is, as messages name it.
    #[getter]
    fn location(&self) -> String {
        self.inner.location().to_string()
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
        keys_to_list(py, &keys)
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
        let hits = self.run(py, |s| s.read(|m| search::search(m, &query)))?;
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
        let (total, hits) =
            self.run(py, |s| s.read(|m| search::search_ranked(m, &query, limit)))?;
        Ok((total, entries_to_list(py, hits)?))
    }

    /// §15.3: the entries qualifying for `query`'s terms, in rank order;
    /// `limit` keeps the first so many.
    /// `embedding`, `(model name, the query's vector as float32 bytes)`,
    /// fuses the ranking with the cosine one (§15.4).
    #[pyo3(signature = (query, limit = None, *, embedding = None))]
    fn search_words<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'_, PyAny>,
        limit: Option<&Bound<'_, PyAny>>,
        embedding: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let limit = optional_count_arg(limit)?;
        let (_, hits) = self.ranked(py, query, limit, embedding)?;
        entries_to_list(py, hits.into_iter().map(|(entry, _)| entry).collect())
    }

    /// §15.2: [`Self::search_words`] with each entry's BM25 score, as
    /// `(entry, score)` pairs.
    /// With `embedding` the score is the fused one (§15.4).
    #[pyo3(signature = (query, limit = None, *, embedding = None))]
    fn search_words_scored<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'_, PyAny>,
        limit: Option<&Bound<'_, PyAny>>,
        embedding: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let limit = optional_count_arg(limit)?;
        let (_, hits) = self.ranked(py, query, limit, embedding)?;
        PyList::new(
            py,
            hits.into_iter()
                .map(|(entry, score)| (PyEntry::wrap(entry), score)),
        )
    }

    /// `(total, first limit ranked matches)`, for the `memory_search` tool.
    #[pyo3(signature = (query, limit, *, embedding = None))]
    fn search_words_ranked<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'_, PyAny>,
        limit: &Bound<'_, PyAny>,
        embedding: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(usize, Bound<'py, PyList>)> {
        let limit = count_arg(limit, "limit")?;
        let (total, hits) = self.ranked(py, query, Some(limit), embedding)?;
        let hits = hits.into_iter().map(|(entry, _)| entry).collect();
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
        keys_to_list(py, &keys)
    }

    fn children<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let key = text_arg(key, "key")?;
        let keys = self.run(py, |s| s.children(&key))?;
        keys_to_list(py, &keys)
    }

    /// The `<memory>` block (§5); `now_ms` pins the clock; `embedding`
    /// ranks the focus by meaning too (§15.4). (The text signature spells
    /// the default budget out for `inspect`; a test holds it equal to
    /// `DEFAULT_MAX_TOKENS`.)
    #[pyo3(
        signature = (focus = None, max_tokens = None, now_ms = None, *, embedding = None),
        text_signature = "($self, focus='', max_tokens=500, now_ms=None, *, embedding=None)"
    )]
    fn render(
        &self,
        py: Python<'_>,
        focus: Option<&Bound<'_, PyAny>>,
        max_tokens: Option<&Bound<'_, PyAny>>,
        now_ms: Option<&Bound<'_, PyAny>>,
        embedding: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let focus = optional_text_arg(focus, "focus")?.unwrap_or_default();
        let max_tokens =
            optional_clamped_int(max_tokens, "max_tokens")?.unwrap_or(DEFAULT_MAX_TOKENS);
        let now = optional_clamped_int(now_ms, "now_ms")?.unwrap_or_else(crate::store::now_ms);
        let embedding = query_vector(embedding)?;
        self.read_meaning(py, embedding, |m, meaning| {
            render::render_with(m, &focus, meaning, max_tokens, now)
        })
    }

    /// Entries in parents-first order: all, or those related to `key`.
    #[pyo3(signature = (key = None))]
    fn graph<'py>(
        &self,
        py: Python<'py>,
        key: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let key = optional_text_arg(key, "key")?;
        let entries = self.run(py, |s| s.read(|m| graph::graph(m, key.as_deref())))?;
        entries_to_list(py, entries)
    }

    /// The keys of the `n` newest entries, newest first.
    fn newest_keys<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let n = count_arg(n, "n")?;
        let keys = self.run(py, |s| s.read(|m| prompt::newest_keys(m, n)))?;
        keys_to_list(py, &keys)
    }

    /// `(block, newest keys, entry count)` for the §5.9 section, from one
    /// read of the store.
    #[pyo3(signature = (focus, *, max_tokens, now_ms, key_limit, embedding = None))]
    fn prompt_parts<'py>(
        &self,
        py: Python<'py>,
        focus: &Bound<'_, PyAny>,
        max_tokens: &Bound<'_, PyAny>,
        now_ms: Option<&Bound<'_, PyAny>>,
        key_limit: &Bound<'_, PyAny>,
        embedding: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(String, Bound<'py, PyList>, usize)> {
        let focus = text_arg(focus, "focus")?;
        let max_tokens = clamped_int(max_tokens, "max_tokens")?;
        let now = optional_clamped_int(now_ms, "now_ms")?.unwrap_or_else(crate::store::now_ms);
        let key_limit = count_arg(key_limit, "key_limit")?;
        let embedding = query_vector(embedding)?;
        let parts = self.read_meaning(py, embedding, |m, meaning| {
            prompt::prompt_parts_with(m, &focus, meaning, max_tokens, now, key_limit)
        })?;
        Ok((
            parts.block,
            keys_to_list(py, &parts.newest_keys)?,
            parts.total,
        ))
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

    /// One save (§1.3).
    fn _save(&self, py: Python<'_>, request: &Bound<'_, PySaveRequest>) -> PyResult<PyEntry> {
        let request = request.get().inner.clone();
        self.run(py, |s| s.save(request)).map(PyEntry::wrap)
    }

    /// The §3.3 batch of `requests`, then the plain saves `then`, then
    /// `caps`, all in one transaction; returns the batch's entries.
    #[pyo3(signature = (requests, *, caps, then))]
    fn _save_many<'py>(
        &self,
        py: Python<'py>,
        requests: &Bound<'_, PyAny>,
        caps: &Bound<'_, PyAny>,
        then: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let requests = requests_arg(requests)?;
        let then = requests_arg(then)?;
        let caps = caps
            .try_iter()?
            .map(|cap| Ok(cap?.cast::<PyCap>()?.get().inner.clone()))
            .collect::<PyResult<Vec<_>>>()?;
        let saved = self.run(py, |s| s.save_many(requests, &caps, then))?;
        entries_to_list(py, saved)
    }

    /// Applies `batch()` operations in one transaction. Each op is a tuple:
    /// `("save", SaveRequest)`, `("delete", key)`, `("link", key, parent)`
    /// or `("unlink", key, parent)`. Returns one outcome per op.
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
            let text = |i: usize, what: &str| text_arg(&op.get_item(i)?, what);
            batch.push(match name.as_str() {
                "save" => {
                    BatchOp::Save(op.get_item(1)?.cast::<PySaveRequest>()?.get().inner.clone())
                }
                "delete" => BatchOp::Delete(text(1, "key")?),
                "link" => BatchOp::Link {
                    key: text(1, "key")?,
                    parent: text(2, "parent")?,
                },
                "unlink" => BatchOp::Unlink {
                    key: text(1, "key")?,
                    parent: text(2, "parent")?,
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

    /// Runs a `memory_query` expression (§9) over this store and the given
    /// `tool_calls` and `tasks` rows; returns the §9.3 result with at most
    /// `limit` rows.
    /// (The text signature spells the default out for `inspect`; a test
    /// holds it equal to `DEFAULT_QUERY_LIMIT`.)
    #[pyo3(
        signature = (source, *, tool_calls = None, tasks = None, limit = DEFAULT_QUERY_LIMIT, memory_cap = None),
        text_signature = "($self, source, *, tool_calls=None, tasks=None, limit=50, memory_cap=None)"
    )]
    fn query(
        &self,
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        tool_calls: Option<&Bound<'_, PyAny>>,
        tasks: Option<&Bound<'_, PyAny>>,
        limit: usize,
        memory_cap: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let source = text_arg(source, "query")?;
        let rows = |rows: Option<&Bound<'_, PyAny>>| rows.map_or_else(|| Ok(Vec::new()), rows_arg);
        let input = QueryInput {
            tool_calls: rows(tool_calls)?,
            tasks: rows(tasks)?,
            memory_cap: match memory_cap {
                Some(cap) if !cap.is_none() => Some(count_arg(cap, "memory_cap")?),
                _ => None,
            },
        };
        let store = &self.inner;
        match py.detach(|| evaluate(store, &source, input)) {
            Ok(Ok(value)) => query_result(py, &value, limit),
            Ok(Err(error)) => Err(query_error(py, &error)),
            Err(error) => Err(to_py_err(py, error)),
        }
    }

    // ----- vectors (§15.4) ------------------------------------------------

    /// Stores the vectors of `items`, the `(key, value)` pairs whose texts
    /// were embedded, from `vectors` (float32 bytes, `dims` per vector, in
    /// order): `counts[i]` vectors for item `i` (its set, §15.4; one each
    /// when `counts` is `None`, none for an entry the embedder embeds
    /// nothing of). A set holding a vector with a NaN or an infinity, or
    /// all zeros, is left out. Returns how many sets were stored.
    #[pyo3(signature = (model, dims, items, vectors, counts = None))]
    fn _vectors_put(
        &self,
        py: Python<'_>,
        model: &str,
        dims: usize,
        items: Vec<(String, String)>,
        vectors: &Bound<'_, PyBytes>,
        counts: Option<Vec<usize>>,
    ) -> PyResult<usize> {
        let model = model_arg(model, dims)?;
        let floats = floats(vectors.as_bytes())?;
        let counts = counts.unwrap_or_else(|| vec![1; items.len()]);
        if counts.len() != items.len() {
            return Err(PyValueError::new_err(format!(
                "{} counts for {} items",
                counts.len(),
                items.len()
            )));
        }
        if let Some(&count) = counts.iter().find(|&&c| c > MAX_SET as usize) {
            return Err(PyValueError::new_err(format!(
                "a set of {count} vectors: at most {MAX_SET} per entry"
            )));
        }
        let total: usize = counts.iter().sum();
        if floats.len() != total * dims {
            return Err(PyValueError::new_err(format!(
                "{total} vectors of {dims} dimensions hold {} floats, not {}",
                total * dims,
                floats.len()
            )));
        }
        let mut buffer = Vec::new();
        let mut rest = &floats[..];
        let mut rows = Vec::with_capacity(items.len());
        for ((key, value), count) in items.into_iter().zip(counts) {
            let (set, after) = rest.split_at(count * dims);
            rest = after;
            let mut vectors = set.to_vec();
            if vectors.chunks_exact_mut(dims).all(normalise) {
                rows.push(Row {
                    text_hash: text_hash(&key, &value, &mut buffer),
                    key,
                    vectors,
                });
            }
        }
        let stored = rows.len();
        self.run(py, |s| s.put_vectors(model, &rows))?;
        Ok(stored)
    }

    /// Up to `limit` entries without a vector of `model`, as `(key,
    /// value)` pairs.
    fn _vectors_missing(
        &self,
        py: Python<'_>,
        model: &str,
        dims: usize,
        limit: usize,
    ) -> PyResult<Vec<(String, String)>> {
        let missing = self.read_space(py, model, dims, |m, space| {
            semantic::missing(m, space, limit)
        })?;
        Ok(missing
            .into_iter()
            .map(|e| (e.key.to_string(), e.value.to_string()))
            .collect())
    }

    /// `(entries, entries with a vector of model, vector records that
    /// could not be read)`, for doctor.
    fn _vectors_status(
        &self,
        py: Python<'_>,
        model: &str,
        dims: usize,
    ) -> PyResult<(usize, usize, usize)> {
        self.read_space(py, model, dims, |m, space| {
            (
                m.len(),
                crate::store::vector_calls_with_vector(m, space),
                space.damaged,
            )
        })
    }

    /// The positions of the `(key, value)` pairs that have no vector of
    /// `model` (a save of an unchanged value needs no embedding).
    fn _vectors_lacking(
        &self,
        py: Python<'_>,
        model: &str,
        dims: usize,
        items: Vec<(String, String)>,
    ) -> PyResult<Vec<usize>> {
        self.read_space(py, model, dims, |_, space| {
            let mut buffer = Vec::new();
            items
                .into_iter()
                .enumerate()
                .filter(|(_, (key, value))| space.get(text_hash(key, value, &mut buffer)).is_none())
                .map(|(at, _)| at)
                .collect()
        })
    }

    /// The stored set of vectors (float32 bytes, `dims` per vector, one
    /// after the other) of each `(key, value)`, or `None`.
    fn _vectors_get<'py>(
        &self,
        py: Python<'py>,
        model: &str,
        dims: usize,
        items: Vec<(String, String)>,
    ) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let found: Vec<Option<Vec<f32>>> = self.read_space(py, model, dims, |_, space| {
            let mut buffer = Vec::new();
            items
                .into_iter()
                .map(|(key, value)| {
                    space
                        .get(text_hash(&key, &value, &mut buffer))
                        .map(<[f32]>::to_vec)
                })
                .collect()
        })?;
        Ok(found
            .into_iter()
            .map(|v| v.map(|v| to_bytes(py, &v)))
            .collect())
    }

    /// The entries of `keys` that have a vector of the query's model, by the
    /// cosine of `embedding` (`(model name, the query's vector as float32
    /// bytes)`) with the best of each one's vectors, any sign, in rank order
    /// (highest first, §15.2's ties): the first `limit`, as `(entry,
    /// cosine)` pairs. An unusable query vector (all zeros, a NaN) finds
    /// nothing.
    #[pyo3(signature = (embedding, keys, limit = None))]
    fn _vectors_ranked<'py>(
        &self,
        py: Python<'py>,
        embedding: &Bound<'_, PyAny>,
        keys: Vec<String>,
        limit: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let limit = optional_count_arg(limit)?;
        let Some(query) = query_vector(Some(embedding))? else {
            return Err(PyValueError::new_err(
                "embedding must be (model name, float32 bytes)",
            ));
        };
        let hits = self.read_meaning(py, Some(query), move |m, meaning| {
            meaning.map_or_else(Vec::new, |meaning| {
                semantic::by_cosine(m, meaning, &keys, limit)
            })
        })?;
        PyList::new(
            py,
            hits.into_iter()
                .map(|(entry, score)| (PyEntry::wrap(entry), score)),
        )
    }

    /// Writes entries exactly as given (import: stamps and references
    /// kept); entries already identical are skipped. Returns how many
    /// changed the store.
    fn import_entries(&self, py: Python<'_>, entries: &Bound<'_, PyAny>) -> PyResult<usize> {
        let entries = entries
            .try_iter()?
            .map(|item| Ok((*item?.cast::<PyEntry>()?.get().inner).clone()))
            .collect::<PyResult<Vec<Entry>>>()?;
        self.run(py, |s| s.put_exact(entries))
    }
}
