//! Query values to and from Python: the rows a caller hands in
//! (`tool_calls`, `tasks`) and the §9.3 result handed back.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::entry::entry_dict;
use crate::query::{self, Map, Value};

/// Rows handed in by Python (`tool_calls`, `tasks`) become query values.
/// Anything that is not JSON-like is kept as its `str()`; nesting deeper
/// than `ROW_DEPTH` likewise, so a row stays within the engine's limits.
pub(crate) fn to_query_value(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
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

pub(crate) fn rows_arg(rows: &Bound<'_, PyAny>) -> PyResult<Vec<Value>> {
    rows.try_iter()?
        .map(|row| to_query_value(&row?, 0))
        .collect()
}

/// A query value as plain Python data (`memory` rows as dicts).
pub(crate) fn from_query_value(py: Python<'_>, value: &Value) -> PyResult<Py<PyAny>> {
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

/// §9.3: a list of rows becomes `{"count", "rows", "truncated"}`
/// with only the first `limit` rows converted; anything else as it is.
pub(crate) fn query_result(py: Python<'_>, value: &Value, limit: usize) -> PyResult<Py<PyAny>> {
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
