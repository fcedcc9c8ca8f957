//! Typed errors shared by every layer.
//!
//! A [`ToolError`] is what a caller did wrong or what went wrong while running a
//! tool. It always carries a stable machine-readable [`ErrorCode`], a sentence
//! that names the problem, and a hint that says what to do about it. On the JSON
//! path it becomes `{"error": "<code>", "message": "...", "hint": "..."}`.

use std::fmt;

use serde::Serialize;

/// Stable error codes; the JSON spelling is the snake_case name.
///
/// New codes may be added; existing ones never change their spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// The arguments were not valid JSON, or not a JSON object.
    InvalidJson,
    /// An argument had the wrong type, or a required one was missing.
    InvalidArguments,
    /// An argument name the tool does not know.
    UnknownArgument,
    /// The tool name is not registered on this server.
    UnknownTool,
    /// The command was empty or only whitespace.
    EmptyCommand,
    /// The command contained a NUL byte, which no shell can receive.
    CommandContainsNul,
    /// The command is longer than the kernel accepts for one argument.
    CommandTooLong,
    /// The working directory does not exist.
    WorkingDirNotFound,
    /// The working directory exists but is not a directory.
    WorkingDirNotDirectory,
    /// The working directory is outside the roots the operator allowed.
    WorkingDirNotAllowed,
    /// A timeout value was not a positive number.
    InvalidTimeout,
    /// An `env` entry had an invalid name or a non-string value.
    InvalidEnv,
    /// The `streams` argument was neither `merged` nor `separate`.
    InvalidStreams,
    /// The process could not be started.
    SpawnFailed,
    /// The command ran past its time limit and was killed.
    Timeout,
    /// The caller cancelled the command and it was killed.
    Cancelled,
    /// A configuration key was unknown or had an invalid value.
    InvalidConfig,
    /// A tool definition file could not be read or was invalid.
    InvalidToolDefinition,
    /// No session has this id (closed, evicted, or never started).
    SessionNotFound,
    /// Starting one more session would exceed `sessions.max_sessions`.
    TooManySessions,
    /// A command is still running in the session.
    SessionBusy,
    /// The session's shell has exited.
    SessionExited,
    /// The requested shell is not installed.
    ShellNotFound,
    /// The call's environment conflicts with history suppression.
    HistoryConflict,
    /// The shell cannot keep history as asked.
    HistoryUnsupported,
    /// Session tools are turned off in the configuration.
    SessionsDisabled,
    /// No background job has this id (finished and already read, evicted, or never started).
    JobNotFound,
    /// No kept output has this id (never kept, or evicted to make room).
    OutputNotFound,
    /// A sandbox is configured but no backend can enforce it here; the
    /// command did not run.
    SandboxUnavailable,
    /// An unexpected internal failure (a bug); the message says where.
    Internal,
    /// The command was refused by permission rules the server enforces itself
    /// (the entropic plugin's `permissions`); the message names the part and rule.
    PermissionDenied,
}

impl ErrorCode {
    /// The snake_case spelling used in JSON results and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidJson => "invalid_json",
            Self::InvalidArguments => "invalid_arguments",
            Self::UnknownArgument => "unknown_argument",
            Self::UnknownTool => "unknown_tool",
            Self::EmptyCommand => "empty_command",
            Self::CommandContainsNul => "command_contains_nul",
            Self::CommandTooLong => "command_too_long",
            Self::WorkingDirNotFound => "working_dir_not_found",
            Self::WorkingDirNotDirectory => "working_dir_not_directory",
            Self::WorkingDirNotAllowed => "working_dir_not_allowed",
            Self::InvalidTimeout => "invalid_timeout",
            Self::InvalidEnv => "invalid_env",
            Self::InvalidStreams => "invalid_streams",
            Self::SpawnFailed => "spawn_failed",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
            Self::InvalidConfig => "invalid_config",
            Self::InvalidToolDefinition => "invalid_tool_definition",
            Self::SessionNotFound => "session_not_found",
            Self::TooManySessions => "too_many_sessions",
            Self::SessionBusy => "session_busy",
            Self::SessionExited => "session_exited",
            Self::ShellNotFound => "shell_not_found",
            Self::HistoryConflict => "history_conflict",
            Self::HistoryUnsupported => "history_unsupported",
            Self::SessionsDisabled => "sessions_disabled",
            Self::JobNotFound => "job_not_found",
            Self::OutputNotFound => "output_not_found",
            Self::SandboxUnavailable => "sandbox_unavailable",
            Self::Internal => "internal",
            Self::PermissionDenied => "permission_denied",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error with a code, a message naming the problem and a hint saying what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolError {
    /// Machine-readable code.
    #[serde(rename = "error")]
    pub code: ErrorCode,
    /// What was wrong, for a person or a model.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

impl ToolError {
    /// Builds an error from its three parts.
    pub fn new(code: ErrorCode, message: impl Into<String>, hint: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// The JSON object `{"error", "message", "hint"}`.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::Value::Object(self.to_map())
    }

    /// The fields of [`ToolError::to_value`].
    pub(crate) fn to_map(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut map = serde_json::Map::new();
        map.insert("error".into(), self.code.as_str().into());
        map.insert("message".into(), self.message.as_str().into());
        map.insert("hint".into(), self.hint.as_str().into());
        map
    }

    /// The JSON object `{"error", "message", "hint"}` as a string.
    pub fn to_json(&self) -> String {
        // Serializing a struct of strings cannot fail.
        serde_json::to_string(self)
            .unwrap_or_else(|_| r#"{"error":"internal","message":"error could not be serialized","hint":""}"#.into())
    }
}

/// A result document as text, its `error` key (when it has one) first.
///
/// Hosts recognise an error result by where `"error"` appears (the entropic
/// engine looks in the first 32 characters), so an error document must not
/// start with keys that sort before it. Successful documents have no `error`
/// key and are written as they are.
///
/// ```
/// use bash_mcp::document_text;
/// let doc = serde_json::json!({"duration_ms": 5, "elapsed_ms": 5, "error": "timeout"});
/// assert_eq!(document_text(&doc), r#"{"error":"timeout","duration_ms":5,"elapsed_ms":5}"#);
/// ```
pub fn document_text(doc: &serde_json::Value) -> String {
    let Some(map) = doc.as_object() else {
        return doc.to_string();
    };
    let Some(error) = map.get("error") else {
        return doc.to_string();
    };
    let mut text = format!("{{\"error\":{error}");
    for (key, value) in map.iter().filter(|(key, _)| *key != "error") {
        text.push(',');
        text.push_str(&serde_json::Value::from(key.as_str()).to_string());
        text.push(':');
        text.push_str(&value.to_string());
    }
    text.push('}');
    text
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)?;
        if !self.hint.is_empty() {
            write!(f, " ({})", self.hint)?;
        }
        Ok(())
    }
}

impl std::error::Error for ToolError {}
