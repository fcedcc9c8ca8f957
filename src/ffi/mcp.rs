//! `bash_mcp_mcp_handler`: the library's MCP protocol handler for hosts that
//! carry MCP over their own channel.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use crate::ffi::panic;
use crate::ffi::ptr::{free_owned, null_arg, ref_arg};
use crate::ffi::result::{Failure, bash_mcp_result};
use crate::ffi::server::bash_mcp_server;
use crate::ffi::string::into_c_string;
use crate::mcp::{HandlerOptions, McpHandler};

/// Receives a message the handler sends on its own: a response finished on a
/// worker thread (`tools/call`) or a notification (`notifications/progress`).
///
/// @param message One JSON-RPC message, compact, without a trailing newline;
///        NUL-terminated. Borrowed for the duration of the call.
/// @param len Its length in bytes, without the NUL.
/// @param user_data The pointer given to bash_mcp_mcp_handler_new().
///
/// Called on library worker threads, possibly on several at once: it must be
/// thread-safe and must not call bash_mcp_mcp_handler_free().
pub type bash_mcp_message_callback =
    Option<unsafe extern "C" fn(message: *const c_char, len: usize, user_data: *mut c_void)>;

/// An MCP (JSON-RPC 2.0) protocol handler over a server.
///
/// Feed it each message received from the client with
/// bash_mcp_mcp_handler_handle_message(); send what it returns, and what it
/// hands to its callback, back to the client. It serves both protocol eras
/// (the `initialize` handshake and the stateless 2026-07-28 revision), runs
/// `tools/call` on worker threads, sends progress, and honours cancellation.
/// Every function taking a `const bash_mcp_mcp_handler *` may run on many
/// threads at once; bash_mcp_mcp_handler_free() must not overlap other calls
/// on the handler.
pub struct bash_mcp_mcp_handler {
    inner: McpHandler,
}

/// The callback and its user data, moved to worker threads.
struct Outbound {
    callback: unsafe extern "C" fn(*const c_char, usize, *mut c_void),
    user_data: *mut c_void,
}

// SAFETY: the contract of bash_mcp_mcp_handler_new() makes the callback and
// its user data safe to use from any thread.
unsafe impl Send for Outbound {}
// SAFETY: as for Send: the callback may be called from several threads at once,
// which the same contract allows.
unsafe impl Sync for Outbound {}

impl Outbound {
    fn send(&self, message: String) {
        let len = message.len();
        // Messages are JSON text: serde_json escapes NUL, so this cannot fail.
        if let Ok(text) = std::ffi::CString::new(message) {
            // SAFETY: a valid C string for the duration of the call; the
            // callback and user data are the caller's, used as documented.
            unsafe { (self.callback)(text.as_ptr(), len, self.user_data) };
        }
    }
}

/// Creates an MCP handler over @p server.
///
/// @param server The server whose tools the handler serves. The handler keeps
///        its own reference: the server may be freed before the handler.
/// @param callback Receives messages the handler sends later (responses
///        finished on worker threads, progress notifications), on library
///        worker threads. Must not be NULL.
/// @param user_data Passed to @p callback unchanged; may be NULL. Must stay
///        valid until bash_mcp_mcp_handler_free() returns.
/// @param[out] out Receives the new handler on success; untouched on failure.
///        Caller owns the handler; release it with bash_mcp_mcp_handler_free().
/// @return #BASH_MCP_RESULT_OK, or #BASH_MCP_RESULT_NULL_ARGUMENT when
///         @p server, @p callback or @p out is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_mcp_handler_new(
    server: *const bash_mcp_server,
    callback: bash_mcp_message_callback,
    user_data: *mut c_void,
    out: *mut *mut bash_mcp_mcp_handler,
) -> bash_mcp_result {
    panic::guard_code(|| {
        let made = (|| {
            // SAFETY: NULL or a live server per the contract.
            let server = unsafe { ref_arg(server, "server") }?;
            let callback = callback.ok_or_else(|| null_arg("callback"))?;
            if out.is_null() {
                return Err(null_arg("out"));
            }
            let outbound = Arc::new(Outbound { callback, user_data });
            let inner = McpHandler::new(
                server.shared(),
                move |message| outbound.send(message),
                HandlerOptions::default(),
            );
            Ok::<_, Failure>(Box::new(bash_mcp_mcp_handler { inner }))
        })();
        match made {
            Ok(handler) => {
                // SAFETY: checked non-NULL above.
                unsafe { *out = Box::into_raw(handler) };
                bash_mcp_result::Ok
            }
            Err(failure) => failure.record(),
        }
    })
}

/// Handles one message from the client.
///
/// @param handler The handler.
/// @param message The message bytes (one JSON-RPC message, without the
///        line's newline). Invalid UTF-8 or JSON gets a JSON-RPC parse error
///        reply, not a failure. Borrowed for the duration of the call.
/// @param len The message's length in bytes.
/// @return Caller owns the string; release it with bash_mcp_string_free().
///         The replies to send now, one JSON-RPC message per line (joined
///         with `\n`, no trailing newline); an empty string when there is
///         nothing to send now (a notification, or a `tools/call` whose
///         response will come through the callback). NULL when @p handler is
///         NULL, or @p message is NULL with a non-zero @p len.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_mcp_handler_handle_message(
    handler: *const bash_mcp_mcp_handler,
    message: *const c_char,
    len: usize,
) -> *mut c_char {
    panic::guard(std::ptr::null_mut, || {
        // SAFETY: NULL or a live handler per the contract.
        let handler = match unsafe { ref_arg(handler, "handler") } {
            Ok(h) => h,
            Err(failure) => {
                failure.record();
                return std::ptr::null_mut();
            }
        };
        let bytes: &[u8] = match (message.is_null(), len) {
            (_, 0) => &[],
            (true, _) => {
                null_arg("message").record();
                return std::ptr::null_mut();
            }
            // SAFETY: the caller gives `len` readable bytes at `message`.
            (false, _) => unsafe { std::slice::from_raw_parts(message.cast::<u8>(), len) },
        };
        into_c_string(handler.inner.handle_bytes(bytes).join("\n"))
    })
}

/// Stops the handler and releases it: running calls are cancelled (their
/// process groups killed) and its worker threads finish before this returns;
/// the callback is not called afterwards.
///
/// @param handler The handler, or NULL (then nothing happens).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_mcp_handler_free(handler: *mut bash_mcp_mcp_handler) {
    // SAFETY: NULL, or a handler from bash_mcp_mcp_handler_new(), freed once.
    unsafe { free_owned(handler, |handler: Box<bash_mcp_mcp_handler>| handler.inner.shutdown()) }
}
