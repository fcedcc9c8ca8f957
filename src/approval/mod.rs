//! Asking the person: what a question is ([`ApprovalRequest`]), what the
//! answer can be ([`ApprovalAnswer`]), who answers for a library host
//! ([`Approver`], with a bounded wait) and what is remembered for the
//! server's life ([`Approvals`]: grants, and denials not asked again).
//!
//! Deciding *that* a call needs asking is the gate's job (the binary's
//! permission rules); asking over MCP is the protocol layer's. This module
//! holds the typed values both use, so a question reads the same whoever
//! answers it.

mod approver;
mod grants;
mod request;

pub use approver::{Approver, ClientAsker, DEFAULT_APPROVER_BOUND};
pub use grants::{Approvals, Grant, Remembered};
pub use request::{AnsweredBy, ApprovalAnswer, ApprovalKind, ApprovalOutcome, ApprovalRequest, GrantItem, Widening};
