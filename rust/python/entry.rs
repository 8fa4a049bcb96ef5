//! `membolt.Entry`: a stored entry, immutable, and its JSON form (§1.2).

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::args::{references_arg, text_arg};
use super::errors::argument_type_error;
use crate::entry::{Entry, Field};

/// A stored entry, immutable. Equal entries compare equal and hash alike.
#[pyclass(frozen, freelist = 4096, name = "Entry", module = "membolt")]
pub struct PyEntry {
    pub(crate) inner: Arc<Entry>,
}

impl PyEntry {
    pub(crate) fn wrap(entry: Arc<Entry>) -> PyEntry {
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

    /// The JSON form of §1.2.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        entry_dict(py, &self.inner)
    }

    /// An entry from its JSON form (every field required), as an export
    /// holds it; nothing is saved.
    #[staticmethod]
    fn from_dict(data: &Bound<'_, PyAny>) -> PyResult<PyEntry> {
        let field = |field: Field| -> PyResult<Bound<'_, PyAny>> {
            data.get_item(field.name()).map_err(|_| {
                PyValueError::new_err(format!("an entry needs the field {:?}", field.name()))
            })
        };
        let stamp = |name: Field| -> PyResult<i64> {
            field(name)?.extract::<i64>().map_err(|_| {
                argument_type_error(
                    data.py(),
                    format!("{} must be an int of 64 bits", name.name()),
                )
            })
        };
        let text = |name: Field| -> PyResult<String> { text_arg(&field(name)?, name.name()) };
        let references = references_arg(Some(&field(Field::References)?))?.unwrap_or_default();
        Ok(PyEntry::wrap(Arc::new(Entry {
            key: text(Field::Key)?.into(),
            value: text(Field::Value)?.into(),
            kind: text(Field::Type)?.into(),
            namespace: text(Field::Namespace)?.into(),
            references: references.into_iter().map(Arc::from).collect(),
            created_at: stamp(Field::CreatedAt)?,
            updated_at: stamp(Field::UpdatedAt)?,
        })))
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

/// An entry in the JSON form of §1.2 (export, query rows).
pub(crate) fn entry_dict<'py>(py: Python<'py>, e: &Entry) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for field in Field::JSON_ORDER {
        let name = field.name();
        match field {
            Field::References => {
                dict.set_item(name, PyList::new(py, e.references.iter().map(|r| &**r))?)?;
            }
            Field::CreatedAt => dict.set_item(name, e.created_at)?,
            Field::UpdatedAt => dict.set_item(name, e.updated_at)?,
            text => dict.set_item(name, text.text(e).expect("a text field"))?,
        }
    }
    Ok(dict)
}

/// The field names of the JSON form, in its order.
pub(crate) fn json_field_names() -> [&'static str; 7] {
    Field::JSON_ORDER.map(Field::name)
}
