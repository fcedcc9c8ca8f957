//! `bash_mcp_server`: a [`BashServer`] behind an opaque pointer.

use std::ffi::{CString, c_char, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::bash::BashServer;
use crate::error::{ErrorCode, ToolError};
use crate::ffi::cancel::bash_mcp_cancel_token;
use crate::ffi::panic;
use crate::ffi::ptr::{free_owned, null_arg, opt_str_arg, ref_arg, str_arg};
use crate::ffi::result::{Failure, bash_mcp_result, set_last_error, to_code};
use crate::ffi::string::{into_c_string, string_call};
use crate::process::stream::OutputStream;
use crate::sandbox::SandboxConfig;
use crate::tool::{CallOptions, McpServer, ToolResponse};
use crate::tool_args::ToolArgs;

/// A shell server: the `execute` tool and its companions.
///
/// Its tools are `execute` (run a shell command), the background-job tools
/// `job_status`, `job_kill` and `job_list`, and the operator and session
/// tools that the configuration enables; bash_mcp_server_list_tools() lists
/// the ones offered now.
///
/// Create it with bash_mcp_server_new() and release it with
/// bash_mcp_server_free(). A server may be used from many threads at once;
/// only bash_mcp_server_free() must not run concurrently with any other call
/// on the same server.
///
/// The first command a process runs also starts a guard: a detached
/// `/bin/sh` (`sh -c … bash-mcp-guard …` in `ps`, not a child of the host)
/// that waits for the host process to exit, however it exits, and then kills
/// every process the library started for it. It writes nothing and costs no
/// CPU while the host lives; one per process, whatever the number of servers.
pub struct bash_mcp_server {
    // Shared, so an MCP handler made from the server can outlive the handle.
    inner: Arc<BashServer>,
    name: CString,
}

impl bash_mcp_server {
    /// Wraps a server for C.
    pub(crate) fn wrap(inner: BashServer) -> Result<Self, Failure> {
        let name = CString::new(inner.name())
            .map_err(|_| Failure::new(bash_mcp_result::InvalidArgument, "the server name contains a NUL byte"))?;
        Ok(Self {
            inner: Arc::new(inner),
            name,
        })
    }

    /// The wrapped server.
    pub(crate) fn inner(&self) -> &BashServer {
        &self.inner
    }

    /// A new reference to the server, for objects that keep it alive.
    pub(crate) fn shared(&self) -> Arc<BashServer> {
        self.inner.clone()
    }

    /// The server's name as a C string owned by the server.
    pub(crate) fn name_ptr(&self) -> *const c_char {
        self.name.as_ptr()
    }
}

/// Which stream a chunk of output came from.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum bash_mcp_output_stream {
    /// Standard output; also used for all output when stdout and stderr are
    /// merged (the default).
    Stdout = 1,
    /// Standard error; only when the call asked for `"streams": "separate"`.
    Stderr = 2,
}

impl From<OutputStream> for bash_mcp_output_stream {
    fn from(stream: OutputStream) -> Self {
        match stream {
            OutputStream::Stdout => Self::Stdout,
            OutputStream::Stderr => Self::Stderr,
        }
    }
}

