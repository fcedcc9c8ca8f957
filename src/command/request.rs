//! The `execute` tool's request: typed, and parsed from JSON arguments.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::config::is_valid_env_name;
use crate::error::{ErrorCode, ToolError};
use crate::process::spawn::{MAX_ARG_LEN, Streams};
use crate::tool_args::must_be;

/// One command to run.
///
/// ```
/// use std::time::Duration;
/// use bash_mcp::{ExecRequest, Streams};
/// let request = ExecRequest::new("make test")
///     .working_dir("sub/project")
///     .timeout(Duration::from_secs(120))
///     .env("RUST_LOG", "debug")
///     .streams(Streams::Separate);
/// assert_eq!(request.command, "make test");
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExecRequest {
    /// The command line, given to the shell as written.
    pub command: String,
    /// Where to run; relative paths resolve against the server's working dir.
    pub working_dir: Option<PathBuf>,
    /// Time limit; `None` uses the server's, larger values are clamped to its ceiling.
    pub timeout: Option<Duration>,
    /// Variables set for this command, applied after the server's environment.
    pub env: Vec<(String, String)>,
    /// Bytes fed to standard input; `None` means `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// Merged or separate stdout/stderr.
    pub streams: Streams,
    /// This call's sandbox, when it differs from the configured one.
    pub sandbox: Option<SandboxCall>,
    /// When the `execute` tool hands a still-running command back as a
    /// background job (`yield_seconds`); see [`YieldAfter`].
    pub yield_after: YieldAfter,
    /// Who asked, as the host's transport authenticated them
    /// ([`CallOptions::principal`](crate::CallOptions::principal)): a
    /// background job or a handed-back call carries it to the audit line of
    /// its end. Only the host sets it: the `execute` arguments cannot.
    pub principal: Option<String>,
    /// The call's client, to ask the person through while the command runs
    /// (a connection its sandbox does not allow), when the protocol can;
    /// set by the server from [`CallClient::client_asker`](crate::tool::CallClient::client_asker).
    pub ask_client: Option<AskClient>,
}

/// A way to ask the person through the client of a call (see
/// [`ExecRequest::ask_client`]): compared by identity.
#[derive(Clone)]
pub struct AskClient(pub std::sync::Arc<dyn crate::approval::ClientAsker>);

impl std::fmt::Debug for AskClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AskClient(..)")
    }
}

impl PartialEq for AskClient {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

/// When an `execute` call stops waiting for its command and hands it back
/// as a background job (the command keeps running under its own time limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum YieldAfter {
    /// The server's `yield_seconds` setting (the argument was not given).
    #[default]
    Configured,
    /// Wait for the end, whatever the server's setting (`"yield_seconds": null`).
    Never,
    /// Hand back after this long.
    After(Duration),
}

/// How one call's sandbox differs from the configured one.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SandboxCall {
    /// Keys of the `sandbox` object that may only tighten it (`mode`,
    /// `network`, `writable_roots`); a widening one is refused.
    Tighten(Map<String, Value>),
    /// The host's own decision for this call, which may widen the sandbox
    /// or turn it off. Only the embedding host can pass it (it is not a tool
    /// argument); the audit log records it.
    HostOverride(crate::sandbox::SandboxConfig),
}

/// Argument names the `execute` tool accepts.
pub const EXECUTE_ARGUMENTS: &[&str] = &[
    "command",
    "working_dir",
    "timeout_seconds",
    "env",
    "stdin",
    "streams",
    "background",
    "yield_seconds",
    "sandbox",
    "escalate",
];

impl ExecRequest {
    /// A request for `command` with every option at its default.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            ..Self::default()
        }
    }

    /// Sets the working directory.
    pub fn working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }

    /// Sets the time limit.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Adds an environment variable.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Feeds `data` to standard input.
    pub fn stdin(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(data.into());
        self
    }

    /// Sets this call's sandbox (see [`SandboxCall`]).
    pub fn sandbox(mut self, sandbox: SandboxCall) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// Chooses merged or separate streams.
    pub fn streams(mut self, streams: Streams) -> Self {
        self.streams = streams;
        self
    }

    /// Parses the `execute` tool's JSON arguments.
    pub fn from_args(args: &Map<String, Value>) -> Result<Self, ToolError> {
        let args: ExecuteArgs = crate::tool_args::read("execute", EXECUTE_ARGUMENTS, args, wrong)?;
        Ok(Self {
            working_dir: args.working_dir.map(PathBuf::from),
            timeout: args.timeout_seconds.map(|t| t.0),
            env: args.env.map(|e| e.0).unwrap_or_default(),
            stdin: args.stdin.map(String::into_bytes),
            streams: args.streams.map(|s| s.0).unwrap_or_default(),
            // Checked against the configuration when the command runs: only tightening passes.
            sandbox: args.sandbox.map(SandboxCall::Tighten),
            yield_after: args.yield_seconds.0,
            ..Self::new(args.command)
        })
    }
}

