//! The `execute` tool: one command run now, handed back as a job after a window, or started in the background.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{ExecRequest, SandboxCall, Shared};
use crate::command::jobs::JobManager;
use crate::command::request::validate_command;
use crate::error::ToolError;
use crate::sandbox::SandboxConfig;
use crate::tool::{CallOptions, Tool, ToolDefinition, ToolResponse};
use crate::tool_args::ToolArgs;

/// The `execute` tool of a [`BashServer`](super::BashServer).
pub(super) struct ExecuteTool {
    pub(super) definition: ToolDefinition,
    pub(super) shared: Arc<Shared>,
    pub(super) jobs: Arc<JobManager>,
}

impl Tool for ExecuteTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The definition with its `sandbox` argument and description written
    /// for the sandbox in force and the overrides the host announced.
    fn listed_definition(&self) -> Cow<'_, ToolDefinition> {
        let config = self.shared.config();
        Cow::Owned(super::sandbox_argument::fitted(
            &self.definition,
            &config.sandbox,
            &self.shared.sandbox_overrides(),
        ))
    }

    /// Computed in the dialect of the configured shell (`/bin/sh` is POSIX).
    fn permission_pattern(&self, qualified_name: &str, args: &ToolArgs) -> String {
        let object = args.object().map_err(|e| e.message.as_str());
        crate::permission::permission_pattern_args_in(qualified_name, object, self.permission_dialect(args))
    }

    fn permission_dialect(&self, _args: &ToolArgs) -> crate::permission::Dialect {
        crate::permission::Dialect::for_shell(&self.shared.config().shell)
    }

    fn call(&self, args: &Map<String, Value>, options: CallOptions<'_>) -> ToolResponse {
        let mut request = match ExecRequest::from_args(args).and_then(|r| self.with_host_sandbox(r, options.sandbox)) {
            Ok(request) => request,
            Err(error) => return refused(&error),
        };
        request.principal = options.principal.map(str::to_owned);
        request.ask_client = options
            .client
            .and_then(|c| c.client_asker())
            .map(crate::command::request::AskClient);
        if request_is_background(args) {
            return self.start_background(request);
        }
        if let Some(window) = crate::command::yielding::window(&request, &self.shared.config()) {
            // The run itself refuses what it would refuse, before it starts.
            return crate::command::yielding::run(&self.jobs, request, window, options, |request, options, until| {
                self.shared.run_within(request, options, Some(until))
            });
        }
        match self.shared.run(&request, options) {
            Ok(outcome) => ToolResponse::document(outcome.to_value()),
            Err(error) => refused(&error),
        }
    }
}

/// The response to a call refused before or while its command started.
fn refused(error: &ToolError) -> ToolResponse {
    tracing::debug!(%error, "execute refused");
    ToolResponse::error(error)
}

impl ExecuteTool {
    /// Starts `request` as a background job, refusing now, not later in
    /// `job_status`, what its run would refuse.
    fn start_background(&self, request: ExecRequest) -> ToolResponse {
        let checked = validate_command(&request.command).and_then(|()| {
            let config = self.shared.config();
            // A sandbox no backend can give here fails the call now.
            let sandbox = match &request.sandbox {
                Some(SandboxCall::HostOverride(host)) => host,
                _ => &config.sandbox,
            };
            if let Some(error) = crate::sandbox::unavailable(sandbox) {
                return Err(error);
            }
            let base = self.shared.working_dir();
            match &request.working_dir {
                Some(dir) => self.shared.confined_dir(dir, Some(&base), &config),
                None => self.shared.confined_dir(&base, Some(&base), &config),
            }
        });
        match checked.and_then(|_| self.jobs.start(request)) {
            Ok(id) => ToolResponse::document(serde_json::json!({"job_id": id, "status": "running"})),
            Err(error) => refused(&error),
        }
    }

    /// `request` run in the host's own sandbox for this call, when it gave
    /// one, tightened by the call's `sandbox` argument. A background job or
    /// a handed-back call keeps it: it travels in the request.
    fn with_host_sandbox(
        &self,
        mut request: ExecRequest,
        host: Option<&SandboxConfig>,
    ) -> Result<ExecRequest, ToolError> {
        let Some(host) = host else { return Ok(request) };
        let sandbox = match request.sandbox.take() {
            Some(SandboxCall::Tighten(call)) => {
                let base = self.shared.working_dir();
                let dir = request
                    .working_dir
                    .as_ref()
                    .map_or_else(|| base.clone(), |d| base.join(d));
                host.tighten(&call, &dir, &base).map_err(|p| {
                    super::sandbox_argument::refusal(host, &call, &dir, p, &self.shared.sandbox_overrides())
                })?
            }
            _ => host.clone(),
        };
        request.sandbox = Some(SandboxCall::HostOverride(sandbox));
        Ok(request)
    }
}

/// Whether the `execute` arguments ask for a background job (`background: true`).
fn request_is_background(args: &Map<String, Value>) -> bool {
    args.get("background").and_then(Value::as_bool) == Some(true)
}
