//! Pointer and string checks for C arguments, and the release of what C
//! hands back.

use std::ffi::{CStr, CString, c_char};

use crate::ffi::panic;
use crate::ffi::result::{Failure, bash_mcp_result};

/// Borrows a C string argument as UTF-8.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that stays valid and
/// unchanged for `'a`.
pub(crate) unsafe fn str_arg<'a>(ptr: *const c_char, name: &str) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(null_arg(name));
    }
    // SAFETY: non-NULL and NUL-terminated per the caller's contract.
    let bytes = unsafe { CStr::from_ptr(ptr) };
    bytes.to_str().map_err(|e| {
        Failure::new(
            bash_mcp_result::InvalidUtf8,
            format!(
                "`{name}` is not valid UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            ),
        )
    })
}

/// Like [`str_arg`], but NULL is allowed and gives `None`.
///
/// # Safety
/// As for [`str_arg`].
pub(crate) unsafe fn opt_str_arg<'a>(ptr: *const c_char, name: &str) -> Result<Option<&'a str>, Failure> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded contract.
    unsafe { str_arg(ptr, name) }.map(Some)
}

/// Borrows an object argument.
///
/// # Safety
/// `ptr` is NULL or points to a live `T` that stays valid for `'a`.
pub(crate) unsafe fn ref_arg<'a, T>(ptr: *const T, name: &str) -> Result<&'a T, Failure> {
    // SAFETY: non-NULL pointers are valid per the caller's contract.
    unsafe { ptr.as_ref() }.ok_or_else(|| null_arg(name))
}

/// A value this library hands to C as a raw pointer, and takes back in a
/// `_free` function.
pub(crate) trait HandedOut {
    /// What the pointer C holds points to.
    type Raw;

    /// Takes back ownership.
    ///
    /// # Safety
    /// `raw` is not NULL, came from this type's `into_raw`, and is taken back once.
    unsafe fn take(raw: *mut Self::Raw) -> Self;
}

impl<T> HandedOut for Box<T> {
    type Raw = T;

    unsafe fn take(raw: *mut T) -> Self {
        // SAFETY: made by Box::into_raw and taken back once, per the contract.
        unsafe { Box::from_raw(raw) }
    }
}

impl HandedOut for CString {
    type Raw = c_char;

    unsafe fn take(raw: *mut c_char) -> Self {
        // SAFETY: made by CString::into_raw and taken back once, per the contract.
        unsafe { CString::from_raw(raw) }
    }
}

/// The body of every `_free` function: NULL is a no-op; anything else is
/// taken back and given to `release` (a drop, or a shutdown first), inside the
/// panic boundary.
///
/// # Safety
/// `raw` is NULL or a pointer this library handed out as an `O`, and the
/// caller gives up ownership: nothing uses it during or after the call.
pub(crate) unsafe fn free_owned<O: HandedOut>(raw: *mut O::Raw, release: impl FnOnce(O)) {
    panic::guard(
        || (),
        || {
            if !raw.is_null() {
                // SAFETY: not NULL, handed out as an `O` and given up, per the contract.
                release(unsafe { O::take(raw) });
            }
        },
    )
}

/// The failure for a NULL argument.
pub(crate) fn null_arg(name: &str) -> Failure {
    Failure::new(bash_mcp_result::NullArgument, format!("`{name}` is NULL"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_checked_for_null_and_utf8() {
        let bad = b"ab\xffcd\0";
        // SAFETY: `bad` is NUL-terminated and lives to the end of the test.
        let err = unsafe { str_arg(bad.as_ptr().cast(), "path") }.unwrap_err();
        assert_eq!(err.code, bash_mcp_result::InvalidUtf8);
        assert!(err.message.contains("offset 2"), "{}", err.message);
        // SAFETY: NULL is allowed.
        let err = unsafe { str_arg(std::ptr::null(), "path") }.unwrap_err();
        assert_eq!(err.code, bash_mcp_result::NullArgument);
        // SAFETY: NULL is allowed.
        assert_eq!(unsafe { opt_str_arg(std::ptr::null(), "x") }, Ok(None));
        // SAFETY: a C string literal is static.
        assert_eq!(unsafe { str_arg(c"ok".as_ptr(), "x") }, Ok("ok"));
    }
}
