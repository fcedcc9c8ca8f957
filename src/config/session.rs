//! The `sessions` part of the configuration, and the history mode a session
//! command runs with. Here, below the session module, so that configuration
//! never imports the layer it configures.

use std::time::Duration;

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
