//! `bash_mcp_policy`: a [`PermissionPolicy`] behind an opaque pointer, and the
//! permission helpers that need no object (the classifier and
//! [`command_pattern`]).

use std::ffi::c_char;

use crate::ffi::panic;
use crate::ffi::ptr::{free_owned, null_arg, opt_str_arg, ref_arg, str_arg};
use crate::ffi::result::{Failure, bash_mcp_result, to_code};
use crate::ffi::string::string_call;
use crate::permission::{Decision, Dialect, PermissionPolicy, PolicyError, classify, command_pattern};

/// Allow and deny rules in a host's format, applied to each command a shell
/// text would run.
///
/// Create it with bash_mcp_policy_new() and release it with
/// bash_mcp_policy_free(). A policy never changes after it is made, so it may
/// be used from many threads at once; only bash_mcp_policy_free() must not run
/// concurrently with any other call on the same policy.
pub struct bash_mcp_policy {
    inner: PermissionPolicy,
}

/// The outcome of bash_mcp_policy_decide().
///
/// Values are explicit and never renumbered.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum bash_mcp_decision {
    /// Every command the call would run is allowed and none is denied.
    Allow = 0,
    /// Some command (or the tool) is denied.
    Deny = 1,
    /// Neither: the host should ask the operator.
    Ask = 2,
    /// An argument was NULL or not UTF-8; bash_mcp_last_error_message() says
    /// which. Treat it as a refusal.
    Error = 3,
}

impl From<Decision> for bash_mcp_decision {
    fn from(decision: Decision) -> Self {
        match decision {
            Decision::Allow => Self::Allow,
            Decision::Deny => Self::Deny,
            Decision::Ask => Self::Ask,
        }
    }
}

/// Borrows a C array of `len` strings as UTF-8; `name` names the array in
/// messages (`allow[2]`).
///
/// # Safety
/// `array` is NULL (allowed only when `len` is 0) or points to `len` pointers,
/// each NULL or a NUL-terminated string, all valid for `'a`.
unsafe fn str_array<'a>(array: *const *const c_char, len: usize, name: &str) -> Result<Vec<&'a str>, Failure> {
    if array.is_null() {
        return if len == 0 {
            Ok(Vec::new())
        } else {
            Err(Failure::new(
                bash_mcp_result::NullArgument,
                format!("`{name}` is NULL but `{name}_len` is {len}; pass NULL only with a length of 0"),
            ))
        };
    }
    // SAFETY: non-NULL and `len` elements long per the caller's contract.
    let entries = unsafe { std::slice::from_raw_parts(array, len) };
    entries
        .iter()
        .enumerate()
        // SAFETY: each entry is NULL or a C string per the caller's contract.
        .map(|(i, entry)| unsafe { str_arg(*entry, &format!("{name}[{i}]")) })
        .collect()
}

/// The failure for an unusable rule entry, naming its list and index.
fn invalid_entry(error: &PolicyError, allow: &[&str], deny: &[&str]) -> Failure {
    // Allow entries are checked first, so an entry found there is the one that failed.
    let place = match allow.iter().position(|e| *e == error.entry) {
        Some(i) => format!("allow[{i}]"),
        None => match deny.iter().position(|e| *e == error.entry) {
            Some(i) => format!("deny[{i}]"),
            None => "an entry".to_owned(),
        },
    };
    Failure::new(bash_mcp_result::InvalidPolicy, format!("`{place}`: {error}"))
}

/// Creates a policy from allow and deny rules.
///
/// Each entry is a tool name (`bash.execute`), a tool glob (`bash.*`), or
/// `tool:argpattern` (`bash.execute:git *`), matched with POSIX `fnmatch(3)`.
/// Each command a shell text would run is matched separately as
/// `<tool>:<command>`: deny wins if any command (or the tool) is denied; allow
/// needs every command allowed; otherwise ask. A command that cannot be known
/// from its text is allowed only by a tool-level rule or `<tool>:*`.
///
/// @param allow @p allow_len allow rules, or NULL when @p allow_len is 0. The
///        array and its strings are borrowed for the duration of the call.
/// @param allow_len Number of entries in @p allow.
/// @param deny @p deny_len deny rules, or NULL when @p deny_len is 0. Borrowed
///        for the duration of the call.
/// @param deny_len Number of entries in @p deny.
/// @param[out] out Receives the new policy on success; untouched on failure.
///        Caller owns the policy; release it with bash_mcp_policy_free().
/// @return ::BASH_MCP_RESULT_OK, or ::BASH_MCP_RESULT_NULL_ARGUMENT (@p out,
///         an entry, or an array with a non-zero length is NULL),
///         ::BASH_MCP_RESULT_INVALID_UTF8, ::BASH_MCP_RESULT_INVALID_POLICY
///         (bash_mcp_last_error_message() names the entry, e.g. `allow[1]`,
///         and what is wrong with it), ::BASH_MCP_RESULT_PANIC.
/// @note Thread-safe: any number of policies may be made at once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_policy_new(
    allow: *const *const c_char,
    allow_len: usize,
    deny: *const *const c_char,
    deny_len: usize,
    out: *mut *mut bash_mcp_policy,
) -> bash_mcp_result {
    // SAFETY: the same contract, with no shell (the conservative reading).
    panic::guard_code(|| unsafe {
        bash_mcp_policy_new_for_shell(allow, allow_len, deny, deny_len, std::ptr::null(), out)
    })
}

