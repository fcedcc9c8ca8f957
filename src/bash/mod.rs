//! `BashServer`: the `bash` server and its one-shot `execute` tool.

mod ops;
mod output_read;
pub use ops::DEFAULT_BINARIES;

use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value};

pub use crate::outcome::{ExecOutcome, Output, SandboxReport, Status};
use crate::request::validate_command;
pub use crate::request::{EXECUTE_ARGUMENTS, ExecRequest, SandboxCall, YieldAfter};

use crate::args::ToolArgs;
use crate::audit::AuditLog;
use crate::config::{Config, EnvCache};
use crate::error::{ErrorCode, ToolError};
use crate::exec::{self, Ending, RunLimits};
use crate::jobs::{JOB_TOOLS, JobEnd, JobManager, JobTool, Runner};
use crate::limiter::Limiter;
use crate::roots;
use crate::server::{CallOptions, McpServer, Tool, ToolDefinition, ToolOutput, ToolRegistry, ToolResponse};
use crate::session::SessionManager;
use crate::session::tools::{LazyManager, SESSION_TOOLS, SessionTool};
use crate::spawn::{SpawnSpec, Streams};

/// The built-in definition of the `execute` tool (used when the data dir has none).
pub const EXECUTE_DEFINITION: &str = include_str!("../../data/tools/bash/execute.json");

/// The default server name.
pub const DEFAULT_SERVER_NAME: &str = "bash";

/// A server whose tool `execute` runs shell commands (with background jobs,
/// and optional session and operator tools).
///
/// `BashServer` is `Send + Sync`: share it (e.g. in an `Arc`) and call it from
/// many threads; up to `max_concurrent` commands run at once and the rest
/// wait in line.
///
/// ```
/// use std::time::Duration;
/// use bash_mcp::{BashServer, ExecRequest, McpServer};
/// let server = BashServer::new(".", None, Duration::from_secs(30))?;
/// let outcome = server.run(&ExecRequest::new("echo hello; exit 3"))?;
/// assert_eq!(outcome.exit_code(), Some(3));
/// assert_eq!(outcome.output.text(), "hello\n");
///
/// // The JSON path a host uses: an envelope whose `result` is a JSON document.
/// let envelope = server.execute("execute", r#"{"command": "echo hi"}"#);
/// let envelope: serde_json::Value = serde_json::from_str(&envelope).unwrap();
/// let result: serde_json::Value = serde_json::from_str(envelope["result"].as_str().unwrap()).unwrap();
/// assert_eq!(result["output"], "hi\n");
/// assert_eq!(result["exit_code"], 0);
/// # Ok::<(), bash_mcp::ToolError>(())
/// ```
pub struct BashServer {
    shared: Arc<Shared>,
    /// `execute`, the job tools, and the optional operator and session tools
    /// (shown while the configuration enables them).
    tools: ToolRegistry,
    sessions: Arc<LazyManager>,
    jobs: Arc<JobManager>,
}

struct Shared {
    name: String,
    /// This server's id in the audit log: `audit_read` returns only the
    /// entries it wrote unless `audit.read_all` is on.
    instance: String,
    config: RwLock<Arc<Config>>,
    working_dir: RwLock<PathBuf>,
    limiter: Limiter,
    audit: RwLock<Option<Arc<AuditLog>>>,
    started: Instant,
    counters: Counters,
    /// Long-lived sandboxes, one per sandbox configuration in use; stopped
    /// with the server.
    supervisors: crate::sandbox::Supervisors,
    /// Whole outputs of cut results, for `output_read`; removed with the server.
    outputs: Arc<crate::outputs::OutputStore>,
    /// The commands' environment, rebuilt only when it would differ.
    env_cache: EnvCache,
}

/// Tool calls served and failed since start.
#[derive(Default)]
struct Counters {
    served: AtomicU64,
    failed: AtomicU64,
}

impl Counters {
    fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }
    fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }
}

