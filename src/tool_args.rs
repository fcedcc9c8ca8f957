//! Tool arguments as JSON: parsing the arguments string once ([`ToolArgs`]),
//! and the one wording of an unknown or ill-typed argument. A leaf: only the
//! error type below it.

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

/// Refuses argument names a tool does not take: the one wording, for every
/// tool, naming all of them and what the tool accepts.
pub(crate) fn refuse_unknown(tool: &str, accepted: &[&str], args: &Map<String, Value>) -> Result<(), ToolError> {
    let unknown: Vec<&str> = args
        .keys()
        .map(String::as_str)
        .filter(|k| !accepted.contains(k))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(ToolError::new(
        ErrorCode::UnknownArgument,
        format!("unknown argument(s) for {tool}: {}", unknown.join(", ")),
        if accepted.is_empty() {
            format!("{tool} takes no arguments")
        } else {
            format!("{tool} accepts: {}", accepted.join(", "))
        },
    ))
}

/// The one wording of an argument of the wrong JSON type (`expected`: "a
/// string", "true or false", ...); `got` is `None` for a missing one.
pub(crate) fn must_be(key: &str, expected: &str, got: Option<&Value>) -> String {
    format!("`{key}` must be {expected}, got {}", got.map_or("nothing", json_kind))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_arguments_are_all_named_with_what_the_tool_accepts() {
        let args = |v: Value| v.as_object().unwrap().clone();
        assert!(refuse_unknown("t", &["a", "b"], &args(serde_json::json!({"a": 1}))).is_ok());
        let e = refuse_unknown("t", &["a", "b"], &args(serde_json::json!({"a": 1, "x": 2, "y": 3}))).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnknownArgument);
        assert_eq!(e.message, "unknown argument(s) for t: x, y");
        assert_eq!(e.hint, "t accepts: a, b");
        let e = refuse_unknown("t", &[], &args(serde_json::json!({"x": 1}))).unwrap_err();
        assert_eq!(e.hint, "t takes no arguments");
        assert_eq!(
            must_be("k", "a string", Some(&Value::Bool(true))),
            "`k` must be a string, got a boolean"
        );
        assert_eq!(must_be("k", "a string", None), "`k` must be a string, got nothing");
    }
}
