//! Tool arguments as JSON: parsing the arguments string once, and naming a
//! value's JSON type in error messages. A leaf: only the error type below it.

use serde_json::{Map, Value};

use crate::error::{ErrorCode, ToolError};

/// Parses tool arguments: a JSON object (an empty string counts as `{}`).
pub(crate) fn parse_args(args_json: &str) -> Result<Map<String, Value>, ToolError> {
    if args_json.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(args_json) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(ToolError::new(
            ErrorCode::InvalidJson,
            format!("tool arguments must be a JSON object, got {}", json_kind(&other)),
            "send the arguments as an object, e.g. {\"command\": \"ls\"}",
        )),
        Err(e) => Err(ToolError::new(
            ErrorCode::InvalidJson,
            format!("tool arguments are not valid JSON: {e}"),
            "send the arguments as a JSON object, e.g. {\"command\": \"ls\"}",
        )),
    }
}

/// A short name for a JSON value's type, for error messages.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