/// Creates a policy, like bash_mcp_policy_new(), that reads command text the
/// way the shell at @p shell does (its dialect): `bash` understands `[[ ]]`
/// and `&>`; a POSIX `sh` (dash) reads them otherwise, so under `sh`
/// such text is a command no rule names. Use the shell your commands run
/// with (the server's `shell` setting, `/bin/sh` by default).
///
/// @param allow As in bash_mcp_policy_new().
/// @param allow_len As in bash_mcp_policy_new().
/// @param deny As in bash_mcp_policy_new().
/// @param deny_len As in bash_mcp_policy_new().
/// @param shell Path or name of the shell (`/bin/bash`, `sh`, `zsh`), or NULL
///        for the conservative reading of bash_mcp_policy_new() (text that bash
///        and a POSIX `sh` read differently is a command no rule names).
///        Borrowed for the duration of the call.
/// @param[out] out Receives the new policy on success; untouched on failure.
///        Caller owns the policy; release it with bash_mcp_policy_free().
/// @return As bash_mcp_policy_new(); ::BASH_MCP_RESULT_INVALID_UTF8 also for
///         @p shell.
/// @note Thread-safe: any number of policies may be made at once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_policy_new_for_shell(
    allow: *const *const c_char,
    allow_len: usize,
    deny: *const *const c_char,
    deny_len: usize,
    shell: *const c_char,
    out: *mut *mut bash_mcp_policy,
) -> bash_mcp_result {
    panic::guard_code(|| {
        to_code((|| {
            if out.is_null() {
                return Err(null_arg("out"));
            }
            // SAFETY: a C string or NULL per the documented contract.
            let shell = unsafe { opt_str_arg(shell, "shell") }?;
            // SAFETY: `allow` is NULL or `allow_len` pointers to NULL or C strings, valid for the call, per the contract.
            let allow = unsafe { str_array(allow, allow_len, "allow") }?;
            // SAFETY: `deny` is NULL or `deny_len` pointers to NULL or C strings, valid for the call, per the contract.
            let deny = unsafe { str_array(deny, deny_len, "deny") }?;
            let dialect = shell.map(Dialect::for_shell).unwrap_or_default();
            let inner = PermissionPolicy::new(&allow, &deny)
                .map_err(|e| invalid_entry(&e, &allow, &deny))?
                .with_dialect(dialect);
            let boxed = Box::new(bash_mcp_policy { inner });
            // SAFETY: `out` is non-NULL and points to writable storage per the contract.
            unsafe { out.write(Box::into_raw(boxed)) };
            Ok(())
        })())
    })
}

/// Releases a policy.
///
/// @param policy A policy from bash_mcp_policy_new(), or NULL (then nothing
///        happens). No other call on this policy may be running or start
///        afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_policy_free(policy: *mut bash_mcp_policy) {
    // SAFETY: NULL, or made by Box::into_raw in bash_mcp_policy_new; the caller gives up ownership.
    unsafe { free_owned(policy, |policy: Box<_>| drop(policy)) }
}

