//! Python arguments as core values, with errors that name the argument.

use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use super::errors::argument_type_error;

/// Extracts a `str` argument, naming it in the error.
pub(crate) fn text_arg(value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
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

pub(crate) fn optional_text_arg(
    value: Option<&Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<Option<String>> {
    match value {
        Some(value) if !value.is_none() => text_arg(value, what).map(Some),
        _ => Ok(None),
    }
}

pub(crate) fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "?".into(), |n| n.to_string())
}

/// An `int` argument beyond `i64` (a budget, a clock) means the same as the
/// end of `i64` it is past, rather than an `OverflowError`.
pub(crate) fn clamped_int(value: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
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

pub(crate) fn optional_clamped_int(
    value: Option<&Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<Option<i64>> {
    match value {
        Some(value) if !value.is_none() => clamped_int(value, what).map(Some),
        _ => Ok(None),
    }
}

/// A count (a limit, a number of keys): negative is a `ValueError`; one
/// beyond `usize` means "all".
pub(crate) fn count_arg(value: &Bound<'_, PyAny>, what: &str) -> PyResult<usize> {
    let number = clamped_int(value, what)?;
    if number < 0 {
        return Err(PyValueError::new_err(format!(
            "{what} must not be negative, not {number}"
        )));
    }
    Ok(usize::try_from(number).unwrap_or(usize::MAX))
}

/// An optional `limit` count: absent or `None` means "all".
pub(crate) fn optional_count_arg(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    match value {
        Some(value) if !value.is_none() => count_arg(value, "limit").map(Some),
        _ => Ok(None),
    }
}

/// A list or tuple of `str`, or `None`.
pub(crate) fn references_arg(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<String>>> {
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

/// §1.4's busy timeout in seconds, the default of every `timeout` argument.
pub(crate) const DEFAULT_TIMEOUT_SECONDS: f64 = crate::store::DEFAULT_BUSY_TIMEOUT.as_secs_f64();
/// The longest accepted timeout (about 31 years): a deadline past it could
/// overflow the clock.
const MAX_TIMEOUT_SECONDS: f64 = 1e9;

/// A `timeout` argument as a duration, or a `ValueError` naming the range.
pub(crate) fn busy_timeout(seconds: f64) -> PyResult<Duration> {
    if seconds.is_finite() && (0.0..=MAX_TIMEOUT_SECONDS).contains(&seconds) {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(PyValueError::new_err(format!(
            "timeout must be a number of seconds from 0 to {MAX_TIMEOUT_SECONDS:e}, not {seconds}"
        )))
    }
}
