//! The arguments of the vector calls (§15.4): a model named from Python,
//! vectors as little-endian `f32` bytes (what `array.array("f")` and
//! numpy's `astype("<f4")` give), converted once at the seam.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::store::vectors::hash::model_hash;
use crate::store::vectors::{MAX_DIMS, Model};

/// A query's vector and the model it belongs to.
pub(super) struct QueryVector {
    pub model: Model,
    pub vector: Vec<f32>,
}

/// The model named `name` with `dims` dimensions.
pub(super) fn model_arg(name: &str, dims: usize) -> PyResult<Model> {
    if dims == 0 || dims > MAX_DIMS as usize {
        return Err(PyValueError::new_err(format!(
            "an embedding model's dims must be 1 to {MAX_DIMS}, not {dims}"
        )));
    }
    Ok(Model {
        name_hash: model_hash(name),
        dims: dims as u32,
    })
}

/// Little-endian `f32` bytes as floats; a trailing partial float is a
/// `ValueError`.
pub(super) fn floats(bytes: &[u8]) -> PyResult<Vec<f32>> {
    let (chunks, rest) = bytes.as_chunks::<4>();
    if !rest.is_empty() {
        return Err(PyValueError::new_err(
            "vectors must be little-endian float32 bytes",
        ));
    }
    Ok(chunks.iter().map(|c| f32::from_le_bytes(*c)).collect())
}

/// Floats as little-endian bytes.
pub(super) fn to_bytes<'py>(py: Python<'py>, vector: &[f32]) -> Bound<'py, PyBytes> {
    let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
    PyBytes::new(py, &bytes)
}

/// The `embedding` argument of a search: `None`, or `(model name, vector
/// bytes)`.
pub(super) fn query_vector(embedding: Option<&Bound<'_, PyAny>>) -> PyResult<Option<QueryVector>> {
    let Some(embedding) = embedding.filter(|e| !e.is_none()) else {
        return Ok(None);
    };
    let (name, vector): (String, Bound<'_, PyBytes>) = embedding.extract()?;
    let vector = floats(vector.as_bytes())?;
    let model = model_arg(&name, vector.len())?;
    Ok(Some(QueryVector { model, vector }))
}
