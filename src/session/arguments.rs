//! The session tools' arguments, typed: one struct per tool (or per step of
//! one), read by [`crate::tool_args::read`] in the order they are checked,
//! and the words of an argument that does not read.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::HistoryMode;
use crate::error::{ErrorCode, ToolError};
use crate::tool_args::must_be;

/// `session_start`'s arguments (`escalate` is the gate's to read).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Start {
    pub shell: Option<String>,
    pub working_dir: Option<String>,
    pub env: Option<Env>,
    pub name: Option<String>,
    pub visible: Option<bool>,
}

/// `session_run`'s arguments.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Run {
    pub session_id: String,
    pub command: String,
    pub timeout_seconds: Option<RunLimit>,
    pub history: Option<History>,
    pub raw: Option<bool>,
}

/// `session_wait`'s arguments.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Wait {
    pub session_id: String,
    pub timeout_seconds: Option<WaitLimit>,
    pub raw: Option<bool>,
}

/// `session_read`'s arguments.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Read {
    pub session_id: String,
    pub cursor: Option<u64>,
    pub raw: Option<bool>,
}

/// `session_write`'s arguments up to what it sends; that it sends
/// something is checked before [`Waiting`] is read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Write {
    pub session_id: String,
    pub input: Option<String>,
    pub keys: Option<Vec<String>>,
}

/// `session_write`'s arguments after what it sends.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Waiting {
    pub timeout_seconds: Option<WaitLimit>,
    pub raw: Option<bool>,
}

/// `session_interrupt`'s arguments.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Interrupt {
    pub session_id: String,
    pub timeout_seconds: Option<WaitLimit>,
}

/// The argument of `session_close`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Close {
    pub session_id: String,
}

/// `session_run`'s `timeout_seconds`: more than 0, at most a day.
#[derive(Deserialize)]
#[serde(try_from = "f64")]
pub(super) struct RunLimit(pub Duration);

impl TryFrom<f64> for RunLimit {
    type Error = &'static str;

    fn try_from(secs: f64) -> Result<Self, Self::Error> {
        match secs.is_finite() && secs > 0.0 && secs <= 86_400.0 {
            true => Ok(Self(Duration::from_secs_f64(secs))),
            false => Err("out of range"),
        }
    }
}

/// A wait's `timeout_seconds`: from 0 to a day.
#[derive(Deserialize)]
#[serde(try_from = "f64")]
pub(super) struct WaitLimit(pub Duration);

impl TryFrom<f64> for WaitLimit {
    type Error = &'static str;

    fn try_from(secs: f64) -> Result<Self, Self::Error> {
        match secs.is_finite() && (0.0..=86_400.0).contains(&secs) {
            true => Ok(Self(Duration::from_secs_f64(secs))),
            false => Err("out of range"),
        }
    }
}

/// `history`: `"suppress"` or `"keep"`.
#[derive(Deserialize)]
#[serde(try_from = "String")]
pub(super) struct History(pub HistoryMode);

impl TryFrom<String> for History {
    type Error = &'static str;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        HistoryMode::parse(&name).map(Self).ok_or("neither suppress nor keep")
    }
}

/// `env`: variables by name, each a string.
#[derive(Deserialize)]
#[serde(try_from = "Value")]
pub(super) struct Env(pub Vec<(String, String)>);

impl TryFrom<Value> for Env {
    type Error = ToolError;

    fn try_from(value: Value) -> Result<Self, ToolError> {
        env(&value).map(Self)
    }
}

fn env(value: &Value) -> Result<Vec<(String, String)>, ToolError> {
    crate::command::request::parse_env(value, "pass `env` as an object of strings")
}

/// An argument of `tool` that breaks a rule other than its type.
pub(super) fn invalid(tool: &str, message: String) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidArguments,
        format!("{tool}: {message}"),
        "see the tool's input schema in list_tools",
    )
}

/// The error of the first argument of `tool` that did not read (`got`: its
/// value, `None` when it is absent).
pub(super) fn wrong(tool: &str, key: &str, got: Option<&Value>) -> ToolError {
    let Some(value) = got.filter(|v| !v.is_null()) else {
        // Optional arguments read `null` and absence as not given.
        return invalid(tool, format!("the required argument `{key}` is missing"));
    };
    match key {
        "timeout_seconds" => {
            let range = match tool {
                "session_run" => "greater than 0 and at most 86400",
                _ => "from 0 to 86400",
            };
            ToolError::new(
                ErrorCode::InvalidTimeout,
                format!("{tool}: `{key}` must be a number of seconds {range}, got {value}"),
                "pass a number of seconds such as 5",
            )
        }
        "cursor" => invalid(tool, format!("`cursor` must be a non-negative integer, got {value}")),
        "keys" => match value {
            Value::Array(items) => match items.iter().find(|k| !k.is_string()) {
                Some(k) => invalid(tool, format!("`keys` entries must be strings, got {k}")),
                None => invalid(tool, must_be("keys", "an array of key names", Some(value))),
            },
            _ => invalid(tool, must_be("keys", "an array of key names", Some(value))),
        },
        "history" => match value {
            Value::String(s) => invalid(tool, format!("`history` must be \"suppress\" or \"keep\", got {s:?}")),
            _ => invalid(tool, must_be(key, "a string", Some(value))),
        },
        "env" => match env(value) {
            Err(error) => error,
            Ok(_) => invalid(tool, must_be(key, "an object", Some(value))),
        },
        "visible" | "raw" => invalid(tool, must_be(key, "true or false", Some(value))),
        _ => invalid(tool, must_be(key, "a string", Some(value))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::tools::SESSION_TOOLS;
    use crate::tool::ToolDefinition;
    use crate::tool_args::fields_of;

    /// Each tool's struct reads exactly the arguments its definition lists
    /// (but `escalate`, which the gate reads), so no listed argument goes
    /// unread and none is read that a caller cannot send.
    #[test]
    fn each_struct_reads_the_arguments_its_tool_lists() {
        let read: [(&str, Vec<&str>); 8] = [
            ("session_start", fields_of::<Start>().to_vec()),
            ("session_run", fields_of::<Run>().to_vec()),
            ("session_wait", fields_of::<Wait>().to_vec()),
            ("session_read", fields_of::<Read>().to_vec()),
            ("session_write", [fields_of::<Write>(), fields_of::<Waiting>()].concat()),
            ("session_interrupt", fields_of::<Interrupt>().to_vec()),
            ("session_list", Vec::new()),
            ("session_close", fields_of::<Close>().to_vec()),
        ];
        for (name, builtin) in SESSION_TOOLS {
            let definition = ToolDefinition::from_json(builtin, name).unwrap();
            let mut listed: Vec<&str> = definition.argument_names();
            listed.retain(|a| *a != "escalate");
            let (_, fields) = read.iter().find(|(n, _)| n == name).expect("a struct for every tool");
            let mut fields = fields.clone();
            listed.sort_unstable();
            fields.sort_unstable();
            assert_eq!(fields, listed, "{name}");
        }
    }
}
