//! `BashServer` as an `McpServer`: its tools, its configuration, and each call counted and audited.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::BashServer;
use super::audit_calls::command_of;
use crate::audit::AuditLog;
use crate::error::{ErrorCode, ToolError};
use crate::roots;
use crate::tool::{CallOptions, McpServer, TaskJob, ToolOutput, ToolRegistry, ToolResponse};
use crate::tool_args::ToolArgs;

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
        self.shared.outputs.set_tail_bytes(next.output_store.tail_bytes);
        *slot = Arc::new(next);
        Ok(())
    }

    fn call_tool(&self, tool_name: &str, args: &ToolArgs, options: CallOptions<'_>) -> ToolResponse {
        let started = Instant::now();
        let started_at = SystemTime::now();
        // An `escalate` nobody has put to the person yet goes to the host's
        // approver, widening the sandbox the call would run in (the host's
        // own for this call, else the configured one); without an approver,
        // or denied, it is refused and nothing runs. Once settled the call
        // runs without it, so nothing is asked twice.
        let mut settled = None;
        match BashServer::escalation(self, tool_name, args, options.sandbox) {
            Err(error) => settled = Some(ToolResponse::error(&error)),
            Ok(Some((request, sandbox))) => {
                return match crate::mcp::escalation_question(request, sandbox).settle(self, tool_name, args) {
                    crate::mcp::GateDecision::AllowInSandbox(wider) => {
                        let approved = CallOptions {
                            cancel: options.cancel,
                            on_output: options.on_output.map(|sink| sink as crate::OutputSink<'_>),
                            sandbox: Some(&wider),
                            principal: options.principal,
                            client: options.client,
                        };
                        self.call_tool(tool_name, &crate::mcp::without_escalate(args), approved)
                    }
                    // Counted and audited as the approval's entry.
                    refused => ToolResponse::document(refused.refusal_document().unwrap_or_default()),
                };
            }
            Ok(None) => {}
        }
        let host_sandbox = options.sandbox.map(crate::sandbox::SandboxConfig::to_value);
        let principal = options.principal.map(str::to_owned);
        let mut response = match settled {
            Some(response) => response,
            None => crate::tool::dispatch(self, tool_name, args, options),
        };
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
            // What `revoke_grants` withdrew.
            "revoked",
        ] {
            if let Some(value) = result.get(key) {
                entry.insert(key.into(), value.clone());
            }
        }
        // What the sandbox refused: writes by path, connections by host and rule.
        if let Some(denied) = result
            .get("sandbox")
            .and_then(|s| s.get("denied"))
            .filter(|d| d.as_array().is_some_and(|d| !d.is_empty()))
        {
            entry.insert("sandbox_denied".into(), denied.clone());
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
        // The host ran this call in a sandbox of its own choosing (or the
        // one the person approved): only `execute` and `session_start` take one.
        if let Some(sandbox) = host_sandbox
            && matches!(
                entry.get("tool").and_then(Value::as_str),
                Some("execute" | "session_start")
            )
        {
            entry.insert("sandbox_override".into(), sandbox);
        }
        if let Some(principal) = principal {
            entry.insert("principal".into(), principal.into());
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

    fn escalation(
        &self,
        tool_name: &str,
        args: &ToolArgs,
        base: Option<&crate::sandbox::SandboxConfig>,
    ) -> Result<Option<(crate::approval::ApprovalRequest, crate::sandbox::SandboxConfig)>, ToolError> {
        BashServer::escalation(self, tool_name, args, base)
    }

    fn approvals(&self) -> Option<&crate::approval::Approvals> {
        Some(&self.shared.approvals)
    }

    fn record_approval(
        &self,
        tool_name: &str,
        args: &ToolArgs,
        request: &crate::approval::ApprovalRequest,
        outcome: &crate::approval::ApprovalOutcome,
    ) -> Option<String> {
        self.approval_entry(tool_name, args, request, outcome)
    }

    /// `execute` runs as a task: a background job started by an `execute`
    /// call with `background: true` (audited as that call, and as the job
    /// when it ends).
    fn task_support(&self, tool_name: &str) -> bool {
        tool_name == "execute" && self.find_tool(tool_name).is_some()
    }

    fn start_task_job(
        &self,
        tool_name: &str,
        args: &ToolArgs,
        sandbox: Option<&crate::sandbox::SandboxConfig>,
        principal: Option<&str>,
        asker: Option<Arc<dyn crate::approval::ClientAsker>>,
    ) -> Result<String, ToolResponse> {
        let mut object = match args.object() {
            Ok(object) => object.clone(),
            Err(error) => return Err(ToolResponse::error(error)),
        };
        if !self.task_support(tool_name) {
            return Err(ToolResponse::error(&ToolError::new(
                ErrorCode::UnknownTool,
                format!("{tool_name} cannot run as a task"),
                "call it without a task",
            )));
        }
        // A task is the job: waiting (`yield_seconds`) is the task's client's business.
        object.remove("yield_seconds");
        object.insert("background".into(), Value::Bool(true));
        let client = asker.map(TaskClient);
        let options = CallOptions {
            sandbox,
            principal,
            client: client.as_ref().map(|c| c as &dyn crate::tool::CallClient),
            ..CallOptions::default()
        };
        let response = self.call_tool(tool_name, &ToolArgs::from(object), options);
        match (&response.output, response.is_error()) {
            (ToolOutput::Document(doc), false) => match doc.get("job_id").and_then(Value::as_str) {
                Some(id) => Ok(id.to_owned()),
                None => Err(response),
            },
            _ => Err(response),
        }
    }

    fn task_job(&self, job_id: &str, wait: Duration) -> TaskJob {
        match self.jobs.wait_end(job_id, wait) {
            None => TaskJob::Gone,
            Some(Err(recent_output)) => TaskJob::Running { recent_output },
            Some(Ok(Ok(doc))) => TaskJob::Ended(ToolResponse::document(doc)),
            Some(Ok(Err(error))) => TaskJob::Ended(ToolResponse::error(&error)),
        }
    }

    fn cancel_task_job(&self, job_id: &str) {
        // A finished or unknown job has nothing to stop.
        let _ = self.jobs.cancel(job_id);
    }

    fn release_task_job(&self, job_id: &str) {
        self.jobs.release(job_id, Duration::from_secs(5));
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

/// A task's client as its job reaches it: nothing is sent while the job
/// starts; its command's proxy asks the person through the task.
struct TaskClient(Arc<dyn crate::approval::ClientAsker>);

impl crate::tool::CallClient for TaskClient {
    fn progress(&self, _progress: f64, _total: Option<f64>, _message: Option<&str>) {}

    fn log(&self, _level: crate::content::LogLevel, _data: Value) {}

    fn request(&self, method: &str, _params: Value) -> Result<Value, String> {
        Err(format!("a task's job cannot send {method} as it starts"))
    }

    fn client_asker(&self) -> Option<Arc<dyn crate::approval::ClientAsker>> {
        Some(self.0.clone())
    }
}
