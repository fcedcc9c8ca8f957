//! `bash_mcp_exec_result`: the outcome of one `execute` call as typed fields,
//! for C hosts that want the exit code and output without parsing JSON.

use std::ffi::{CString, c_char, c_void};

use serde_json::Value;

use crate::ffi::cancel::bash_mcp_cancel_token;
use crate::ffi::panic;
use crate::ffi::ptr::{free_owned, null_arg, ref_arg, str_arg};
use crate::ffi::result::{Failure, bash_mcp_result, to_code};
use crate::ffi::server::{bash_mcp_output_callback, bash_mcp_server, call_with};
use crate::sandbox::SandboxConfig;
use crate::tool::ToolResponse;
use crate::tool_args::ToolArgs;

/// The outcome of a command run with bash_mcp_server_run() or
/// bash_mcp_server_run_with(): its exit code, output, whether it timed out or
/// was truncated, or the error that stopped it.
///
/// Read it with the `bash_mcp_exec_result_` accessors and release it with
/// bash_mcp_exec_result_free(). Strings the accessors return are borrowed
/// from the result and valid until it is freed. A result never changes, so
/// it may be read from several threads at once.
pub struct bash_mcp_exec_result {
    exit_code: Option<i32>,
    // Text with a NUL byte appended; it may hold NUL bytes itself, so it is
    // no CString: C reads the documented length.
    output: Vec<u8>,
    stderr: Vec<u8>,
    timed_out: bool,
    truncated: bool,
    duration_ms: u64,
    error: Option<CString>,
    message: Option<CString>,
    hint: Option<CString>,
    json: Vec<u8>,
}

/// `text` with a terminating NUL byte, for C.
fn nul_terminated(text: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(text.len() + 1);
    v.extend_from_slice(text.as_bytes());
    v.push(0);
    v
}

/// The pointer and length (without the terminating NUL) of a NUL-terminated text.
fn text_parts(text: &[u8]) -> (*const c_char, usize) {
    (text.as_ptr().cast(), text.len() - 1)
}

/// A C string of a document's text field, if it has one (NUL bytes cut off
/// the text, which never holds any: codes, messages and hints are ours).
fn field(doc: &Value, key: &str) -> Option<CString> {
    let text = doc.get(key)?.as_str()?;
    Some(CString::new(text.split('\0').next().unwrap_or_default()).unwrap_or_default())
}

impl bash_mcp_exec_result {
    /// Reads the typed fields of an `execute` result, and keeps its text.
    fn from_response(response: &ToolResponse) -> Self {
        Self::from_document(&response.to_value(), &response.text())
    }

    /// Reads the typed fields of an `execute` result document whose text is `json`.
    fn from_document(doc: &Value, json: &str) -> Self {
        let text = |key: &str| doc.get(key).and_then(Value::as_str).unwrap_or("");
        // Separate streams have `stdout` and `stderr` in place of `output`.
        let out = if doc.get("output").is_some() {
            text("output")
        } else {
            text("stdout")
        };
        let (output, stderr) = (nul_terminated(out), nul_terminated(text("stderr")));
        let exit_code = doc
            .get("exit_code")
            .and_then(Value::as_i64)
            .and_then(|c| i32::try_from(c).ok());
        let flag = |key: &str| doc.get(key).and_then(Value::as_bool).unwrap_or(false);
        Self {
            exit_code,
            output,
            stderr,
            timed_out: flag("timed_out"),
            truncated: flag("truncated"),
            duration_ms: doc.get("duration_ms").and_then(Value::as_u64).unwrap_or(0),
            error: field(doc, "error"),
            message: field(doc, "message"),
            hint: field(doc, "hint"),
            json: nul_terminated(json),
        }
    }
}

/// Refuses `"background": true` and a `yield_seconds` number (a job that
/// has no outcome yet), and returns the arguments with `"yield_seconds":
/// null` added, so that a configured `yield_seconds` does not hand the
/// command back either: a typed result is always the command's end.
fn foreground_only(call: &mut ToolArgs) -> Result<(), Failure> {
    let Some(args) = call.object_mut() else {
        return Ok(());
    };
    if args.get("background") == Some(&Value::Bool(true)) {
        return Err(Failure::new(
            bash_mcp_result::InvalidArgument,
            "`background: true` starts a job that has no outcome yet; run it with \
             bash_mcp_server_execute() and poll the job_status tool",
        ));
    }
    if args.get("yield_seconds").is_some_and(|v| !v.is_null()) {
        return Err(Failure::new(
            bash_mcp_result::InvalidArgument,
            "`yield_seconds` may hand the command back as a job that has no outcome yet; \
             run it with bash_mcp_server_execute() and poll the job_status tool",
        ));
    }
    args.insert("yield_seconds".into(), Value::Null);
    Ok(())
}

