//! Server configuration: defaults, validation, and the environment profile.
//!
//! [`Config`] is the configuration in force. [`Config::apply_json`] takes the
//! documented JSON object (every key optional), validates every key, and
//! returns a new configuration; the caller swaps it in only on success, so a
//! failed `configure` leaves the previous configuration untouched.

use std::collections::BTreeSet;
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

mod env;
mod session;
pub(crate) use env::EnvCache;
pub use session::{HISTORY_ENV, HistoryMode, SessionConfig};

use crate::audit::AuditSettings;
use crate::error::{ErrorCode, ToolError};

/// Default output limit: 32 KiB (head 16 KiB + tail 16 KiB).
///
/// About 8 000 tokens: enough for a full test report or a compiler's last
/// errors, small enough that one call cannot flood a model's context window.
pub const DEFAULT_OUTPUT_LIMIT_BYTES: usize = 32 * 1024;
/// Smallest output limit accepted, so head and tail stay readable.
pub const MIN_OUTPUT_LIMIT_BYTES: usize = 256;
/// Largest output limit accepted (64 MiB), so host memory stays bounded.
pub const MAX_OUTPUT_LIMIT_BYTES: usize = 64 * 1024 * 1024;
/// Default bound on draining a pipe still held open after the shell exited.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(2);
/// Default number of commands running at once; more calls wait in line.
pub const DEFAULT_MAX_CONCURRENT: usize = 8;

/// Variables set for every command when `non_interactive` is on (the default),
/// so that pagers, editors and credential prompts never block a command that
/// has no terminal.
pub const NON_INTERACTIVE_PROFILE: &[(&str, &str)] = &[
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("SYSTEMD_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_EDITOR", "true"),
    ("EDITOR", "true"),
    ("VISUAL", "true"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("PIP_NO_INPUT", "1"),
    ("NPM_CONFIG_YES", "true"),
    ("TERM", "dumb"),
    ("NO_COLOR", "1"),
];

/// Which variables of the host's environment a command inherits.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inherit {
    /// Every variable of the host process.
    All,
    /// None: the command sees only what the profile and `set` give it.
    None,
    /// Only variables whose names match one of these fnmatch patterns.
    Matching(Vec<String>),
}

/// How the command's environment is built from the host's.
///
/// Order: inherited variables, then the non-interactive profile, then `set`,
/// then `remove`, then the call's own `env` overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPolicy {
    /// Which host variables pass through.
    pub inherit: Inherit,
    /// Variables set for every command.
    pub set: Vec<(String, String)>,
    /// fnmatch patterns of names removed after `set`.
    pub remove: Vec<String>,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        Self {
            inherit: Inherit::All,
            set: Vec::new(),
            remove: Vec::new(),
        }
    }
}

/// The configuration in force for a server.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Time limit of a call that does not ask for one.
    pub timeout: Duration,
    /// Ceiling for a call's own `timeout_seconds`; larger requests are clamped
    /// to it. Never below `timeout`.
    pub max_timeout: Duration,
    /// The shell; commands run as `<shell> -c <command>`.
    pub shell: PathBuf,
    /// Bytes of output kept per stream (head and tail halves).
    pub output_limit_bytes: usize,
    /// Time between SIGTERM and SIGKILL on timeout or cancel; zero kills at once.
    pub kill_grace: Duration,
    /// How long output still in the pipe is drained after the shell exited.
    pub drain: Duration,
    /// Commands running at once; further calls queue.
    pub max_concurrent: usize,
    /// How the command environment is built.
    pub env: EnvPolicy,
    /// Whether [`NON_INTERACTIVE_PROFILE`] is applied.
    pub non_interactive: bool,
    /// When set, working directories must resolve inside one of these
    /// (already resolved) roots. `None`: any existing directory. In JSON
    /// configuration, relative entries resolve against the process's
    /// current directory (the `bash-mcp` binary resolves those of its
    /// configuration file against the file's folder first).
    pub allowed_roots: Option<Vec<PathBuf>>,
    /// Whether per-project `.bash-mcp.toml` files may extend or replace the
    /// roots (see the README's "Where commands may run").
    pub project_config: bool,
    /// The audit log, when on. A relative `audit.path` is made absolute
    /// against the process's current directory when configured.
    pub audit: Option<AuditSettings>,
    /// Optional tools switched on (names from [`OPTIONAL_TOOLS`]).
    pub tools: BTreeSet<String>,
    /// Persistent shell sessions (`sessions` key).
    pub sessions: SessionConfig,
    /// Finished background jobs kept for retrieval (`jobs.max_finished`).
    pub jobs_max_finished: usize,
    /// Where the whole output of a cut result is kept (`output_store` key).
    pub output_store: OutputStoreSettings,
    /// The OS sandbox every command runs in (`sandbox` key; off by default).
    pub sandbox: crate::sandbox::SandboxConfig,
    /// How long an `execute` call waits before it hands a still-running
    /// command back as a background job (`yield_seconds`; `None`: until
    /// the command ends). A call's own `yield_seconds` overrides it.
    pub yield_after: Option<Duration>,
}

