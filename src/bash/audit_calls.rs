//! The audit of calls: the entry of a tool call, of a refused or rejected call, and of a background job's end.

use std::sync::atomic::Ordering;
use std::time::SystemTime;

use serde_json::{Map, Value};

use super::{BashServer, Shared};
use crate::audit::AuditLog;
use crate::command::jobs::JobEnd;
use crate::tool::McpServer;
use crate::tool_args::ToolArgs;

impl BashServer {
    /// Counts as a failed call and records, in the audit log if on, a call
    /// that was refused before it ran
    /// (e.g. by a permission policy); `reason` says why. Returns the entry's
    /// `audit_id` (`None` while the audit log is off), for the refusal's
    /// result.
    pub fn record_refusal(&self, tool_name: &str, args: &ToolArgs, reason: &str) -> Option<String> {
        // A refused call was served, and failed: `status` counts it.
        self.shared.count_failed_call();
        let log = self.shared.audit()?;
        let mut entry = self.audit_entry(&log, tool_name, args, SystemTime::now());
        let id = entry["audit_id"].as_str().map(str::to_owned);
        entry.insert("error".into(), "refused".into());
        entry.insert("refusal".into(), log.redact_related(reason, command_of(args)).into());
        log.record(entry);
        id
    }

    /// Records a question put to the person (or one nobody could answer) and
    /// how it was settled: an entry with `approval` (kind, why, what widens,
    /// the model's reason, answer, who answered). A call that does not run
    /// counts as failed, and its entry says `error: "refused"` as a
    /// refusal's does. Returns the entry's `audit_id`.
    pub(super) fn approval_entry(
        &self,
        tool_name: &str,
        args: &ToolArgs,
        request: &crate::approval::ApprovalRequest,
        outcome: &crate::approval::ApprovalOutcome,
    ) -> Option<String> {
        // A question put in an `input_required` result is still open: the
        // call neither ran nor was refused yet.
        let open = outcome.answer.is_none() && outcome.by == crate::approval::AnsweredBy::Client;
        let refused = !outcome.allows() && !open;
        if refused {
            self.shared.count_failed_call();
        }
        let log = self.shared.audit()?;
        let mut entry = self.audit_entry(&log, tool_name, args, SystemTime::now());
        let id = entry["audit_id"].as_str().map(str::to_owned);
        let mut approval = serde_json::json!({
            "kind": request.kind,
            "why": log.redact_related(&request.why, command_of(args)),
            "answer": outcome.answer,
            "by": outcome.by,
        });
        if !request.widens.is_empty() {
            approval["widens"] = serde_json::to_value(&request.widens).unwrap_or(Value::Null);
        }
        if let Some(reason) = &request.reason {
            approval["reason"] = log.redact(reason).into();
        }
        if let Some(note) = &outcome.note {
            approval["note"] = note.clone().into();
        }
        entry.insert("approval".into(), approval);
        if refused {
            entry.insert("error".into(), "refused".into());
        }
        log.record(entry);
        id
    }

    /// The common fields of an audit entry for a call that started at `started`.
    ///
    /// `working_dir` is the call's `working_dir` argument (made absolute
    /// against the server's default directory), else that default; the
    /// caller replaces it with the directory the result names, if any.
    pub(super) fn audit_entry(
        &self,
        log: &AuditLog,
        tool_name: &str,
        args: &ToolArgs,
        started: SystemTime,
    ) -> Map<String, Value> {
        let local = self
            .find_tool(tool_name)
            .map_or(tool_name, |t| t.definition().name.as_str());
        let qualified = format!("{}.{local}", self.name());
        // Silently: the gate or the host already asked for this pattern, and
        // was told (once) if the arguments had no command.
        let pattern =
            tracing::dispatcher::with_default(&tracing::Dispatch::none(), || self.call_pattern(&qualified, args));
        let command = command_of(args);
        let mut entry = self.shared.audit_head(log, started, local, command, &pattern);
        let default_dir = self.shared.working_dir();
        let dir = match args.get("working_dir").and_then(Value::as_str) {
            Some(dir) => {
                let joined = default_dir.join(dir);
                std::path::absolute(&joined).unwrap_or(joined)
            }
            None => default_dir,
        };
        entry.insert("working_dir".into(), log.redact(&dir.to_string_lossy()).into());
        if let Some(Value::Object(env)) = args.get("env") {
            let names: Vec<Value> = env.keys().map(|k| Value::from(k.as_str())).collect();
            entry.insert("env_names".into(), names.into());
        }
        for key in ["session_id", "job_id"] {
            if let Some(id) = args.get(key).and_then(Value::as_str) {
                entry.insert(key.into(), id.into());
            }
        }
        entry
    }
}