/// Runs one shell command and returns its outcome as typed fields.
///
/// The same as the `execute` tool with `{"command": command}`: the command
/// runs in the server's working directory under its default time limit. For
/// other arguments (a working directory, a time limit, `stdin`, `env`,
/// separate streams), a cancel token or live output, use
/// bash_mcp_server_run_with().
///
/// A command that fails, times out or is refused still gives
/// ::BASH_MCP_RESULT_OK: the result says what happened
/// (bash_mcp_exec_result_exit_code(), bash_mcp_exec_result_error_code()).
///
/// @param server The server; may be NULL.
/// @param command The shell command, run as `/bin/sh -c command` (or the
///        configured shell). Borrowed for the duration of the call.
/// @param[out] out Receives the result on success; untouched on failure.
///        Caller owns it; release it with bash_mcp_exec_result_free().
/// @return ::BASH_MCP_RESULT_OK, or ::BASH_MCP_RESULT_NULL_ARGUMENT,
///         ::BASH_MCP_RESULT_INVALID_UTF8, ::BASH_MCP_RESULT_INTERNAL,
///         ::BASH_MCP_RESULT_PANIC.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_run(
    server: *mut bash_mcp_server,
    command: *const c_char,
    out: *mut *mut bash_mcp_exec_result,
) -> bash_mcp_result {
    panic::guard_code(|| {
        to_code((|| {
            // SAFETY: a C string per the documented contract.
            let command = unsafe { str_arg(command, "command") }?;
            let args = serde_json::json!({ "command": command });
            // SAFETY: forwarded contract.
            unsafe {
                run_into(
                    server,
                    ToolArgs::from_value(args),
                    std::ptr::null(),
                    None,
                    std::ptr::null_mut(),
                    out,
                    None,
                )
            }
        })())
    })
}

/// Runs the `execute` tool with JSON arguments, a cancel token and a live
/// output callback, and returns its outcome as typed fields.
///
/// @param server The server; may be NULL.
/// @param args_json The `execute` tool's arguments as a JSON object, e.g.
///        `{"command": "make", "timeout_seconds": 600}`. `"background": true`
///        is refused with ::BASH_MCP_RESULT_INVALID_ARGUMENT (a job has no
///        outcome yet: start it with bash_mcp_server_execute()). Borrowed for
///        the duration of the call.
/// @param cancel A token another thread may cancel, or NULL; as for
///        bash_mcp_server_execute_with().
/// @param callback Receives output chunks as they arrive, or NULL; as for
///        bash_mcp_server_execute_with().
/// @param user_data Passed to @p callback unchanged; may be NULL.
/// @param[out] out Receives the result on success; untouched on failure.
///        Caller owns it; release it with bash_mcp_exec_result_free().
/// @return ::BASH_MCP_RESULT_OK (also for a command that failed, timed out,
///         was cancelled or had bad arguments: the result says so), or
///         ::BASH_MCP_RESULT_NULL_ARGUMENT, ::BASH_MCP_RESULT_INVALID_UTF8,
///         ::BASH_MCP_RESULT_INVALID_ARGUMENT, ::BASH_MCP_RESULT_INTERNAL,
///         ::BASH_MCP_RESULT_PANIC.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_run_with(
    server: *mut bash_mcp_server,
    args_json: *const c_char,
    cancel: *const bash_mcp_cancel_token,
    callback: bash_mcp_output_callback,
    user_data: *mut c_void,
    out: *mut *mut bash_mcp_exec_result,
) -> bash_mcp_result {
    panic::guard_code(|| {
        to_code((|| {
            // SAFETY: a C string per the documented contract.
            let args_json = unsafe { str_arg(args_json, "args_json") }?;
            // SAFETY: forwarded contract.
            unsafe {
                run_into(
                    server,
                    ToolArgs::parse(args_json),
                    cancel,
                    callback,
                    user_data,
                    out,
                    None,
                )
            }
        })())
    })
}