/// Tools a server registers but shows only when configuration turns them on.
pub const OPTIONAL_TOOLS: &[&str] = &[
    "audit_read",
    "status",
    "check_env",
    "which",
    "list_binaries",
    "classify",
];

/// Default number of finished background jobs kept until read.
pub const DEFAULT_JOBS_MAX_FINISHED: usize = 32;

impl Config {
    /// The defaults, with the given default time limit.
    pub fn with_timeout(timeout: Duration) -> Self {
        Self {
            timeout,
            max_timeout: timeout,
            shell: PathBuf::from("/bin/sh"),
            output_limit_bytes: DEFAULT_OUTPUT_LIMIT_BYTES,
            kill_grace: Duration::ZERO,
            drain: DEFAULT_DRAIN,
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            env: EnvPolicy::default(),
            non_interactive: true,
            allowed_roots: None,
            project_config: false,
            audit: None,
            tools: BTreeSet::new(),
            sessions: SessionConfig::default(),
            jobs_max_finished: DEFAULT_JOBS_MAX_FINISHED,
            output_store: OutputStoreSettings::default(),
            sandbox: crate::sandbox::SandboxConfig::default(),
            yield_after: None,
        }
    }

    /// The time limit for a call that asked for `requested` (clamped to the ceiling).
    pub fn effective_timeout(&self, requested: Option<Duration>) -> Duration {
        match requested {
            Some(t) => t.min(self.max_timeout.max(self.timeout)),
            None => self.timeout,
        }
    }

    /// The configuration as JSON for `status`, with `env.set` values masked.
    pub fn to_masked_value(&self) -> Value {
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
        serde_json::json!({
            "timeout_seconds": self.timeout.as_secs_f64(),
            "max_timeout_seconds": self.max_timeout.as_secs_f64(),
            "shell": self.shell.display().to_string(),
            "output_limit_bytes": self.output_limit_bytes,
            "kill_grace_ms": self.kill_grace.as_millis() as u64,
            "drain_ms": self.drain.as_millis() as u64,
            "max_concurrent": self.max_concurrent,
            "non_interactive": self.non_interactive,
            "env": {"inherit": inherit, "set": set, "remove": self.env.remove},
            "allowed_roots": self.allowed_roots.as_ref().map(|r| r.iter().map(|p| p.display().to_string()).collect::<Vec<_>>()),
            "project_config": self.project_config,
            "audit": self.audit.as_ref().map(|a| serde_json::json!({
                "path": a.path.display().to_string(),
                "max_bytes": a.max_bytes,
                "backups": a.backups,
                "gzip_min_bytes": a.gzip_min_bytes,
                "redact_patterns": a.redact.len(),
                "read_all": a.read_all,
            })),
            "tools": self.tools.iter().collect::<Vec<_>>(),
            "sessions": {
                "enabled": self.sessions.enabled,
                "max_sessions": self.sessions.max_sessions,
                "idle_ttl_seconds": self.sessions.idle_ttl.map(|d| d.as_secs_f64()),
                "output_limit_bytes": self.sessions.output_limit_bytes,
                "read_rc_files": self.sessions.read_rc_files,
                "history": self.sessions.history.as_str(),
            },
            "jobs": {"max_finished": self.jobs_max_finished},
            "output_store": {
                "enabled": self.output_store.enabled,
                "budget_bytes": self.output_store.budget_bytes,
                "max_outputs": self.output_store.max_outputs,
            },
            "sandbox": self.sandbox.to_value(),
            "yield_seconds": self.yield_after.map(|d| d.as_secs_f64()),
        })
    }

