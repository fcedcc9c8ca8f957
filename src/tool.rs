//! The object model: servers that own tools, mirroring the host's MCPServerBase.
//!
//! A [`Tool`] is a definition plus an implementation. An [`McpServer`] owns a
//! [`ToolRegistry`] and answers the host's calls: `list_tools`, `execute`
//! (returning the `{"result": "...", "directives": []}` envelope),
//! `get_permission_pattern`, `skip_duplicate_check`, `configure` and
//! `set_working_dir`. Everything returns data; nothing panics on bad input.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::content::{ContentBlock, LogLevel};
use crate::error::{ErrorCode, ToolError};
use crate::process::cancel::CancelToken;
use crate::process::stream::OutputSink;
use crate::sandbox::SandboxConfig;
use crate::tool_args::ToolArgs;

/// A tool's definition: what `list_tools` shows a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The tool's name within its server (e.g. `execute`).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments (root type `object`).
    pub input_schema: Value,
    /// Any further keys of the definition file (e.g. `title`, `annotations`).
    pub extra: Map<String, Value>,
}

impl ToolDefinition {
    /// The argument names the input schema lists, in its order.
    pub(crate) fn argument_names(&self) -> Vec<&str> {
        self.input_schema["properties"]
            .as_object()
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// Parses a definition; `origin` names the file or source in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<Self, ToolError> {
        let bad = |problem: String| {
            ToolError::new(
                ErrorCode::InvalidToolDefinition,
                format!("tool definition {origin} is invalid: {problem}"),
                "fix the file (keys: name, description, inputSchema with \"type\": \"object\") or remove it to use the built-in definition",
            )
        };
        let value: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON ({e})")))?;
        let Value::Object(mut map) = value else {
            return Err(bad("not a JSON object".into()));
        };
        let name = match map.remove("name") {
            Some(Value::String(s)) if !s.is_empty() => s,
            _ => return Err(bad("`name` must be a non-empty string".into())),
        };
        let description = match map.remove("description") {
            Some(Value::String(s)) => s,
            _ => return Err(bad("`description` must be a string".into())),
        };
        let input_schema = match map.remove("inputSchema") {
            Some(schema @ Value::Object(_)) if schema.get("type") == Some(&Value::from("object")) => schema,
            _ => return Err(bad("`inputSchema` must be an object with \"type\": \"object\"".into())),
        };
        Ok(Self {
            name,
            description,
            input_schema,
            extra: map,
        })
    }

    /// Loads `<data_dir>/tools/<server>/<tool>.json`, or parses `builtin` when
    /// there is no data dir or no file for this tool. A file that exists but
    /// cannot be read or parsed is an error naming the file.
    pub fn load(data_dir: Option<&Path>, server: &str, tool: &str, builtin: &str) -> Result<Self, ToolError> {
        let file = data_dir.map(|d| d.join("tools").join(server).join(format!("{tool}.json")));
        let (text, origin) = match file {
            Some(path) if path.exists() => {
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    ToolError::new(
                        ErrorCode::InvalidToolDefinition,
                        format!("tool definition {} cannot be read: {e}", path.display()),
                        "make the file readable, or remove it to use the built-in definition",
                    )
                })?;
                (text, path.display().to_string())
            }
            _ => (builtin.to_owned(), format!("built-in {server}/{tool}")),
        };
        let def = Self::from_json(&text, &origin)?;
        if def.name != tool {
            return Err(ToolError::new(
                ErrorCode::InvalidToolDefinition,
                format!("tool definition {origin} is named `{}`, expected `{tool}`", def.name),
                "set `name` to the file's tool name",
            ));
        }
        Ok(def)
    }

    /// The `{"name", "description", "inputSchema"}` object of `list_tools`.
    pub fn to_value(&self) -> Value {
        serde_json::json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        })
    }
}

/// What a tool returns, kept typed until the edge that writes it as text
/// ([`ToolResponse::text`]: the C API and entropic envelopes, the `exec`
/// command) or as a JSON-RPC result (the MCP layer).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// A result document (for bash tools a JSON object).
    Document(Value),
    /// A call that failed before or instead of running: written as
    /// `{"error", "message", "hint"}`.
    Error(ToolError),
    /// Plain text, passed on as it is.
    Text(String),
    /// MCP content blocks (text, images, audio, embedded resources), for
    /// tools made for MCP clients; `is_error` marks a failed call.
    Content {
        /// The blocks, in order.
        blocks: Vec<ContentBlock>,
        /// Whether the call failed.
        is_error: bool,
    },
}

