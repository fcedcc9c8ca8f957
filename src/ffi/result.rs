//! Result codes and the per-thread last-error message (their text for C is
//! in `result_string.rs`).

use std::cell::RefCell;

use crate::error::{ErrorCode, ToolError};

/// The result of a call that can fail.
///
/// Values are explicit and never renumbered; new codes may be added at the
/// end. bash_mcp_result_str() names each one, and
/// bash_mcp_last_error_message() gives the detail of the most recent failure
/// on the calling thread.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum bash_mcp_result {
    /// Success.
    Ok = 0,
    /// A required pointer argument was NULL.
    NullArgument = 1,
    /// An input string was not valid UTF-8.
    InvalidUtf8 = 2,
    /// An argument had an invalid value.
    InvalidArgument = 3,
    /// The timeout was not a positive number of seconds.
    InvalidTimeout = 4,
    /// The working directory does not exist or cannot be accessed.
    WorkingDirNotFound = 5,
    /// The working directory exists but is not a directory.
    WorkingDirNotDirectory = 6,
    /// The configuration JSON was invalid, or had an unknown key or a bad value.
    InvalidConfig = 7,
    /// A tool definition file could not be read or was invalid.
    InvalidToolDefinition = 8,
    /// The library panicked (a bug); the call had no effect that can be relied on.
    Panic = 9,
    /// The working directory is outside the directories the operator allowed.
    WorkingDirNotAllowed = 10,
    /// An unexpected internal failure (a bug); the message says where.
    Internal = 11,
    /// The call is not allowed from inside a log callback.
    CalledFromCallback = 12,
    /// Another tracing subscriber is already installed in this process, so log
    /// records cannot be routed to a callback.
    LogUnavailable = 13,
    /// A permission rule entry was unusable (empty, an empty tool or pattern,
    /// or a lone trailing backslash); the message names the entry.
    InvalidPolicy = 14,
}

impl bash_mcp_result {
    /// Every code, in numeric order.
    pub const ALL: [bash_mcp_result; 15] = [
        Self::Ok,
        Self::NullArgument,
        Self::InvalidUtf8,
        Self::InvalidArgument,
        Self::InvalidTimeout,
        Self::WorkingDirNotFound,
        Self::WorkingDirNotDirectory,
        Self::InvalidConfig,
        Self::InvalidToolDefinition,
        Self::Panic,
        Self::WorkingDirNotAllowed,
        Self::Internal,
        Self::CalledFromCallback,
        Self::LogUnavailable,
        Self::InvalidPolicy,
    ];

    /// The code for a raw value, if it names one.
    pub fn from_raw(raw: i32) -> Option<Self> {
        Self::ALL.iter().copied().find(|r| *r as i32 == raw)
    }

