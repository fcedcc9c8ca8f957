//! The `sessions` part of the configuration (its types and the reading of
//! its key), and the history mode a session command runs with. Here, below the session module, so that configuration
//! never imports the layer it configures.

use std::time::Duration;

use serde_json::Value;

use super::values::{bounded_int, config_error, positive_seconds};
use super::{MAX_OUTPUT_LIMIT_BYTES, MIN_OUTPUT_LIMIT_BYTES};
use crate::error::{ErrorCode, ToolError};

/// Whether commands a session runs may land in the user's shell history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HistoryMode {
    /// Never written to history (the default).
    #[default]
    Suppress,
    /// Appended to the shell's history file as one event per command.
    Keep,
}

impl HistoryMode {
    /// Parses `suppress` or `keep`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "suppress" => Some(Self::Suppress),
            "keep" => Some(Self::Keep),
            _ => None,
        }
    }

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Suppress => "suppress",
            Self::Keep => "keep",
        }
    }

    /// The `BASH_MCP_HISTORY` override: `Ok(None)` when unset, an error when
    /// set to anything but `suppress` or `keep`.
    pub fn from_env() -> Result<Option<Self>, ToolError> {
        match std::env::var(HISTORY_ENV) {
            Err(std::env::VarError::NotPresent) => Ok(None),
            Ok(v) => Self::parse(&v).map(Some).ok_or_else(|| {
                ToolError::new(
                    ErrorCode::InvalidConfig,
                    format!("environment variable {HISTORY_ENV} is {v:?}; it must be \"suppress\" or \"keep\""),
                    format!("set {HISTORY_ENV}=suppress or {HISTORY_ENV}=keep, or unset it"),
                )
            }),
            Err(_) => Err(ToolError::new(
                ErrorCode::InvalidConfig,
                format!("environment variable {HISTORY_ENV} is not valid UTF-8"),
                format!("set {HISTORY_ENV}=suppress or {HISTORY_ENV}=keep, or unset it"),
            )),
        }
    }
}

/// The environment variable that overrides `sessions.history`.
pub const HISTORY_ENV: &str = "BASH_MCP_HISTORY";

/// Configuration of sessions (`sessions` key of the server configuration).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionConfig {
    /// Whether the session tools are offered (default false).
    pub enabled: bool,
    /// Sessions open at once (default 8).
    pub max_sessions: usize,
    /// Sessions idle this long are closed; `None` (default) keeps them.
    pub idle_ttl: Option<Duration>,
    /// Bytes of output kept per command and per read ring.
    pub output_limit_bytes: usize,
    /// Whether the user's rc files are read (default false).
    pub read_rc_files: bool,
    /// Default history mode of `session_run`.
    pub history: HistoryMode,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            max_sessions: 8,
            idle_ttl: None,
            output_limit_bytes: super::DEFAULT_OUTPUT_LIMIT_BYTES,
            read_rc_files: false,
            history: HistoryMode::Suppress,
        }
    }
}

/// Keys of the `sessions` object.
pub const SESSION_CONFIG_KEYS: &[&str] = &[
    "enabled",
    "max_sessions",
    "idle_ttl_seconds",
    "output_limit_bytes",
    "read_rc_files",
    "history",
];

/// Merges a `sessions` object into `current`.
pub(super) fn session_config(current: &SessionConfig, value: &Value) -> Result<SessionConfig, ToolError> {
    let hint = format!("`sessions` is an object with keys {}", SESSION_CONFIG_KEYS.join(", "));
    let Value::Object(map) = value else {
        return Err(config_error(format!("`sessions` must be an object, got {value}"), hint));
    };
    let mut next = current.clone();
    for (key, value) in map {
        let bool_of = |v: &Value| {
            v.as_bool().ok_or_else(|| {
                config_error(
                    format!("`sessions.{key}` must be true or false, got {v}"),
                    "use a JSON boolean",
                )
            })
        };
        match key.as_str() {
            "enabled" => next.enabled = bool_of(value)?,
            "read_rc_files" => next.read_rc_files = bool_of(value)?,
            "max_sessions" => next.max_sessions = bounded_int("sessions.max_sessions", value, 1, 256)? as usize,
            "idle_ttl_seconds" => {
                next.idle_ttl = match value {
                    Value::Null => None,
                    v => Some(positive_seconds("sessions.idle_ttl_seconds", v)?),
                }
            }
            "output_limit_bytes" => {
                next.output_limit_bytes = bounded_int(
                    "sessions.output_limit_bytes",
                    value,
                    MIN_OUTPUT_LIMIT_BYTES as u64,
                    MAX_OUTPUT_LIMIT_BYTES as u64,
                )? as usize
            }
            "history" => next.history = history(value)?,
            other => {
                return Err(config_error(
                    format!("unknown configuration key `sessions.{other}`"),
                    hint,
                ));
            }
        }
    }
    Ok(next)
}

/// `sessions.history`: `"suppress"` or `"keep"`.
fn history(value: &Value) -> Result<HistoryMode, ToolError> {
    value.as_str().and_then(HistoryMode::parse).ok_or_else(|| {
        config_error(
            format!("`sessions.history` must be \"suppress\" or \"keep\", got {value}"),
            "use \"suppress\" (the default) or \"keep\"",
        )
    })
}
