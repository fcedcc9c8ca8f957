//! The text of results for C: the name of a result code and the message of
//! the last failure. Apart from `result.rs`, so that the result codes use
//! nothing of the panic boundary or of strings, which both use them.

use std::ffi::c_char;

use crate::ffi::panic;
use crate::ffi::result::{RawResult, bash_mcp_result, last_error};
use crate::ffi::string::into_c_string;

/// Returns the static name of a result code, e.g. `"BASH_MCP_RESULT_OK"`.
///
/// @param r A result code. A value that names no code is allowed.
/// @return A static, NUL-terminated string that the caller must not free;
///         `"BASH_MCP_RESULT_UNKNOWN"` for a value that names no code.
#[unsafe(no_mangle)]
pub extern "C" fn bash_mcp_result_str(r: RawResult) -> *const c_char {
    panic::guard(
        || c"BASH_MCP_RESULT_UNKNOWN".as_ptr(),
        || match bash_mcp_result::from_raw(r.0) {
            Some(code) => code.name_c().as_ptr(),
            None => c"BASH_MCP_RESULT_UNKNOWN".as_ptr(),
        },
    )
}

/// Returns the message of the most recent failure on the calling thread.
///
/// Every function that fails (returns a code other than
/// ::BASH_MCP_RESULT_OK, or NULL where it documents NULL as failure) records a
/// message that names the problem and says what to do. The message stays until
/// the next failure on the same thread; successful calls do not clear it.
///
/// @return Caller owns the string; release it with bash_mcp_string_free().
///         NULL when no call on this thread has failed yet.
#[unsafe(no_mangle)]
pub extern "C" fn bash_mcp_last_error_message() -> *mut c_char {
    panic::guard(std::ptr::null_mut, || match last_error() {
        Some(message) => into_c_string(message),
        None => std::ptr::null_mut(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_str_handles_unknown_values() {
        // SAFETY: bash_mcp_result_str() returns a static NUL-terminated string for any value.
        let name = |raw| unsafe { std::ffi::CStr::from_ptr(bash_mcp_result_str(RawResult(raw))) };
        assert_eq!(name(0).to_str().unwrap(), "BASH_MCP_RESULT_OK");
        assert_eq!(name(9).to_str().unwrap(), "BASH_MCP_RESULT_PANIC");
        assert_eq!(name(14).to_str().unwrap(), "BASH_MCP_RESULT_INVALID_POLICY");
        assert_eq!(name(12345).to_str().unwrap(), "BASH_MCP_RESULT_UNKNOWN");
        assert_eq!(name(-7).to_str().unwrap(), "BASH_MCP_RESULT_UNKNOWN");
    }
}
