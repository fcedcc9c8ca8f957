//! Return codes in the engine's vocabulary.
//!
//! The engine reads what `configure` and `set_working_dir` return as its own
//! `entropic_error_t` (an int enum, 0 = OK), so the plugin answers with those
//! values, never with `bash_mcp_result` codes (whose 5 the engine would read
//! as `ENTROPIC_ERROR_LOAD_FAILED`).

use std::ffi::c_int;

use crate::ffi::result::bash_mcp_result;

/// The `entropic_error_t` values the plugin returns (engine v2.10 numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum EntropicError {
    /// `ENTROPIC_OK`.
    Ok = 0,
    /// `ENTROPIC_ERROR_INVALID_ARGUMENT`: a NULL or non-UTF-8 string, a
    /// directory that does not exist or is not a directory.
    InvalidArgument = 1,
    /// `ENTROPIC_ERROR_INVALID_CONFIG`: the configuration JSON was refused.
    InvalidConfig = 2,
    /// `ENTROPIC_ERROR_PERMISSION_DENIED`: the directory is outside the
    /// plugin's `allowed_roots`.
    PermissionDenied = 8,
    /// `ENTROPIC_ERROR_INTERNAL`: a bug in the plugin (a caught panic).
    Internal = 15,
    /// `ENTROPIC_ERROR_INVALID_HANDLE`: the server handle was NULL.
    InvalidHandle = 19,
}

impl EntropicError {
    /// The engine's code for a failure the C API reported as `code`.
    pub fn from_result(code: bash_mcp_result) -> Self {
        use bash_mcp_result as R;
        match code {
            R::Ok => Self::Ok,
            R::NullArgument | R::InvalidUtf8 | R::InvalidArgument => Self::InvalidArgument,
            R::WorkingDirNotFound | R::WorkingDirNotDirectory => Self::InvalidArgument,
            R::WorkingDirNotAllowed => Self::PermissionDenied,
            R::InvalidTimeout | R::InvalidConfig | R::InvalidToolDefinition | R::InvalidPolicy => Self::InvalidConfig,
            R::Panic | R::Internal | R::CalledFromCallback | R::LogUnavailable => Self::Internal,
        }
    }

    /// The value as the ABI's `int`.
    pub fn raw(self) -> c_int {
        self as c_int
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_result_code_maps_to_an_engine_code() {
        for code in bash_mcp_result::ALL {
            let mapped = EntropicError::from_result(code);
            assert_eq!(mapped == EntropicError::Ok, code == bash_mcp_result::Ok, "{code:?}");
        }
        assert_eq!(EntropicError::from_result(bash_mcp_result::WorkingDirNotFound).raw(), 1);
        assert_eq!(EntropicError::from_result(bash_mcp_result::InvalidConfig).raw(), 2);
    }
}
