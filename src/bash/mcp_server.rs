//! `BashServer` as an `McpServer`: its tools, its configuration, and each call counted and audited.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Instant, SystemTime};

use serde_json::Value;

use super::BashServer;
use super::audit_calls::command_of;
use crate::args::ToolArgs;
use crate::audit::AuditLog;
use crate::error::{ErrorCode, ToolError};
use crate::roots;
use crate::server::{CallOptions, McpServer, ToolOutput, ToolRegistry, ToolResponse};

impl McpServer for BashServer {
    fn name(&self) -> &str {
        &self.shared.name
    }

    fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    fn configure(&self, config_json: &str) -> Result<(), ToolError> {
        let mut slot = self.shared.config.write().unwrap_or_else(PoisonError::into_inner);
        let next = slot.apply_json(config_json)?;
        crate::config::HistoryMode::from_env()?;
        // Open a new audit log before anything changes, so a bad path fails
        // the whole configure and leaves the previous state in force.
        if next.audit != slot.audit {
            let log = next.audit.clone().map(AuditLog::open).transpose()?.map(Arc::new);
            *self.shared.audit.write().unwrap_or_else(PoisonError::into_inner) = log;
        }
        self.shared.limiter.set_max(next.max_concurrent);
        self.shared
            .outputs
            .set_limits(next.output_store.budget_bytes, next.output_store.max_outputs);
        *slot = Arc::new(next);
        Ok(())
    }

    fn call_tool(&self, tool_name: &str, args: &ToolArgs, options: CallOptions<'_>) -> ToolResponse {
        let started = Instant::now();
        let started_at = SystemTime::now();
        let host_sandbox = options.sandbox.map(crate::sandbox::SandboxConfig::to_value);
        let mut response = crate::server::dispatch(self, tool_name, args, options);
        let counters = &self.shared.counters;
        counters.served.fetch_add(1, Ordering::Relaxed);
        if response.is_error() {
            counters.failed.fetch_add(1, Ordering::Relaxed);
        }
        let Some(log) = self.shared.audit() else {
            return response;
        };
        let mut result = match std::mem::replace(&mut response.output, ToolOutput::Text(String::new())) {
            ToolOutput::Document(Value::Object(doc)) => doc,
            ToolOutput::Error(error) => error.to_map(),
            // Not a result document: nothing to record.
            other => {
                response.output = other;
                return response;
            }
        };
        let mut entry = self.audit_entry(&log, tool_name, args, started_at);
        for key in [
            "exit_code",
            "error",
            "duration_ms",
            "output_bytes",
            "session_id",
            "job_id",
        ] {
            if let Some(value) = result.get(key) {
                entry.insert(key.into(), value.clone());
            }
        }
        // Where it ran, as the result says (`cwd` for sessions).
        if let Some(dir) = ["working_dir", "cwd"]
            .iter()
            .find_map(|key| result.get(*key).and_then(Value::as_str))
        {
            entry.insert("working_dir".into(), log.redact(dir).into());
        }
        if let Some(message) = result.get("message").and_then(Value::as_str)
            && result.contains_key("error")
        {
            entry.insert("message".into(), log.redact_related(message, command_of(args)).into());
        }
        // The host ran this call in a sandbox of its own choosing: only
        // `execute` takes one.
        if let Some(sandbox) = host_sandbox
            && entry.get("tool").and_then(Value::as_str) == Some("execute")
        {
            entry.insert("sandbox_override".into(), sandbox);
        }
        entry.insert("call_ms".into(), (started.elapsed().as_millis() as u64).into());
        result.insert("audit_id".into(), entry["audit_id"].clone());
        log.record(entry);
        response.output = ToolOutput::Document(Value::Object(result));
        response
    }

    fn record_rejected_call(&self, tool_name: &str, args: &ToolArgs, error: ErrorCode) {
        self.shared.count_failed_call();
        if let Some(log) = self.shared.audit() {
            let mut entry = self.audit_entry(&log, tool_name, args, SystemTime::now());
            entry.insert("error".into(), error.as_str().into());
            log.record(entry);
        }
    }

    /// Changes the default working directory. A relative `path` resolves
    /// against the current default; the new directory must be allowed by the
    /// roots in force with it as the default (its own project file included).
    fn set_working_dir(&self, path: &Path) -> Result<(), ToolError> {
        let absolute = roots::existing_dir(path, Some(&self.shared.working_dir()))?;
        let dir = self.shared.confined_dir(&absolute, Some(&absolute), &self.config())?;
        *self.shared.working_dir.write().unwrap_or_else(PoisonError::into_inner) = dir;
        Ok(())
    }
}