    /// Returns a copy of `self` with the keys of `json` applied.
    ///
    /// Every key is optional; unknown keys and invalid values are errors that
    /// name the key. `self` is never modified.
    pub fn apply_json(&self, json: &str) -> Result<Config, ToolError> {
        let value: Value = serde_json::from_str(json).map_err(|e| {
            config_error(
                format!("configuration is not valid JSON: {e}"),
                "pass one JSON object, e.g. {\"timeout_seconds\": 60}",
            )
        })?;
        let Value::Object(map) = value else {
            return Err(config_error(
                "configuration must be a JSON object",
                "pass one JSON object, e.g. {\"timeout_seconds\": 60}",
            ));
        };
        self.apply_map(&map)
    }

    /// Like [`Config::apply_json`], from an already parsed object.
    pub fn apply_map(&self, map: &Map<String, Value>) -> Result<Config, ToolError> {
        let mut next = self.clone();
        let mut max_timeout_given = false;
        for (key, value) in map {
            match key.as_str() {
                "timeout_seconds" => next.timeout = positive_seconds(key, value)?,
                "max_timeout_seconds" => {
                    next.max_timeout = positive_seconds(key, value)?;
                    max_timeout_given = true;
                }
                "shell" => next.shell = shell_path(value)?,
                "output_limit_bytes" => {
                    next.output_limit_bytes =
                        bounded_int(key, value, MIN_OUTPUT_LIMIT_BYTES as u64, MAX_OUTPUT_LIMIT_BYTES as u64)? as usize
                }
                "kill_grace_ms" => next.kill_grace = Duration::from_millis(bounded_int(key, value, 0, 60_000)?),
                "drain_ms" => next.drain = Duration::from_millis(bounded_int(key, value, 0, 60_000)?),
                "max_concurrent" => next.max_concurrent = bounded_int(key, value, 1, 1024)? as usize,
                "non_interactive" => {
                    next.non_interactive = value
                        .as_bool()
                        .ok_or_else(|| config_error("`non_interactive` must be true or false", "use a JSON boolean"))?
                }
                "env" => next.env = env_policy(&next.env, value)?,
                "allowed_roots" => {
                    next.allowed_roots = match value {
                        Value::Null => None,
                        _ => {
                            let roots = string_list(key, value)?;
                            let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
                            Some(crate::roots::canonical_roots(&roots, &base).map_err(|problem| {
                                config_error(
                                    format!("`allowed_roots`: {problem}"),
                                    "list existing directories (absolute paths), or null for no restriction",
                                )
                            })?)
                        }
                    }
                }
                "audit" => next.audit = audit_settings(value)?,
                "tools" => next.tools = tool_switches(&next.tools, value)?,
                "project_config" => {
                    next.project_config = value
                        .as_bool()
                        .ok_or_else(|| config_error("`project_config` must be true or false", "use a JSON boolean"))?
                }
                "sessions" => next.sessions = session_config(&next.sessions, value)?,
                "jobs" => next.jobs_max_finished = jobs_config(value)?,
                "output_store" => next.output_store = output_store_config(&next.output_store, value)?,
                "yield_seconds" => {
                    next.yield_after = match value {
                        Value::Null => None,
                        _ => Some(positive_seconds(key, value)?),
                    }
                }
                "sandbox" => {
                    let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
                    next.sandbox = next
                        .sandbox
                        .apply(value, &base)
                        .map_err(|p| config_error(p.message, p.hint))?
                }
                other => {
                    return Err(config_error(
                        format!("unknown configuration key `{other}`"),
                        format!("known keys: {}", CONFIG_KEYS.join(", ")),
                    ));
                }
            }
        }
        if !max_timeout_given && next.max_timeout < next.timeout {
            next.max_timeout = next.timeout;
        }
        if next.max_timeout < next.timeout {
            return Err(config_error(
                format!(
                    "`max_timeout_seconds` ({} s) is below `timeout_seconds` ({} s)",
                    next.max_timeout.as_secs_f64(),
                    next.timeout.as_secs_f64()
                ),
                "the ceiling must be at least the default time limit",
            ));
        }
        Ok(next)
    }

