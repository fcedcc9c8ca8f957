//! The session tools (`session_start`, `session_run`, ...) on top of a
//! [`SessionManager`] that is created on first use.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{HistoryMode, RunOptions, SessionManager, StartOptions};
use crate::config::Config;
use crate::error::{ErrorCode, ToolError};
use crate::tool::{CallOptions, Tool, ToolDefinition, ToolResponse};
use crate::tool_args::{ToolArgs, must_be, refuse_unknown};

/// The tool names, in registration order, with their built-in definitions.
pub(crate) const SESSION_TOOLS: &[(&str, &str)] = &[
    (
        "session_start",
        include_str!("../../data/tools/bash/session_start.json"),
    ),
    ("session_run", include_str!("../../data/tools/bash/session_run.json")),
    ("session_wait", include_str!("../../data/tools/bash/session_wait.json")),
    ("session_read", include_str!("../../data/tools/bash/session_read.json")),
    (
        "session_write",
        include_str!("../../data/tools/bash/session_write.json"),
    ),
    (
        "session_interrupt",
        include_str!("../../data/tools/bash/session_interrupt.json"),
    ),
    ("session_list", include_str!("../../data/tools/bash/session_list.json")),
    (
        "session_close",
        include_str!("../../data/tools/bash/session_close.json"),
    ),
];

/// Where the tools find the server's configuration and working directory.
pub(crate) type ConfigSource = Arc<dyn Fn() -> (Arc<Config>, PathBuf) + Send + Sync>;

/// A session manager created on first use from the server's configuration.
pub(crate) struct LazyManager {
    cell: OnceLock<SessionManager>,
    source: ConfigSource,
    outputs: Arc<crate::outputs::OutputStore>,
    sandbox_temp: Arc<crate::sandbox::ServerTemp>,
}

impl LazyManager {
    /// Whether the configuration in force enables sessions.
    pub fn enabled(&self) -> bool {
        (self.source)().0.sessions.enabled
    }

    /// Sessions open now (0 before the first session started).
    pub fn open_sessions(&self) -> usize {
        self.cell.get().map_or(0, |m| m.list().len())
    }

    /// Closes every open session, whether or not the configuration still
    /// enables sessions (they may have been turned off after some started).
    pub fn close_all(&self) {
        if let Some(manager) = self.cell.get() {
            manager.stop_attach();
            manager.close_all();
        }
    }

    /// A manager made on first use from `source`, keeping the whole output
    /// of long commands in `outputs`; sandboxed shells share the server's
    /// `sandbox_temp`.
    pub fn new(
        source: ConfigSource,
        outputs: Arc<crate::outputs::OutputStore>,
        sandbox_temp: Arc<crate::sandbox::ServerTemp>,
    ) -> Self {
        Self {
            cell: OnceLock::new(),
            outputs,
            source,
            sandbox_temp,
        }
    }

    /// The manager, with the configuration in force applied.
    pub fn get(&self) -> Result<&SessionManager, ToolError> {
        let (config, dir) = (self.source)();
        if !config.sessions.enabled {
            return Err(sessions_disabled());
        }
        if let Some(manager) = self.cell.get() {
            manager.reconfigure(config.sessions.clone(), config.clone(), dir)?;
            return Ok(manager);
        }
        let manager = SessionManager::with_server_config(config.sessions.clone(), config, dir)?;
        manager.keep_outputs_in(self.outputs.clone());
        manager.share_sandbox_temp(self.sandbox_temp.clone());
        let manager = self.cell.get_or_init(|| manager);
        // People attach through the server's socket; sessions work without it.
        if let Err(e) = manager.serve_attach() {
            tracing::warn!("sessions cannot be attached to (bash-mcp attach): {e}");
        }
        Ok(manager)
    }
}

/// The error of a session tool while sessions are off, with the line that
/// turns them on.
fn sessions_disabled() -> ToolError {
    ToolError::new(
        ErrorCode::SessionsDisabled,
        "persistent sessions are turned off on this server",
        "the operator can turn them on in the configuration: `[sessions]` then `enabled = true` in \
         bash-mcp.toml, or {\"sessions\": {\"enabled\": true}} in JSON",
    )
}

pub(crate) struct SessionTool {
    definition: ToolDefinition,
    manager: Arc<LazyManager>,
}

impl SessionTool {
    pub fn new(definition: ToolDefinition, manager: Arc<LazyManager>) -> Self {
        Self { definition, manager }
    }
}