/// What a tool call returns: its output for the model and host directives.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResponse {
    /// The tool's output.
    pub output: ToolOutput,
    /// Host directives, objects with a `type` key; empty for bash tools.
    pub directives: Vec<Value>,
}

impl Default for ToolResponse {
    fn default() -> Self {
        Self::new(String::new())
    }
}

impl ToolResponse {
    /// A plain-text response with no directives.
    pub fn new(text: impl Into<String>) -> Self {
        Self::with(ToolOutput::Text(text.into()))
    }

    /// A response carrying a result document.
    pub fn document(doc: Value) -> Self {
        Self::with(ToolOutput::Document(doc))
    }

    /// A response carrying an error.
    pub fn error(error: &ToolError) -> Self {
        Self::with(ToolOutput::Error(error.clone()))
    }

    /// A response of MCP content blocks; `is_error` marks a failed call.
    pub fn content(blocks: Vec<ContentBlock>, is_error: bool) -> Self {
        Self::with(ToolOutput::Content { blocks, is_error })
    }

    fn with(output: ToolOutput) -> Self {
        Self {
            output,
            directives: Vec::new(),
        }
    }

    /// Whether the call failed: an error, or a result document with an
    /// `error` key (a command that timed out, was cancelled or lost its exit
    /// status). A non-zero exit status is a normal result.
    pub fn is_error(&self) -> bool {
        match &self.output {
            ToolOutput::Error(_) => true,
            ToolOutput::Document(doc) => doc.get("error").is_some(),
            ToolOutput::Text(_) => false,
            ToolOutput::Content { is_error, .. } => *is_error,
        }
    }

    /// The result as a JSON value: the document, the error's
    /// `{"error", "message", "hint"}` object, or the text as a string
    /// (content blocks as their [`text`](ToolResponse::text)).
    pub fn to_value(&self) -> Value {
        match &self.output {
            ToolOutput::Document(doc) => doc.clone(),
            ToolOutput::Error(error) => error.to_value(),
            ToolOutput::Text(text) => Value::String(text.clone()),
            ToolOutput::Content { blocks, .. } => Value::String(blocks_text(blocks)),
        }
    }

    /// [`to_value`](ToolResponse::to_value), taking the response (no copy
    /// of the document).
    pub fn into_value(self) -> Value {
        match self.output {
            ToolOutput::Document(doc) => doc,
            ToolOutput::Error(error) => error.to_value(),
            ToolOutput::Text(text) => Value::String(text),
            ToolOutput::Content { blocks, .. } => Value::String(blocks_text(&blocks)),
        }
    }

    /// The result as the text a host receives: a document compact, its
    /// `error` key first ([`document_text`](crate::document_text)); an error
    /// as [`ToolError::to_json`]; text as it is; content blocks one after
    /// another ([`ContentBlock::text`]).
    pub fn text(&self) -> String {
        match &self.output {
            ToolOutput::Document(doc) => crate::error::document_text(doc),
            ToolOutput::Error(error) => error.to_json(),
            ToolOutput::Text(text) => text.clone(),
            ToolOutput::Content { blocks, .. } => blocks_text(blocks),
        }
    }

    /// The envelope `{"result": "<string>", "directives": [...]}`.
    pub fn to_envelope(&self) -> String {
        serde_json::json!({"result": self.text(), "directives": self.directives}).to_string()
    }
}

/// Per-call options: cancellation, live output, and the host's sandbox for the call.
#[derive(Default)]
pub struct CallOptions<'a> {
    /// Cancels the call from another thread.
    pub cancel: Option<&'a CancelToken>,
    /// Receives output chunks as they arrive, on the calling thread.
    pub on_output: Option<OutputSink<'a>>,
    /// The host's own sandbox for this call (`execute`, and `session_start`
    /// for the session's whole life), in place of
    /// the configured one: it may be wider, or `Mode::Off`. The call's
    /// `sandbox` argument can still only tighten it, and the audit entry of
    /// the call records it as `sandbox_override`. Only the embedding host
    /// can set it: the model's arguments cannot.
    /// An `escalate` argument still goes to the person (the host's
    /// approver) and widens this sandbox, not the configured one; without an
    /// approver it is refused. A protocol layer that has put it to the
    /// person passes the sandbox they approved here and the arguments
    /// without `escalate` ([`crate::mcp::without_escalate`]).
    pub sandbox: Option<&'a SandboxConfig>,
    /// Who asked, as the transport authenticated them (an OAuth access
    /// token's subject over HTTP); recorded as `principal` in the call's
    /// audit entry. Only the host sets it: the model's arguments cannot.
    pub principal: Option<&'a str>,
    /// The MCP client of the call, while it runs: progress, log messages
    /// and requests to it (sampling, elicitation). Set by the protocol
    /// layer ([`McpHandler`](crate::mcp::McpHandler)); `None` elsewhere.
    pub client: Option<&'a dyn CallClient>,
}