    /// Builds the environment for one command, `NAME=value` entries.
    ///
    /// `overrides` are the call's own variables, applied last.
    pub fn build_env(&self, overrides: &[(String, String)]) -> Vec<CString> {
        let host = match self.env.inherit {
            Inherit::None => Vec::new(),
            Inherit::All | Inherit::Matching(_) => std::env::vars_os().collect(),
        };
        self.env_from(host, overrides)
    }

    /// [`Config::build_env`] from `host`, the host's variables.
    fn env_from(&self, host: Vec<(OsString, OsString)>, overrides: &[(String, String)]) -> Vec<CString> {
        let mut vars: Vec<(OsString, OsString)> = match &self.env.inherit {
            Inherit::All => host,
            Inherit::None => Vec::new(),
            Inherit::Matching(patterns) => host
                .into_iter()
                .filter(|(name, _)| patterns.iter().any(|p| fnmatch(p, name)))
                .collect(),
        };
        let mut put = |name: &str, value: &str| {
            let name = OsStr::new(name);
            match vars.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = value.into(),
                None => vars.push((name.into(), value.into())),
            }
        };
        if self.non_interactive {
            for (name, value) in NON_INTERACTIVE_PROFILE {
                put(name, value);
            }
        }
        for (name, value) in &self.env.set {
            put(name, value);
        }
        vars.retain(|(name, _)| !self.env.remove.iter().any(|p| fnmatch(p, name)));
        for (name, value) in overrides {
            let name_os = OsStr::new(name);
            match vars.iter_mut().find(|(n, _)| n == name_os) {
                Some(slot) => slot.1 = value.into(),
                None => vars.push((name.into(), value.into())),
            }
        }
        vars.into_iter()
            .filter_map(|(name, value)| {
                let mut entry = name.into_vec();
                entry.push(b'=');
                entry.extend_from_slice(value.as_bytes());
                CString::new(entry).ok()
            })
            .collect()
    }
}

/// Every key [`Config::apply_json`] accepts.
pub const CONFIG_KEYS: &[&str] = &[
    "timeout_seconds",
    "max_timeout_seconds",
    "shell",
    "output_limit_bytes",
    "kill_grace_ms",
    "drain_ms",
    "max_concurrent",
    "non_interactive",
    "env",
    "allowed_roots",
    "project_config",
    "audit",
    "tools",
    "sessions",
    "jobs",
    "output_store",
    "sandbox",
    "yield_seconds",
];

/// Keys of the `sessions` object.
pub const SESSION_CONFIG_KEYS: &[&str] = &[
    "enabled",
    "max_sessions",
    "idle_ttl_seconds",
    "output_limit_bytes",
    "read_rc_files",
    "history",
];