/// Decides a tool call: allow, deny, or ask the operator.
///
/// @param policy The policy; may be NULL.
/// @param tool_name The tool name as the host calls it (e.g. `bash.execute`).
///        Borrowed for the duration of the call.
/// @param args_json The call's arguments, `{"command": "..."}`. Borrowed for
///        the duration of the call. Arguments that are not such an object are
///        treated as a command that cannot be known from its text.
/// @return What the Rust `PermissionPolicy::decide` returns;
///         ::BASH_MCP_DECISION_ERROR if an argument is NULL or not UTF-8 (see
///         bash_mcp_last_error_message()) or on an internal error.
/// @note Thread-safe: a policy may be used from many threads at once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_policy_decide(
    policy: *const bash_mcp_policy,
    tool_name: *const c_char,
    args_json: *const c_char,
) -> bash_mcp_decision {
    panic::guard(
        || bash_mcp_decision::Error,
        || {
            let checked = (|| {
                // SAFETY: `policy` is NULL or a live object of its type, per the contract.
                let policy = unsafe { ref_arg(policy, "policy") }?;
                // SAFETY: `tool_name` is NULL or a NUL-terminated string valid for the call, per the contract.
                let tool_name = unsafe { str_arg(tool_name, "tool_name") }?;
                // SAFETY: `args_json` is NULL or a NUL-terminated string valid for the call, per the contract.
                let args_json = unsafe { str_arg(args_json, "args_json") }?;
                Ok::<_, Failure>(policy.inner.decide(tool_name, args_json).into())
            })();
            checked.unwrap_or_else(|failure| {
                failure.record();
                bash_mcp_decision::Error
            })
        },
    )
}

/// Explains bash_mcp_policy_decide(): for each command, the rule that decided
/// it.
///
/// @param policy The policy; may be NULL.
/// @param tool_name As for bash_mcp_policy_decide().
/// @param args_json As for bash_mcp_policy_decide().
/// @return Caller owns the string; release it with bash_mcp_string_free().
///         A JSON object (`{"decision", "rule", "reason", "parts": [{"command",
///         "subject", "decision", "rule"}, ...], ...}`), exactly the
///         serialization of what the Rust `PermissionPolicy::explain` returns.
///         NULL if an argument is NULL or not UTF-8, or on an internal error
///         (see bash_mcp_last_error_message()).
/// @note Thread-safe: a policy may be used from many threads at once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_policy_explain(
    policy: *const bash_mcp_policy,
    tool_name: *const c_char,
    args_json: *const c_char,
) -> *mut c_char {
    string_call(|| {
        // SAFETY: `policy` is NULL or a live object of its type, per the contract.
        let policy = unsafe { ref_arg(policy, "policy") }?;
        // SAFETY: `tool_name` is NULL or a NUL-terminated string valid for the call, per the contract.
        let tool_name = unsafe { str_arg(tool_name, "tool_name") }?;
        // SAFETY: `args_json` is NULL or a NUL-terminated string valid for the call, per the contract.
        let args_json = unsafe { str_arg(args_json, "args_json") }?;
        to_json(&policy.inner.explain(tool_name, args_json))
    })
}

/// Classifies a shell command as safe, dangerous or catastrophic (advisory).
///
/// Every command the text would run is classified, so quoting, substitutions,
/// wrappers (`env`, `sudo`, ...) and chaining do not hide a rule.
///
/// @param command The shell text. Borrowed for the duration of the call.
/// @return Caller owns the string; release it with bash_mcp_string_free().
///         A JSON object `{"class": "safe" | "dangerous" | "catastrophic",
///         "rules": [...], "hint": "...", "parts": [{"command", "class",
///         "rules"}, ...]}`, exactly the serialization of what the Rust
///         `classify` returns. NULL if @p command is NULL or not UTF-8, or on
///         an internal error (see bash_mcp_last_error_message()).
/// @note Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_classify(command: *const c_char) -> *mut c_char {
    string_call(|| {
        // SAFETY: NULL or a C string per the contract.
        let command = unsafe { str_arg(command, "command") }?;
        to_json(&classify(command))
    })
}

/// Returns the permission pattern for running a shell text with a tool.
///
/// The pattern names every command the text would run, e.g.
/// `bash.execute:{rm,true} *` for `true && rm -rf ~`; a text that cannot be
/// known gives `<tool>:{unknown}`, which only `<tool>:*` matches.
///
/// @param tool_name The tool name (e.g. `bash.execute`). Borrowed for the
///        duration of the call.
/// @param command The shell text (not JSON). Borrowed for the duration of the
///        call.
/// @return Caller owns the string; release it with bash_mcp_string_free().
///         Exactly what the Rust `command_pattern` returns. NULL if an argument
///         is NULL or not UTF-8, or on an internal error (see
///         bash_mcp_last_error_message()).
/// @note Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_command_pattern(tool_name: *const c_char, command: *const c_char) -> *mut c_char {
    string_call(|| {
        // SAFETY: `tool_name` is NULL or a NUL-terminated string valid for the call, per the contract.
        let tool_name = unsafe { str_arg(tool_name, "tool_name") }?;
        // SAFETY: `command` is NULL or a NUL-terminated string valid for the call, per the contract.
        let command = unsafe { str_arg(command, "command") }?;
        Ok(command_pattern(tool_name, command))
    })
}