/// Receives the output of a running command as it arrives.
///
/// Called on the thread that called bash_mcp_server_execute_with(), from
/// inside the loop that runs the command, once per chunk read from the
/// command's pipes, before that call returns. While the callback runs, the
/// loop waits: the command's time limit and a cancel are acted on only after
/// the callback returns, and the command may block on a full pipe. So the
/// callback must return quickly: copy or hand off the bytes, do not wait.
///
/// @param chunk The bytes; borrowed for the duration of the call. Not
///              NUL-terminated; may contain NUL bytes and invalid UTF-8 (a
///              multi-byte character may be split across two chunks).
/// @param len Number of bytes in @p chunk (at least 1).
/// @param stream Which stream the bytes came from.
/// @param user_data The pointer given to bash_mcp_server_execute_with().
/// @warning The callback must return normally: it must not throw a C++
///          exception or longjmp out. It must not run a tool on the server
///          that is running the command (bash_mcp_server_execute(),
///          bash_mcp_server_execute_with()): the running call holds one of the
///          server's `max_concurrent` slots, so with one slot the nested call
///          waits for itself forever. It must not call bash_mcp_server_free()
///          on that server, nor free the call's cancel token. It may call the
///          cancel token functions (bash_mcp_cancel_token_cancel() stops the
///          run: the call then returns `cancelled` with the output so far),
///          bash_mcp_string_free(), bash_mcp_last_error_message(),
///          bash_mcp_result_str() and bash_mcp_version().
pub type bash_mcp_output_callback = Option<
    unsafe extern "C" fn(chunk: *const c_char, len: usize, stream: bash_mcp_output_stream, user_data: *mut c_void),
>;

/// Creates a server that runs commands in @p working_dir.
///
/// @param working_dir Default working directory of commands (absolute, or
///        relative to the process's current directory); must exist. Borrowed
///        for the duration of the call.
/// @param data_dir Directory holding tool definitions
///        (`<data_dir>/tools/bash/execute.json`), or NULL to use the built-in
///        definition (also used when the file does not exist). Borrowed for the
///        duration of the call.
/// @param timeout_seconds Default time limit of a command, in seconds; must be
///        positive.
/// @param[out] out Receives the new server on success; untouched on failure.
///        Caller owns the server; release it with bash_mcp_server_free().
/// @return ::BASH_MCP_RESULT_OK, or ::BASH_MCP_RESULT_NULL_ARGUMENT,
///         ::BASH_MCP_RESULT_INVALID_UTF8, ::BASH_MCP_RESULT_INVALID_TIMEOUT,
///         ::BASH_MCP_RESULT_WORKING_DIR_NOT_FOUND,
///         ::BASH_MCP_RESULT_WORKING_DIR_NOT_DIRECTORY,
///         ::BASH_MCP_RESULT_INVALID_TOOL_DEFINITION, ::BASH_MCP_RESULT_PANIC.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_new(
    working_dir: *const c_char,
    data_dir: *const c_char,
    timeout_seconds: i32,
    out: *mut *mut bash_mcp_server,
) -> bash_mcp_result {
    panic::guard_code(|| {
        to_code((|| {
            if out.is_null() {
                return Err(null_arg("out"));
            }
            // SAFETY: `working_dir` is NULL or a NUL-terminated string valid for the call, per the contract.
            let working_dir = unsafe { str_arg(working_dir, "working_dir") }?;
            // SAFETY: `data_dir` is NULL or a NUL-terminated string valid for the call, per the contract.
            let data_dir = unsafe { opt_str_arg(data_dir, "data_dir") }?;
            if timeout_seconds <= 0 {
                return Err(ToolError::new(
                    ErrorCode::InvalidTimeout,
                    format!("the timeout must be a positive number of seconds, got {timeout_seconds}"),
                    "pass a timeout such as 30",
                )
                .into());
            }
            let timeout = Duration::from_secs(timeout_seconds.unsigned_abs().into());
            let server = BashServer::new(working_dir, data_dir.map(Path::new), timeout)?;
            let boxed = Box::new(bash_mcp_server::wrap(server)?);
            // SAFETY: `out` is non-NULL and points to writable storage per the contract.
            unsafe { out.write(Box::into_raw(boxed)) };
            Ok(())
        })())
    })
}

/// Releases a server.
///
/// @param server A server from bash_mcp_server_new(), or NULL (then nothing
///        happens). No other call on this server may be running or start
///        afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_free(server: *mut bash_mcp_server) {
    // SAFETY: NULL, or made by Box::into_raw in bash_mcp_server_new; the caller gives up ownership.
    unsafe { free_owned(server, |server: Box<_>| drop(server)) }
}

