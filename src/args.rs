//! Tool arguments as JSON: parsing the arguments string once ([`ToolArgs`]),
//! and naming a value's JSON type in error messages. A leaf: only the error type below it.

use serde_json::{Map, Value};

use crate::error::{ErrorCode, ToolError};

/// A tool call's arguments, parsed once from the JSON text a host sent: a
/// JSON object (an empty text counts as `{}`), or the error saying why it is
/// not one. Everything that reads one call (the tool, its permission
/// pattern, the gate, the audit log) reads this one parse.
///
/// ```
/// use bash_mcp::ToolArgs;
/// let args = ToolArgs::parse(r#"{"command": "ls"}"#);
/// assert_eq!(args.get("command").and_then(|c| c.as_str()), Some("ls"));
/// assert!(ToolArgs::parse("[1, 2]").object().is_err());
/// assert!(ToolArgs::parse("").object().unwrap().is_empty());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolArgs(Result<Map<String, Value>, ToolError>);

impl ToolArgs {
    /// Parses the arguments' JSON text.
    pub fn parse(args_json: &str) -> Self {
        Self(parse_args(args_json))
    }

    /// Arguments already held as JSON (MCP's `arguments`): an object, else
    /// the error a text of that type gets.
    pub fn from_value(value: Value) -> Self {
        match value {
            Value::Object(map) => Self(Ok(map)),
            other => Self(Err(not_an_object(&other))),
        }
    }

    /// The arguments, or why they are not a JSON object.
    pub fn object(&self) -> Result<&Map<String, Value>, &ToolError> {
        self.0.as_ref()
    }

    /// The arguments to change, when they are an object.
    pub(crate) fn object_mut(&mut self) -> Option<&mut Map<String, Value>> {
        self.0.as_mut().ok()
    }

    /// The argument `key`; `None` when it is absent or the arguments are not an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.as_ref().ok()?.get(key)
    }
}

impl From<Map<String, Value>> for ToolArgs {
    fn from(map: Map<String, Value>) -> Self {
        Self(Ok(map))
    }
}

fn not_an_object(value: &Value) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidJson,
        format!("tool arguments must be a JSON object, got {}", json_kind(value)),
        "send the arguments as an object, e.g. {\"command\": \"ls\"}",
    )
}

/// Parses tool arguments: a JSON object (an empty string counts as `{}`).
fn parse_args(args_json: &str) -> Result<Map<String, Value>, ToolError> {
    if args_json.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(args_json) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(not_an_object(&other)),
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
