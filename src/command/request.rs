//! The `execute` tool's request: typed, and parsed from JSON arguments.

use std::path::PathBuf;
use std::time::Duration;

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
        crate::tool_args::refuse_unknown("execute", EXECUTE_ARGUMENTS, args)?;
        let command = match args.get("command") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => return Err(invalid(must_be("command", "a string", Some(other)))),
            None => return Err(invalid("the required argument `command` is missing".into())),
        };
        let mut request = Self::new(command);
        if let Some(value) = args.get("working_dir").filter(|v| !v.is_null()) {
            let Value::String(dir) = value else {
                return Err(invalid(must_be("working_dir", "a string", Some(value))));
            };
            request.working_dir = Some(PathBuf::from(dir));
        }
        if let Some(value) = args.get("timeout_seconds").filter(|v| !v.is_null()) {
            let secs = value
                .as_f64()
                .filter(|s| s.is_finite() && *s >= 0.001 && *s <= 86_400.0);
            let Some(secs) = secs else {
                return Err(ToolError::new(
                    ErrorCode::InvalidTimeout,
                    format!("`timeout_seconds` must be a number from 0.001 (1 ms) to 86400, got {value}"),
                    "omit it to use the server's limit, or pass a positive number of seconds",
                ));
            };
            request.timeout = Some(Duration::from_secs_f64(secs));
        }
        match args.get("yield_seconds") {
            None => {}
            Some(Value::Null) => request.yield_after = YieldAfter::Never,
            Some(value) => {
                let secs = value.as_f64().filter(|s| s.is_finite() && *s >= 0.0 && *s <= 86_400.0);
                let Some(secs) = secs else {
                    return Err(ToolError::new(
                        ErrorCode::InvalidTimeout,
                        format!("`yield_seconds` must be a number from 0 to 86400, or null, got {value}"),
                        "pass the seconds to wait before the command is handed back as a background job (e.g. 30), or null to wait for its end",
                    ));
                };
                request.yield_after = YieldAfter::After(Duration::from_secs_f64(secs));
            }
        }
        if let Some(value) = args.get("env").filter(|v| !v.is_null()) {
            request.env = parse_env(value)?;
        }
        if let Some(value) = args.get("stdin").filter(|v| !v.is_null()) {
            let Value::String(text) = value else {
                return Err(invalid(must_be("stdin", "a string", Some(value))));
            };
            request.stdin = Some(text.clone().into_bytes());
        }
        if let Some(value) = args.get("background").filter(|v| !v.is_null())
            && !value.is_boolean()
        {
            return Err(invalid(must_be("background", "true or false", Some(value))));
        }
        if let Some(value) = args.get("sandbox").filter(|v| !v.is_null()) {
            let Value::Object(call) = value else {
                return Err(ToolError::new(
                    ErrorCode::InvalidArguments,
                    must_be("sandbox", "an object", Some(value)),
                    "pass e.g. {\"sandbox\": {\"network\": false}} or {\"sandbox\": {\"mode\": \"read-only\"}}: a call may only tighten the configured sandbox",
                ));
            };
            // Checked against the configuration when the command runs: only tightening passes.
            request.sandbox = Some(SandboxCall::Tighten(call.clone()));
        }
        if let Some(value) = args.get("streams").filter(|v| !v.is_null()) {
            request.streams = match value.as_str() {
                Some("merged") => Streams::Merged,
                Some("separate") => Streams::Separate,
                _ => {
                    return Err(ToolError::new(
                        ErrorCode::InvalidStreams,
                        format!("`streams` must be \"merged\" or \"separate\", got {value}"),
                        "omit it for merged output",
                    ));
                }
            };
        }
        Ok(request)
    }
}

fn invalid(message: String) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidArguments,
        message,
        "call execute with {\"command\": \"<shell command>\"} and optional working_dir, timeout_seconds, env, stdin, streams",
    )
}

fn parse_env(value: &Value) -> Result<Vec<(String, String)>, ToolError> {
    let hint = "pass `env` as an object of strings, e.g. {\"RUST_LOG\": \"debug\"}";
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