impl Tool for SessionTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Session tools are shown and callable only while sessions are enabled.
    fn enabled(&self) -> bool {
        self.manager.enabled()
    }

    fn disabled_error(&self) -> ToolError {
        sessions_disabled()
    }

    /// `session_run` is matched like `execute`, in the dialect of the session's shell;
    /// `session_write` types raw input into a shell, which can run anything, so its
    /// pattern is opaque.
    fn permission_pattern(&self, qualified_name: &str, args: &ToolArgs) -> String {
        match self.definition.name.as_str() {
            "session_run" => {
                let object = args.object().map_err(|e| e.message.as_str());
                crate::permission::permission_pattern_args_in(qualified_name, object, self.permission_dialect(args))
            }
            "session_write" => crate::permission::command_pattern(qualified_name, ""),
            _ => qualified_name.to_owned(),
        }
    }

    /// The dialect of the shell of the session named in `args`; the
    /// conservative default when there is no such session.
    fn permission_dialect(&self, args: &ToolArgs) -> crate::permission::Dialect {
        let id = args.get("session_id").and_then(Value::as_str);
        let (Some(id), Some(manager)) = (id, self.manager.cell.get()) else {
            return crate::permission::Dialect::Unknown;
        };
        manager
            .list()
            .into_iter()
            .find(|s| s.id == id)
            .map_or(crate::permission::Dialect::Unknown, |s| {
                crate::permission::Dialect::for_shell(s.shell.as_str())
            })
    }

    fn call(&self, args: &Map<String, Value>, options: CallOptions<'_>) -> ToolResponse {
        match self.dispatch(args, options.sandbox) {
            Ok(value) => ToolResponse::document(value),
            Err(error) => ToolResponse::error(&error),
        }
    }
}

impl SessionTool {
    /// Runs the tool; `sandbox` is the host's (or the approved) sandbox of
    /// the call, which only `session_start` takes: the session lives in it.
    fn dispatch(
        &self,
        args: &Map<String, Value>,
        sandbox: Option<&crate::sandbox::SandboxConfig>,
    ) -> Result<Value, ToolError> {
        let name = self.definition.name.as_str();
        refuse_unknown(name, &self.definition.argument_names(), args)?;
        let manager = self.manager.get()?;
        let a = Args { args, tool: name };
        match name {
            "session_start" => {
                let options = StartOptions {
                    shell: a.string("shell")?,
                    working_dir: a.string("working_dir")?.map(PathBuf::from),
                    env: a.env()?,
                    name: a.string("name")?,
                    visible: a.flag("visible")?,
                    sandbox: sandbox.cloned(),
                };
                let id = manager.start(&options)?;
                let info = manager.list().into_iter().find(|s| s.id == id);
                let mut doc = json!({
                    "session_id": id,
                    "attach_name": info.as_ref().map(|i| i.handle.clone()),
                    "title": info.as_ref().map(|i| i.title()),
                    "attach": info.as_ref().map(|i| format!("bash-mcp attach {}", i.handle)),
                    "shell": info.as_ref().map(|i| i.shell.as_str()),
                    "pid": info.as_ref().map(|i| i.pid),
                    "cwd": info.as_ref().map(|i| i.cwd.display().to_string()),
                });
                if let (true, Some(info)) = (options.visible, &info) {
                    super::window::describe(&mut doc, super::window::open(&info.handle));
                }
                Ok(doc)
            }
            "session_run" => {
                let id = a.required("session_id")?;
                let command = a.required("command")?;
                let options = RunOptions {
                    timeout: a.seconds("timeout_seconds", false)?,
                    history: a.history()?,
                    raw: a.flag("raw")?,
                };
                Ok(manager.run(&id, &command, &options)?.to_value())
            }
            "session_wait" => {
                let id = a.required("session_id")?;
                let wait = a.seconds("timeout_seconds", true)?.unwrap_or(Duration::from_secs(30));
                Ok(manager.wait(&id, wait, a.flag("raw")?)?.to_value())
            }
            "session_read" => {
                let id = a.required("session_id")?;
                let cursor = match args.get("cursor").filter(|v| !v.is_null()) {
                    None => None,
                    Some(v) => Some(
                        v.as_u64()
                            .ok_or_else(|| a.invalid(format!("`cursor` must be a non-negative integer, got {v}")))?,
                    ),
                };
                Ok(manager.read(&id, cursor, a.flag("raw")?)?.to_value())
            }
            "session_write" => {
                let id = a.required("session_id")?;
                let input = a.string("input")?.unwrap_or_default();
                let keys = match args.get("keys").filter(|v| !v.is_null()) {
                    None => Vec::new(),
                    Some(Value::Array(items)) => items
                        .iter()
                        .map(|k| {
                            k.as_str()
                                .map(str::to_owned)
                                .ok_or_else(|| a.invalid(format!("`keys` entries must be strings, got {k}")))
                        })
                        .collect::<Result<_, _>>()?,
                    Some(v) => {
                        return Err(a.invalid(must_be("keys", "an array of key names", Some(v))));
                    }
                };
                if input.is_empty() && keys.is_empty() {
                    return Err(a.invalid("give `input` text and/or `keys` to send".into()));
                }
                let wait = a.seconds("timeout_seconds", true)?.unwrap_or(Duration::from_secs(1));
                Ok(manager.write(&id, &input, &keys, wait, a.flag("raw")?)?.to_value())
            }
            "session_interrupt" => {
                let id = a.required("session_id")?;
                let wait = a.seconds("timeout_seconds", true)?.unwrap_or(Duration::from_secs(2));
                Ok(manager.interrupt(&id, wait)?.to_value())
            }
            "session_list" => Ok(json!({
                "sessions": manager.list().iter().map(|s| json!({
                    "session_id": s.id,
                    "name": s.name,
                    "attach_name": s.handle,
                    "title": s.title(),
                    "people_watching": s.watchers,
                    "shell": s.shell.as_str(),
                    "pid": s.pid,
                    "cwd": s.cwd.display().to_string(),
                    "state": s.state,
                    "idle_seconds": crate::command::outcome::tenths(s.idle),
                })).collect::<Vec<_>>()
            })),
            "session_close" => {
                let id = a.required("session_id")?;
                manager.close(&id)?;
                Ok(json!({"session_id": id, "closed": true}))
            }
            other => Err(ToolError::new(
                ErrorCode::Internal,
                format!("session tool {other} has no implementation"),
                "use one of the session_* tools listed",
            )),
        }
    }
}

