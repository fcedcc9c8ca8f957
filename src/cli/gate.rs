//! The permission gate the binary puts in front of every call.
//!
//! [`build`] turns the settings into a [`Gate`] the MCP handler (and `exec`)
//! consults before a tool runs; a refusal reaches the model as a result with
//! `error: "permission_denied"`, a message and a hint, and is recorded in the
//! audit log.
//!
//! - With `permissions` rules: Deny → refused, naming the rule; Ask →
//!   refused too (stdio has no approval UI), naming the parts no allow rule
//!   covers; Allow → runs.
//! - With no rules: every command runs, except — while `refuse_catastrophic`
//!   is on (the default) — what the advisory classifier calls catastrophic.
//!   An allow rule that names such a command lets it through.

use std::sync::Arc;

use bash_mcp::BashServer;
use bash_mcp::mcp::{Gate, GateDecision};
use bash_mcp::permission::{self, Class, Decision, PermissionPolicy};
use serde_json::Value;

use super::settings::Settings;

/// Tools whose arguments carry a shell command the gate checks.
const COMMAND_TOOLS: &[&str] = &["execute", "session_run"];

/// The binary's gate.
struct PolicyGate {
    server_name: String,
    policy: Option<PermissionPolicy>,
    refuse_catastrophic: bool,
    /// Where refusals are recorded (the audit log, when on).
    server: Option<Arc<BashServer>>,
}

/// The gate for these settings; `server` receives refusals for its audit log.
pub fn build(settings: &Settings, server: Option<Arc<BashServer>>) -> Result<Option<Arc<dyn Gate>>, String> {
    let policy = match &settings.permissions {
        Some(rules) if !(rules.allow.is_empty() && rules.deny.is_empty()) => {
            Some(PermissionPolicy::new(&rules.allow, &rules.deny).map_err(|e| format!("`permissions`: {e}"))?)
        }
        _ => None,
    };
    if policy.is_none() && !settings.refuse_catastrophic {
        return Ok(None);
    }
    Ok(Some(Arc::new(PolicyGate {
        server_name: bash_mcp::DEFAULT_SERVER_NAME.to_owned(),
        policy,
        refuse_catastrophic: settings.refuse_catastrophic,
        server,
    })))
}

impl Gate for PolicyGate {
    fn check(&self, tool: &str, args_json: &str) -> GateDecision {
        // The handler passes the local name; a qualified one is the same tool.
        let tool = tool
            .strip_prefix(self.server_name.as_str())
            .and_then(|rest| rest.strip_prefix('.'))
            .unwrap_or(tool);
        let decision = self.decide(tool, args_json);
        if let (GateDecision::Refuse { message, .. }, Some(server)) = (&decision, &self.server) {
            server.record_refusal(tool, args_json, message);
        }
        decision
    }
}

impl PolicyGate {
    fn decide(&self, tool: &str, args_json: &str) -> GateDecision {
        let qualified = format!("{}.{tool}", self.server_name);
        let pattern = permission::permission_pattern(&qualified, args_json);
        if let Some(policy) = &self.policy {
            match policy.decide(&qualified, args_json) {
                Decision::Deny => {
                    return refuse(
                        format!(
                            "`{qualified}` was denied by the operator's permission rules: {}",
                            reasons(policy, &qualified, args_json)
                        ),
                        "do not retry this command; ask the user to run it or to change the rules",
                        pattern,
                    );
                }
                Decision::Ask => {
                    return refuse(
                        format!(
                            "`{qualified}` needs approval, and this server has no way to ask: {}",
                            reasons(policy, &qualified, args_json)
                        ),
                        "use commands the allow rules cover, or ask the user to add a rule such as the pattern below",
                        pattern,
                    );
                }
                Decision::Allow => {}
            }
        }
        if self.refuse_catastrophic
            && COMMAND_TOOLS.contains(&tool)
            && let Some(command) = serde_json::from_str::<Value>(args_json)
                .ok()
                .and_then(|v| v.get("command").and_then(Value::as_str).map(str::to_owned))
        {
            let classification = permission::classify(&command);
            let explicitly_allowed = self
                .policy
                .as_ref()
                .is_some_and(|p| p.decide(&qualified, args_json) == Decision::Allow);
            if classification.class == Class::Catastrophic && !explicitly_allowed {
                return refuse(
                    format!(
                        "refused: this command could do unrecoverable damage ({}; rules: {})",
                        classification.hint,
                        classification.rules.join(", ")
                    ),
                    "do not retry it; if the user really wants this, they can run it themselves, or the operator can allow it with a permission rule or `refuse_catastrophic = false`",
                    pattern,
                );
            }
        }
        GateDecision::Allow
    }
}