fn session_config(current: &SessionConfig, value: &Value) -> Result<SessionConfig, ToolError> {
    let hint = format!("`sessions` is an object with keys {}", SESSION_CONFIG_KEYS.join(", "));
    let Value::Object(map) = value else {
        return Err(config_error(format!("`sessions` must be an object, got {value}"), hint));
    };
    let mut next = current.clone();
    for (key, value) in map {
        let bool_of = |v: &Value| {
            v.as_bool().ok_or_else(|| {
                config_error(
                    format!("`sessions.{key}` must be true or false, got {v}"),
                    "use a JSON boolean",
                )
            })
        };
        match key.as_str() {
            "enabled" => next.enabled = bool_of(value)?,
            "read_rc_files" => next.read_rc_files = bool_of(value)?,
            "max_sessions" => next.max_sessions = bounded_int("sessions.max_sessions", value, 1, 256)? as usize,
            "idle_ttl_seconds" => {
                next.idle_ttl = match value {
                    Value::Null => None,
                    v => Some(positive_seconds("sessions.idle_ttl_seconds", v)?),
                }
            }
            "output_limit_bytes" => {
                next.output_limit_bytes = bounded_int(
                    "sessions.output_limit_bytes",
                    value,
                    MIN_OUTPUT_LIMIT_BYTES as u64,
                    MAX_OUTPUT_LIMIT_BYTES as u64,
                )? as usize
            }
            "history" => {
                next.history = value.as_str().and_then(HistoryMode::parse).ok_or_else(|| {
                    config_error(
                        format!("`sessions.history` must be \"suppress\" or \"keep\", got {value}"),
                        "use \"suppress\" (the default) or \"keep\"",
                    )
                })?
            }
            other => {
                return Err(config_error(
                    format!("unknown configuration key `sessions.{other}`"),
                    hint,
                ));
            }
        }
    }
    Ok(next)
}

fn jobs_config(value: &Value) -> Result<usize, ToolError> {
    let hint = "use {\"jobs\": {\"max_finished\": 32}}";
    let Value::Object(map) = value else {
        return Err(config_error(format!("`jobs` must be an object, got {value}"), hint));
    };
    let mut max = DEFAULT_JOBS_MAX_FINISHED;
    for (key, value) in map {
        match key.as_str() {
            "max_finished" => max = bounded_int("jobs.max_finished", value, 1, 10_000)? as usize,
            other => return Err(config_error(format!("unknown configuration key `jobs.{other}`"), hint)),
        }
    }
    Ok(max)
}

/// The store that keeps the whole output of results cut to
/// `output_limit_bytes`, for `output_read`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputStoreSettings {
    /// Whether whole outputs are kept (default on).
    pub enabled: bool,
    /// Bytes kept on disk, all outputs together; the oldest go first. One
    /// output larger than this keeps its head and its last bytes.
    pub budget_bytes: u64,
    /// Outputs kept at most; the oldest go first.
    pub max_outputs: usize,
}

impl Default for OutputStoreSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            budget_bytes: DEFAULT_OUTPUT_STORE_BYTES,
            max_outputs: DEFAULT_OUTPUT_STORE_COUNT,
        }
    }
}

/// The default `output_store.budget_bytes`: 256 MiB.
pub const DEFAULT_OUTPUT_STORE_BYTES: u64 = 256 * 1024 * 1024;
/// The default `output_store.max_outputs`.
pub const DEFAULT_OUTPUT_STORE_COUNT: usize = 64;

fn output_store_config(current: &OutputStoreSettings, value: &Value) -> Result<OutputStoreSettings, ToolError> {
    let hint = "use {\"output_store\": {\"enabled\": true, \"budget_bytes\": 268435456, \"max_outputs\": 64}}";
    let Value::Object(map) = value else {
        return Err(config_error(
            format!("`output_store` must be an object, got {value}"),
            hint,
        ));
    };
    let mut next = current.clone();
    for (key, value) in map {
        match key.as_str() {
            "enabled" => {
                next.enabled = value.as_bool().ok_or_else(|| {
                    config_error(
                        format!("`output_store.enabled` must be true or false, got {value}"),
                        hint,
                    )
                })?
            }
            "budget_bytes" => next.budget_bytes = bounded_int("output_store.budget_bytes", value, 4096, 1 << 40)?,
            "max_outputs" => next.max_outputs = bounded_int("output_store.max_outputs", value, 1, 100_000)? as usize,
            other => {
                return Err(config_error(
                    format!("unknown configuration key `output_store.{other}`"),
                    hint,
                ));
            }
        }
    }
    Ok(next)
}