/// The longest default time limit a server takes (a day); longer ones are
/// clamped to it.
pub(crate) const MAX_DEFAULT_TIMEOUT: Duration = Duration::from_secs(86_400);

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
        let shared = Arc::new(Shared {
            outputs: outputs.clone(),
            name: name.to_owned(),
            instance: crate::ids::random_id(),
            limiter: Limiter::new(config.max_concurrent),
            config: RwLock::new(Arc::new(config)),
            working_dir: RwLock::new(working_dir),
            audit: RwLock::new(audit),
            started: Instant::now(),
            counters: Counters::default(),
            supervisors: crate::sandbox::Supervisors::new(),
            env_cache: EnvCache::default(),
        });
        let runner_shared = shared.clone();
        let runner: Runner = Arc::new(move |request, options| runner_shared.run(request, options));
        let limits_shared = shared.clone();
        let jobs = Arc::new(JobManager::new(
            runner,
            Box::new(move || {
                let config = limits_shared.config.read().unwrap_or_else(PoisonError::into_inner);
                (config.jobs_max_finished, config.output_limit_bytes)
            }),
            {
                let shared = shared.clone();
                Arc::new(move |end: &JobEnd<'_>| shared.record_job_end(end))
            },
        ));
        let source_shared = shared.clone();
        let sessions = Arc::new(LazyManager::new(
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
            outputs.clone(),
        ));

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
        }))?;
        for (tool, builtin) in SESSION_TOOLS {
            tools.register(Arc::new(SessionTool::new(
                ToolDefinition::load(data_dir, name, tool, builtin)?,
                sessions.clone(),
            )))?;
        }
        // An invalid BASH_MCP_HISTORY is a configuration error at start-up.
        crate::config::HistoryMode::from_env()?;
        Ok(Self {
            shared,
            tools,
            sessions,
            jobs,
        })
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

    /// The session manager (created on first use); an error while sessions
    /// are disabled in the configuration.
    pub fn sessions(&self) -> Result<&SessionManager, ToolError> {
        self.sessions.get()
    }

    /// The default working directory.
    pub fn working_dir(&self) -> PathBuf {
        self.shared.working_dir()
    }

    /// The audit log, when configured.
    pub fn audit_log(&self) -> Option<Arc<AuditLog>> {
        self.shared.audit()
    }

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

    /// The common fields of an audit entry for a call that started at `started`.
    ///
    /// `working_dir` is the call's `working_dir` argument (made absolute
    /// against the server's default directory), else that default; the
    /// caller replaces it with the directory the result names, if any.
    fn audit_entry(&self, log: &AuditLog, tool_name: &str, args: &ToolArgs, started: SystemTime) -> Map<String, Value> {
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

    /// The default time limit.
    pub fn timeout(&self) -> Duration {
        self.config().timeout
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        self.shared
            .config
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Problems found in per-project `.bash-mcp.toml` files (ignored, fail-soft).
    pub fn project_file_warnings(&self) -> Vec<String> {
        roots::project_file_warnings()
    }

    /// (running, waiting) command counts.
    pub fn concurrency(&self) -> (usize, usize) {
        self.shared.limiter.counts()
    }

    /// Runs one command and waits for it.
    ///
    /// A timeout or cancel is an outcome ([`Status::TimedOut`],
    /// [`Status::Cancelled`]) with the partial output; `Err` means the command
    /// could not start (bad request or spawn failure).
    pub fn run(&self, request: &ExecRequest) -> Result<ExecOutcome, ToolError> {
        self.shared.run(request, CallOptions::default())
    }

    /// [`BashServer::run`] with a cancel token and/or a live output callback.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bash_mcp::{BashServer, CallOptions, CancelToken, ExecRequest, Status};
    /// let server = BashServer::new(".", None, Duration::from_secs(30))?;
    /// let token = CancelToken::new();
    /// let canceller = token.clone();
    /// std::thread::spawn(move || {
    ///     std::thread::sleep(std::time::Duration::from_millis(200));
    ///     canceller.cancel();
    /// });
    /// let mut seen = Vec::new();
    /// let mut on_output = |chunk: &[u8], _stream| seen.extend_from_slice(chunk);
    /// let options = CallOptions { cancel: Some(&token), on_output: Some(&mut on_output) };
    /// let outcome = server.run_with(&ExecRequest::new("echo started; sleep 10"), options)?;
    /// assert_eq!(outcome.status, Status::Cancelled);
    /// assert_eq!(seen, b"started\n");
    /// # Ok::<(), bash_mcp::ToolError>(())
    /// ```
    pub fn run_with(&self, request: &ExecRequest, options: CallOptions<'_>) -> Result<ExecOutcome, ToolError> {
        self.shared.run(request, options)
    }
}

impl Drop for BashServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

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

impl Shared {
    fn config(&self) -> Arc<Config> {
        self.config.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn working_dir(&self) -> PathBuf {
        self.working_dir.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn audit(&self) -> Option<Arc<AuditLog>> {
        self.audit.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The fields every audit entry starts with: its id, the start time, the
    /// server and tool, and for a command its redacted text, its class and
    /// its permission pattern.
    fn audit_head(
        &self,
        log: &AuditLog,
        started: SystemTime,
        tool: &str,
        command: Option<&str>,
        pattern: &str,
    ) -> Map<String, Value> {
        let mut entry = Map::new();
        entry.insert("audit_id".into(), crate::ids::random_id().into());
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
    fn count_failed_call(&self) {
        self.counters.served.fetch_add(1, Ordering::Relaxed);
        self.counters.failed.fetch_add(1, Ordering::Relaxed);
    }

    /// Records, in the audit log if on, how a background job ended (tool
    /// `job`): whether or not anyone asked with `job_status`.
    fn record_job_end(&self, end: &JobEnd<'_>) {
        let Some(log) = self.audit() else { return };
        let command = end.request.command.as_str();
        // The pattern `execute` gave the job: in the configured shell's dialect.
        let dialect = crate::permission::Dialect::for_shell(&self.config().shell);
        let pattern = crate::permission::command_pattern_in(&format!("{}.execute", self.name), command, dialect);
        let mut entry = self.audit_head(&log, end.started, "job", Some(command), &pattern);
        entry.insert("job_id".into(), end.id.into());
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

    fn confined_dir(&self, dir: &Path, base: Option<&Path>, config: &Config) -> Result<PathBuf, ToolError> {
        roots::confined_dir(dir, base, config.allowed_roots.as_deref(), config.project_config)
    }

    fn run(&self, request: &ExecRequest, options: CallOptions<'_>) -> Result<ExecOutcome, ToolError> {
        let config = self.config.read().unwrap_or_else(PoisonError::into_inner).clone();
        let base = self.working_dir.read().unwrap_or_else(PoisonError::into_inner).clone();
        validate_command(&request.command)?;
        let dir = request.working_dir.as_deref().unwrap_or(&base);
        // Outside a sandbox the spawn itself finds a directory it cannot
        // start in, and only then is it checked for the error to give.
        let (cwd, checked) = if request.sandbox.is_none() && !config.sandbox.is_on() {
            roots::start_dir(dir, Some(&base), config.allowed_roots.as_deref(), config.project_config)?
        } else {
            (self.confined_dir(dir, Some(&base), &config)?, true)
        };
        let dir_error = || {
            (!checked)
                .then(|| self.confined_dir(dir, Some(&base), &config).err())
                .flatten()
        };
        let timeout = config.effective_timeout(request.timeout);

        let shell = c_path(&config.shell)?;
        let command = [
            shell.clone(),
            c"-c".to_owned(),
            CString::new(request.command.as_str()).expect("checked for NUL above"),
        ];
        let sandbox_config = match &request.sandbox {
            Some(SandboxCall::Tighten(call)) => Cow::Owned(
                config
                    .sandbox
                    .tighten(call, &cwd)
                    .map_err(|p| ToolError::new(ErrorCode::InvalidArguments, p.message, p.hint))?,
            ),
            Some(SandboxCall::HostOverride(sandbox)) => {
                tracing::info!(sandbox = %sandbox.to_value(), "the host set this call's sandbox");
                Cow::Borrowed(sandbox)
            }
            None => Cow::Borrowed(&config.sandbox),
        };
        let sandbox = crate::sandbox::wrap_in(
            &sandbox_config,
            &crate::sandbox::Request {
                cwd: &cwd,
                extra_writable: &[],
                command: &command,
                die_with_parent: true,
            },
            Some(&self.supervisors),
        )?;
        let (program, argv) = match &sandbox {
            Some(wrapped) => (wrapped.program.clone(), wrapped.argv.clone()),
            None => (shell, command.to_vec()),
        };
        let env = self.env_cache.env(&config, &request.env);
        let run_marker = crate::ids::next_run_marker();
        let marker_c = CString::new(run_marker.clone()).expect("marker has no NUL");
        let mut envp: Vec<&CStr> = Vec::with_capacity(env.len() + 1);
        envp.push(&marker_c);
        envp.extend(env.iter().map(CString::as_c_str));
        let cwd_c = c_path(&cwd)?;
        let spec = SpawnSpec {
            program: &program,
            argv: &argv,
            envp: &envp,
            cwd: &cwd_c,
            stdin_pipe: request.stdin.is_some(),
            streams: request.streams,
            via: sandbox
                .as_ref()
                .and_then(|w| w.supervisor.as_deref())
                .map(|s| s as &dyn crate::spawn::Launch),
        };
        let limits = RunLimits {
            timeout,
            kill_grace: config.kill_grace,
            drain: config.drain,
            output_limit: config.output_limit_bytes,
            run_marker: Some(run_marker),
            keep: config.output_store.enabled.then(|| self.outputs.clone()),
        };

        // The limiter checks the token before it grants a slot: a call
        // cancelled before its turn never starts its command.
        let Some(_permit) = self.limiter.acquire(options.cancel) else {
            if let Some(error) = dir_error() {
                return Err(error);
            }
            return Ok(ExecOutcome {
                status: Status::Cancelled,
                output: empty_output(request.streams),
                duration: Duration::ZERO,
                truncated: false,
                output_bytes: 0,
                working_dir: cwd,
                timeout,
                sandbox: None,
                output_id: None,
                stderr_output_id: None,
            });
        };
        tracing::debug!(command = %request.command, cwd = %cwd.display(), ?timeout, "execute");
        let mut raw = exec::run(
            &spec,
            request.stdin.as_deref(),
            &limits,
            options.cancel,
            options.on_output,
        )
        .map_err(|e| dir_error().unwrap_or_else(|| spawn_error(&e, &config.shell, &cwd)))?;

        let status = match raw.ending {
            Ending::Exited => Status::Exited(raw.status),
            Ending::StatusLost => Status::ExitStatusLost,
            Ending::TimedOut => Status::TimedOut,
            Ending::Cancelled => Status::Cancelled,
        };
        let truncated = raw.stdout.is_truncated() || raw.stderr.as_ref().is_some_and(|e| e.is_truncated());
        // Before rendering: the marker line names where the whole output is kept.
        let output_id = raw.stdout.finish_keeping().and_then(|k| k.output_id);
        let stderr_output_id = raw
            .stderr
            .as_mut()
            .and_then(|e| e.finish_keeping())
            .and_then(|k| k.output_id);
        let output_bytes = raw.stdout.total() + raw.stderr.as_ref().map_or(0, |e| e.total());
        let output = match &raw.stderr {
            Some(err) => Output::Separate {
                stdout: raw.stdout.render(),
                stderr: err.render(),
            },
            None => Output::Merged(raw.stdout.render()),
        };
        let sandbox = sandbox.map(|wrapped| SandboxReport {
            backend: wrapped.backend,
            denied: wrapped.denials(&output.text()),
        });
        tracing::debug!(?status, elapsed = ?raw.elapsed, output_bytes, "execute finished");
        Ok(ExecOutcome {
            status,
            output,
            duration: raw.elapsed,
            truncated,
            output_bytes,
            working_dir: cwd,
            timeout,
            sandbox,
            output_id,
            stderr_output_id,
        })
    }
}

fn empty_output(streams: Streams) -> Output {
    match streams {
        Streams::Merged => Output::Merged(String::new()),
        Streams::Separate => Output::Separate {
            stdout: String::new(),
            stderr: String::new(),
        },
    }
}

/// The `execute` tool of a [`BashServer`].
struct ExecuteTool {
    definition: ToolDefinition,
    shared: Arc<Shared>,
    jobs: Arc<JobManager>,
}

impl Tool for ExecuteTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
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
        let request = ExecRequest::from_args(args);
        let window = request
            .as_ref()
            .ok()
            .and_then(|r| crate::yielding::window(r, &self.shared.config()));
        if let Ok(request) = &request
            && (request_is_background(args) || window.is_some())
        {
            // Refuse what the run would refuse now, not later in job_status.
            let checked = validate_command(&request.command).and_then(|()| {
                let config = self.shared.config();
                let base = self.shared.working_dir();
                match &request.working_dir {
                    Some(dir) => self.shared.confined_dir(dir, Some(&base), &config),
                    None => self.shared.confined_dir(&base, Some(&base), &config),
                }
            });
            if let (Some(window), Ok(_)) = (window, &checked)
                && !request_is_background(args)
            {
                return crate::yielding::run(&self.jobs, request.clone(), window, options);
            }
            return match checked.and_then(|_| self.jobs.start(request.clone())) {
                Ok(id) => ToolResponse::document(serde_json::json!({"job_id": id, "status": "running"})),
                Err(error) => ToolResponse::error(&error),
            };
        }
        let result = request.and_then(|request| self.shared.run(&request, options));
        match result {
            Ok(outcome) => ToolResponse::document(outcome.to_value()),
            Err(error) => {
                tracing::debug!(%error, "execute refused");
                ToolResponse::error(&error)
            }
        }
    }
}

/// The `command` argument of a call, if any.
fn command_of(args: &ToolArgs) -> Option<&str> {
    args.get("command").and_then(Value::as_str)
}

/// Whether the `execute` arguments ask for a background job (`background: true`).
fn request_is_background(args: &Map<String, Value>) -> bool {
    args.get("background").and_then(Value::as_bool) == Some(true)
}

fn c_path(path: &Path) -> Result<CString, ToolError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        ToolError::new(
            ErrorCode::InvalidArguments,
            format!("path {} contains a NUL byte", path.display()),
            "use a path without NUL bytes",
        )
    })
}

fn spawn_error(error: &std::io::Error, shell: &Path, cwd: &Path) -> ToolError {
    let (message, hint) = match error.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE) => (
            format!("could not start {}: out of file descriptors ({error})", shell.display()),
            "the host has too many open files; close some or raise its fd limit (ulimit -n), then retry",
        ),
        Some(libc::E2BIG) => (
            format!(
                "could not start {}: the command and environment exceed the system's argument limit ({error})",
                shell.display()
            ),
            "shorten the command or the environment; put long scripts in a file",
        ),
        Some(libc::ENOENT) | Some(libc::EACCES) | Some(libc::ENOTDIR) => (
            format!("could not start {} in {}: {error}", shell.display(), cwd.display()),
            "check that the shell exists and is executable and that the working directory is accessible",
        ),
        _ => (
            format!("could not start {}: {error}", shell.display()),
            "retry; if it persists, check the host's process and memory limits",
        ),
    };
    ToolError::new(ErrorCode::SpawnFailed, message, hint)
}
