//! `membolt._core.SaveRequest` and `membolt._core.Cap`: the typed requests
//! the Python facade hands the store, with the answers of the Python rule
//! tables (inferred type, wanted parent type, the caps) filled in.

use pyo3::prelude::*;

use super::args::{optional_text_arg, references_arg, text_arg};
use crate::store::{Cap, CapGroup, SaveRequest};

/// One save: what the caller gave, and what the Python rules answered.
#[pyclass(frozen, name = "SaveRequest", module = "membolt._core")]
pub struct PySaveRequest {
    pub(crate) inner: SaveRequest,
}

#[pymethods]
impl PySaveRequest {
    #[new]
    #[pyo3(signature = (key, value, *, inferred_type, r#type = None, namespace = None, references = None, parent_type = None))]
    #[allow(clippy::needless_pass_by_value)] // PyO3 extracts owned arguments
    fn new(
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        inferred_type: String,
        r#type: Option<&Bound<'_, PyAny>>,
        namespace: Option<&Bound<'_, PyAny>>,
        references: Option<&Bound<'_, PyAny>>,
        parent_type: Option<String>,
    ) -> PyResult<Self> {
        Ok(PySaveRequest {
            inner: SaveRequest {
                key: text_arg(key, "key")?,
                value: text_arg(value, "value")?,
                kind: optional_text_arg(r#type, "type")?,
                inferred_kind: inferred_type,
                namespace: optional_text_arg(namespace, "namespace")?,
                references: references_arg(references)?,
                parent_kind: parent_type,
            },
        })
    }

    #[getter]
    fn key(&self) -> &str {
        &self.inner.key
    }

    fn __repr__(&self) -> String {
        format!("SaveRequest({:?})", self.inner)
    }
}

/// A cap applied after a batch in its transaction: at most `keep` entries
/// of a group, the oldest out.
#[pyclass(frozen, name = "Cap", module = "membolt._core")]
pub struct PyCap {
    pub(crate) inner: Cap,
}

#[pymethods]
impl PyCap {
    /// The keys made of `prefix` and one more segment without `:`.
    #[staticmethod]
    fn keys_under(prefix: String, keep: usize) -> Self {
        PyCap {
            inner: Cap {
                group: CapGroup::KeysUnder(prefix),
                keep,
            },
        }
    }

    /// The entries of any of `types`, counted together.
    #[staticmethod]
    fn types(types: Vec<String>, keep: usize) -> Self {
        PyCap {
            inner: Cap {
                group: CapGroup::Types(types),
                keep,
            },
        }
    }

    fn __repr__(&self) -> String {
        match &self.inner.group {
            CapGroup::KeysUnder(prefix) => {
                format!("Cap.keys_under({prefix:?}, {})", self.inner.keep)
            }
            CapGroup::Types(types) => format!("Cap.types({types:?}, {})", self.inner.keep),
        }
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyCap>()
            .is_ok_and(|other| other.get().inner == self.inner)
    }
}