/// True when `name` is a valid environment variable name for a command.
pub fn is_valid_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('=') && !name.contains('\0')
}

/// POSIX `fnmatch(pattern, name, 0)`; a pattern or name with NUL never matches.
pub(crate) fn fnmatch(pattern: &str, name: &OsStr) -> bool {
    let (Ok(p), Ok(n)) = (CString::new(pattern), CString::new(name.as_bytes())) else {
        return false;
    };
    // SAFETY: both arguments are valid NUL-terminated strings.
    unsafe { libc::fnmatch(p.as_ptr(), n.as_ptr(), 0) == 0 }
}

fn config_error(message: impl Into<String>, hint: impl Into<String>) -> ToolError {
    ToolError::new(ErrorCode::InvalidConfig, message, hint)
}

/// Parses a positive number of seconds (integer or fraction), at most one day.
pub(crate) fn positive_seconds(key: &str, value: &Value) -> Result<Duration, ToolError> {
    let secs = value.as_f64().filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0);
    secs.map(Duration::from_secs_f64).ok_or_else(|| {
        config_error(
            format!("`{key}` must be a number of seconds above 0 and at most 86400, got {value}"),
            format!("set `{key}` to a positive number such as 30"),
        )
    })
}

fn bounded_int(key: &str, value: &Value, min: u64, max: u64) -> Result<u64, ToolError> {
    value.as_u64().filter(|v| (min..=max).contains(v)).ok_or_else(|| {
        config_error(
            format!("`{key}` must be an integer from {min} to {max}, got {value}"),
            format!("set `{key}` to an integer in that range"),
        )
    })
}

fn shell_path(value: &Value) -> Result<PathBuf, ToolError> {
    let Some(text) = value.as_str().filter(|s| !s.is_empty() && !s.contains('\0')) else {
        return Err(config_error(
            format!("`shell` must be a non-empty path string, got {value}"),
            "use an absolute path such as \"/bin/bash\", or a name found on PATH",
        ));
    };
    let path = resolve_program(text).ok_or_else(|| {
        config_error(
            format!("`shell` {text:?} is not an executable file (nor found on PATH)"),
            "install that shell or give the absolute path of one that exists",
        )
    })?;
    Ok(path)
}

/// Resolves a program name the way `execvp` would: paths with a slash as they
/// are, bare names through `PATH`. Returns `None` when nothing executable is found.
pub fn resolve_program(name: &str) -> Option<PathBuf> {
    let is_exec = |p: &std::path::Path| {
        let Ok(c) = CString::new(p.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: valid NUL-terminated path.
        p.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
    };
    if name.contains('/') {
        let path = PathBuf::from(name);
        return is_exec(&path).then_some(path);
    }
    let search = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&search)
        .map(|dir| dir.join(name))
        .find(|candidate| is_exec(candidate))
}

