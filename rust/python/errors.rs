//! The one place where core errors become Python exceptions (the classes
//! live in `membolt.errors`, so that `StoreBusyError` can also be a
//! `TimeoutError`).

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

use crate::error::StoreError;
use crate::query::{ErrorKind, QueryError};

/// The Python class `name`, imported once from `membolt.errors`.
fn error_class<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
) -> PyResult<&'py Bound<'py, PyType>> {
    cell.import(py, "membolt.errors", name)
}

/// Maps a store error to its exception.
#[allow(clippy::needless_pass_by_value)] // used as `map_err(|e| to_py_err(py, e))`
pub(crate) fn to_py_err(py: Python<'_>, error: StoreError) -> PyErr {
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

/// `TypeError` that is also a `ValueError` (§1.5 asks for a `ValueError` on
/// a non-string key; Python convention expects `TypeError`).
pub(crate) fn argument_type_error(py: Python<'_>, message: String) -> PyErr {
    static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    match error_class(py, &CLASS, "ArgumentTypeError") {
        Ok(class) => PyErr::from_type(class.clone(), message),
        Err(import_error) => import_error,
    }
}

/// `membolt.errors.QueryError` with its `kind` and `position`.
pub(crate) fn query_error(py: Python<'_>, error: &QueryError) -> PyErr {
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