/// The `execute` arguments as [`ExecRequest::from_args`] reads them, in the
/// order they are checked (`escalate` is the gate's to read).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecuteArgs {
    command: String,
    working_dir: Option<String>,
    timeout_seconds: Option<TimeLimit>,
    yield_seconds: YieldSeconds,
    env: Option<EnvVars>,
    stdin: Option<String>,
    /// Read by the tool, which starts a background job instead of the run.
    #[serde(rename = "background")]
    _background: Option<bool>,
    sandbox: Option<Map<String, Value>>,
    streams: Option<StreamsArg>,
}

/// `timeout_seconds`: from 1 ms to a day.
#[derive(Deserialize)]
#[serde(try_from = "f64")]
struct TimeLimit(Duration);

impl TryFrom<f64> for TimeLimit {
    type Error = &'static str;

    fn try_from(secs: f64) -> Result<Self, Self::Error> {
        match secs.is_finite() && (0.001..=86_400.0).contains(&secs) {
            true => Ok(Self(Duration::from_secs_f64(secs))),
            false => Err("out of range"),
        }
    }
}

/// `yield_seconds`: absent (the server's setting), `null` (never) or from 0 to a day.
struct YieldSeconds(YieldAfter);

impl<'de> Deserialize<'de> for YieldSeconds {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Seconds;
        impl serde::de::Visitor<'_> for Seconds {
            type Value = YieldAfter;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number from 0 to 86400, or null")
            }

            fn visit_none<E: serde::de::Error>(self) -> Result<YieldAfter, E> {
                Ok(YieldAfter::Configured)
            }

            fn visit_unit<E: serde::de::Error>(self) -> Result<YieldAfter, E> {
                Ok(YieldAfter::Never)
            }

            fn visit_f64<E: serde::de::Error>(self, secs: f64) -> Result<YieldAfter, E> {
                match secs.is_finite() && (0.0..=86_400.0).contains(&secs) {
                    true => Ok(YieldAfter::After(Duration::from_secs_f64(secs))),
                    false => Err(E::custom("out of range")),
                }
            }

            fn visit_u64<E: serde::de::Error>(self, secs: u64) -> Result<YieldAfter, E> {
                self.visit_f64(secs as f64)
            }

            fn visit_i64<E: serde::de::Error>(self, secs: i64) -> Result<YieldAfter, E> {
                self.visit_f64(secs as f64)
            }
        }
        deserializer.deserialize_any(Seconds).map(YieldSeconds)
    }
}

/// `env`: variables by name, each a string.
#[derive(Deserialize)]
#[serde(try_from = "Value")]
struct EnvVars(Vec<(String, String)>);

impl TryFrom<Value> for EnvVars {
    type Error = ToolError;

    fn try_from(value: Value) -> Result<Self, ToolError> {
        parse_env(&value, ENV_HINT).map(Self)
    }
}

/// `streams`: `"merged"` or `"separate"`.
#[derive(Deserialize)]
#[serde(try_from = "String")]
struct StreamsArg(Streams);

impl TryFrom<String> for StreamsArg {
    type Error = &'static str;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        match name.as_str() {
            "merged" => Ok(Self(Streams::Merged)),
            "separate" => Ok(Self(Streams::Separate)),
            _ => Err("neither merged nor separate"),
        }
    }
}

/// The error of the first `execute` argument that did not read (`got`:
/// its value, `None` when it is absent).
fn wrong(key: &str, got: Option<&Value>) -> ToolError {
    match (key, got) {
        ("command", None) => invalid("the required argument `command` is missing".into()),
        ("timeout_seconds", Some(value)) => ToolError::new(
            ErrorCode::InvalidTimeout,
            format!("`timeout_seconds` must be a number from 0.001 (1 ms) to 86400, got {value}"),
            "omit it to use the server's limit, or pass a positive number of seconds",
        ),
        ("yield_seconds", Some(value)) => ToolError::new(
            ErrorCode::InvalidTimeout,
            format!("`yield_seconds` must be a number from 0 to 86400, or null, got {value}"),
            "pass the seconds to wait before the command is handed back as a background job (e.g. 30), or null to wait for its end",
        ),
        ("env", Some(value)) => match parse_env(value, ENV_HINT) {
            Err(error) => error,
            Ok(_) => invalid(must_be("env", "an object", Some(value))),
        },
        ("background", value) => invalid(must_be("background", "true or false", value)),
        ("sandbox", value) => ToolError::new(
            ErrorCode::InvalidArguments,
            must_be("sandbox", "an object", value),
            "pass e.g. {\"sandbox\": {\"network\": false}} or {\"sandbox\": {\"mode\": \"read-only\"}}: a call may only tighten the configured sandbox",
        ),
        ("streams", Some(value)) => ToolError::new(
            ErrorCode::InvalidStreams,
            format!("`streams` must be \"merged\" or \"separate\", got {value}"),
            "omit it for merged output",
        ),
        (key, value) => invalid(must_be(key, "a string", value)),
    }
}

