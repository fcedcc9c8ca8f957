//! Asking the person about a running command's connection that its
//! network policy does not allow: the question ([`ApprovalKind::Connection`]),
//! answered by a grant or an earlier denial, else by the host's approver,
//! else through the call's client; remembered as other answers are, and
//! written to the audit log.

use std::sync::{Arc, PoisonError, Weak};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::{ExecRequest, Shared};
use crate::approval::{AnsweredBy, ApprovalKind, ApprovalOutcome, ApprovalRequest, ClientAsker, GrantItem, Widening};
use crate::config::Config;
use crate::sandbox::network::ask::{Asking, ConnectAsker, WaitSlots};
use crate::sandbox::network::{Host, NetPolicy};

/// One command's asker.
struct CommandAsker {
    shared: Weak<Shared>,
    client: Option<Arc<dyn ClientAsker>>,
    command: String,
    working_dir: String,
    principal: Option<String>,
}

impl Shared {
    /// How `request`'s refused connections are put to the person, running
    /// in `cwd`: `None` when `network_ask.mode` is `refuse`, or nobody can
    /// answer while the command runs (no host approver, no client that can
    /// be asked during the call).
    pub(super) fn network_asking(
        &self,
        request: &ExecRequest,
        config: &Config,
        cwd: &std::path::Path,
    ) -> Option<Asking> {
        let client = request.ask_client.as_ref().map(|c| c.0.clone());
        if !config.network_ask.ask || (client.is_none() && !self.approvals.has_approver()) {
            return None;
        }
        let asker = CommandAsker {
            shared: self.me.clone(),
            client,
            command: request.command.clone(),
            working_dir: cwd.display().to_string(),
            principal: request.principal.clone(),
        };
        Some(Asking {
            asker: Arc::new(asker),
            wait: config.network_ask.wait,
            slots: self.ask_slots(config.network_ask.max_waiting),
        })
    }

    /// The server's count of waiting connections, for a cap of `max`.
    fn ask_slots(&self, max: usize) -> Arc<WaitSlots> {
        let mut slots = self.ask_slots.lock().unwrap_or_else(PoisonError::into_inner);
        match &*slots {
            Some(s) if s.max() == max => s.clone(),
            _ => {
                let s = WaitSlots::new(max);
                *slots = Some(s.clone());
                s
            }
        }
    }

    /// Writes the question about a connection and its outcome to the audit
    /// log, as an `execute` entry of the command's with an `approval`.
    fn record_connect_question(&self, asker: &CommandAsker, request: &ApprovalRequest, outcome: &ApprovalOutcome) {
        let Some(log) = self.audit() else { return };
        let dialect = crate::permission::Dialect::for_shell(&self.config().shell);
        let command = asker.command.as_str();
        let pattern = crate::permission::command_pattern_in(&format!("{}.execute", self.name), command, dialect);
        let mut entry = self.audit_head(&log, SystemTime::now(), "execute", Some(command), &pattern);
        entry.insert("working_dir".into(), log.redact(&asker.working_dir).into());
        if let Some(principal) = &asker.principal {
            entry.insert("principal".into(), principal.as_str().into());
        }
        let mut approval = serde_json::json!({
            "kind": request.kind,
            "why": log.redact_related(&request.why, Some(command)),
            "answer": outcome.answer,
            "by": outcome.by,
            "widens": serde_json::to_value(&request.widens).unwrap_or(Value::Null),
        });
        if let Some(note) = &outcome.note {
            approval["note"] = note.clone().into();
        }
        entry.insert("approval".into(), approval);
        log.record(entry);
    }
}

impl CommandAsker {
    fn question(&self, shared: &Shared, host: &Host, port: u16, rule: &str, wait: Duration) -> ApprovalRequest {
        let place = format!("{}:{port}", host.to_authority());
        ApprovalRequest {
            kind: ApprovalKind::Connection,
            tool: format!("{}.execute", shared.name),
            command: self.command.clone(),
            working_dir: self.working_dir.clone(),
            env: Default::default(),
            stdin: None,
            widens: Widening {
                network: vec![place.clone()],
                writable_roots: Vec::new(),
            },
            reason: None,
            why: format!(
                "the sandbox's network policy refuses {place} ({rule}); the connection waits up to {} s for the answer",
                wait.as_secs_f64()
            ),
            suggested_rule: Some(format!("sandbox.network.allow: \"{place}\"")),
            grants: vec![GrantItem::Connect {
                host: host.to_string(),
                port,
            }],
        }
    }
}

impl ConnectAsker for CommandAsker {
    fn ask(&self, host: &Host, port: u16, rule: &str, wait: Duration) -> ApprovalOutcome {
        let nobody = ApprovalOutcome {
            answer: None,
            by: AnsweredBy::Nobody,
            note: None,
        };
        let Some(shared) = self.shared.upgrade() else {
            return nobody;
        };
        // The operator's ceiling on what may be asked for at all holds here too.
        let config = shared.config();
        if let Some(ceiling) = &config.escalation_ceiling.network {
            let inside = NetPolicy::new(ceiling, &[]).is_ok_and(|c| c.judge_host(host, port).is_ok());
            if !inside {
                tracing::info!(%host, port, "a connection beyond escalation_ceiling.network was not put to the person");
                return nobody;
            }
        }
        let request = self.question(&shared, host, port, rule, wait);
        let approvals = &shared.approvals;
        let outcome = approvals.settle(&request, Some(wait), |request| {
            self.client.as_ref().and_then(|c| c.ask(request, wait))
        });
        shared.record_connect_question(self, &request, &outcome);
        outcome
    }
}