impl Shared {
    /// The fields every audit entry starts with: its id, the start time, the
    /// server and tool, and for a command its redacted text, its class and
    /// its permission pattern.
    pub(super) fn audit_head(
        &self,
        log: &AuditLog,
        started: SystemTime,
        tool: &str,
        command: Option<&str>,
        pattern: &str,
    ) -> Map<String, Value> {
        let mut entry = Map::new();
        entry.insert("audit_id".into(), crate::process::ids::random_id().into());
        entry.insert("timestamp".into(), crate::audit::rfc3339(started).into());
        entry.insert("server".into(), self.name.as_str().into());
        entry.insert("instance".into(), self.instance.as_str().into());
        entry.insert("tool".into(), tool.into());
        if let Some(command) = command {
            entry.insert("command".into(), log.redact(command).into());
            let class = crate::permission::classify(command).class;
            entry.insert("class".into(), serde_json::to_value(class).unwrap_or(Value::Null));
        }
        entry.insert("permission_pattern".into(), log.redact_related(pattern, command).into());
        entry
    }

    /// Counts a call that failed before any tool ran (refused or rejected).
    pub(super) fn count_failed_call(&self) {
        self.counters.served.fetch_add(1, Ordering::Relaxed);
        self.counters.failed.fetch_add(1, Ordering::Relaxed);
    }

    /// Records, in the audit log if on, how a background job ended (tool
    /// `job`): whether or not anyone asked with `job_status`.
    pub(super) fn record_job_end(&self, end: &JobEnd<'_>) {
        let Some(log) = self.audit() else { return };
        let command = end.request.command.as_str();
        // The pattern `execute` gave the job: in the configured shell's dialect.
        let dialect = crate::permission::Dialect::for_shell(&self.config().shell);
        let pattern = crate::permission::command_pattern_in(&format!("{}.execute", self.name), command, dialect);
        let mut entry = self.audit_head(&log, end.started, "job", Some(command), &pattern);
        entry.insert("job_id".into(), end.id.into());
        if let Some(crate::command::request::SandboxCall::HostOverride(sandbox)) = &end.request.sandbox {
            entry.insert("sandbox_override".into(), sandbox.to_value());
        }
        if let Some(principal) = &end.request.principal {
            entry.insert("principal".into(), principal.as_str().into());
        }
        if !end.request.env.is_empty() {
            let names: Vec<Value> = end.request.env.iter().map(|(k, _)| Value::from(k.as_str())).collect();
            entry.insert("env_names".into(), names.into());
        }
        match end.outcome {
            Ok(outcome) => {
                let doc = outcome.to_value();
                for key in ["exit_code", "error", "duration_ms", "output_bytes"] {
                    if let Some(value) = doc.get(key) {
                        entry.insert(key.into(), value.clone());
                    }
                }
                entry.insert(
                    "working_dir".into(),
                    log.redact(&outcome.working_dir.to_string_lossy()).into(),
                );
            }
            Err(error) => {
                entry.insert("error".into(), serde_json::to_value(error.code).unwrap_or(Value::Null));
                entry.insert(
                    "message".into(),
                    log.redact_related(&error.message, Some(command)).into(),
                );
                let dir = end.request.working_dir.clone().unwrap_or_else(|| self.working_dir());
                entry.insert("working_dir".into(), log.redact(&dir.to_string_lossy()).into());
            }
        }
        log.record(entry);
    }
}

/// The `command` argument of a call, if any.
pub(super) fn command_of(args: &ToolArgs) -> Option<&str> {
    args.get("command").and_then(Value::as_str)
}