/// Runs `execute` and writes the typed result to `out`; in `sandbox`, the
/// host's for this call, when given (a JSON object of `sandbox` keys applied
/// over the configured sandbox).
///
/// # Safety
/// As documented for bash_mcp_server_run_with() and
/// bash_mcp_server_run_in_sandbox().
unsafe fn run_into(
    server: *mut bash_mcp_server,
    mut args: ToolArgs,
    cancel: *const bash_mcp_cancel_token,
    callback: bash_mcp_output_callback,
    user_data: *mut c_void,
    out: *mut *mut bash_mcp_exec_result,
    sandbox: Option<&str>,
) -> Result<(), Failure> {
    if out.is_null() {
        return Err(null_arg("out"));
    }
    // SAFETY: NULL or live objects per the contract.
    let server = unsafe { ref_arg(server.cast_const(), "server") }?;
    // SAFETY: NULL or a live token per the contract.
    let cancel = unsafe { cancel.as_ref() };
    foreground_only(&mut args)?;
    let sandbox = sandbox.map(|json| host_sandbox(server, json)).transpose()?;
    // SAFETY: the callback and user_data are the caller's, used as documented.
    let response = unsafe { call_with(server, "execute", &args, cancel, callback, user_data, sandbox.as_ref()) };
    let result = bash_mcp_exec_result::from_response(&response);
    // SAFETY: `out` is non-NULL and points to writable storage per the contract.
    unsafe { out.write(Box::into_raw(Box::new(result))) };
    Ok(())
}

/// Runs the `execute` tool, as bash_mcp_server_run_with() does, in a
/// sandbox the host chose for this one call.
///
/// This is how a host widens the sandbox for a call it decided to trust
/// (more writable roots, network on, or no sandbox at all), or confines a
/// call on a server that runs commands unsandboxed. The library never widens
/// a call by itself, and a model cannot ask for this through the tool's
/// arguments: their `sandbox` key can only tighten, here the host's sandbox.
/// The call's audit entry records the sandbox it ran in as
/// `sandbox_override`.
///
/// @param server The server; may be NULL.
/// @param args_json The `execute` tool's arguments, as for
///        bash_mcp_server_run_with(). Borrowed for the duration of the call.
/// @param sandbox_json A JSON object of `sandbox` configuration keys
///        (docs/sandbox.md) applied over the server's configured sandbox for
///        this call only: e.g. `{"mode": "off"}` to run it unsandboxed,
///        `{"network": true}`, or `{"writable_roots": ["/srv/cache"]}`.
///        Relative paths resolve against the server's working directory.
///        Borrowed for the duration of the call.
/// @param cancel A token another thread may cancel, or NULL.
/// @param callback Receives output chunks as they arrive, or NULL.
/// @param user_data Passed to @p callback unchanged; may be NULL.
/// @param[out] out Receives the result on success; untouched on failure.
///        Caller owns it; release it with bash_mcp_exec_result_free().
/// @return ::BASH_MCP_RESULT_OK (also for a command that failed, timed out,
///         was cancelled or had bad arguments: the result says so), or
///         ::BASH_MCP_RESULT_NULL_ARGUMENT, ::BASH_MCP_RESULT_INVALID_UTF8,
///         ::BASH_MCP_RESULT_INVALID_ARGUMENT (also for a @p sandbox_json
///         that is not a valid `sandbox` object: the last error names the
///         key), ::BASH_MCP_RESULT_INTERNAL, ::BASH_MCP_RESULT_PANIC.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_run_in_sandbox(
    server: *mut bash_mcp_server,
    args_json: *const c_char,
    sandbox_json: *const c_char,
    cancel: *const bash_mcp_cancel_token,
    callback: bash_mcp_output_callback,
    user_data: *mut c_void,
    out: *mut *mut bash_mcp_exec_result,
) -> bash_mcp_result {
    panic::guard_code(|| {
        to_code((|| {
            // SAFETY: a C string per the documented contract.
            let args_json = unsafe { str_arg(args_json, "args_json") }?;
            // SAFETY: a C string per the documented contract.
            let sandbox_json = unsafe { str_arg(sandbox_json, "sandbox_json") }?;
            let args = ToolArgs::parse(args_json);
            // SAFETY: forwarded contract.
            unsafe { run_into(server, args, cancel, callback, user_data, out, Some(sandbox_json)) }
        })())
    })
}

/// The host's sandbox for one call: `json`'s keys over the configured sandbox.
fn host_sandbox(server: &bash_mcp_server, json: &str) -> Result<SandboxConfig, Failure> {
    let invalid = |message: String| Failure::new(bash_mcp_result::InvalidArgument, message);
    let value: Value = serde_json::from_str(json).map_err(|e| {
        invalid(format!(
            "`sandbox_json` is not JSON ({e}); pass an object such as {{\"mode\": \"off\"}}"
        ))
    })?;
    if !value.is_object() {
        return Err(invalid(format!(
            "`sandbox_json` must be a JSON object of sandbox keys, got {value}; pass e.g. {{\"network\": true}}"
        )));
    }
    let server = server.inner();
    server
        .config()
        .sandbox
        .apply(&value, &server.working_dir())
        .map_err(|p| invalid(format!("{} ({})", p.message, p.hint)))
}

