//! The session tools (`session_start`, `session_run`, ...) on top of a
//! [`SessionManager`] that is created on first use.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{RunOptions, SessionManager, StartOptions, arguments};
use crate::config::Config;
use crate::error::{ErrorCode, ToolError};
use crate::tool::{CallOptions, Tool, ToolDefinition, ToolResponse};
use crate::tool_args::{ToolArgs, read, refuse_unknown};

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
        let accepted = self.definition.argument_names();
        // Unknown names are refused before the manager starts, their types after.
        refuse_unknown(name, &accepted, args)?;
        let manager = self.manager.get()?;
        let wrong = |key: &str, got: Option<&Value>| arguments::wrong(name, key, got);
        match name {
            "session_start" => {
                let a: arguments::Start = read(name, &accepted, args, wrong)?;
                let options = StartOptions {
                    shell: a.shell,
                    working_dir: a.working_dir.map(PathBuf::from),
                    env: a.env.map(|e| e.0).unwrap_or_default(),
                    name: a.name,
                    visible: a.visible.unwrap_or(false),
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
                let a: arguments::Run = read(name, &accepted, args, wrong)?;
                let options = RunOptions {
                    timeout: a.timeout_seconds.map(|t| t.0),
                    history: a.history.map(|h| h.0),
                    raw: a.raw.unwrap_or(false),
                };
                Ok(manager.run(&a.session_id, &a.command, &options)?.to_value())
            }
            "session_wait" => {
                let a: arguments::Wait = read(name, &accepted, args, wrong)?;
                let wait = a.timeout_seconds.map_or(Duration::from_secs(30), |t| t.0);
                Ok(manager.wait(&a.session_id, wait, a.raw.unwrap_or(false))?.to_value())
            }
            "session_read" => {
                let a: arguments::Read = read(name, &accepted, args, wrong)?;
                Ok(manager
                    .read(&a.session_id, a.cursor, a.raw.unwrap_or(false))?
                    .to_value())
            }
            "session_write" => {
                let a: arguments::Write = read(name, &accepted, args, wrong)?;
                let input = a.input.unwrap_or_default();
                let keys = a.keys.unwrap_or_default();
                if input.is_empty() && keys.is_empty() {
                    return Err(arguments::invalid(
                        name,
                        "give `input` text and/or `keys` to send".into(),
                    ));
                }
                let then: arguments::Waiting = read(name, &accepted, args, wrong)?;
                let wait = then.timeout_seconds.map_or(Duration::from_secs(1), |t| t.0);
                Ok(manager
                    .write(&a.session_id, &input, &keys, wait, then.raw.unwrap_or(false))?
                    .to_value())
            }
            "session_interrupt" => {
                let a: arguments::Interrupt = read(name, &accepted, args, wrong)?;
                let wait = a.timeout_seconds.map_or(Duration::from_secs(2), |t| t.0);
                Ok(manager.interrupt(&a.session_id, wait)?.to_value())
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
                let a: arguments::Close = read(name, &accepted, args, wrong)?;
                manager.close(&a.session_id)?;
                Ok(json!({"session_id": a.session_id, "closed": true}))
            }
            other => Err(ToolError::new(
                ErrorCode::Internal,
                format!("session tool {other} has no implementation"),
                "use one of the session_* tools listed",
            )),
        }
    }
}
