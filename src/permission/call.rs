//! A tool call as the shell receives it: the `command`, and the `env` and `stdin`
//! arguments that reach the shell beside it.
//!
//! A variable set through `env` is checked like an inline `NAME=value` prefix: a risky
//! name makes the call opaque (`{"command":"git status","env":{"GIT_CONFIG_COUNT":"1"}}`
//! is `{unknown}`, as `GIT_CONFIG_COUNT=1 git status` is). When the call is opaque and
//! has `stdin`, something may read that text as code (`BASH_ENV=/dev/stdin`, `sh`,
//! `source /dev/stdin`), so its commands are added to the parts: deny rules and the
//! classifier see them, and the pattern stays `{unknown}`.

use serde_json::{Map, Value};

use super::scan::size::too_large;
use super::walk::parse::Walker;
use super::words::vars::{is_risky_setting, is_shell_code_variable};
use super::{Analysis, Dialect, Opacity};

/// Reads a call's JSON arguments text as an object; an error says what is wrong.
pub(crate) fn object(args_json: &str) -> Result<Map<String, Value>, String> {
    let value: Value = serde_json::from_str(args_json)
        .map_err(|e| format!("the arguments are not valid JSON ({e}); send an object like {{\"command\": \"ls\"}}"))?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err("the arguments are not a JSON object; send an object like {\"command\": \"ls\"}".into()),
    }
}

/// The arguments of a command tool call that reach the shell, borrowed from
/// the parsed arguments.
pub(crate) struct Call<'a> {
    pub command: &'a str,
    pub env: Option<&'a Value>,
    pub stdin: Option<&'a Value>,
}

impl<'a> Call<'a> {
    /// Reads the call's parsed arguments; an error names what is missing.
    pub(crate) fn from_map(map: &'a Map<String, Value>) -> Result<Call<'a>, String> {
        let command = match map.get("command") {
            Some(Value::String(s)) => s,
            Some(_) => return Err("the `command` argument is not a string".into()),
            None => {
                return Err("the arguments have no `command` string; send an object like {\"command\": \"ls\"}".into());
            }
        };
        Ok(Call {
            command,
            env: map.get("env").filter(|v| !v.is_null()),
            stdin: map.get("stdin").filter(|v| !v.is_null()),
        })
    }

    /// The analysis of the whole call, read by a shell of `dialect`.
    pub(crate) fn analyze(&self, dialect: Dialect) -> Analysis {
        let mut analysis = super::analyze_in(self.command, dialect);
        if let Some(env) = self.env {
            env_opacity(env, &mut analysis.opaque);
        }
        if analysis.is_opaque()
            && let Some(stdin) = self.stdin
        {
            match stdin.as_str() {
                Some(text) if too_large(text).is_none() => {
                    let mut walker = Walker::new(dialect);
                    walker.text(text);
                    analysis.parts.extend(walker.parts);
                }
                _ => analysis.opaque.push(Opacity::new(
                    "the call's `stdin` may be read as code and is not text that can be analysed".into(),
                    Vec::new(),
                )),
            }
        }
        analysis
    }
}

/// The reasons the `env` argument of a call (`session_start`, which has no command,
/// or any other) makes what runs unknown: one per risky variable it sets. Malformed
/// arguments give one reason.
///
/// ```
/// use bash_mcp::permission::env_opacity_of;
/// let reasons = env_opacity_of(r#"{"shell":"bash","env":{"PROMPT_COMMAND":"touch p"}}"#);
/// assert!(reasons[0].hidden_code && reasons[0].reason.contains("PROMPT_COMMAND"));
/// assert!(env_opacity_of(r#"{"env":{"RUST_LOG":"debug"}}"#).is_empty());
/// ```
pub fn env_opacity_of(args_json: &str) -> Vec<Opacity> {
    match serde_json::from_str::<Value>(args_json) {
        Ok(Value::Object(map)) => env_opacity_of_args(&map),
        _ => vec![Opacity::new("the arguments are not a JSON object".into(), Vec::new())],
    }
}

/// [`env_opacity_of`] for arguments already parsed.
pub fn env_opacity_of_args(args: &Map<String, Value>) -> Vec<Opacity> {
    let mut out = Vec::new();
    if let Some(env) = args.get("env").filter(|v| !v.is_null()) {
        env_opacity(env, &mut out);
    }
    out
}

/// Adds a reason for each risky variable the call's `env` sets (and one when `env` is
/// not an object of strings, which the tools refuse anyway).
fn env_opacity(env: &Value, opaque: &mut Vec<Opacity>) {
    let Value::Object(map) = env else {
        opaque.push(Opacity::new("the call's `env` is not an object".into(), Vec::new()));
        return;
    };
    for (name, value) in map {
        let Some(value) = value.as_str() else {
            opaque.push(Opacity::new(
                format!("the call's `env.{name}` is not a string"),
                Vec::new(),
            ));
            continue;
        };
        if is_risky_setting(name, Some(value)) {
            let mut o = Opacity::new(
                format!("the call's `env` sets {name}, which changes what runs"),
                Vec::new(),
            );
            o.hidden_code = is_shell_code_variable(name);
            opaque.push(o);
        }
    }
}