/// The MCP client of a call, as its tool reaches it while the call runs
/// ([`CallOptions::client`]). Everything it sends belongs to the call: over
/// HTTP it goes on the call's own stream, before the result.
pub trait CallClient: Send + Sync {
    /// Reports progress (`notifications/progress`), when the call asked for
    /// it with a progress token; otherwise nothing is sent. `progress`
    /// must increase from one report to the next.
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>);

    /// Sends a log message (`notifications/message`), when the handler
    /// offers logging and the client asked for messages of `level` or
    /// above (`logging/setLevel`); otherwise nothing is sent.
    fn log(&self, level: LogLevel, data: Value);

    /// Sends the client a request (`sampling/createMessage`,
    /// `elicitation/create`, `roots/list`) and waits for its result, or says
    /// why there is none: the client did not declare the capability it
    /// needs, answered with an error, or the call was cancelled.
    fn request(&self, method: &str, params: Value) -> Result<Value, String>;

    /// A way to ask the person while the call's command runs (about a
    /// connection its sandbox does not allow), when the protocol can hold
    /// the command open for the answer; `None` (the default) when it cannot.
    fn client_asker(&self) -> Option<std::sync::Arc<dyn crate::approval::ClientAsker>> {
        None
    }
}

/// A tool: a definition and an implementation.
pub trait Tool: Send + Sync {
    /// The tool's definition: its name, and what `list_tools` shows unless
    /// [`listed_definition`](Tool::listed_definition) says more.
    fn definition(&self) -> &ToolDefinition;

    /// What `list_tools` shows now: the definition, fitted to the server's
    /// configuration in force where the tool depends on it (`execute`'s
    /// `sandbox` argument). Default: [`definition`](Tool::definition).
    fn listed_definition(&self) -> Cow<'_, ToolDefinition> {
        Cow::Borrowed(self.definition())
    }

    /// Runs the tool with already-parsed arguments.
    fn call(&self, args: &Map<String, Value>, options: CallOptions<'_>) -> ToolResponse;

    /// The permission pattern for a call; `qualified_name` is what the host
    /// passed (e.g. `bash.execute`). Default: the name itself.
    fn permission_pattern(&self, qualified_name: &str, _args: &ToolArgs) -> String {
        qualified_name.to_owned()
    }

    /// The shell dialect a command of this call is read in (the shell that
    /// would run it), for matching permission rules the way the pattern was
    /// computed. Default: [`Dialect::Unknown`](crate::permission::Dialect::Unknown),
    /// the conservative reading.
    fn permission_dialect(&self, _args: &ToolArgs) -> crate::permission::Dialect {
        crate::permission::Dialect::Unknown
    }

    /// Whether the host should skip its duplicate-call check. Default false.
    fn skip_duplicate_check(&self) -> bool {
        false
    }

    /// Whether the tool is shown and callable now (optional tools switched
    /// off by configuration return false). Default true.
    fn enabled(&self) -> bool {
        true
    }

    /// The error a call gets while the tool is turned off (see
    /// [`enabled`](Tool::enabled)): it names the tool and how the operator
    /// turns it on, instead of claiming there is no such tool.
    fn disabled_error(&self) -> ToolError {
        let name = &self.definition().name;
        ToolError::new(
            ErrorCode::UnknownTool,
            format!("the tool `{name}` is turned off on this server"),
            format!("the operator can turn it on in the configuration: {{\"tools\": {{\"{name}\": true}}}}"),
        )
    }
}