/// Returns the server's name.
///
/// A server made by bash_mcp_server_new() is named `bash`; tools are also
/// accepted qualified with this name (`bash.execute`). (The entropic plugin's
/// server is named `shell`, or what `BASH_MCP_PLUGIN_NAME` names.)
///
/// @param server The server; may be NULL.
/// @return Borrowed from the server: valid until bash_mcp_server_free(); do
///         not free it. NULL if @p server is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_name(server: *const bash_mcp_server) -> *const c_char {
    panic::guard(std::ptr::null, || {
        // SAFETY: NULL or a live server per the contract.
        match unsafe { ref_arg(server, "server") } {
            Ok(server) => server.name_ptr(),
            Err(failure) => {
                failure.record();
                std::ptr::null()
            }
        }
    })
}

/// Returns the server's tools as a JSON array.
///
/// Each element is `{"name", "description", "inputSchema"}` (camelCase
/// `inputSchema`, a JSON Schema), exactly as the Rust `list_tools` returns it.
///
/// @param server The server; may be NULL.
/// @return Caller owns the string; release it with bash_mcp_string_free().
///         NULL if @p server is NULL or on an internal error (see
///         bash_mcp_last_error_message()).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_list_tools(server: *const bash_mcp_server) -> *mut c_char {
    string_call(|| {
        // SAFETY: NULL or a live server per the contract.
        let server = unsafe { ref_arg(server, "server") }?;
        Ok(server.inner.list_tools())
    })
}

/// Runs a tool and waits for it to finish.
///
/// Same as bash_mcp_server_execute_with() with no cancel token and no output
/// callback. A background `execute` (`"background": true`) returns once the
/// job has started. A result whose output was cut (`"truncated": true`)
/// carries an `output_id`: the `output_read` tool returns any part of the
/// whole output with it (`{"output_id": ..., "grep": "error"}`, byte or
/// line ranges).
///
/// @param server The server; may be NULL.
/// @param tool_name The tool, local (`execute`) or qualified with the server
///        name (`bash.execute`). Borrowed for the duration of the call.
/// @param args_json The arguments as a JSON object, e.g.
///        `{"command": "ls -l"}`; an empty string counts as `{}`. Borrowed for
///        the duration of the call.
/// @return Caller owns the string; release it with bash_mcp_string_free().
///         The envelope `{"result": "<string>", "directives": []}`, exactly as
///         the Rust `execute` returns it; `result` is itself a JSON document
///         (`{"exit_code", "output", ...}`, or `{"error", "message", "hint",
///         ...}` for a refused call, a timeout or a cancel). NULL if an
///         argument is NULL or not UTF-8 (see bash_mcp_last_error_message()).
///         If the library panics, an envelope whose `result` is
///         `{"error":"internal",...}`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_execute(
    server: *mut bash_mcp_server,
    tool_name: *const c_char,
    args_json: *const c_char,
) -> *mut c_char {
    panic::guard(panic_envelope, || {
        // SAFETY: forwarded contract.
        unsafe {
            bash_mcp_server_execute_with(
                server,
                tool_name,
                args_json,
                std::ptr::null(),
                None,
                std::ptr::null_mut(),
            )
        }
    })
}