/// Releases a result.
///
/// @param result A result from bash_mcp_server_run() or
///        bash_mcp_server_run_with(), or NULL (then nothing happens). Strings
///        borrowed from it must not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_exec_result_free(result: *mut bash_mcp_exec_result) {
    // SAFETY: NULL, or made by Box::into_raw in run_into; the caller gives up ownership.
    unsafe { free_owned(result, |result: Box<_>| drop(result)) }
}

/// Reads a field of a result, or gives `fallback` when it is NULL.
fn read<T>(result: *const bash_mcp_exec_result, fallback: T, get: impl FnOnce(&bash_mcp_exec_result) -> T) -> T {
    // SAFETY: NULL or a live result per the accessors' contract.
    match unsafe { ref_arg(result, "result") } {
        Ok(result) => get(result),
        Err(failure) => {
            failure.record();
            fallback
        }
    }
}

/// Returns the command's exit status.
///
/// Shell convention: 128+N when the shell was killed by signal N.
///
/// @param result The result; may be NULL.
/// @return The exit status (0 to 255), or -1 when the command has none: it
///         timed out, was cancelled, was refused, could not start (see
///         bash_mcp_exec_result_error_code()), or @p result is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_exec_result_exit_code(result: *const bash_mcp_exec_result) -> i32 {
    panic::guard(|| -1, || read(result, -1, |r| r.exit_code.unwrap_or(-1)))
}

/// Returns the command's output: stdout and stderr interleaved, or stdout
/// alone when the call asked for `"streams": "separate"`.
///
/// Output past the output limit is cut in the middle (head and tail kept, with
/// a marker line; bash_mcp_exec_result_truncated() says so). Invalid UTF-8 is
/// replaced with U+FFFD; NUL bytes are kept, so use @p len rather than
/// `strlen()` when they matter.
///
/// @param result The result; may be NULL.
/// @param[out] len Receives the length in bytes (without the terminating NUL);
///        may be NULL. Set to 0 when @p result is NULL.
/// @return Borrowed from @p result, NUL-terminated, valid until
///         bash_mcp_exec_result_free(); "" when there is no output. NULL if
///         @p result is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_exec_result_output(
    result: *const bash_mcp_exec_result,
    len: *mut usize,
) -> *const c_char {
    panic::guard(std::ptr::null, || {
        let (ptr, n) = read(result, (std::ptr::null(), 0), |r| text_parts(&r.output));
        // SAFETY: NULL or writable storage per the contract.
        if let Some(len) = unsafe { len.as_mut() } {
            *len = n;
        }
        ptr
    })
}

/// Returns the command's standard error when the call asked for
/// `"streams": "separate"`; otherwise "" (it is part of
/// bash_mcp_exec_result_output()).
///
/// @param result The result; may be NULL.
/// @param[out] len Receives the length in bytes; may be NULL. Set to 0 when
///        @p result is NULL.
/// @return Borrowed from @p result, NUL-terminated, valid until
///         bash_mcp_exec_result_free(). NULL if @p result is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_exec_result_stderr(
    result: *const bash_mcp_exec_result,
    len: *mut usize,
) -> *const c_char {
    panic::guard(std::ptr::null, || {
        let (ptr, n) = read(result, (std::ptr::null(), 0), |r| text_parts(&r.stderr));
        // SAFETY: NULL or writable storage per the contract.
        if let Some(len) = unsafe { len.as_mut() } {
            *len = n;
        }
        ptr
    })
}

/// Returns whether the time limit expired (the command's process group was
/// killed; the output is what it printed until then).
///
/// @param result The result; may be NULL.
/// @return true if the command timed out; false otherwise or if @p result is
///         NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_exec_result_timed_out(result: *const bash_mcp_exec_result) -> bool {
    panic::guard(|| false, || read(result, false, |r| r.timed_out))
}

/// Returns whether output was left out because it exceeded the output limit.
///
/// @param result The result; may be NULL.
/// @return true if some output was cut; false otherwise or if @p result is
///         NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_exec_result_truncated(result: *const bash_mcp_exec_result) -> bool {
    panic::guard(|| false, || read(result, false, |r| r.truncated))
}

