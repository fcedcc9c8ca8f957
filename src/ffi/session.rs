//! `bash_mcp_subscription`: a host's own view of a session's terminal (the
//! C side of `SessionManager::subscribe`, `type_input` and `resize`).

use std::ffi::{c_char, c_void};

use crate::ffi::panic;
use crate::ffi::ptr::{free_owned, null_arg, ref_arg, str_arg};
use crate::ffi::result::{Failure, bash_mcp_result, to_code};
use crate::ffi::server::bash_mcp_server;
use crate::session::{Subscription, TerminalEvent};

/// What a terminal callback is told.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum bash_mcp_terminal_event {
    /// Bytes for the host's terminal emulator: first a replay of recent
    /// output, then live output. The agent's commands appear after a `$ `
    /// prompt as if typed; line ends are `\r\n`.
    Output = 1,
    /// The session ended (closed, or its shell exited); no call follows.
    Closed = 2,
}

/// Receives a session's terminal output.
///
/// Called on the session's reader thread (not the thread that subscribed),
/// once with the replay during bash_mcp_session_subscribe(), then for each
/// piece of output, and once with ::BASH_MCP_TERMINAL_EVENT_CLOSED. While
/// it runs the session's output waits, so it must return quickly: copy or
/// hand off the bytes.
///
/// @param event What happened.
/// @param bytes The output; borrowed for the duration of the call; not
///              NUL-terminated; may hold any bytes. NULL for
///              ::BASH_MCP_TERMINAL_EVENT_CLOSED.
/// @param len Number of bytes in @p bytes (0 for a close).
/// @param user_data The pointer given to bash_mcp_session_subscribe().
/// @warning The callback must return normally (no C++ exception, no
///          longjmp) and must not call any bash_mcp_session_ or
///          bash_mcp_subscription_ function, nor run a session tool (it
///          would wait for itself).
pub type bash_mcp_terminal_callback = Option<
    unsafe extern "C" fn(event: bash_mcp_terminal_event, bytes: *const c_char, len: usize, user_data: *mut c_void),
>;

/// A host's subscription to a session's terminal; see
/// bash_mcp_session_subscribe(). Release it with bash_mcp_subscription_free().
pub struct bash_mcp_subscription {
    _subscription: Subscription,
}

/// The callback and its user data, moved to the session's reader thread.
struct Target {
    callback: unsafe extern "C" fn(bash_mcp_terminal_event, *const c_char, usize, *mut c_void),
    user_data: *mut c_void,
}

// SAFETY: the C contract of bash_mcp_session_subscribe() requires the
// callback and user_data to be usable from another thread.
unsafe impl Send for Target {}

impl Target {
    fn call(&self, event: TerminalEvent<'_>) {
        let (kind, ptr, len) = match event {
            TerminalEvent::Output(bytes) => (bash_mcp_terminal_event::Output, bytes.as_ptr().cast(), bytes.len()),
            TerminalEvent::Closed => (bash_mcp_terminal_event::Closed, std::ptr::null(), 0),
        };
        // SAFETY: the bytes live for the call; the callback and user_data
        // are the caller's, used as documented.
        unsafe { (self.callback)(kind, ptr, len, self.user_data) };
    }
}

/// Subscribes to a session's terminal, as a person attached with
/// `bash-mcp attach` sees it, for a host that draws it itself.
///
/// The agent's results then report the watcher (`people_watching`). Keys
/// typed by a person go in with bash_mcp_session_write(), the window size
/// with bash_mcp_session_resize().
///
/// @param server The server; may be NULL. Sessions must be enabled.
/// @param session The session's id or name (`falcon`, `#1 falcon`, `#1`).
///        Borrowed for the duration of the call.
/// @param callback Called with the output (see bash_mcp_terminal_callback);
///        the replay is delivered before this function returns.
/// @param user_data Passed to @p callback as is; must be usable from the
///        session's reader thread until bash_mcp_subscription_free() returns.
/// @param[out] out On success, the subscription. Caller owns it; release it
///        with bash_mcp_subscription_free().
/// @return ::BASH_MCP_RESULT_OK, or ::BASH_MCP_RESULT_NULL_ARGUMENT,
///         ::BASH_MCP_RESULT_INVALID_UTF8, ::BASH_MCP_RESULT_INVALID_ARGUMENT
///         (no such session, or sessions disabled; see
///         bash_mcp_last_error_message()), ::BASH_MCP_RESULT_PANIC.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_session_subscribe(
    server: *const bash_mcp_server,
    session: *const c_char,
    callback: bash_mcp_terminal_callback,
    user_data: *mut c_void,
    out: *mut *mut bash_mcp_subscription,
) -> bash_mcp_result {
    panic::guard_code(|| {
        to_code((|| {
            // SAFETY: `server` is NULL or a live object of its type, per the contract.
            let server = unsafe { ref_arg(server, "server") }?;
            // SAFETY: `session` is NULL or a NUL-terminated string valid for the call, per the contract.
            let session = unsafe { str_arg(session, "session") }?;
            let callback = callback.ok_or_else(|| null_arg("callback"))?;
            if out.is_null() {
                return Err(null_arg("out"));
            }
            let manager = server.inner().sessions()?;
            let id = manager.resolve(session)?;
            let target = Target { callback, user_data };
            let subscription = manager.subscribe(&id, Box::new(move |event| target.call(event)))?;
            let handle = Box::into_raw(Box::new(bash_mcp_subscription {
                _subscription: subscription,
            }));
            // SAFETY: `out` is non-NULL and writable per the contract.
            unsafe { *out = handle };
            Ok(())
        })())
    })
}