/// The parts that decided, from the policy's explanation, in one line.
fn reasons(policy: &PermissionPolicy, qualified: &str, args_json: &str) -> String {
    let explanation = policy.explain(qualified, args_json);
    let parts = explanation["parts"].as_array().cloned().unwrap_or_default();
    let described: Vec<String> = parts
        .iter()
        .filter(|p| p["decision"] != "allow")
        .map(|p| {
            let subject = p["command"].as_str().unwrap_or("?");
            match p["rule"].as_str() {
                Some(rule) => format!("`{subject}` matched `{rule}`"),
                None => format!("`{subject}` matches no allow rule"),
            }
        })
        .collect();
    if described.is_empty() {
        explanation["reason"].as_str().unwrap_or("no rule allows it").to_owned()
    } else {
        described.join("; ")
    }
}

fn refuse(message: String, hint: &str, pattern: String) -> GateDecision {
    GateDecision::Refuse {
        message,
        hint: hint.to_owned(),
        pattern: Some(pattern),
    }
}

/// `bash-mcp pattern`.
pub fn pattern(command: &str) -> Result<String, String> {
    Ok(permission::command_pattern("bash.execute", command))
}

/// `bash-mcp classify`.
pub fn classify(command: &str) -> Result<String, String> {
    serde_json::to_string_pretty(&permission::classify(command)).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::Common;
    use crate::cli::settings::{self, Permissions};

    fn gate(allow: &[&str], deny: &[&str], refuse_catastrophic: bool) -> Arc<dyn Gate> {
        let mut s = settings::load(&Common::default()).unwrap();
        s.permissions = Some(Permissions {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
        });
        s.refuse_catastrophic = refuse_catastrophic;
        build(&s, None).unwrap().expect("a gate")
    }

    fn args(command: &str) -> String {
        serde_json::json!({"command": command}).to_string()
    }

    #[test]
    fn rules_decide_per_part() {
        let g = gate(&["bash.execute:git *"], &["bash.execute:rm *"], true);
        assert_eq!(g.check("execute", &args("git status && git log")), GateDecision::Allow);
        let GateDecision::Refuse { message, pattern, .. } = g.check("execute", &args("git status; rm -rf build"))
        else {
            panic!("rm must be denied");
        };
        assert!(message.contains("denied") && message.contains("rm"), "{message}");
        assert_eq!(pattern.as_deref(), Some("bash.execute:{git,rm} *"));
        let GateDecision::Refuse { message, .. } = g.check("execute", &args("make")) else {
            panic!("make is not allowed");
        };
        assert!(message.contains("approval") && message.contains("make"), "{message}");
    }

    #[test]
    fn catastrophic_commands_are_refused_by_default_only() {
        let mut s = settings::load(&Common::default()).unwrap();
        s.permissions = None;
        let g = build(&s, None).unwrap().expect("refuse_catastrophic gate");
        assert_eq!(g.check("execute", &args("ls -la")), GateDecision::Allow);
        assert!(matches!(
            g.check("execute", &args("rm -rf /")),
            GateDecision::Refuse { .. }
        ));
        assert!(matches!(
            g.check("session_run", &args("sudo rm -rf ~")),
            GateDecision::Refuse { .. }
        ));
        assert!(matches!(
            g.check("bash.execute", &args("rm -rf /")),
            GateDecision::Refuse { .. }
        ));
        s.refuse_catastrophic = false;
        assert!(build(&s, None).unwrap().is_none());
        // An explicit allow rule lets a catastrophic command through.
        let g = gate(&["bash.execute:rm *"], &[], true);
        assert_eq!(g.check("execute", &args("rm -rf /")), GateDecision::Allow);
    }

    #[test]
    fn invalid_rules_fail_at_startup() {
        let mut s = settings::load(&Common::default()).unwrap();
        s.permissions = Some(Permissions {
            allow: vec![String::new()],
            deny: vec![],
        });
        assert!(build(&s, None).err().unwrap().contains("permissions"));
    }
}
