//! The configuration shown by `status`: every value as JSON, the values of
//! `env.set` masked.

use serde_json::{Map, Value};

use super::{Config, Inherit, OutputStoreSettings, SessionConfig};
use crate::audit::AuditSettings;

impl Config {
    /// The configuration as JSON for `status`, with `env.set` values masked.
    pub fn to_masked_value(&self) -> Value {
        serde_json::json!({
            "timeout_seconds": self.timeout.as_secs_f64(),
            "max_timeout_seconds": self.max_timeout.as_secs_f64(),
            "shell": self.shell.display().to_string(),
            "output_limit_bytes": self.output_limit_bytes,
            "kill_grace_ms": self.kill_grace.as_millis() as u64,
            "drain_ms": self.drain.as_millis() as u64,
            "max_concurrent": self.max_concurrent,
            "non_interactive": self.non_interactive,
            "env": self.masked_env(),
            "allowed_roots": self.allowed_roots.as_ref().map(|r| r.iter().map(|p| p.display().to_string()).collect::<Vec<_>>()),
            "project_config": self.project_config,
            "audit": self.audit.as_ref().map(audit_value),
            "tools": self.tools.iter().collect::<Vec<_>>(),
            "sessions": sessions_value(&self.sessions),
            "jobs": {"max_finished": self.jobs_max_finished},
            "output_store": output_store_value(&self.output_store),
            "sandbox": self.sandbox.to_value(),
            "yield_seconds": self.yield_after.map(|d| d.as_secs_f64()),
            "escalation_ceiling": {
                "network": self.escalation_ceiling.network,
                "writable_roots": self.escalation_ceiling.writable_roots.as_ref().map(|r| r.iter().map(|p| p.display().to_string()).collect::<Vec<_>>()),
            },
            "network_ask": self.network_ask.to_value(),
        })
    }

    /// `env`, with the names of the variables `set` but not their values.
    fn masked_env(&self) -> Value {
        let inherit = match &self.env.inherit {
            Inherit::All => Value::from("all"),
            Inherit::None => Value::from("none"),
            Inherit::Matching(p) => Value::from(p.clone()),
        };
        let set: Map<String, Value> = self
            .env
            .set
            .iter()
            .map(|(k, _)| (k.clone(), Value::from("***")))
            .collect();
        serde_json::json!({"inherit": inherit, "set": set, "remove": self.env.remove})
    }
}

/// `audit`, with the number of redaction patterns rather than the patterns.
fn audit_value(a: &AuditSettings) -> Value {
    serde_json::json!({
        "path": a.path.display().to_string(),
        "max_bytes": a.max_bytes,
        "backups": a.backups,
        "gzip_min_bytes": a.gzip_min_bytes,
        "redact_patterns": a.redact.len(),
        "read_all": a.read_all,
    })
}

fn sessions_value(sessions: &SessionConfig) -> Value {
    serde_json::json!({
        "enabled": sessions.enabled,
        "max_sessions": sessions.max_sessions,
        "idle_ttl_seconds": sessions.idle_ttl.map(|d| d.as_secs_f64()),
        "output_limit_bytes": sessions.output_limit_bytes,
        "read_rc_files": sessions.read_rc_files,
        "history": sessions.history.as_str(),
    })
}

fn output_store_value(store: &OutputStoreSettings) -> Value {
    serde_json::json!({
        "enabled": store.enabled,
        "budget_bytes": store.budget_bytes,
        "max_outputs": store.max_outputs,
        "tail_bytes": store.tail_bytes,
    })
}
