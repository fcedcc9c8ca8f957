//! `bash_mcp_server_set_approver`: a C host's own way of asking the person.

use std::ffi::{CString, c_char, c_void};
use std::sync::Arc;
use std::time::Duration;

use crate::approval::{ApprovalAnswer, ApprovalRequest, Approver};
use crate::ffi::panic;
use crate::ffi::ptr::{opt_str_arg, ref_arg};
use crate::ffi::result::{Failure, bash_mcp_result, to_code};
use crate::ffi::server::bash_mcp_server;

/// The person's answer to a question (see bash_mcp_server_set_approver()).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum bash_mcp_approval {
    /// Do not run it; the same request is refused without asking again
    /// until the grants change.
    Deny = 0,
    /// Run it this once.
    AllowOnce = 1,
    /// Run it, and exactly the same thing again for the server's life
    /// without asking.
    AllowForServer = 2,
}

/// A ::bash_mcp_approval as the callback returns it: any `int` may come
/// back, and one that names no answer counts as a denial.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawApproval(pub i32);

impl From<bash_mcp_approval> for RawApproval {
    fn from(answer: bash_mcp_approval) -> Self {
        RawApproval(answer as i32)
    }
}

/// A question for the person, borrowed for the duration of the callback.
///
/// Every string is NUL-terminated UTF-8.
#[repr(C)]
pub struct bash_mcp_approval_request {
    /// `"command"` (a permission rule asks), `"hidden_code"` (code the text
    /// does not show) or `"escalation"` (a wider sandbox).
    pub kind: *const c_char,
    /// The tool, qualified (`"bash.execute"`).
    pub tool: *const c_char,
    /// The command, exactly as it will run.
    pub command: *const c_char,
    /// The directory it runs in.
    pub working_dir: *const c_char,
    /// The model's reason, or NULL when it gave none.
    pub reason: *const c_char,
    /// Why the server asks: the rule, or what it cannot check.
    pub why: *const c_char,
    /// Hosts the command may reach in addition (@p network_len entries).
    pub network: *const *const c_char,
    /// Number of entries in @p network.
    pub network_len: usize,
    /// Directories the command may write in addition (@p writable_roots_len entries).
    pub writable_roots: *const *const c_char,
    /// Number of entries in @p writable_roots.
    pub writable_roots_len: usize,
    /// The whole request as a JSON object (also its environment, standard
    /// input and what "allow for this server" grants).
    pub json: *const c_char,
}

/// Asks the person: receives the question and returns their answer.
///
/// Called on a thread of the library's own, one question at a time per
/// call that needs it (several calls may ask at once, on several threads).
/// A value that is not a ::bash_mcp_approval counts as
/// ::BASH_MCP_APPROVAL_DENY.
///
/// @param request The question; borrowed for the duration of the call.
/// @param user_data The pointer given to bash_mcp_server_set_approver().
/// @warning The callback must return normally (no C++ exception, no
///          longjmp). If it does not return within the bound given to
///          bash_mcp_server_set_approver(), the call is denied and goes on
///          without it; the callback may still return later (its answer is
///          then ignored), so @p user_data must stay valid until every call
///          of it has returned.
pub type bash_mcp_approver_callback =
    Option<unsafe extern "C" fn(request: *const bash_mcp_approval_request, user_data: *mut c_void) -> RawApproval>;

/// The C callback as an [`Approver`].
struct CApprover {
    callback: unsafe extern "C" fn(*const bash_mcp_approval_request, *mut c_void) -> RawApproval,
    user_data: *mut c_void,
}

// SAFETY: the documented contract of bash_mcp_server_set_approver(): the
// callback may be called from any of the library's threads, and user_data
// stays valid (and usable from them) until every call of it has returned.
unsafe impl Send for CApprover {}
// SAFETY: as above; the library only passes the pointer on, never reads it.
unsafe impl Sync for CApprover {}

/// A C string of `text`, with any NUL byte (which a C string cannot hold)
/// shown as `\0`.
fn c_text(text: &str) -> CString {
    CString::new(text.replace('\0', "\\0")).unwrap_or_default()
}