    /// The C name of the code, e.g. `BASH_MCP_RESULT_OK`.
    pub fn name(self) -> &'static str {
        self.name_c().to_str().unwrap_or("BASH_MCP_RESULT_UNKNOWN")
    }

    pub(crate) fn name_c(self) -> &'static std::ffi::CStr {
        match self {
            Self::Ok => c"BASH_MCP_RESULT_OK",
            Self::NullArgument => c"BASH_MCP_RESULT_NULL_ARGUMENT",
            Self::InvalidUtf8 => c"BASH_MCP_RESULT_INVALID_UTF8",
            Self::InvalidArgument => c"BASH_MCP_RESULT_INVALID_ARGUMENT",
            Self::InvalidTimeout => c"BASH_MCP_RESULT_INVALID_TIMEOUT",
            Self::WorkingDirNotFound => c"BASH_MCP_RESULT_WORKING_DIR_NOT_FOUND",
            Self::WorkingDirNotDirectory => c"BASH_MCP_RESULT_WORKING_DIR_NOT_DIRECTORY",
            Self::InvalidConfig => c"BASH_MCP_RESULT_INVALID_CONFIG",
            Self::InvalidToolDefinition => c"BASH_MCP_RESULT_INVALID_TOOL_DEFINITION",
            Self::Panic => c"BASH_MCP_RESULT_PANIC",
            Self::WorkingDirNotAllowed => c"BASH_MCP_RESULT_WORKING_DIR_NOT_ALLOWED",
            Self::Internal => c"BASH_MCP_RESULT_INTERNAL",
            Self::CalledFromCallback => c"BASH_MCP_RESULT_CALLED_FROM_CALLBACK",
            Self::LogUnavailable => c"BASH_MCP_RESULT_LOG_UNAVAILABLE",
            Self::InvalidPolicy => c"BASH_MCP_RESULT_INVALID_POLICY",
        }
    }

    /// The code a Rust error maps to.
    pub fn from_error_code(code: ErrorCode) -> Self {
        match code {
            ErrorCode::InvalidTimeout => Self::InvalidTimeout,
            ErrorCode::WorkingDirNotFound => Self::WorkingDirNotFound,
            ErrorCode::WorkingDirNotDirectory => Self::WorkingDirNotDirectory,
            ErrorCode::WorkingDirNotAllowed => Self::WorkingDirNotAllowed,
            ErrorCode::InvalidConfig => Self::InvalidConfig,
            ErrorCode::InvalidToolDefinition => Self::InvalidToolDefinition,
            ErrorCode::InvalidJson
            | ErrorCode::InvalidArguments
            | ErrorCode::UnknownArgument
            | ErrorCode::UnknownTool
            | ErrorCode::EmptyCommand
            | ErrorCode::CommandContainsNul
            | ErrorCode::CommandTooLong
            | ErrorCode::InvalidEnv
            | ErrorCode::InvalidStreams
            | ErrorCode::SessionNotFound
            | ErrorCode::TooManySessions
            | ErrorCode::SessionBusy
            | ErrorCode::SessionExited
            | ErrorCode::ShellNotFound
            | ErrorCode::HistoryConflict
            | ErrorCode::HistoryUnsupported
            | ErrorCode::SessionsDisabled
            | ErrorCode::JobNotFound
            | ErrorCode::OutputNotFound
            | ErrorCode::PermissionDenied => Self::InvalidArgument,
            ErrorCode::SpawnFailed
            | ErrorCode::SandboxUnavailable
            | ErrorCode::Timeout
            | ErrorCode::Cancelled
            | ErrorCode::Internal => Self::Internal,
        }
    }
}

/// A failed call: the code to return and the message to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub code: bash_mcp_result,
    pub message: String,
}

impl Failure {
    pub fn new(code: bash_mcp_result, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// Records the message as this thread's last error and returns the code.
    pub fn record(self) -> bash_mcp_result {
        set_last_error(&self.message);
        self.code
    }
}

impl From<ToolError> for Failure {
    fn from(error: ToolError) -> Self {
        Self::new(bash_mcp_result::from_error_code(error.code), error.to_string())
    }
}

/// Turns a `Result` into a code, recording the failure's message.
pub(crate) fn to_code(result: Result<(), Failure>) -> bash_mcp_result {
    match result {
        Ok(()) => bash_mcp_result::Ok,
        Err(failure) => failure.record(),
    }
}

thread_local! {
    static LAST_ERROR: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Records `message` as the calling thread's last error.
pub(crate) fn set_last_error(message: &str) {
    // A thread being torn down has no slot left; the message is then dropped.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = Some(message.to_owned()));
}

/// The calling thread's last error, if any (for tests).
pub(crate) fn last_error() -> Option<String> {
    LAST_ERROR.try_with(|slot| slot.borrow().clone()).ok().flatten()
}

/// A result code as C passes it in: any `int` value, checked before use.
///
/// Rust must not receive an enum value that names no variant, so functions
/// taking a result code take this; the header spells it `bash_mcp_result`.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawResult(pub i32);

impl From<bash_mcp_result> for RawResult {
    fn from(r: bash_mcp_result) -> Self {
        Self(r as i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_dense_explicit_and_named() {
        for (i, code) in bash_mcp_result::ALL.iter().enumerate() {
            assert_eq!(*code as i32, i as i32);
            assert!(code.name().starts_with("BASH_MCP_RESULT_"));
            assert_eq!(bash_mcp_result::from_raw(i as i32), Some(*code));
        }
        assert_eq!(bash_mcp_result::from_raw(-1), None);
        assert_eq!(bash_mcp_result::from_raw(bash_mcp_result::ALL.len() as i32), None);
    }

    #[test]
    fn failures_record_the_last_error_per_thread() {
        let code = Failure::new(bash_mcp_result::InvalidConfig, "bad key").record();
        assert_eq!(code, bash_mcp_result::InvalidConfig);
        assert_eq!(last_error().as_deref(), Some("bad key"));
        std::thread::spawn(|| assert_eq!(last_error(), None)).join().unwrap();
    }
}