/// Serializes a value compactly, as `serde_json::to_string` does.
fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, Failure> {
    serde_json::to_string(value).map_err(|e| {
        Failure::new(
            bash_mcp_result::Internal,
            format!("internal error: the result could not be serialized: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::result::last_error;

    fn new(allow: &[&std::ffi::CStr], deny: &[&std::ffi::CStr]) -> Result<*mut bash_mcp_policy, bash_mcp_result> {
        let allow: Vec<*const c_char> = allow.iter().map(|s| s.as_ptr()).collect();
        let deny: Vec<*const c_char> = deny.iter().map(|s| s.as_ptr()).collect();
        let mut out = std::ptr::null_mut();
        // SAFETY: both arrays hold `len` pointers to C strings that outlive the call,
        // and `out` is writable.
        match unsafe { bash_mcp_policy_new(allow.as_ptr(), allow.len(), deny.as_ptr(), deny.len(), &mut out) } {
            bash_mcp_result::Ok => Ok(out),
            code => Err(code),
        }
    }

    #[test]
    fn invalid_entries_are_named_by_list_and_index() {
        assert_eq!(
            new(&[c"bash.execute:git *", c"bash.execute:"], &[]),
            Err(bash_mcp_result::InvalidPolicy)
        );
        let message = last_error().unwrap();
        assert!(
            message.contains("`allow[1]`") && message.contains("bash.execute:"),
            "{message}"
        );
        assert_eq!(new(&[], &[c"ok", c""]), Err(bash_mcp_result::InvalidPolicy));
        assert!(last_error().unwrap().contains("`deny[1]`"));
        assert_eq!(new(&[], &[c"x", c"\xff"]), Err(bash_mcp_result::InvalidUtf8));
        assert!(last_error().unwrap().contains("`deny[1]`"));
    }

    #[test]
    fn null_arrays_need_a_zero_length() {
        let mut out = std::ptr::null_mut();
        // SAFETY: NULL arrays are checked against their lengths; `out` is writable.
        let code = unsafe { bash_mcp_policy_new(std::ptr::null(), 1, std::ptr::null(), 0, &mut out) };
        assert_eq!(code, bash_mcp_result::NullArgument);
        assert!(out.is_null());
        assert!(last_error().unwrap().contains("allow_len"));
        // SAFETY: as above, with lengths of zero.
        let code = unsafe { bash_mcp_policy_new(std::ptr::null(), 0, std::ptr::null(), 0, &mut out) };
        assert_eq!(code, bash_mcp_result::Ok);
        // SAFETY: `out` is the live policy just made; the strings are C literals.
        let decision = unsafe { bash_mcp_policy_decide(out, c"bash.execute".as_ptr(), c"{}".as_ptr()) };
        assert_eq!(decision, bash_mcp_decision::Ask);
        // SAFETY: `out` is live and freed once.
        unsafe { bash_mcp_policy_free(out) };
    }

    #[test]
    fn decisions_map_one_to_one() {
        let policy = new(&[c"bash.execute:git *"], &[c"bash.execute:rm *"]).unwrap();
        // SAFETY: `policy` is live until the free at the end; the strings are C strings.
        let decide =
            |args: &std::ffi::CStr| unsafe { bash_mcp_policy_decide(policy, c"bash.execute".as_ptr(), args.as_ptr()) };
        assert_eq!(decide(cr#"{"command":"git status"}"#), bash_mcp_decision::Allow);
        assert_eq!(decide(cr#"{"command":"git status; ls"}"#), bash_mcp_decision::Ask);
        assert_eq!(
            decide(cr#"{"command":"git status; rm -rf ~"}"#),
            bash_mcp_decision::Deny
        );
        // SAFETY: `policy` is live; a NULL tool name is checked.
        let decision = unsafe { bash_mcp_policy_decide(policy, std::ptr::null(), c"{}".as_ptr()) };
        assert_eq!(decision, bash_mcp_decision::Error);
        assert!(last_error().unwrap().contains("tool_name"));
        // SAFETY: `policy` is live and freed once.
        unsafe { bash_mcp_policy_free(policy) };
    }
}
