//! `bash_mcp_cancel_token`: a [`CancelToken`] behind an opaque pointer.

use crate::ffi::panic;
use crate::ffi::ptr::free_owned;
use crate::process::cancel::CancelToken;

/// A one-shot token that cancels running calls from any thread.
///
/// Create it with bash_mcp_cancel_token_new(), pass it to
/// bash_mcp_server_execute_with(), and cancel it from any thread with
/// bash_mcp_cancel_token_cancel(). Once cancelled it stays cancelled: use a
/// new token for the next call. Every function taking a
/// `const bash_mcp_cancel_token *` may run on many threads at once.
pub struct bash_mcp_cancel_token {
    token: CancelToken,
}

impl bash_mcp_cancel_token {
    /// The wrapped token.
    pub(crate) fn token(&self) -> &CancelToken {
        &self.token
    }
}

/// Creates a cancel token that is not cancelled.
///
/// @return Caller owns the token; release it with bash_mcp_cancel_token_free().
///         NULL only on an internal error (see bash_mcp_last_error_message()).
#[unsafe(no_mangle)]
pub extern "C" fn bash_mcp_cancel_token_new() -> *mut bash_mcp_cancel_token {
    panic::guard(std::ptr::null_mut, || {
        Box::into_raw(Box::new(bash_mcp_cancel_token {
            token: CancelToken::new(),
        }))
    })
}

/// Cancels every call using the token; safe from any thread, idempotent.
///
/// A call blocked in bash_mcp_server_execute_with() wakes at once, kills the
/// command's process group, and returns a `cancelled` result.
///
/// @param token The token, or NULL (then nothing happens).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_cancel_token_cancel(token: *const bash_mcp_cancel_token) {
    panic::guard(
        || (),
        || {
            // SAFETY: NULL or a live token per the contract.
            if let Some(token) = unsafe { token.as_ref() } {
                token.token.cancel();
            }
        },
    )
}

/// Returns whether the token was cancelled.
///
/// @param token The token, or NULL.
/// @return true once bash_mcp_cancel_token_cancel() was called on it; false if
///         not, or if @p token is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_cancel_token_is_cancelled(token: *const bash_mcp_cancel_token) -> bool {
    panic::guard(
        || false,
        // SAFETY: NULL or a live token per the contract.
        || unsafe { token.as_ref() }.is_some_and(|t| t.token.is_cancelled()),
    )
}

/// Releases a cancel token.
///
/// @param token A token from bash_mcp_cancel_token_new(), or NULL (then
///        nothing happens). No call may be using it, and no thread may cancel
///        it, during or after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_cancel_token_free(token: *mut bash_mcp_cancel_token) {
    // SAFETY: NULL, or made by Box::into_raw in bash_mcp_cancel_token_new; the caller gives up ownership.
    unsafe { free_owned(token, |token: Box<_>| drop(token)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_cancel_across_threads_and_null_is_safe() {
        let token = bash_mcp_cancel_token_new();
        // SAFETY: `token` is live until the free below.
        assert!(!unsafe { bash_mcp_cancel_token_is_cancelled(token) });
        let addr = token as usize;
        // SAFETY: the token is live until the free below, after the join; tokens may be
        // used from any thread.
        std::thread::spawn(move || unsafe { bash_mcp_cancel_token_cancel(addr as *const bash_mcp_cancel_token) })
            .join()
            .unwrap();
        // SAFETY: `token` is live until the free below.
        assert!(unsafe { bash_mcp_cancel_token_is_cancelled(token) });
        // SAFETY: NULL is allowed everywhere; `token` is freed once, last.
        unsafe {
            bash_mcp_cancel_token_cancel(std::ptr::null());
            assert!(!bash_mcp_cancel_token_is_cancelled(std::ptr::null()));
            bash_mcp_cancel_token_free(token);
            bash_mcp_cancel_token_free(std::ptr::null_mut());
        }
    }
}