/// Ends a subscription. Once this returns the callback is not called again.
///
/// @param subscription From bash_mcp_session_subscribe(), or NULL (then
///        nothing happens).
/// @warning Do not call it from the subscription's own callback.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_subscription_free(subscription: *mut bash_mcp_subscription) {
    // SAFETY: NULL, or a pointer from bash_mcp_session_subscribe(), freed once.
    unsafe { free_owned(subscription, |subscription: Box<_>| drop(subscription)) }
}

/// Types a person's keys into a session's terminal, exactly as given.
///
/// What is typed reaches the program and nothing else: a password typed
/// here is neither logged nor shown to the agent, whose next result says
/// that a person typed (`person_typed`).
///
/// @param server The server; may be NULL.
/// @param session The session's id or name. Borrowed for the duration of the call.
/// @param bytes The keys (e.g. `"\r"` for Enter, `"\x03"` for Ctrl-C).
///        Borrowed for the duration of the call; may hold any bytes.
/// @param len Number of bytes in @p bytes.
/// @return ::BASH_MCP_RESULT_OK, or ::BASH_MCP_RESULT_NULL_ARGUMENT,
///         ::BASH_MCP_RESULT_INVALID_UTF8 (@p session),
///         ::BASH_MCP_RESULT_INVALID_ARGUMENT (no such session),
///         ::BASH_MCP_RESULT_INTERNAL, ::BASH_MCP_RESULT_PANIC.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_session_write(
    server: *const bash_mcp_server,
    session: *const c_char,
    bytes: *const c_char,
    len: usize,
) -> bash_mcp_result {
    panic::guard_code(|| {
        to_code((|| {
            // SAFETY: `server` is NULL or a live object of its type, per the contract.
            let server = unsafe { ref_arg(server, "server") }?;
            // SAFETY: `session` is NULL or a NUL-terminated string valid for the call, per the contract.
            let session = unsafe { str_arg(session, "session") }?;
            if bytes.is_null() {
                return Err(null_arg("bytes"));
            }
            // SAFETY: `bytes` holds `len` readable bytes per the contract.
            let keys = unsafe { std::slice::from_raw_parts(bytes.cast::<u8>(), len) };
            let manager = server.inner().sessions()?;
            manager.type_input(&manager.resolve(session)?, keys)?;
            Ok::<(), Failure>(())
        })())
    })
}

/// Sets a session's terminal size; its programs get SIGWINCH.
///
/// @param server The server; may be NULL.
/// @param session The session's id or name. Borrowed for the duration of the call.
/// @param rows Rows, at least 1.
/// @param cols Columns, at least 1.
/// @return ::BASH_MCP_RESULT_OK, or ::BASH_MCP_RESULT_NULL_ARGUMENT,
///         ::BASH_MCP_RESULT_INVALID_UTF8, ::BASH_MCP_RESULT_INVALID_ARGUMENT
///         (no such session, or a size of 0), ::BASH_MCP_RESULT_INTERNAL,
///         ::BASH_MCP_RESULT_PANIC.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_session_resize(
    server: *const bash_mcp_server,
    session: *const c_char,
    rows: u16,
    cols: u16,
) -> bash_mcp_result {
    panic::guard_code(|| {
        to_code((|| {
            // SAFETY: `server` is NULL or a live object of its type, per the contract.
            let server = unsafe { ref_arg(server, "server") }?;
            // SAFETY: `session` is NULL or a NUL-terminated string valid for the call, per the contract.
            let session = unsafe { str_arg(session, "session") }?;
            let manager = server.inner().sessions()?;
            manager.resize(&manager.resolve(session)?, rows, cols)?;
            Ok::<(), Failure>(())
        })())
    })
}
