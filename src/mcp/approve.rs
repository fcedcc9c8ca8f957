//! Settling a call the gate wants put to the person: a grant or an earlier
//! denial answers without asking; otherwise the host's approver, or the
//! client (its `ask` function), is asked; with nobody to ask, the gate's
//! refusal stands. Every question and answer is recorded in the audit log.

use crate::approval::{AnsweredBy, ApprovalAnswer, ApprovalOutcome, ApprovalRequest};
use crate::tool::{McpServer, ToolResponse};
use crate::tool_args::ToolArgs;

use super::GateDecision;

/// How the client was asked: its answer, or why there is none (declined,
/// cancelled, failed: all count as deny).
pub(super) type ClientAnswer = Result<ApprovalAnswer, String>;

/// The decision a call runs under once an [`GateDecision::Ask`] is settled:
/// `Allow`/`AllowInSandbox` on approval, `Refuse` otherwise. Other decisions
/// pass through. `ask_client` asks the person through the client, or returns
/// `None` when the client cannot be asked.
pub(super) fn settle(
    server: &dyn McpServer,
    tool: &str,
    args: &ToolArgs,
    decision: GateDecision,
    ask_client: &mut dyn FnMut(&ApprovalRequest) -> Option<ClientAnswer>,
) -> GateDecision {
    let GateDecision::Ask {
        request,
        sandbox,
        refusal,
    } = decision
    else {
        return decision;
    };
    let Some(approvals) = server.approvals() else {
        return *refusal;
    };
    let outcome = approvals.settle(&request, None, |request| ask_client(request));
    let audit_id = server.record_approval(tool, args, &request, &outcome);
    tracing::info!(
        tool,
        kind = request.kind.as_str(),
        answer = outcome.answer.map_or("none", ApprovalAnswer::as_str),
        "approval"
    );
    if outcome.allows() {
        return match sandbox {
            Some(sandbox) => GateDecision::AllowInSandbox(sandbox),
            None => GateDecision::Allow,
        };
    }
    if outcome.answer.is_none() {
        let mut refusal = *refusal;
        if let GateDecision::Refuse { audit_id: slot, .. } = &mut refusal {
            *slot = audit_id;
        }
        return refusal;
    }
    let (message, hint) = denied_text(&request, &outcome);
    GateDecision::Refuse {
        message,
        hint,
        pattern: match *refusal {
            GateDecision::Refuse { pattern, .. } => pattern,
            _ => None,
        },
        audit_id,
    }
}

/// Settles everything a call needs the person for: the gate's `decision`
/// (when there is a gate), then the call's own `escalate`, asking through
/// `ask_client` where nothing else answers. The sandbox the call then runs
/// in (`None`: the configured one), or the response that refuses it.
pub(super) fn settle_call(
    server: &dyn McpServer,
    tool: &str,
    args: &ToolArgs,
    decision: Option<GateDecision>,
    ask_client: &mut dyn FnMut(&ApprovalRequest) -> Option<ClientAnswer>,
) -> Result<Option<crate::sandbox::SandboxConfig>, ToolResponse> {
    let decision = decision.map(|decision| settle(server, tool, args, decision, ask_client));
    if let Some(doc) = decision.as_ref().and_then(GateDecision::refusal_document) {
        tracing::info!(tool, message = %doc["message"], "call refused by policy");
        return Err(ToolResponse::document(doc));
    }
    let sandbox = match decision {
        Some(GateDecision::AllowInSandbox(sandbox)) => Some(sandbox),
        _ => None,
    };
    // An `escalate` is put to the person here, where the client can be
    // asked; the server then runs the call in the sandbox they approved.
    match server.escalation(tool, args, sandbox.as_ref()) {
        Ok(None) => Ok(sandbox),
        Ok(Some((request, wider))) => {
            match settle(server, tool, args, escalation_question(request, wider), ask_client) {
                GateDecision::AllowInSandbox(wider) => Ok(Some(wider)),
                refused => Err(ToolResponse::document(refused.refusal_document().unwrap_or_default())),
            }
        }
        Err(error) => {
            server.record_rejected_call(tool, args, error.code);
            Err(ToolResponse::error(&error))
        }
    }
}

/// `args` without `escalate`, once it is settled: the sandbox approved
/// goes with the call (as [`CallOptions::sandbox`](crate::tool::CallOptions::sandbox)),
/// and the server does not ask again.
pub fn without_escalate(args: &ToolArgs) -> ToolArgs {
    match args.object() {
        Ok(object) if object.contains_key("escalate") => {
            let mut object = object.clone();
            object.remove("escalate");
            ToolArgs::from(object)
        }
        _ => args.clone(),
    }
}

/// The refusal's message and hint for a request the person (or a failed
/// asking) denied.
fn denied_text(request: &ApprovalRequest, outcome: &ApprovalOutcome) -> (String, String) {
    let what = match request.kind {
        crate::approval::ApprovalKind::Escalation => "this command with a wider sandbox",
        _ => "this command",
    };
    match (outcome.by, &outcome.note) {
        (AnsweredBy::EarlierDenial, _) => (
            format!("the person already denied {what}; it was not asked again, and nothing was run"),
            "do not retry it; a later grant lets the question be asked again".into(),
        ),
        (_, Some(note)) => (
            format!("approval failed ({note}), which counts as a denial: nothing was run"),
            "ask the person in the conversation whether to run it, then retry".into(),
        ),
        _ => (
            format!("the person denied {what}: nothing was run"),
            "do not retry it; ask the person what to do instead".into(),
        ),
    }
}

/// The [`GateDecision::Ask`] for an escalation: on approval the call runs in
/// `wider`; with nobody to ask it is refused, saying so.
pub fn escalation_question(request: ApprovalRequest, wider: crate::sandbox::SandboxConfig) -> GateDecision {
    let message = format!(
        "`escalate` needs the person's approval (network: {}; writable: {}), and nobody can be asked here: nothing was run",
        list_or_none(&request.widens.network),
        list_or_none(&request.widens.writable_roots)
    );
    GateDecision::Ask {
        request: Box::new(request),
        sandbox: Some(wider),
        refusal: Box::new(GateDecision::Refuse {
            message,
            hint: "run the command within the configured sandbox (drop `escalate`); the person can be asked through an MCP client that supports elicitation, or the host's approver".into(),
            pattern: None,
            audit_id: None,
        }),
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "nothing more".into()
    } else {
        items.join(", ")
    }
}