fn invalid(message: String) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidArguments,
        message,
        "call execute with {\"command\": \"<shell command>\"} and optional working_dir, timeout_seconds, env, stdin, streams",
    )
}

/// The hint `execute` gives with a bad `env`.
const ENV_HINT: &str = "pass `env` as an object of strings, e.g. {\"RUST_LOG\": \"debug\"}";

/// An `env` argument: an object of strings under valid variable names, none
/// with NUL. Each refusal is `InvalidEnv`, naming what was wrong, with `hint`.
pub(crate) fn parse_env(value: &Value, hint: &str) -> Result<Vec<(String, String)>, ToolError> {
    let Value::Object(map) = value else {
        return Err(ToolError::new(
            ErrorCode::InvalidEnv,
            must_be("env", "an object", Some(value)),
            hint,
        ));
    };
    map.iter()
        .map(|(name, v)| {
            if !is_valid_env_name(name) {
                return Err(ToolError::new(
                    ErrorCode::InvalidEnv,
                    format!("`env` has an invalid variable name {name:?} (empty, or containing '=' or NUL)"),
                    hint,
                ));
            }
            match v {
                Value::String(s) if !s.contains('\0') => Ok((name.clone(), s.clone())),
                Value::String(_) => Err(ToolError::new(
                    ErrorCode::InvalidEnv,
                    format!("`env.{name}` contains a NUL byte"),
                    hint,
                )),
                other => Err(ToolError::new(
                    ErrorCode::InvalidEnv,
                    must_be(&format!("env.{name}"), "a string", Some(other)),
                    hint,
                )),
            }
        })
        .collect()
}

/// The checks every command text gets, whatever runs it: not empty, no NUL.
pub(crate) fn validate_command_text(command: &str) -> Result<(), ToolError> {
    if command.trim().is_empty() {
        return Err(ToolError::new(
            ErrorCode::EmptyCommand,
            "the command is empty",
            "pass the shell command to run in `command`",
        ));
    }
    if command.contains('\0') {
        return Err(ToolError::new(
            ErrorCode::CommandContainsNul,
            "the command contains a NUL byte, which a shell cannot read",
            "remove the NUL byte; to produce one, use printf '\\0' inside the command",
        ));
    }
    Ok(())
}

pub(crate) fn validate_command(command: &str) -> Result<(), ToolError> {
    validate_command_text(command)?;
    if command.len() > MAX_ARG_LEN {
        return Err(ToolError::new(
            ErrorCode::CommandTooLong,
            format!(
                "the command is {} bytes; the kernel accepts at most {MAX_ARG_LEN} bytes in one argument",
                command.len()
            ),
            "write the script to a file and run the file, or feed the data through `stdin`",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool_args::fields_of;

    /// Every argument `execute` lists is read here but `escalate`, which the gate reads.
    #[test]
    fn the_arguments_read_are_the_ones_listed() {
        let mut read = fields_of::<ExecuteArgs>().to_vec();
        read.push("escalate");
        read.sort_unstable();
        let mut listed = EXECUTE_ARGUMENTS.to_vec();
        listed.sort_unstable();
        assert_eq!(read, listed);
    }

    #[test]
    fn the_first_wrong_argument_in_the_order_of_the_checks_is_named() {
        let args = |v: Value| v.as_object().unwrap().clone();
        let e = ExecRequest::from_args(&args(serde_json::json!({"working_dir": 1}))).unwrap_err();
        assert_eq!(e.message, "the required argument `command` is missing");
        let e = ExecRequest::from_args(&args(
            serde_json::json!({"command": "ls", "timeout_seconds": 0, "env": []}),
        ))
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidTimeout);
        let e = ExecRequest::from_args(&args(serde_json::json!({"command": "ls", "env": {"A": 1}, "stdin": 2})))
            .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::InvalidEnv, "`env.A` must be a string, got a number")
        );
        let e = ExecRequest::from_args(&args(serde_json::json!({"command": "ls", "streams": "both"}))).unwrap_err();
        assert_eq!(e.message, "`streams` must be \"merged\" or \"separate\", got \"both\"");
    }

    #[test]
    fn yield_seconds_tells_absent_from_null() {
        let args = |v: Value| v.as_object().unwrap().clone();
        let read = |v: Value| ExecRequest::from_args(&args(v)).unwrap().yield_after;
        assert_eq!(read(serde_json::json!({"command": "ls"})), YieldAfter::Configured);
        assert_eq!(
            read(serde_json::json!({"command": "ls", "yield_seconds": null})),
            YieldAfter::Never
        );
        assert_eq!(
            read(serde_json::json!({"command": "ls", "yield_seconds": 2})),
            YieldAfter::After(Duration::from_secs(2))
        );
    }
}