/// Runs a tool with a cancel token and a live output callback.
///
/// For `execute`, the call blocks until the command ends, times out, or is
/// cancelled. A cancel kills the command's whole process group; the result is
/// then `{"error": "cancelled", ..., "output": "<output so far>"}`.
///
/// With `"background": true`, `execute` starts a background job and returns
/// at once (`{"job_id": ..., "status": "running"}`): @p callback is never
/// called and @p cancel is ignored; stop the job with the `job_kill` tool.
/// The other tools (`job_status`, `job_kill`, ...) ignore @p cancel and
/// @p callback too.
///
/// @param server The server; may be NULL.
/// @param tool_name As for bash_mcp_server_execute().
/// @param args_json As for bash_mcp_server_execute().
/// @param cancel A token that another thread may cancel with
///        bash_mcp_cancel_token_cancel(), or NULL. Borrowed for the duration
///        of the call: it must not be freed before the call returns. A token
///        already cancelled makes the call return at once as cancelled.
/// @param callback Receives output chunks as they arrive, on the calling
///        thread, before this function returns; or NULL. See
///        ::bash_mcp_output_callback for what it may do: it must return
///        quickly and must not run a tool on @p server.
/// @param user_data Passed to @p callback unchanged; may be NULL.
/// @return As for bash_mcp_server_execute().
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_execute_with(
    server: *mut bash_mcp_server,
    tool_name: *const c_char,
    args_json: *const c_char,
    cancel: *const bash_mcp_cancel_token,
    callback: bash_mcp_output_callback,
    user_data: *mut c_void,
) -> *mut c_char {
    panic::guard(panic_envelope, || {
        let checked = (|| {
            // SAFETY: `server` is NULL or a live object of its type, per the contract.
            let server = unsafe { ref_arg(server.cast_const(), "server") }?;
            // SAFETY: `tool_name` is NULL or a NUL-terminated string valid for the call, per the contract.
            let tool_name = unsafe { str_arg(tool_name, "tool_name") }?;
            // SAFETY: `args_json` is NULL or a NUL-terminated string valid for the call, per the contract.
            let args_json = unsafe { str_arg(args_json, "args_json") }?;
            // SAFETY: `cancel` is NULL or a live token, per the contract.
            let cancel = unsafe { cancel.as_ref() };
            Ok::<_, Failure>((server, tool_name, args_json, cancel))
        })();
        let (server, tool_name, args_json, cancel) = match checked {
            Ok(parts) => parts,
            Err(failure) => {
                failure.record();
                return std::ptr::null_mut();
            }
        };
        // The edge: the arguments are parsed here, once, and the result
        // written as text here, once.
        let args = ToolArgs::parse(args_json);
        // SAFETY: the callback and user_data are the caller's, used as documented.
        let envelope = unsafe { call_with(server, tool_name, &args, cancel, callback, user_data, None) }.to_envelope();
        into_c_string(envelope)
    })
}

/// Runs a tool with an optional cancel token, forwarding output chunks to
/// `callback` (when given) on the calling thread.
///
/// # Safety
/// `callback` and `user_data` must be usable as bash_mcp_server_execute_with()
/// documents.
pub(crate) unsafe fn call_with(
    server: &bash_mcp_server,
    tool_name: &str,
    args: &ToolArgs,
    cancel: Option<&bash_mcp_cancel_token>,
    callback: bash_mcp_output_callback,
    user_data: *mut c_void,
    sandbox: Option<&SandboxConfig>,
) -> ToolResponse {
    let mut forward = |chunk: &[u8], stream: OutputStream| {
        if let Some(callback) = callback {
            // SAFETY: the chunk is valid for the call; the callback and
            // user_data are the caller's, used as documented.
            unsafe { callback(chunk.as_ptr().cast(), chunk.len(), stream.into(), user_data) };
        }
    };
    let options = CallOptions {
        cancel: cancel.map(|c| c.token()),
        on_output: callback
            .is_some()
            .then_some(&mut forward as &mut dyn FnMut(&[u8], OutputStream)),
        sandbox,
        principal: None,
        client: None,
    };
    server.inner.call_tool(tool_name, args, options)
}

