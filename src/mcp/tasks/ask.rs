//! Asking the person for a task: the task goes to `input_required` with
//! the question, and the answer comes as each era defines it.
//!
//! - 2025-11-25: the client, seeing `input_required`, calls `tasks/result`;
//!   once one waits, the server sends `elicitation/create` with the
//!   related-task `_meta`, and the answer is that request's response.
//! - 2026-07-28 (tasks extension): `tasks/get` shows the question in
//!   `inputRequests`; the client answers with `tasks/update
//!   {taskId, inputResponses}`.
//!
//! Either way the wait is bounded ([`HandlerOptions::approval_wait`](crate::mcp::HandlerOptions::approval_wait),
//! and the task's ttl); a cancel of the task ends it. No answer counts as a denial (not
//! remembered, so the next call may ask again).

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::{Task, shape};
use crate::approval::{ApprovalRequest, ClientAsker};
use crate::mcp::approve::ClientAnswer;
use crate::mcp::era::Era;
use crate::mcp::{Inner, elicit, question_key};

/// How a task's questions reach the client of the call that made it.
pub(crate) struct Asker {
    era: Era,
    /// Whether the client declared form elicitation (in `initialize`, or in
    /// the 2026-07-28 request's `_meta`).
    can_elicit: bool,
    /// The answers a 2026-07-28 retry brought with a checked `requestState`.
    input: Option<Map<String, Value>>,
}

impl Asker {
    pub(crate) fn new(era: Era, capabilities: Option<&Value>, input: Option<Map<String, Value>>) -> Self {
        let can_elicit = match era {
            Era::Handshake(_) => super::handshake_tasks(era) && elicit::can_elicit_form(capabilities),
            _ => elicit::can_elicit_form(capabilities),
        };
        Self { era, can_elicit, input }
    }

    /// The person's answer to `request` about `task`, or `None` when the
    /// client cannot be asked. `announce` tells a 2025-11-25 client of each
    /// status change.
    pub(crate) fn ask(
        &self,
        inner: &Inner,
        task: &Task,
        request: &ApprovalRequest,
        announce: &dyn Fn(&Task),
    ) -> Option<ClientAnswer> {
        self.ask_within(inner, task, request, announce, inner.options.approval_wait)
    }

    /// How the task's client is asked while its job's command runs (about
    /// a connection its sandbox does not allow): the same way, without the
    /// answers a retry brought (those answer the call's own questions only).
    pub(crate) fn for_connections(&self, inner: &Arc<Inner>, task: &Arc<Task>) -> Option<Arc<dyn ClientAsker>> {
        if !self.can_elicit {
            return None;
        }
        Some(Arc::new(ConnectionAsker {
            asker: Asker {
                era: self.era,
                can_elicit: true,
                input: None,
            },
            inner: Arc::downgrade(inner),
            task: Arc::downgrade(task),
            one_at_a_time: Mutex::new(()),
        }))
    }

    /// [`ask`](Asker::ask), waiting at most `wait`.
    fn ask_within(
        &self,
        inner: &Inner,
        task: &Task,
        request: &ApprovalRequest,
        announce: &dyn Fn(&Task),
        wait: Duration,
    ) -> Option<ClientAnswer> {
        let key = question_key(request);
        if let Some(answer) = self.input.as_ref().and_then(|input| input.get(key)) {
            return Some(elicit::answer_of(answer));
        }
        if !self.can_elicit {
            return None;
        }
        // Never past the task's own lifetime: an answer after it starts nothing.
        let deadline = (Instant::now() + wait).min(task.deadline());
        let params = elicit::elicit_params(request, true);
        let mut requests = Map::new();
        requests.insert(
            key.to_owned(),
            json!({"method": "elicitation/create", "params": params.clone()}),
        );
        task.begin_input(requests);
        tracing::info!(task = %task.id, question = key, "task waits for the person's answer");
        announce(task);
        let answer = if self.era.is_stateless() {
            task.wait_input(key, deadline).ok_or_else(|| {
                if task.cancel.is_cancelled() {
                    "the task was cancelled while the person was asked".to_owned()
                } else if task.is_expired() {
                    "the task reached the end of its ttl before a tasks/update brought the answer".to_owned()
                } else {
                    format!("no tasks/update brought the answer within {} s", wait.as_secs())
                }
            })
        } else if task.wait_result_waiter(deadline) {
            let mut params = params;
            params["_meta"] = shape::related_meta(&task.id);
            let left = deadline.saturating_duration_since(Instant::now());
            inner.outgoing.request(
                "elicitation/create",
                params,
                |line| (inner.outbound)(line, None),
                &task.cancel,
                left,
            )
        } else if task.cancel.is_cancelled() {
            Err("the task was cancelled while the person was asked".to_owned())
        } else if task.is_expired() {
            Err(
                "the task reached the end of its ttl before the client called tasks/result to receive the question"
                    .into(),
            )
        } else {
            Err(format!(
                "the client did not call tasks/result within {} s to receive the question",
                wait.as_secs()
            ))
        };
        task.end_input();
        if !task.is_terminal() {
            announce(task);
        }
        Some(answer.and_then(|result| elicit::answer_of(&result)))
    }
}

/// Asks through a task while its job's command runs. Holds the handler and
/// the task weakly: a command that outlives them asks nobody.
struct ConnectionAsker {
    asker: Asker,
    inner: Weak<Inner>,
    task: Weak<Task>,
    /// A task shows one question at a time: the next waits its turn.
    one_at_a_time: Mutex<()>,
}

impl ClientAsker for ConnectionAsker {
    fn ask(&self, request: &ApprovalRequest, wait: Duration) -> Option<ClientAnswer> {
        let deadline = Instant::now() + wait;
        let inner = self.inner.upgrade()?;
        let task = self.task.upgrade()?;
        if task.is_terminal() {
            return None;
        }
        let _turn = self.one_at_a_time.lock().unwrap_or_else(PoisonError::into_inner);
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Some(Err(format!("no answer within {} s", wait.as_secs())));
        }
        let era = self.asker.era;
        let announce = |task: &Task| super::announce(&inner, era, task);
        self.asker.ask_within(&inner, &task, request, &announce, left)
    }
}