/// Merges an `env` object into `current`: the sub-keys given replace theirs, the
/// others keep their value (like every other key), so setting one variable never
/// re-opens an `inherit` restriction.
fn env_policy(current: &EnvPolicy, value: &Value) -> Result<EnvPolicy, ToolError> {
    let hint = "use {\"inherit\": \"all\" | \"none\" | [\"PATTERN\", ...], \"set\": {\"NAME\": \"value\"}, \"remove\": [\"PATTERN\"]}";
    let Value::Object(map) = value else {
        return Err(config_error(format!("`env` must be an object, got {value}"), hint));
    };
    let mut policy = current.clone();
    for (key, value) in map {
        match key.as_str() {
            "inherit" => {
                policy.inherit = match value {
                    Value::String(s) if s == "all" => Inherit::All,
                    Value::String(s) if s == "none" => Inherit::None,
                    Value::Array(_) => Inherit::Matching(string_list("env.inherit", value)?),
                    _ => {
                        return Err(config_error(
                            format!("`env.inherit` must be \"all\", \"none\" or a list of name patterns, got {value}"),
                            hint,
                        ));
                    }
                }
            }
            "set" => {
                let Value::Object(vars) = value else {
                    return Err(config_error(
                        format!("`env.set` must be an object of strings, got {value}"),
                        hint,
                    ));
                };
                policy.set = vars
                    .iter()
                    .map(|(name, v)| match v.as_str() {
                        Some(s) if is_valid_env_name(name) && !s.contains('\0') => Ok((name.clone(), s.to_owned())),
                        _ => Err(config_error(
                            format!("`env.set.{name}` must be a string without NUL under a valid variable name"),
                            hint,
                        )),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "remove" => policy.remove = string_list("env.remove", value)?,
            other => {
                return Err(config_error(format!("unknown configuration key `env.{other}`"), hint));
            }
        }
    }
    Ok(policy)
}

fn audit_settings(value: &Value) -> Result<Option<AuditSettings>, ToolError> {
    let hint = "use null (off) or {\"path\": \"/var/log/bash-mcp/audit.jsonl\", \"max_bytes\": 26214400, \"backups\": 5, \"gzip_min_bytes\": null, \"redact\": [\"REGEX\"]}";
    let map = match value {
        Value::Null => return Ok(None),
        Value::Object(map) => map,
        _ => {
            return Err(config_error(
                format!("`audit` must be null or an object, got {value}"),
                hint,
            ));
        }
    };
    let path = match map.get("path") {
        // Absolute now: the writer reopens the path after rotations, which
        // must not depend on the process's current directory at that time.
        Some(Value::String(p)) if !p.is_empty() && !p.contains('\0') => {
            std::path::absolute(p).unwrap_or_else(|_| PathBuf::from(p))
        }
        _ => return Err(config_error("`audit.path` must be a non-empty path string", hint)),
    };
    let mut settings = AuditSettings::new(path);
    for (key, value) in map {
        let full = format!("audit.{key}");
        match key.as_str() {
            "path" => {}
            "max_bytes" => settings.max_bytes = bounded_int(&full, value, 1024, u64::MAX)?,
            "backups" => settings.backups = bounded_int(&full, value, 0, 1000)? as usize,
            "gzip_min_bytes" => {
                settings.gzip_min_bytes = match value {
                    Value::Null => None,
                    _ => Some(bounded_int(&full, value, 0, u64::MAX)?),
                }
            }
            "redact" => settings.redact = string_list(&full, value)?,
            "read_all" => {
                settings.read_all = value
                    .as_bool()
                    .ok_or_else(|| config_error("`audit.read_all` must be true or false", "use a JSON boolean"))?
            }
            other => return Err(config_error(format!("unknown configuration key `audit.{other}`"), hint)),
        }
    }
    Ok(Some(settings))
}

fn tool_switches(current: &BTreeSet<String>, value: &Value) -> Result<BTreeSet<String>, ToolError> {
    let hint = format!(
        "use an object such as {{\"status\": true}}; optional tools: {}",
        OPTIONAL_TOOLS.join(", ")
    );
    let Value::Object(map) = value else {
        return Err(config_error(
            format!("`tools` must be an object of tool name to true/false, got {value}"),
            hint,
        ));
    };
    let mut tools = current.clone();
    for (name, on) in map {
        if !OPTIONAL_TOOLS.contains(&name.as_str()) {
            return Err(config_error(format!("`tools.{name}` is not an optional tool"), hint));
        }
        match on.as_bool() {
            Some(true) => tools.insert(name.clone()),
            Some(false) => tools.remove(name),
            None => return Err(config_error(format!("`tools.{name}` must be true or false"), hint)),
        };
    }
    Ok(tools)
}

fn string_list(key: &str, value: &Value) -> Result<Vec<String>, ToolError> {
    let items = value.as_array().ok_or_else(|| {
        config_error(
            format!("`{key}` must be a list of strings, got {value}"),
            "use a JSON array of strings",
        )
    })?;
    items
        .iter()
        .map(|item| {
            item.as_str()
                .filter(|s| !s.is_empty() && !s.contains('\0'))
                .map(str::to_owned)
                .ok_or_else(|| {
                    config_error(
                        format!("`{key}` entries must be non-empty strings, got {item}"),
                        "use a JSON array of strings",
                    )
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Config {
        Config::with_timeout(Duration::from_secs(30))
    }

    #[test]
    fn unknown_key_is_named() {
        let err = base().apply_json(r#"{"timeout_seconds": 5, "bogus": 1}"#).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidConfig);
        assert!(err.message.contains("`bogus`"), "{err}");
    }

    #[test]
    fn invalid_value_names_key() {
        for (json, key) in [
            (r#"{"timeout_seconds": 0}"#, "timeout_seconds"),
            (r#"{"timeout_seconds": "5"}"#, "timeout_seconds"),
            (r#"{"max_concurrent": 0}"#, "max_concurrent"),
            (r#"{"output_limit_bytes": 10}"#, "output_limit_bytes"),
            (r#"{"drain_ms": -1}"#, "drain_ms"),
            (r#"{"shell": "/nonexistent/sh"}"#, "shell"),
            (r#"{"env": {"inherit": 3}}"#, "env.inherit"),
            (r#"{"env": {"set": {"A": 1}}}"#, "env.set.A"),
            (r#"{"sessions": {"max_sessions": 0}}"#, "sessions.max_sessions"),
            (r#"{"sessions": {"history": "maybe"}}"#, "sessions.history"),
            (r#"{"sessions": {"enabled": "yes"}}"#, "sessions.enabled"),
            (r#"{"sessions": {"idle_ttl_seconds": -1}}"#, "sessions.idle_ttl_seconds"),
            (r#"{"sessions": {"bogus": 1}}"#, "sessions.bogus"),
            (r#"{"jobs": {"max_finished": 0}}"#, "jobs.max_finished"),
        ] {
            let err = base().apply_json(json).unwrap_err();
            assert!(err.message.contains(key), "{json}: {err}");
        }
    }

    #[test]
    fn ceiling_follows_a_raised_default() {
        let cfg = base().apply_json(r#"{"timeout_seconds": 60}"#).unwrap();
        assert_eq!(cfg.max_timeout, Duration::from_secs(60));
        let err = base()
            .apply_json(r#"{"timeout_seconds": 60, "max_timeout_seconds": 10}"#)
            .unwrap_err();
        assert!(err.message.contains("max_timeout_seconds"));
    }

    #[test]
    fn effective_timeout_clamps_to_ceiling() {
        let cfg = base().apply_json(r#"{"max_timeout_seconds": 100}"#).unwrap();
        assert_eq!(cfg.effective_timeout(None), Duration::from_secs(30));
        assert_eq!(
            cfg.effective_timeout(Some(Duration::from_secs(5))),
            Duration::from_secs(5)
        );
        assert_eq!(
            cfg.effective_timeout(Some(Duration::from_secs(500))),
            Duration::from_secs(100)
        );
    }

    #[test]
    fn env_is_built_in_documented_order() {
        let cfg = base()
            .apply_json(
                r#"{"env": {"inherit": "none", "set": {"A": "1", "PAGER": "less", "DROP_ME": "x"}, "remove": ["DROP_*"]}}"#,
            )
            .unwrap();
        let env = cfg.build_env(&[("A".into(), "2".into())]);
        let env: Vec<String> = env.iter().map(|c| c.to_str().unwrap().to_owned()).collect();
        assert!(env.contains(&"A=2".to_owned()), "{env:?}");
        assert!(env.contains(&"PAGER=less".to_owned()), "{env:?}");
        assert!(env.contains(&"GIT_TERMINAL_PROMPT=0".to_owned()), "{env:?}");
        assert!(!env.iter().any(|e| e.starts_with("DROP_ME=")), "{env:?}");
        assert!(!env.iter().any(|e| e.starts_with("HOME=")), "inherit none: {env:?}");
    }
}