/// Returns the string a host matches its permission rules against.
///
/// @param server The server; may be NULL.
/// @param tool_name The tool name as the host calls it (e.g. `bash.execute`).
///        Borrowed for the duration of the call.
/// @param args_json The call's arguments as JSON. Borrowed for the duration of
///        the call.
/// @return Caller owns the string; release it with bash_mcp_string_free().
///         Exactly what the Rust `get_permission_pattern` returns. NULL if an
///         argument is NULL or not UTF-8, or on an internal error (see
///         bash_mcp_last_error_message()).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_get_permission_pattern(
    server: *const bash_mcp_server,
    tool_name: *const c_char,
    args_json: *const c_char,
) -> *mut c_char {
    string_call(|| {
        // SAFETY: `server` is NULL or a live object of its type, per the contract.
        let server = unsafe { ref_arg(server, "server") }?;
        // SAFETY: `tool_name` is NULL or a NUL-terminated string valid for the call, per the contract.
        let tool_name = unsafe { str_arg(tool_name, "tool_name") }?;
        // SAFETY: `args_json` is NULL or a NUL-terminated string valid for the call, per the contract.
        let args_json = unsafe { str_arg(args_json, "args_json") }?;
        Ok(server.inner.get_permission_pattern(tool_name, args_json))
    })
}

/// Returns whether the host should skip its duplicate-call check for a tool.
///
/// @param server The server; may be NULL.
/// @param tool_name The tool name. Borrowed for the duration of the call.
/// @return What the Rust `skip_duplicate_check` returns; false if an argument
///         is NULL or not UTF-8.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_skip_duplicate_check(
    server: *const bash_mcp_server,
    tool_name: *const c_char,
) -> bool {
    panic::guard(
        || false,
        || {
            let checked = (|| {
                // SAFETY: `server` is NULL or a live object of its type, per the contract.
                let server = unsafe { ref_arg(server, "server") }?;
                // SAFETY: `tool_name` is NULL or a NUL-terminated string valid for the call, per the contract.
                let tool_name = unsafe { str_arg(tool_name, "tool_name") }?;
                Ok::<_, Failure>(server.inner.skip_duplicate_check(tool_name))
            })();
            checked.unwrap_or_else(|failure| {
                failure.record();
                false
            })
        },
    )
}

/// Applies a JSON configuration object.
///
/// Keys (all optional): `timeout_seconds`, `max_timeout_seconds`, `shell`,
/// `output_limit_bytes`, `kill_grace_ms`, `drain_ms`, `max_concurrent`,
/// `non_interactive`, `env`, `allowed_roots`, `project_config`, `audit`,
/// `tools`, `sessions`, `jobs`, `output_store`, `sandbox`, `yield_seconds`
/// (docs/execute.md describes each). On failure the previous configuration
/// stays in force.
///
/// @param server The server; may be NULL.
/// @param config_json One JSON object. Borrowed for the duration of the call.
/// @return ::BASH_MCP_RESULT_OK, or ::BASH_MCP_RESULT_NULL_ARGUMENT,
///         ::BASH_MCP_RESULT_INVALID_UTF8, ::BASH_MCP_RESULT_INVALID_CONFIG
///         (bash_mcp_last_error_message() names the key), ::BASH_MCP_RESULT_PANIC.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_configure(
    server: *mut bash_mcp_server,
    config_json: *const c_char,
) -> bash_mcp_result {
    panic::guard_code(|| {
        to_code((|| {
            // SAFETY: `server` is NULL or a live object of its type, per the contract.
            let server = unsafe { ref_arg(server.cast_const(), "server") }?;
            // SAFETY: `config_json` is NULL or a NUL-terminated string valid for the call, per the contract.
            let config_json = unsafe { str_arg(config_json, "config_json") }?;
            server.inner.configure(config_json)?;
            Ok(())
        })())
    })
}