struct Args<'a> {
    args: &'a Map<String, Value>,
    tool: &'a str,
}

impl Args<'_> {
    fn invalid(&self, message: String) -> ToolError {
        ToolError::new(
            ErrorCode::InvalidArguments,
            format!("{}: {message}", self.tool),
            "see the tool's input schema in list_tools",
        )
    }

    fn string(&self, key: &str) -> Result<Option<String>, ToolError> {
        match self.args.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.invalid(must_be(key, "a string", Some(other)))),
        }
    }

    fn required(&self, key: &str) -> Result<String, ToolError> {
        self.string(key)?
            .ok_or_else(|| self.invalid(format!("the required argument `{key}` is missing")))
    }

    fn flag(&self, key: &str) -> Result<bool, ToolError> {
        match self.args.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(self.invalid(must_be(key, "true or false", Some(other)))),
        }
    }

    fn seconds(&self, key: &str, zero_ok: bool) -> Result<Option<Duration>, ToolError> {
        let Some(value) = self.args.get(key).filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let secs = value
            .as_f64()
            .filter(|s| s.is_finite() && (*s > 0.0 || (zero_ok && *s == 0.0)) && *s <= 86_400.0);
        let range = if zero_ok {
            "from 0 to 86400"
        } else {
            "greater than 0 and at most 86400"
        };
        secs.map(|s| Some(Duration::from_secs_f64(s))).ok_or_else(|| {
            ToolError::new(
                ErrorCode::InvalidTimeout,
                format!(
                    "{}: `{key}` must be a number of seconds {range}, got {value}",
                    self.tool
                ),
                "pass a number of seconds such as 5",
            )
        })
    }

    fn history(&self) -> Result<Option<HistoryMode>, ToolError> {
        match self.string("history")? {
            None => Ok(None),
            Some(s) => HistoryMode::parse(&s)
                .map(Some)
                .ok_or_else(|| self.invalid(format!("`history` must be \"suppress\" or \"keep\", got {s:?}"))),
        }
    }

    fn env(&self) -> Result<Vec<(String, String)>, ToolError> {
        match self.args.get("env") {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) if crate::config::is_valid_env_name(k) && !s.contains('\0') => {
                        Ok((k.clone(), s.clone()))
                    }
                    _ => Err(ToolError::new(
                        ErrorCode::InvalidEnv,
                        format!("`env.{k}` must be a string without NUL under a valid variable name"),
                        "pass `env` as an object of strings",
                    )),
                })
                .collect(),
            Some(other) => Err(ToolError::new(
                ErrorCode::InvalidEnv,
                must_be("env", "an object", Some(other)),
                "pass `env` as an object of strings",
            )),
        }
    }
}
