//! The host's own way of asking the person, with a bounded wait.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use super::{ApprovalAnswer, ApprovalRequest};

/// How long a host's approver may take before its silence counts as deny:
/// five minutes, time for a person to read the question.
pub const DEFAULT_APPROVER_BOUND: Duration = Duration::from_secs(300);

/// A library host's way of asking the person (its own UI): given the
/// question, return the answer. Called on a thread of its own, so a host
/// may block in it; an approver that does not answer within its bound, or
/// panics, counts as [`ApprovalAnswer::Deny`].
pub trait Approver: Send + Sync {
    /// The person's answer to `request`.
    fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer;
}

impl<F> Approver for F
where
    F: Fn(&ApprovalRequest) -> ApprovalAnswer + Send + Sync,
{
    fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self(request)
    }
}

/// A way to ask the person through the client of a call while the call's
/// command runs (about a connection its sandbox refused): owned, so the
/// sandbox's proxy can ask from its own threads; made by the protocol layer
/// for the flows that can hold a command open (a 2025-11-25 call whose
/// client declared elicitation, a task).
pub trait ClientAsker: Send + Sync {
    /// The person's answer to `request`, waiting at most `wait`; `Err` says
    /// why there is none (declined, cancelled, no answer in time: a denial
    /// that is not remembered); `None` when the client cannot be asked now.
    fn ask(&self, request: &ApprovalRequest, wait: Duration) -> Option<Result<ApprovalAnswer, String>>;
}

/// `approver`'s answer to `request`, or why there is none (then the call is
/// denied): it did not answer within `bound`, or it panicked.
pub(super) fn ask_bounded(
    approver: &Arc<dyn Approver>,
    request: &ApprovalRequest,
    bound: Duration,
) -> Result<ApprovalAnswer, String> {
    let (tx, rx) = mpsc::sync_channel(1);
    let approver = approver.clone();
    let question = request.clone();
    // A thread of its own: an approver that never returns keeps only it.
    let spawned = std::thread::Builder::new().name("approver".into()).spawn(move || {
        let answer = catch_unwind(AssertUnwindSafe(|| approver.approve(&question)));
        let _ = tx.send(answer.is_ok().then(|| answer.ok()).flatten());
    });
    if let Err(e) = spawned {
        return Err(format!("the approver could not be started ({e})"));
    }
    match rx.recv_timeout(bound) {
        Ok(Some(answer)) => Ok(answer),
        Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => Err("the approver failed (it panicked)".into()),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            Err(format!("the approver did not answer within {} s", bound.as_secs_f64()))
        }
    }
}
