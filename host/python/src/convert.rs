//! Python values to the host's types and back: messages as OpenAI-style dicts (every field
//! kept, through the SDK's message model), JSON-like values, and a provider's usage report.

use ctxhost_sdk::{Message, Usage};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use serde_json::Value;

/// A Python value made of dicts, lists, strings, numbers, booleans and None, as JSON.
pub fn value_from(object: &Bound<'_, PyAny>) -> PyResult<Value> {
    pythonize::depythonize(object).map_err(|error| PyTypeError::new_err(error.to_string()))
}

/// A JSON value as Python dicts, lists, strings, numbers, booleans and None.
pub fn value_to<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, value)?)
}

/// A list of OpenAI-style message dicts; a message the model cannot hold is a `ValueError`
/// naming its index.
pub fn messages_from(object: &Bound<'_, PyAny>) -> PyResult<Vec<Message>> {
    let Value::Array(items) = value_from(object)? else {
        return Err(PyTypeError::new_err("messages must be a list of dicts"));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            Message::from_value(item)
                .map_err(|error| PyValueError::new_err(format!("message {index}: {error}")))
        })
        .collect()
}

/// Messages as a list of dicts, each with the fields it came in with, in their order.
pub fn messages_to<'py>(py: Python<'py>, messages: &[Message]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for message in messages {
        list.append(value_to(py, &message.to_value())?)?;
    }
    Ok(list)
}

/// A provider's usage report: OpenAI chat completions' (`prompt_tokens`, ...,
/// `prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens`) or the
/// Responses API's (`input_tokens`, `output_tokens` and their details). Other keys are ignored.
pub fn usage_from(usage: &Value) -> PyResult<Usage> {
    let count = |keys: [&str; 2]| keys.iter().find_map(|key| usage.get(key)?.as_u64());
    let prompt_tokens = count(["prompt_tokens", "input_tokens"]).ok_or_else(|| {
        PyValueError::new_err("usage has no prompt_tokens (or input_tokens) count")
    })?;
    let completion_tokens = count(["completion_tokens", "output_tokens"]).unwrap_or(0);
    let detail = |keys: [(&str, &str); 2]| {
        keys.iter()
            .find_map(|(outer, inner)| usage.get(outer)?.get(inner)?.as_u64())
    };
    Ok(Usage {
        prompt_tokens,
        completion_tokens,
        total_tokens: usage
            .get("total_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(prompt_tokens + completion_tokens),
        cache_read_tokens: detail([
            ("prompt_tokens_details", "cached_tokens"),
            ("input_tokens_details", "cached_tokens"),
        ]),
        cache_write_tokens: None,
        cache_write_1h_tokens: None,
        reasoning_tokens: detail([
            ("completion_tokens_details", "reasoning_tokens"),
            ("output_tokens_details", "reasoning_tokens"),
        ]),
    })
}