impl Approver for CApprover {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        let kind = c_text(request.kind.as_str());
        let tool = c_text(&request.tool);
        let command = c_text(&request.command);
        let working_dir = c_text(&request.working_dir);
        let reason = request.reason.as_deref().map(c_text);
        let why = c_text(&request.why);
        let network: Vec<CString> = request.widens.network.iter().map(|s| c_text(s)).collect();
        let roots: Vec<CString> = request.widens.writable_roots.iter().map(|s| c_text(s)).collect();
        let network_ptrs: Vec<*const c_char> = network.iter().map(|s| s.as_ptr()).collect();
        let root_ptrs: Vec<*const c_char> = roots.iter().map(|s| s.as_ptr()).collect();
        let json = c_text(&request.to_value().to_string());
        let question = bash_mcp_approval_request {
            kind: kind.as_ptr(),
            tool: tool.as_ptr(),
            command: command.as_ptr(),
            working_dir: working_dir.as_ptr(),
            reason: reason.as_ref().map_or(std::ptr::null(), |r| r.as_ptr()),
            why: why.as_ptr(),
            network: network_ptrs.as_ptr(),
            network_len: network_ptrs.len(),
            writable_roots: root_ptrs.as_ptr(),
            writable_roots_len: root_ptrs.len(),
            json: json.as_ptr(),
        };
        // SAFETY: the callback and user_data are the host's, used as
        // documented; `question` and every string it points to live until
        // the callback returns.
        let RawApproval(raw) = unsafe { (self.callback)(&question, self.user_data) };
        match raw {
            1 => ApprovalAnswer::AllowOnce,
            2 => ApprovalAnswer::AllowForServer,
            _ => ApprovalAnswer::Deny,
        }
    }
}

/// Sets the host's approver: asked when a call needs the person's approval
/// and nobody else can ask them — an `execute` call with `escalate`
/// (bash_mcp_server_execute() and the other ways to run a tool), and calls
/// an MCP handler's client cannot be asked about. Without an approver such
/// calls are refused and nothing runs.
///
/// @param server The server.
/// @param callback The approver, or NULL to remove it.
/// @param user_data Passed to @p callback unchanged; may be NULL. Must stay
///        valid until every call of @p callback has returned, also after the
///        approver is replaced or removed.
/// @param bound_ms How long one question may take: a callback that has not
///        returned by then counts as ::BASH_MCP_APPROVAL_DENY (not
///        remembered: the next call asks again). 0: five minutes.
/// @return ::BASH_MCP_RESULT_OK, ::BASH_MCP_RESULT_NULL_ARGUMENT,
///         ::BASH_MCP_RESULT_PANIC.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_set_approver(
    server: *const bash_mcp_server,
    callback: bash_mcp_approver_callback,
    user_data: *mut c_void,
    bound_ms: u64,
) -> bash_mcp_result {
    panic::guard_code(|| {
        to_code((|| {
            // SAFETY: NULL or a live server per the contract.
            let server = unsafe { ref_arg(server, "server") }?;
            let bound = match bound_ms {
                0 => crate::approval::DEFAULT_APPROVER_BOUND,
                ms => Duration::from_millis(ms),
            };
            let approver = callback.map(|callback| Arc::new(CApprover { callback, user_data }) as Arc<dyn Approver>);
            server.inner().set_approver(approver, bound);
            Ok::<(), Failure>(())
        })())
    })
}

/// Revokes what the person allowed for the server's life: the grant
/// @p grant_id (as `status` lists them under `approvals.grants`), or every
/// grant when @p grant_id is NULL. Recorded in the audit log (an entry of
/// tool `revoke_grants` with `revoked`).
///
/// @param server The server.
/// @param grant_id The grant's id (`"grant-1"`), or NULL for all. Borrowed
///        for the duration of the call.
/// @param[out] revoked Receives how many grants were revoked; may be NULL.
/// @return ::BASH_MCP_RESULT_OK (also when no grant had that id: then
///         @p revoked is 0), ::BASH_MCP_RESULT_NULL_ARGUMENT,
///         ::BASH_MCP_RESULT_INVALID_UTF8, ::BASH_MCP_RESULT_PANIC.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_server_revoke_grants(
    server: *const bash_mcp_server,
    grant_id: *const c_char,
    revoked: *mut usize,
) -> bash_mcp_result {
    panic::guard_code(|| {
        to_code((|| {
            // SAFETY: NULL or a live server per the contract.
            let server = unsafe { ref_arg(server, "server") }?;
            // SAFETY: NULL or a C string per the contract.
            let id = unsafe { opt_str_arg(grant_id, "grant_id") }?;
            let count = server.inner().revoke_grants(id).len();
            if !revoked.is_null() {
                // SAFETY: a non-NULL pointer the caller gave for the count.
                unsafe { *revoked = count };
            }
            Ok::<(), Failure>(())
        })())
    })
}
