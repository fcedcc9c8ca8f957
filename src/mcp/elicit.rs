//! Asking the person through the client: `elicitation/create` (form mode)
//! sent during a call, and its answer routed back to the waiting call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::approval::{ApprovalAnswer, ApprovalRequest};
use crate::process::cancel::CancelToken;

use super::approve::ClientAnswer;
use super::jsonrpc::IdKey;

/// How long a question may wait for the person before it counts as
/// cancelled (the call is refused, and may ask again).
pub const DEFAULT_APPROVAL_WAIT: Duration = Duration::from_secs(600);

/// How often a waiting question looks at its call's cancel token.
const CANCEL_CHECK: Duration = Duration::from_millis(100);

/// Requests this server sent the client, awaiting their responses.
#[derive(Default)]
pub(super) struct Outgoing {
    next: AtomicU64,
    pending: Mutex<HashMap<IdKey, SyncSender<Result<Value, Value>>>>,
}

impl Outgoing {
    /// Sends the request `method` with `params` through `send` and waits for
    /// its response: `Ok(result)`, or why there is none (the client answered
    /// with an error, the call was cancelled, `limit` passed).
    pub(super) fn request(
        &self,
        method: &str,
        params: Value,
        send: impl FnOnce(String),
        cancel: &CancelToken,
        limit: Duration,
    ) -> Result<Value, String> {
        let id = format!("bash-mcp-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let key = IdKey::Str(id.clone());
        let (tx, rx) = mpsc::sync_channel(1);
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone(), tx);
        send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
        let deadline = Instant::now() + limit;
        let outcome = loop {
            if cancel.is_cancelled() {
                break Err("the call was cancelled while the person was asked".to_owned());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break Err(format!("no answer within {} s", limit.as_secs()));
            }
            match rx.recv_timeout(left.min(CANCEL_CHECK)) {
                Ok(Ok(result)) => break Ok(result),
                Ok(Err(error)) => {
                    let message = error.get("message").and_then(Value::as_str).unwrap_or("no message");
                    break Err(format!("the client answered {method} with an error: {message}"));
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break Err("the connection closed".to_owned()),
            }
        };
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&key);
        outcome
    }

    /// Hands a response to the request waiting for it; `false` when none is
    /// (an unknown or late id).
    pub(super) fn deliver(&self, key: &IdKey, outcome: Result<Value, Value>) -> bool {
        let waiting = self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(key);
        waiting.is_some_and(|tx| tx.try_send(outcome).is_ok())
    }
}

/// Whether client capabilities (as declared) allow a form elicitation: an
/// `elicitation` object that is empty (form, before modes existed) or names `form`.
pub(super) fn can_elicit_form(capabilities: Option<&Value>) -> bool {
    match capabilities.and_then(|c| c.get("elicitation")) {
        Some(Value::Object(e)) => e.is_empty() || e.contains_key("form"),
        _ => false,
    }
}

/// The requested schema: one required property `decision`, an enum of the
/// answers, each with a title a person understands.
pub fn decision_schema() -> Value {
    let options: Vec<Value> = ApprovalAnswer::ALL
        .iter()
        .map(|a| json!({"const": a.as_str(), "title": a.title()}))
        .collect();
    json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Run this command?",
                "oneOf": options,
            }
        },
        "required": ["decision"],
    })
}

/// `elicitation/create` params for `request` (`mode: "form"` where the
/// revision has modes, from 2025-11-25).
pub(super) fn elicit_params(request: &ApprovalRequest, with_mode: bool) -> Value {
    let mut params = Map::new();
    if with_mode {
        params.insert("mode".into(), "form".into());
    }
    params.insert("message".into(), request.message().into());
    params.insert("requestedSchema".into(), decision_schema());
    Value::Object(params)
}

/// The person's answer in an elicitation result: `accept` with a
/// `decision`; `decline` is a deny; `cancel` (or anything unreadable) is no
/// answer, which counts as deny without being remembered.
pub(super) fn answer_of(result: &Value) -> ClientAnswer {
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let decision = result
                .get("content")
                .and_then(|c| c.get("decision"))
                .and_then(Value::as_str);
            decision.and_then(ApprovalAnswer::parse).ok_or_else(|| {
                format!(
                    "the client accepted without a decision this server knows ({decision:?}; expected allow_once, allow_for_server or deny)"
                )
            })
        }
        Some("decline") => Ok(ApprovalAnswer::Deny),
        Some("cancel") => Err("the person cancelled the question".into()),
        other => Err(format!("the client's answer has no known action ({other:?})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_from_the_elicitation_result() {
        let accept = |d: &str| json!({"action": "accept", "content": {"decision": d}});
        assert_eq!(answer_of(&accept("allow_once")), Ok(ApprovalAnswer::AllowOnce));
        assert_eq!(
            answer_of(&accept("allow_for_server")),
            Ok(ApprovalAnswer::AllowForServer)
        );
        assert_eq!(answer_of(&accept("deny")), Ok(ApprovalAnswer::Deny));
        assert!(answer_of(&accept("yes")).is_err());
        assert_eq!(answer_of(&json!({"action": "decline"})), Ok(ApprovalAnswer::Deny));
        assert!(answer_of(&json!({"action": "cancel"})).is_err());
        assert!(answer_of(&json!({})).is_err());
    }

    #[test]
    fn form_elicitation_needs_the_capability() {
        assert!(can_elicit_form(Some(&json!({"elicitation": {}}))));
        assert!(can_elicit_form(Some(&json!({"elicitation": {"form": {}, "url": {}}}))));
        assert!(!can_elicit_form(Some(&json!({"elicitation": {"url": {}}}))));
        assert!(!can_elicit_form(Some(&json!({"sampling": {}}))));
        assert!(!can_elicit_form(None));
    }
}