/// Returns how long the command ran, in milliseconds.
///
/// @param result The result; may be NULL.
/// @return The duration; 0 for a call that ran nothing (refused, bad
///         arguments) or if @p result is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_exec_result_duration_ms(result: *const bash_mcp_exec_result) -> u64 {
    panic::guard(|| 0, || read(result, 0, |r| r.duration_ms))
}

/// Returns the error code of a call that did not run to its exit, such as
/// `"timeout"`, `"cancelled"`, `"working_dir_not_found"`,
/// `"permission_denied"` (the tool's error codes, listed in docs/execute.md).
///
/// @param result The result; may be NULL.
/// @return Borrowed from @p result, valid until bash_mcp_exec_result_free();
///         NULL when the command ran and exited (see
///         bash_mcp_exec_result_exit_code()) or @p result is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_exec_result_error_code(result: *const bash_mcp_exec_result) -> *const c_char {
    panic::guard(std::ptr::null, || {
        read(result, std::ptr::null(), |r| {
            r.error.as_ref().map_or(std::ptr::null(), |s| s.as_ptr())
        })
    })
}

/// Returns the sentence that says what went wrong, for a result with an
/// error code.
///
/// @param result The result; may be NULL.
/// @return Borrowed from @p result, valid until bash_mcp_exec_result_free();
///         NULL when there is no error or @p result is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_exec_result_error_message(result: *const bash_mcp_exec_result) -> *const c_char {
    panic::guard(std::ptr::null, || {
        read(result, std::ptr::null(), |r| {
            r.message.as_ref().map_or(std::ptr::null(), |s| s.as_ptr())
        })
    })
}

/// Returns what to do about the error, for a result with an error code.
///
/// @param result The result; may be NULL.
/// @return Borrowed from @p result, valid until bash_mcp_exec_result_free();
///         NULL when there is no error or @p result is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_exec_result_error_hint(result: *const bash_mcp_exec_result) -> *const c_char {
    panic::guard(std::ptr::null, || {
        read(result, std::ptr::null(), |r| {
            r.hint.as_ref().map_or(std::ptr::null(), |s| s.as_ptr())
        })
    })
}

/// Returns the whole result as the JSON document the `execute` tool returns
/// (the envelope's `result` string), for hosts that forward it to a model.
///
/// @param result The result; may be NULL.
/// @return Borrowed from @p result, valid until bash_mcp_exec_result_free().
///         NULL if @p result is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_exec_result_json(result: *const bash_mcp_exec_result) -> *const c_char {
    panic::guard(std::ptr::null, || {
        read(result, std::ptr::null(), |r| r.json.as_ptr().cast())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_become_typed_fields() {
        let typed = |json: &str| bash_mcp_exec_result::from_document(&serde_json::from_str(json).unwrap(), json);
        let r = typed(r#"{"exit_code":3,"output":"a\u0000b\n","timed_out":false,"truncated":true,"duration_ms":12}"#);
        assert_eq!((r.exit_code, r.truncated, r.duration_ms), (Some(3), true, 12));
        assert_eq!(r.output, b"a\0b\n\0");
        assert!(r.error.is_none() && r.message.is_none());
        let r = typed(r#"{"error":"timeout","message":"too slow","hint":"raise it","timed_out":true,"output":"x"}"#);
        assert_eq!(r.exit_code, None);
        assert!(r.timed_out);
        assert_eq!(r.error.as_deref(), Some(c"timeout"));
        assert_eq!(r.hint.as_deref(), Some(c"raise it"));
        let r = typed(r#"{"exit_code":0,"stdout":"o","stderr":"e"}"#);
        assert_eq!((r.output.as_slice(), r.stderr.as_slice()), (&b"o\0"[..], &b"e\0"[..]));
    }

    #[test]
    fn background_runs_are_refused() {
        let checked = |json: &str| foreground_only(&mut ToolArgs::parse(json));
        assert!(checked(r#"{"command":"x"}"#).is_ok());
        assert!(checked("not json").is_ok());
        let refused = checked(r#"{"command":"x","background":true}"#).unwrap_err();
        assert_eq!(refused.code, bash_mcp_result::InvalidArgument);
        assert!(
            refused.message.contains("bash_mcp_server_execute"),
            "{}",
            refused.message
        );
        let refused = checked(r#"{"command":"x","yield_seconds":5}"#).unwrap_err();
        assert!(refused.message.contains("yield_seconds"), "{}", refused.message);
        // A configured yield_seconds does not apply to a typed run.
        let mut args = ToolArgs::parse(r#"{"command":"x"}"#);
        foreground_only(&mut args).unwrap();
        assert_eq!(args.get("yield_seconds"), Some(&Value::Null));
    }
}