/// The tools of one server, in registration order.
#[derive(Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool; a second tool with the same name is an error.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolError> {
        let name = &tool.definition().name;
        if self.tools.iter().any(|t| t.definition().name == *name) {
            return Err(ToolError::new(
                ErrorCode::InvalidToolDefinition,
                format!("a tool named `{name}` is already registered"),
                "give each tool of a server a distinct name",
            ));
        }
        self.tools.push(tool);
        Ok(())
    }

    /// The enabled tool with this local name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.iter().find(|t| t.definition().name == name)
    }

    /// The enabled tools, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter().filter(|t| t.enabled())
    }

    /// The registered tool with this local name that configuration has
    /// turned off, if any.
    pub fn get_disabled(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.definition().name == name && !t.enabled())
    }
}

/// A server of tools, as a host sees it.
///
/// Implementors provide [`name`](McpServer::name) and
/// [`tools`](McpServer::tools); every other method has the host's default
/// behaviour and may be overridden.
pub trait McpServer: Send + Sync {
    /// The server's name (e.g. `bash`).
    fn name(&self) -> &str;

    /// The registered tools.
    fn tools(&self) -> &ToolRegistry;

    /// JSON array of `{"name", "description", "inputSchema"}` in registration order.
    fn list_tools(&self) -> String {
        Value::Array(self.tools().iter().map(|t| t.listed_definition().to_value()).collect()).to_string()
    }

    /// Finds a tool by local name (`execute`) or qualified name (`bash.execute`).
    fn find_tool(&self, tool_name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools().get(local_name(self.name(), tool_name))
    }

    /// Finds a registered tool that configuration has turned off, by local
    /// or qualified name.
    fn find_disabled_tool(&self, tool_name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools().get_disabled(local_name(self.name(), tool_name))
    }

    /// Runs a tool with its parsed arguments and per-call options.
    fn call_tool(&self, tool_name: &str, args: &ToolArgs, options: CallOptions<'_>) -> ToolResponse {
        dispatch(self, tool_name, args, options)
    }

    /// Runs a tool with JSON arguments and returns the envelope
    /// `{"result": "...", "directives": [...]}`: the arguments are parsed
    /// here, once, and the result written as text here, once.
    fn execute(&self, tool_name: &str, args_json: &str) -> String {
        self.call_tool(tool_name, &ToolArgs::parse(args_json), CallOptions::default())
            .to_envelope()
    }

    /// The string the host matches its permission rules against.
    fn get_permission_pattern(&self, tool_name: &str, args_json: &str) -> String {
        self.call_pattern(tool_name, &ToolArgs::parse(args_json))
    }

    /// [`get_permission_pattern`](McpServer::get_permission_pattern) for
    /// arguments already parsed.
    fn call_pattern(&self, tool_name: &str, args: &ToolArgs) -> String {
        match self.find_tool(tool_name) {
            Some(tool) => tool.permission_pattern(tool_name, args),
            None => tool_name.to_owned(),
        }
    }

    /// Notes a call that was rejected before any tool ran — by a protocol
    /// layer such as [`McpHandler`](crate::mcp::McpHandler): an unknown tool
    /// (`ErrorCode::UnknownTool`), arguments that are not a JSON object
    /// (`ErrorCode::InvalidArguments`). The default does nothing;
    /// `BashServer` counts it as a failed call and records it in its audit
    /// log.
    fn record_rejected_call(&self, _tool_name: &str, _args: &ToolArgs, _error: ErrorCode) {}

    /// The server's grants, denials and host approver, when it asks the
    /// person at all; the default: `None` (a call that needs approval is
    /// refused).
    fn approvals(&self) -> Option<&crate::approval::Approvals> {
        None
    }

    /// The question a call's `escalate` argument asks and the sandbox the
    /// call runs in once approved (`base`, the host's sandbox for the call,
    /// else the configured one, widened by exactly what is asked); `Ok(None)`
    /// when it asks nothing. The default: no tool escalates.
    fn escalation(
        &self,
        _tool_name: &str,
        _args: &ToolArgs,
        _base: Option<&SandboxConfig>,
    ) -> Result<Option<(crate::approval::ApprovalRequest, SandboxConfig)>, ToolError> {
        Ok(None)
    }

    /// Records a question put to the person (or that could not be put) and
    /// its outcome, for a call of `tool_name` with `args`; returns the id of
    /// the audit entry written, if any. The default records nothing.
    fn record_approval(
        &self,
        _tool_name: &str,
        _args: &ToolArgs,
        _request: &crate::approval::ApprovalRequest,
        _outcome: &crate::approval::ApprovalOutcome,
    ) -> Option<String> {
        None
    }

