//! Starting and stopping a `BashServer`: building its shared state and managers, registering its tools, shutting it down.

use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use super::execute::ExecuteTool;
use super::{
    BashServer, Counters, DEFAULT_SERVER_NAME, EXECUTE_DEFINITION, MAX_DEFAULT_TIMEOUT, Shared, ops, output_read,
};
use crate::audit::AuditLog;
use crate::command::jobs::{JOB_TOOLS, JobEnd, JobManager, JobTool, Runner};
use crate::command::limiter::Limiter;
use crate::config::{Config, EnvCache};
use crate::error::{ErrorCode, ToolError};
use crate::roots;
use crate::session::tools::{LazyManager, SESSION_TOOLS, SessionTool};
use crate::tool::{Tool, ToolDefinition, ToolRegistry};

impl BashServer {
    /// A server named `bash` running commands in `working_dir`, with a default
    /// time limit of `timeout` (at most a day) and tool definitions from
    /// `data_dir` (`<data_dir>/tools/bash/execute.json`, else the built-in one).
    ///
    /// Errors: a zero `timeout` (`invalid_timeout`), a working dir that does
    /// not exist or is not a directory, an invalid definition file.
    pub fn new(working_dir: impl AsRef<Path>, data_dir: Option<&Path>, timeout: Duration) -> Result<Self, ToolError> {
        Self::named(DEFAULT_SERVER_NAME, working_dir, data_dir, timeout)
    }

    /// Like [`BashServer::new`] with another server name (e.g. for a plugin
    /// that must not collide with a host's own `bash` server).
    pub fn named(
        name: &str,
        working_dir: impl AsRef<Path>,
        data_dir: Option<&Path>,
        timeout: Duration,
    ) -> Result<Self, ToolError> {
        if timeout.is_zero() {
            return Err(ToolError::new(
                ErrorCode::InvalidTimeout,
                "the default timeout must be longer than zero",
                "pass a timeout such as Duration::from_secs(30)",
            ));
        }
        Self::with_config(
            name,
            working_dir,
            data_dir,
            Config::with_timeout(timeout.min(MAX_DEFAULT_TIMEOUT)),
        )
    }

    /// A server with a full configuration.
    pub fn with_config(
        name: &str,
        working_dir: impl AsRef<Path>,
        data_dir: Option<&Path>,
        config: Config,
    ) -> Result<Self, ToolError> {
        let working_dir = roots::existing_dir(working_dir.as_ref(), None)?;
        let audit = config.audit.clone().map(AuditLog::open).transpose()?.map(Arc::new);
        let outputs =
            crate::outputs::OutputStore::new(config.output_store.budget_bytes, config.output_store.max_outputs);
        outputs.set_tail_bytes(config.output_store.tail_bytes);
        let shared = Arc::new_cyclic(|me| Shared {
            me: me.clone(),
            outputs: outputs.clone(),
            name: name.to_owned(),
            instance: crate::process::ids::random_id(),
            limiter: Arc::new(Limiter::new(config.max_concurrent)),
            config: RwLock::new(Arc::new(config)),
            working_dir: RwLock::new(working_dir),
            audit: RwLock::new(audit),
            started: Instant::now(),
            counters: Counters::default(),
            supervisors: crate::sandbox::Supervisors::new(),
            sandbox_temp: Arc::new(crate::sandbox::ServerTemp::new()),
            env_cache: EnvCache::default(),
            sandbox_overrides: RwLock::new(Vec::new()),
            approvals: crate::approval::Approvals::default(),
            ask_slots: std::sync::Mutex::new(None),
        });
        let jobs = job_manager(&shared);
        let sessions = session_manager(&shared, outputs.clone());
        let tools = register_tools(name, data_dir, &shared, &jobs, &sessions, outputs)?;
        // An invalid BASH_MCP_HISTORY is a configuration error at start-up.
        crate::config::HistoryMode::from_env()?;
        Ok(Self {
            shared,
            tools,
            sessions,
            jobs,
        })
    }

    /// Sets the host's approver: asked, on a thread of its own, when a call
    /// needs the person's approval and the protocol cannot ask them itself
    /// (an MCP client without elicitation), or for an `escalate` on a call
    /// made through the Rust or C API. An approver silent for longer than
    /// `bound`, or one that panics, counts as deny. `None` removes it: such
    /// calls are refused, as without one.
    pub fn set_approver(&self, approver: Option<Arc<dyn crate::approval::Approver>>, bound: Duration) {
        self.shared.approvals.set_approver(approver, bound);
    }

    /// Revokes what the person allowed for this server's life: the grant
    /// `id` (`grant-1`, as `status` lists them under `approvals.grants`),
    /// or every grant when `None`. Returns the grants revoked (empty when
    /// none had that id), and records them in the audit log (an entry of
    /// tool `revoke_grants` with `revoked`), as the `revoke_grants` tool does.
    pub fn revoke_grants(&self, id: Option<&str>) -> Vec<crate::approval::Grant> {
        let revoked = self.shared.approvals.revoke(id);
        if let Some(log) = self.shared.audit() {
            let args = crate::tool_args::ToolArgs::from_value(match id {
                Some(id) => serde_json::json!({"grant_id": id}),
                None => serde_json::json!({}),
            });
            let mut entry = self.audit_entry(&log, "revoke_grants", &args, std::time::SystemTime::now());
            entry.insert(
                "revoked".into(),
                serde_json::to_value(&revoked).unwrap_or(serde_json::Value::Null),
            );
            log.record(entry);
        }
        revoked
    }

