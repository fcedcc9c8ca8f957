//! Strings handed to C, and the version.

use std::ffi::{CString, c_char};

use crate::ffi::panic;
use crate::ffi::ptr::free_owned;
use crate::ffi::result::{Failure, set_last_error};

/// Hands `text` to C as a caller-owned string (released with
/// `bash_mcp_string_free`). Text with a NUL byte cannot be a C string: that
/// gives NULL and a last-error message.
pub(crate) fn into_c_string(text: impl Into<Vec<u8>>) -> *mut c_char {
    match CString::new(text) {
        Ok(s) => s.into_raw(),
        Err(e) => {
            set_last_error(&format!(
                "internal error: a returned string contains a NUL byte at offset {}",
                e.nul_position()
            ));
            std::ptr::null_mut()
        }
    }
}

/// Runs a body returning a string inside the panic boundary; failures give
/// NULL and a last-error message.
pub(crate) fn string_call<S: Into<Vec<u8>>>(body: impl FnOnce() -> Result<S, Failure>) -> *mut c_char {
    panic::guard(std::ptr::null_mut, || match body() {
        Ok(text) => into_c_string(text),
        Err(failure) => {
            failure.record();
            std::ptr::null_mut()
        }
    })
}

/// Releases a string returned by this library.
///
/// @param s A string returned by a `bash_mcp_` function documented as
///          "Caller owns", or NULL (then nothing happens). It must not be used
///          afterwards, and must not be released twice or with free().
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_string_free(s: *mut c_char) {
    // SAFETY: the caller passes NULL or a pointer made by CString::into_raw in
    // into_c_string, and gives up its ownership.
    unsafe { free_owned(s, |s: CString| drop(s)) }
}

/// Returns the library version, e.g. `"0.1.0"`.
///
/// It is the version of the library actually loaded; compare it with
/// ::BASH_MCP_VERSION (the header's version) to detect a mismatch.
///
/// @return A static, NUL-terminated string that the caller must not free.
#[unsafe(no_mangle)]
pub extern "C" fn bash_mcp_version() -> *const c_char {
    panic::guard(|| VERSION_C.as_ptr().cast(), || VERSION_C.as_ptr().cast())
}

const VERSION_C: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returned_strings_round_trip_and_nul_is_refused() {
        let s = into_c_string("hello");
        // SAFETY: `s` is a NUL-terminated string the library made, live until the free.
        assert_eq!(unsafe { std::ffi::CStr::from_ptr(s) }.to_str().unwrap(), "hello");
        // SAFETY: `s` came from into_c_string() and is freed once.
        unsafe { bash_mcp_string_free(s) };
        // SAFETY: freeing NULL does nothing.
        unsafe { bash_mcp_string_free(std::ptr::null_mut()) };
        assert!(into_c_string("a\0b").is_null());
        // SAFETY: bash_mcp_version() returns a static NUL-terminated string.
        let version = unsafe { std::ffi::CStr::from_ptr(bash_mcp_version()) };
        assert_eq!(version.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    }
}