    /// Whether the host should skip its duplicate-call check for this tool.
    fn skip_duplicate_check(&self, tool_name: &str) -> bool {
        self.find_tool(tool_name).is_some_and(|t| t.skip_duplicate_check())
    }

    /// Whether a call of `tool` (its local name) can run as a background
    /// job for a protocol task (MCP tasks); the default: no tool can.
    fn task_support(&self, _tool_name: &str) -> bool {
        false
    }

    /// Starts a call of `tool` as a background job and returns the job's
    /// id, or the call's own result when nothing was started (bad
    /// arguments, a refused directory). Only for tools with
    /// [`task_support`](McpServer::task_support). `sandbox` is the host's
    /// sandbox for the call, as [`CallOptions::sandbox`]; `principal` who
    /// asked, as [`CallOptions::principal`] (recorded with the call and
    /// with the job's end); `asker` how the task's client is asked while the
    /// job's command runs ([`CallClient::client_asker`]).
    fn start_task_job(
        &self,
        tool_name: &str,
        _args: &ToolArgs,
        _sandbox: Option<&SandboxConfig>,
        _principal: Option<&str>,
        _asker: Option<std::sync::Arc<dyn crate::approval::ClientAsker>>,
    ) -> Result<String, ToolResponse> {
        Err(ToolResponse::error(&ToolError::new(
            ErrorCode::UnknownTool,
            format!("{tool_name} cannot run as a task"),
            "call it without a task",
        )))
    }

    /// How the job stands, waiting up to `wait` for it to end.
    fn task_job(&self, _job_id: &str, _wait: std::time::Duration) -> TaskJob {
        TaskJob::Gone
    }

    /// Cancels the job (kills its process group); nothing once it ended.
    fn cancel_task_job(&self, _job_id: &str) {}

    /// Forgets the job (cancelling it first if it still runs) and what it kept.
    fn release_task_job(&self, _job_id: &str) {}

    /// Applies a JSON configuration object; the default accepts anything.
    fn configure(&self, _config_json: &str) -> Result<(), ToolError> {
        Ok(())
    }

    /// Changes the default working directory; the default does nothing.
    fn set_working_dir(&self, _path: &Path) -> Result<(), ToolError> {
        Ok(())
    }
}

/// How a task's background job stands ([`McpServer::task_job`]).
#[derive(Debug, Clone, PartialEq)]
pub enum TaskJob {
    /// Still running; the last output it printed (a few KiB at most).
    Running {
        /// The end of its output so far.
        recent_output: String,
    },
    /// Ended: the result its call would have returned.
    Ended(ToolResponse),
    /// No such job (released, or never started).
    Gone,
}

/// Content blocks as text, one after another.
fn blocks_text(blocks: &[ContentBlock]) -> String {
    blocks.iter().map(ContentBlock::text).collect::<Vec<_>>().join("\n")
}

/// `tool_name` without the `<server>.` qualification, if it has one.
fn local_name<'a>(server: &str, tool_name: &'a str) -> &'a str {
    tool_name
        .strip_prefix(server)
        .and_then(|rest| rest.strip_prefix('.'))
        .unwrap_or(tool_name)
}

/// Finds the tool and calls it with the arguments, or says why they are not
/// a JSON object: the default [`McpServer::call_tool`], for servers that
/// wrap it.
pub fn dispatch<S: McpServer + ?Sized>(
    server: &S,
    tool_name: &str,
    args: &ToolArgs,
    options: CallOptions<'_>,
) -> ToolResponse {
    let Some(tool) = server.find_tool(tool_name) else {
        if let Some(off) = server.find_disabled_tool(tool_name) {
            return ToolResponse::error(&off.disabled_error());
        }
        let known: Vec<&str> = server.tools().iter().map(|t| t.definition().name.as_str()).collect();
        return ToolResponse::error(&ToolError::new(
            ErrorCode::UnknownTool,
            format!("server `{}` has no tool named `{tool_name}`", server.name()),
            format!("available tools: {}", known.join(", ")),
        ));
    };
    match args.object() {
        Ok(args) => tool.call(args, options),
        Err(e) => ToolResponse::error(e),
    }
}