    /// Tells the model which commands this host lets widen the sandbox for
    /// one call: `rules`, in the format of permission rules, are written into
    /// `execute`'s listed definition (its description and its `sandbox`
    /// argument, whose `mode` then offers `off`), and into the hint of a
    /// widening the tool refuses. The library enforces nothing with them: the
    /// host decides each widening itself and passes the wider sandbox as
    /// [`CallOptions::sandbox`](crate::CallOptions), as the `bash-mcp` binary
    /// does for its `sandbox_overrides` rules. Empty (the default): the model
    /// is told no call may widen the sandbox.
    pub fn announce_sandbox_overrides(&self, rules: &[String]) {
        *self
            .shared
            .sandbox_overrides
            .write()
            .unwrap_or_else(PoisonError::into_inner) = rules.to_vec();
    }

    /// Stops everything the server keeps running between calls: kills the
    /// process group of every background job and closes every session
    /// (killing its shell and what it started, and removing its private
    /// directory), then waits for the jobs' threads. Idempotent; the server
    /// stays usable. Dropping the server does the same.
    ///
    /// Calls running on other threads are not affected: cancel them with
    /// their [`CancelToken`](crate::CancelToken).
    pub fn shutdown(&self) {
        self.shutdown_within(None);
    }

    /// [`shutdown`](BashServer::shutdown), waiting at most `limit` for the
    /// jobs' threads (each job's process group is killed at once either
    /// way; a job is slower to end only while `kill_grace_ms` lets it
    /// handle SIGTERM). Returns whether every job ended in time.
    pub fn shutdown_within(&self, limit: Option<Duration>) -> bool {
        let deadline = limit.map(|l| Instant::now() + l);
        // Cancel the jobs first, so their groups die while sessions close.
        let jobs = self.jobs.stop_all();
        self.sessions.close_all();
        jobs.wait(deadline)
    }
}

impl Drop for BashServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The job manager of a server: its jobs run through `Shared::run` and are
/// audited when they end.
fn job_manager(shared: &Arc<Shared>) -> Arc<JobManager> {
    let runner_shared = shared.clone();
    let runner: Runner = Arc::new(move |request, options| runner_shared.run(request, options));
    let limits_shared = shared.clone();
    Arc::new(JobManager::new(
        runner,
        Box::new(move || {
            let config = limits_shared.config.read().unwrap_or_else(PoisonError::into_inner);
            (config.jobs_max_finished, config.output_limit_bytes)
        }),
        {
            let shared = shared.clone();
            Arc::new(move |end: &JobEnd<'_>| shared.record_job_end(end))
        },
    ))
}

/// The session manager of a server, created on first use from the configuration and
/// working directory in force then.
fn session_manager(shared: &Arc<Shared>, outputs: Arc<crate::outputs::OutputStore>) -> Arc<LazyManager> {
    let source_shared = shared.clone();
    Arc::new(LazyManager::new(
        Arc::new(move || {
            let config = source_shared
                .config
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let dir = source_shared
                .working_dir
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            (config, dir)
        }),
        outputs,
        shared.sandbox_temp.clone(),
    ))
}

/// The tools of a server named `name`: `execute`, the job, ops and `output_read` tools,
/// and the session tools, each with its definition from `data_dir` or the built-in one.
fn register_tools(
    name: &str,
    data_dir: Option<&Path>,
    shared: &Arc<Shared>,
    jobs: &Arc<JobManager>,
    sessions: &Arc<LazyManager>,
    outputs: Arc<crate::outputs::OutputStore>,
) -> Result<ToolRegistry, ToolError> {
    let definition = ToolDefinition::load(data_dir, name, "execute", EXECUTE_DEFINITION)?;
    let execute: Arc<dyn Tool> = Arc::new(ExecuteTool {
        definition,
        shared: shared.clone(),
        jobs: jobs.clone(),
    });
    let mut tools = ToolRegistry::new();
    tools.register(execute)?;
    for (tool, builtin) in JOB_TOOLS {
        tools.register(Arc::new(JobTool::new(
            ToolDefinition::load(data_dir, name, tool, builtin)?,
            jobs.clone(),
        )))?;
    }
    for (tool, builtin) in ops::DEFINITIONS {
        let kind = ops::Kind::from_name(tool).expect("every built-in ops tool has a kind");
        tools.register(Arc::new(ops::OpsTool {
            definition: ToolDefinition::load(data_dir, name, tool, builtin)?,
            kind,
            shared: shared.clone(),
            jobs: jobs.clone(),
            sessions: sessions.clone(),
        }))?;
    }
    tools.register(Arc::new(output_read::OutputReadTool {
        definition: ToolDefinition::load(data_dir, name, "output_read", output_read::DEFINITION)?,
        store: outputs,
        shared: shared.clone(),
    }))?;
    for (tool, builtin) in SESSION_TOOLS {
        tools.register(Arc::new(SessionTool::new(
            ToolDefinition::load(data_dir, name, tool, builtin)?,
            sessions.clone(),
        )))?;
    }
    Ok(tools)
}