/// Changes the default working directory of later commands.
///
/// @param server The server; may be NULL.
/// @param path An existing directory (absolute, or relative to the process's
///        current directory). Borrowed for the duration of the call.
/// @return ::BASH_MCP_RESULT_OK, or ::BASH_MCP_RESULT_NULL_ARGUMENT,
///         ::BASH_MCP_RESULT_INVALID_UTF8,
///         ::BASH_MCP_RESULT_WORKING_DIR_NOT_FOUND,
///         ::BASH_MCP_RESULT_WORKING_DIR_NOT_DIRECTORY,
///         ::BASH_MCP_RESULT_WORKING_DIR_NOT_ALLOWED, ::BASH_MCP_RESULT_PANIC.
///         On failure the previous directory stays in force.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_set_working_dir(
    server: *mut bash_mcp_server,
    path: *const c_char,
) -> bash_mcp_result {
    panic::guard_code(|| {
        to_code((|| {
            // SAFETY: `server` is NULL or a live object of its type, per the contract.
            let server = unsafe { ref_arg(server.cast_const(), "server") }?;
            // SAFETY: `path` is NULL or a NUL-terminated string valid for the call, per the contract.
            let path = unsafe { str_arg(path, "path") }?;
            server.inner.set_working_dir(Path::new(path))?;
            Ok(())
        })())
    })
}

/// Returns the default working directory, as an absolute path.
///
/// @param server The server; may be NULL.
/// @return Caller owns the string; release it with bash_mcp_string_free().
///         NULL if @p server is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_working_dir(server: *const bash_mcp_server) -> *mut c_char {
    string_call(|| {
        // SAFETY: NULL or a live server per the contract.
        let server = unsafe { ref_arg(server, "server") }?;
        Ok(server.inner.working_dir().as_os_str().as_bytes().to_vec())
    })
}

/// Returns the default time limit of a command, in whole seconds.
///
/// A fractional limit (set through bash_mcp_server_configure()) is rounded
/// up; bash_mcp_server_timeout_ms() gives it exactly.
///
/// @param server The server; may be NULL.
/// @return The limit in seconds (at least 1), or -1 if @p server is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_timeout(server: *const bash_mcp_server) -> i32 {
    number_call(-1, || {
        // SAFETY: NULL or a live server per the contract.
        let server = unsafe { ref_arg(server, "server") }?;
        let timeout = server.inner.timeout();
        let secs = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
        Ok(i32::try_from(secs).unwrap_or(i32::MAX))
    })
}

/// Returns the default time limit of a command, in milliseconds.
///
/// @param server The server; may be NULL.
/// @return The limit in milliseconds, or -1 if @p server is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_timeout_ms(server: *const bash_mcp_server) -> i64 {
    number_call(-1, || {
        // SAFETY: NULL or a live server per the contract.
        let server = unsafe { ref_arg(server, "server") }?;
        Ok(i64::try_from(server.inner.timeout().as_millis()).unwrap_or(i64::MAX))
    })
}

/// Runs a body returning a number inside the panic boundary; failures give
/// `fallback` and a last-error message.
fn number_call<T: Copy>(fallback: T, body: impl FnOnce() -> Result<T, Failure>) -> T {
    panic::guard(
        || fallback,
        || {
            body().unwrap_or_else(|failure| {
                failure.record();
                fallback
            })
        },
    )
}

/// The envelope returned when an execute call panics.
pub(crate) fn panic_envelope() -> *mut c_char {
    let error = crate::error::ToolError::new(
        crate::error::ErrorCode::Internal,
        "the library panicked while running the tool (a bug); the command may or may not have run",
        "retry; if it persists, report it with the library's log",
    );
    let envelope = ToolResponse::error(&error).to_envelope();
    match CString::new(envelope) {
        Ok(s) => s.into_raw(),
        Err(_) => {
            set_last_error("internal error: the error envelope could not be built");
            std::ptr::null_mut()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn panic_envelope_is_an_internal_error_document() {
        let ptr = panic::guard(panic_envelope, || -> *mut c_char { panic!("inside execute") });
        // SAFETY: panic_envelope() made `ptr` with CString::into_raw, and it is taken back once.
        let text = unsafe { CString::from_raw(ptr) }.into_string().unwrap();
        let envelope: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(envelope["directives"], Value::Array(vec![]));
        let result: Value = serde_json::from_str(envelope["result"].as_str().unwrap()).unwrap();
        assert_eq!(result["error"], "internal");
        assert!(crate::ffi::result::last_error().unwrap().contains("inside execute"));
    }
}
