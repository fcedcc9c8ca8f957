//! An MCP (Model Context Protocol) server for any [`McpServer`]: a
//! synchronous JSON-RPC 2.0 handler that speaks both protocol eras.
//!
//! Feed [`McpHandler::handle_line`] one message (one line of the stdio
//! transport) and write out the lines it returns. Messages finished later —
//! `tools/call` responses, which run on worker threads, and
//! `notifications/progress` — go through the `outbound` callback given to
//! [`McpHandler::new`], from those threads. The handler keeps answering other
//! messages while calls run.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//! use bash_mcp::BashServer;
//! use bash_mcp::mcp::{HandlerOptions, McpHandler};
//!
//! let server = Arc::new(BashServer::new(".", None, Duration::from_secs(30))?);
//! let sent = Arc::new(Mutex::new(Vec::new()));
//! let sink = sent.clone();
//! let handler = McpHandler::new(server, move |line| sink.lock().unwrap().push(line), HandlerOptions::default());
//!
//! let replies = handler.handle_line(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"doc","version":"0"}}}"#);
//! assert!(replies[0].contains(r#""protocolVersion":"2025-11-25""#));
//! let replies = handler.handle_line(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"command":"echo hi"}}}"#);
//! assert!(replies.is_empty()); // the response comes through `outbound`
//! handler.shutdown(); // waits for running calls (cancelling them)
//! # let _ = sent;
//! # Ok::<(), bash_mcp::ToolError>(())
//! ```
//!
//! # Protocol revisions
//!
//! Handshake era: `initialize` (2024-11-05, 2025-03-26, 2025-06-18,
//! 2025-11-25; any other requested revision gets the counter-offer
//! 2025-11-25), `notifications/initialized`, `ping`. Stateless era
//! (2026-07-28): `server/discover` and per-request `_meta` envelopes; every
//! result carries `resultType: "complete"` and the server's identity in
//! `_meta["io.modelcontextprotocol/serverInfo"]`. A request whose `_meta`
//! names a protocol version is served statelessly even after an
//! `initialize`; any other request uses the negotiated revision.
//!
//! # Tools
//!
//! `tools/list` lists the server's tools in registration order, with
//! `title`, `annotations` and `outputSchema` from the tool definition file
//! where the client's revision defines them. `tools/call` results carry a
//! readable text block and, from 2025-06-18, `structuredContent` with the
//! tool's JSON result document. The text of a command's result is its
//! output, then `[exit code: N]` (or `[error: CODE] message`), `status`,
//! `job_id`, `session_id`, `hint` and `pattern` lines where present; any
//! other document (a started job, a list, a status report) is shown as
//! indented JSON, so a client without `structuredContent` still sees every
//! field (see [`render_text`]). `isError` is true when the document has an
//! `error` key (bad arguments, spawn failure, timeout, cancellation, policy
//! refusal). **A non-zero exit status is a normal result** (`isError:
//! false`): the command ran, and its status is in the result.
//!
//! # Tasks
//!
//! With [`HandlerOptions::tasks`], tools the server can run as background
//! jobs ([`McpServer::task_support`]: the bash server's `execute`) also run
//! as MCP tasks: the `tasks` capability of 2025-11-25 (`task` on
//! `tools/call`, `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`,
//! `execution.taskSupport: "optional"`) and the `io.modelcontextprotocol/tasks`
//! extension of 2026-07-28 (the server makes a call a task when it has not
//! ended within the poll interval; `tasks/get`, `tasks/cancel`,
//! `tasks/update`). See `docs/mcp.md`.
//!
//! # Limits and bad input
//!
//! A message longer than [`HandlerOptions::max_line_bytes`] (default
//! [`DEFAULT_MAX_LINE_BYTES`], 4 MiB) is answered with -32600 and dropped.
//! Invalid UTF-8 and invalid JSON (including nesting deeper than
//! serde_json's recursion limit of 128) get -32700; batches, missing fields
//! and ids that are neither strings nor integers get -32600; unknown methods
//! get -32601 at once; bad params and unknown tools get -32602; a request id
//! already in flight gets -32600. Notifications are never answered.
//!
//! # Why not the official Rust SDK
//!
//! The official SDK (`rmcp`) is async and built on tokio. This library is
//! also a C library embedded in hosts with their own threads and event
//! loops; pulling a runtime into every host process (and into the
//! `bash_mcp_mcp_handler_handle_message` C entry point) costs more than the
//! protocol is worth. The protocol surface a tool server needs is small —
//! a handful of methods over JSON-RPC — so it is written here directly on
//! serde_json with plain threads, which keeps the handler synchronous,
//! callable from C, and cheap (see `benches/mcp_bench.rs`).

mod approve;
mod calls;
mod elicit;
mod era;
mod jsonrpc;
mod progress;
mod state;
mod tasks;
mod tools;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Map, Value, json};

pub use approve::{escalation_question, without_escalate};
pub use elicit::{DEFAULT_APPROVAL_WAIT, decision_schema};
pub use era::{
    CLIENT_CAPABILITIES_KEY, HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY,
    STATELESS_VERSIONS, SUPPORTED_VERSIONS,
};
pub use jsonrpc::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, MISSING_REQUIRED_CLIENT_CAPABILITY, PARSE_ERROR,
    RpcError, SHUTTING_DOWN, UNSUPPORTED_PROTOCOL_VERSION,
};
pub use progress::PROGRESS_LINE_CHARS;
pub use state::DEFAULT_REQUEST_STATE_TTL;
pub use tasks::{
    DEFAULT_MAX_TASK_TTL, DEFAULT_POLL_INTERVAL, DEFAULT_TASK_TTL, RELATED_TASK_KEY, TASKS_EXTENSION, TaskOptions,
};
pub use tools::render_text;

use calls::{Call, InFlight};
use era::Era;
use jsonrpc::{IdKey, Incoming};
use progress::{OutputTail, Ticker};

use crate::content::LogLevel;
use crate::error::ErrorCode;
use crate::tool::{CallClient, CallOptions, McpServer, ToolResponse};
use crate::tool_args::ToolArgs;

/// Default limit on one incoming message: 4 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 4 * 1024 * 1024;
/// Default interval between progress notifications.
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// What a [`Gate`] says about a call.
#[derive(Debug, Clone, PartialEq)]
pub enum GateDecision {
    /// Run the call.
    Allow,
    /// Run the call (an `execute`) in this sandbox instead of the
    /// configured one: the host's decision to widen it, passed as
    /// [`CallOptions::sandbox`] and recorded in the call's audit entry.
    AllowInSandbox(crate::sandbox::SandboxConfig),
    /// Put it to the person first: through the server's host approver, or
    /// the client (elicitation), unless a grant or an earlier denial of the
    /// same request answers it. Runs (in `sandbox` when set) on approval;
    /// refused with `refusal` when nobody can be asked.
    Ask {
        /// The question.
        request: Box<crate::approval::ApprovalRequest>,
        /// The sandbox the call runs in on approval; `None`: the configured one.
        sandbox: Option<crate::sandbox::SandboxConfig>,
        /// The refusal when nobody can be asked (a [`GateDecision::Refuse`]):
        /// its hint names the rule, what the person can add to the
        /// configuration, and that nothing ran.
        refusal: Box<GateDecision>,
    },
    /// Do not run it; the model gets a result with `error:
    /// "permission_denied"`, this message and hint (and `isError: true`).
    Refuse {
        /// What was refused and why.
        message: String,
        /// What the model (or operator) can do about it.
        hint: String,
        /// The permission pattern the call was matched as, when known.
        pattern: Option<String>,
        /// The audit log entry that recorded the refusal, when the gate
        /// wrote one; the result carries it as `audit_id`.
        audit_id: Option<String>,
    },
}

impl GateDecision {
    /// The result document of a refused call — `error: "permission_denied"`,
    /// `message`, `hint`, and `pattern` and `audit_id` when known — or
    /// `None` for a call that runs.
    pub fn refusal_document(&self) -> Option<Value> {
        // An unsettled question never runs: its refusal stands.
        if let GateDecision::Ask { refusal, .. } = self {
            return refusal.refusal_document();
        }
        let GateDecision::Refuse {
            message,
            hint,
            pattern,
            audit_id,
        } = self
        else {
            return None;
        };
        let mut doc = json!({"error": "permission_denied", "message": message, "hint": hint});
        if let Some(pattern) = pattern {
            doc["pattern"] = pattern.clone().into();
        }
        if let Some(id) = audit_id {
            doc["audit_id"] = id.clone().into();
        }
        Some(doc)
    }
}

impl GateDecision {
    /// Settles a [`GateDecision::Ask`] for a call of `tool` on `server`
    /// without a client to ask: a grant or an earlier denial answers, else
    /// the server's host approver, else the refusal stands; recorded in the
    /// server's audit log. Other decisions are returned as they are.
    pub fn settle(self, server: &dyn McpServer, tool: &str, args: &ToolArgs) -> GateDecision {
        approve::settle(server, tool, args, self, &mut |_| None)
    }
}

/// A check run before every `tools/call` (on the worker thread, before the
/// tool starts). The `bash-mcp` binary enforces its permission policy here.
pub trait Gate: Send + Sync {
    /// Decides on a call of `tool` with its arguments (the ones the tool
    /// then receives). `tool` is the tool's own (local) name, e.g. `execute`,
    /// however the client spelled it (`bash.execute` reaches the gate as
    /// `execute`).
    fn check(&self, tool: &str, args: &ToolArgs) -> GateDecision;
}

impl<F> Gate for F
where
    F: Fn(&str, &ToolArgs) -> GateDecision + Send + Sync,
{
    fn check(&self, tool: &str, args: &ToolArgs) -> GateDecision {
        self(tool, args)
    }
}

/// Options of an [`McpHandler`].
#[derive(Clone)]
pub struct HandlerOptions {
    /// `serverInfo.name`; default `bash-mcp`.
    pub server_name: String,
    /// `serverInfo.version`; default the crate version.
    pub server_version: String,
    /// Optional `instructions` for `initialize` and `server/discover`.
    pub instructions: Option<String>,
    /// The tools exposed, by local name; `None` exposes all of the server's.
    pub tools: Option<Vec<String>>,
    /// A check before every call; `None` allows everything.
    pub gate: Option<Arc<dyn Gate>>,
    /// Interval of `notifications/progress` for calls with a `progressToken`.
    pub progress_interval: Duration,
    /// How long a question put to the person through the client may wait
    /// for an answer; then it counts as cancelled (the call is refused).
    pub approval_wait: Duration,
    /// How long a 2026-07-28 `requestState` (a question put to the client
    /// as `input_required`) stays valid.
    pub request_state_ttl: Duration,
    /// Longest accepted message, in bytes.
    pub max_line_bytes: usize,
    /// How long a `tools/list` or `server/discover` result may be cached
    /// (its `ttlMs`, stateless era).
    pub list_ttl: Duration,
    /// MCP tasks for the tools the server can run as background jobs
    /// ([`McpServer::task_support`]): the `tasks` capability of 2025-11-25
    /// and the `io.modelcontextprotocol/tasks` extension of 2026-07-28.
    /// `None` (the default): no tasks.
    pub tasks: Option<TaskOptions>,
    /// The `logging` capability (handshake era): `logging/setLevel`, and a
    /// tool's log messages ([`CallClient::log`]) sent to the client at the
    /// level it set. Default false: the bash server logs to stderr and its
    /// audit log, not to the client.
    pub logging: bool,
}

impl Default for HandlerOptions {
    fn default() -> Self {
        Self {
            server_name: "bash-mcp".into(),
            server_version: env!("CARGO_PKG_VERSION").into(),
            instructions: None,
            tools: None,
            gate: None,
            progress_interval: DEFAULT_PROGRESS_INTERVAL,
            approval_wait: DEFAULT_APPROVAL_WAIT,
            request_state_ttl: DEFAULT_REQUEST_STATE_TTL,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            list_ttl: Duration::from_secs(300),
            tasks: None,
            logging: false,
        }
    }
}

/// Sends one message; the second argument is the id of the request it
/// belongs to, when it belongs to one.
type Outbound = dyn Fn(String, Option<&Value>) + Send + Sync;

/// A JSON-RPC handler serving one MCP connection over a server object.
///
/// `McpHandler` is `Send + Sync`; [`handle_line`](McpHandler::handle_line)
/// may be called from any thread, though a transport normally feeds it from
/// one reader thread in arrival order. Dropping the handler shuts it down
/// (see [`shutdown`](McpHandler::shutdown)).
pub struct McpHandler {
    inner: Arc<Inner>,
}

struct Inner {
    server: Arc<dyn McpServer>,
    outbound: Box<Outbound>,
    options: HandlerOptions,
    /// The revision `initialize` negotiated, once it has.
    handshake: Mutex<Option<&'static str>>,
    inflight: Arc<InFlight>,
    shutting_down: AtomicBool,
    /// The tasks, when [`HandlerOptions::tasks`] turns them on.
    tasks: Option<Arc<tasks::TaskStore>>,
    /// The capabilities the client declared in `initialize`.
    client_capabilities: Mutex<Option<Value>>,
    /// Requests sent to the client (elicitations), awaiting responses.
    outgoing: elicit::Outgoing,
    /// The `requestState` of questions put to 2026-07-28 clients.
    states: state::StateKeeper,
    /// The least severe log message the client asked for (`logging/setLevel`).
    log_level: Mutex<Option<LogLevel>>,
}

impl McpHandler {
    /// A handler for `server`; `outbound` receives every message sent outside
    /// a [`handle_line`](McpHandler::handle_line) return value (call
    /// responses and progress notifications), one compact JSON line each,
    /// without a trailing newline. It is called from worker threads.
    pub fn new(
        server: Arc<dyn McpServer>,
        outbound: impl Fn(String) + Send + Sync + 'static,
        options: HandlerOptions,
    ) -> Self {
        Self::with_routing(server, move |line, _| outbound(line), options)
    }

    /// [`new`](McpHandler::new) for transports that route what they send:
    /// `outbound` also receives the id of the request a message belongs to
    /// (a call's response, and its progress, log messages and requests to
    /// the client while it runs), as the request carried it; `None` for a
    /// message of no request (a task's status, a task's progress after its
    /// call was answered).
    pub fn with_routing(
        server: Arc<dyn McpServer>,
        outbound: impl Fn(String, Option<&Value>) + Send + Sync + 'static,
        options: HandlerOptions,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                log_level: Mutex::new(None),
                server,
                outbound: Box::new(outbound),
                handshake: Mutex::new(None),
                inflight: Arc::new(InFlight::default()),
                shutting_down: AtomicBool::new(false),
                tasks: options.tasks.map(|o| Arc::new(tasks::TaskStore::new(o))),
                client_capabilities: Mutex::new(None),
                outgoing: elicit::Outgoing::default(),
                states: state::StateKeeper::new(options.request_state_ttl),
                options,
            }),
        }
    }

    /// Handles one message (a line without its newline; a trailing `\r\n` is
    /// tolerated) and returns the lines to send back now: zero or one.
    pub fn handle_line(&self, line: &str) -> Vec<String> {
        self.handle_bytes(line.as_bytes())
    }

    /// [`handle_line`](McpHandler::handle_line) for raw bytes as read from a
    /// transport; invalid UTF-8 is answered with -32700.
    pub fn handle_bytes(&self, line: &[u8]) -> Vec<String> {
        self.inner.handle(line, None).into_iter().collect()
    }

    /// [`handle_line`](McpHandler::handle_line) for a message whose sender
    /// the transport authenticated: a `tools/call` it carries passes
    /// `principal` to the tool as [`CallOptions::principal`] (the bash
    /// server records it in the call's audit entry).
    pub fn handle_line_as(&self, line: &str, principal: Option<&str>) -> Vec<String> {
        self.inner.handle(line.as_bytes(), principal).into_iter().collect()
    }

    /// The answer to a message that exceeded the line limit and was not
    /// read whole (for transports that stop reading at the limit): -32600.
    pub fn oversized_message(&self, bytes: usize) -> String {
        self.inner.oversized(bytes)
    }

    /// The longest message accepted, in bytes.
    pub fn max_line_bytes(&self) -> usize {
        self.inner.options.max_line_bytes
    }

    /// The number of `tools/call` requests running.
    pub fn calls_in_flight(&self) -> usize {
        self.inner.inflight.len()
    }

    /// Stops taking calls, cancels every running call (killing its process
    /// group at once; cancelled calls send no response), and waits for the
    /// worker threads to end.
    pub fn shutdown(&self) {
        self.inner.begin_shutdown();
        self.inner.inflight.wait_idle(None);
    }

    /// Like [`shutdown`](McpHandler::shutdown), waiting at most `limit`;
    /// returns whether every worker ended in time.
    pub fn shutdown_within(&self, limit: Duration) -> bool {
        self.inner.begin_shutdown();
        self.inner.inflight.wait_idle(Some(limit))
    }
}

impl Drop for McpHandler {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A request's parsed parts.
struct Request<'a> {
    id: &'a Value,
    key: &'a IdKey,
    params: Option<&'a Map<String, Value>>,
    /// Who sent it, when the transport authenticated them.
    principal: Option<&'a str>,
}

impl Inner {
    fn handle(self: &Arc<Self>, line: &[u8], principal: Option<&str>) -> Option<String> {
        if line.len() > self.options.max_line_bytes {
            return Some(self.oversized(line.len()));
        }
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        match jsonrpc::parse(line) {
            Ok(Incoming::Request {
                id,
                key,
                method,
                params,
            }) => {
                tracing::debug!(%method, %id, "request");
                let params = match &params {
                    None | Some(Value::Null) => None,
                    Some(Value::Object(map)) => Some(map),
                    Some(other) => {
                        let e = RpcError::new(
                            INVALID_PARAMS,
                            format!(
                                "invalid params: `params` must be an object, got {}",
                                crate::tool_args::json_kind(other)
                            ),
                        );
                        return Some(jsonrpc::error_response(&id, &e));
                    }
                };
                if self.inflight.contains(&key) {
                    let e = RpcError::new(
                        INVALID_REQUEST,
                        format!("invalid request: request id {id} already in flight"),
                    );
                    return Some(jsonrpc::error_response(&id, &e));
                }
                let request = Request {
                    id: &id,
                    key: &key,
                    params,
                    principal,
                };
                match self.dispatch(&method, &request) {
                    Reply::Now(Ok((era, result))) => Some(jsonrpc::response(&id, self.finish_result(era, result))),
                    Reply::Now(Err(e)) => Some(jsonrpc::error_response(&id, &e)),
                    Reply::Later => None,
                }
            }
            Ok(Incoming::Notification { method, params }) => {
                self.notification(&method, params.as_ref().and_then(Value::as_object));
                None
            }
            Ok(Incoming::Response { key, outcome }) => {
                if !key.is_some_and(|key| self.outgoing.deliver(&key, outcome)) {
                    tracing::debug!("dropped a response to no request this server is waiting for");
                }
                None
            }
            Err(Some((id, e))) => {
                tracing::debug!(code = e.code, message = %e.message, "bad message");
                Some(jsonrpc::error_response(&id, &e))
            }
            Err(None) => None,
        }
    }

    fn oversized(&self, bytes: usize) -> String {
        let e = RpcError::new(
            INVALID_REQUEST,
            format!(
                "invalid request: message of {bytes} bytes exceeds the limit of {} bytes per line; it was dropped",
                self.options.max_line_bytes
            ),
        );
        jsonrpc::error_response(&Value::Null, &e)
    }

    fn begin_shutdown(&self) {
        if !self.shutting_down.swap(true, Ordering::SeqCst) {
            if let Some(tasks) = &self.tasks {
                tasks.close(&*self.server);
            }
            let n = self.inflight.cancel_all();
            if n > 0 {
                tracing::info!(calls = n, "shutdown: cancelled running calls");
            }
        }
    }

    /// Adds the stateless-era result keys.
    fn finish_result(&self, era: Option<Era>, mut result: Value) -> Value {
        if let (Some(era), Value::Object(map)) = (era, &mut result)
            && era.is_stateless()
        {
            map.entry("resultType").or_insert_with(|| "complete".into());
            let meta = map.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(meta) = meta {
                meta.insert(era::SERVER_INFO_KEY.into(), self.server_info());
            }
        }
        result
    }

    fn server_info(&self) -> Value {
        json!({"name": self.options.server_name, "version": self.options.server_version})
    }

    /// The era of a request that exists in both eras.
    fn era_of(&self, request: &Request<'_>) -> Result<Era, RpcError> {
        if let Some(era) = era::stateless_envelope(request.params)? {
            return Ok(era);
        }
        match *self.handshake.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(version) => Ok(Era::Handshake(version)),
            None => Err(RpcError::new(
                INVALID_PARAMS,
                format!(
                    "invalid params: no protocol version: send `initialize` first (handshake era), or put `{}` and `{}` in `params._meta` (2026-07-28)",
                    era::PROTOCOL_VERSION_KEY,
                    era::CLIENT_CAPABILITIES_KEY
                ),
            )),
        }
    }

    fn dispatch(self: &Arc<Self>, method: &str, request: &Request<'_>) -> Reply {
        let now = |r: Result<(Option<Era>, Value), RpcError>| Reply::Now(r);
        match method {
            // 2026-07-28 removed both: a request in its envelope does not find them.
            "initialize" | "ping" if matches!(era::stateless_envelope(request.params), Ok(Some(_))) => {
                now(Err(RpcError::new(
                    METHOD_NOT_FOUND,
                    format!(
                        "method not found: {method:?} is not part of 2026-07-28, which the request's `_meta` names (use server/discover; {method} belongs to the handshake era, without that envelope)"
                    ),
                )))
            }
            "initialize" => now(self.initialize(request.params)),
            "logging/setLevel"
                if self.options.logging && !matches!(era::stateless_envelope(request.params), Ok(Some(_))) =>
            {
                now(self.set_level(request.params))
            }
            "ping" => now(era::stateless_envelope(request.params).map(|era| (era, json!({})))),
            "server/discover" => now(era::required_envelope(request.params).map(|era| (Some(era), self.discover()))),
            "tools/list" => now(self.era_of(request).map(|era| (Some(era), self.list_tools(era)))),
            "tools/call" => match self.era_of(request) {
                Ok(era) => self.call_tool(era, request),
                Err(e) => now(Err(e)),
            },
            "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel" | "tasks/update" => {
                self.task_method(method, request)
            }
            other => now(Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!(
                    "method not found: {other:?} (this server offers initialize, ping, server/discover, tools/list, tools/call)"
                ),
            ))),
        }
    }

    fn initialize(&self, params: Option<&Map<String, Value>>) -> Result<(Option<Era>, Value), RpcError> {
        let requested = match params.and_then(|p| p.get("protocolVersion")) {
            Some(Value::String(v)) => Some(v.as_str()),
            None => None,
            Some(other) => {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    format!(
                        "invalid params: `protocolVersion` must be a string, got {}",
                        crate::tool_args::json_kind(other)
                    ),
                ));
            }
        };
        let version = era::negotiate(requested);
        *self.handshake.lock().unwrap_or_else(PoisonError::into_inner) = Some(version);
        *self.client_capabilities.lock().unwrap_or_else(PoisonError::into_inner) =
            params.and_then(|p| p.get("capabilities")).cloned();
        tracing::info!(requested, negotiated = version, "initialize");
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": self.server_info(),
        });
        if self.options.logging {
            result["capabilities"]["logging"] = json!({});
        }
        if self.tasks.is_some() && tasks::handshake_tasks(Era::Handshake(version)) {
            result["capabilities"]["tasks"] = json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
        }
        if let Some(instructions) = &self.options.instructions {
            result["instructions"] = instructions.clone().into();
        }
        Ok((None, result))
    }

    /// `logging/setLevel`: messages of `level` and above go to the client from now on.
    fn set_level(&self, params: Option<&Map<String, Value>>) -> Result<(Option<Era>, Value), RpcError> {
        let name = params.and_then(|p| p.get("level")).and_then(Value::as_str);
        let Some(level) = name.and_then(LogLevel::parse) else {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!(
                    "invalid params: `level` must be one of {}",
                    LogLevel::names().collect::<Vec<_>>().join(", ")
                ),
            ));
        };
        *self.log_level.lock().unwrap_or_else(PoisonError::into_inner) = Some(level);
        Ok((None, json!({})))
    }

    fn discover(&self) -> Value {
        let mut result = json!({
            "supportedVersions": era::SUPPORTED_VERSIONS,
            "capabilities": {"tools": {"listChanged": false}},
            "ttlMs": millis(self.options.list_ttl),
            "cacheScope": "private",
        });
        if self.tasks.is_some() {
            result["capabilities"]["extensions"] = json!({tasks::TASKS_EXTENSION: {}});
        }
        if let Some(instructions) = &self.options.instructions {
            result["instructions"] = instructions.clone().into();
        }
        result
    }

    fn exposed(&self, name: &str) -> bool {
        self.options
            .tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == name))
    }

    fn list_tools(&self, era: Era) -> Value {
        let tools: Vec<Value> = self
            .server
            .tools()
            .iter()
            .filter(|t| self.exposed(&t.definition().name))
            .map(|t| t.listed_definition())
            .map(|d| {
                let mut entry = tools::tool_entry(&d, era);
                if self.tasks.is_some() && tasks::handshake_tasks(era) && self.server.task_support(&d.name) {
                    entry["execution"] = json!({"taskSupport": "optional"});
                }
                entry
            })
            .collect();
        let mut result = json!({"tools": tools});
        if era.is_stateless() {
            result["ttlMs"] = millis(self.options.list_ttl).into();
            result["cacheScope"] = "private".into();
        }
        result
    }

    fn call_tool(self: &Arc<Self>, era: Era, request: &Request<'_>) -> Reply {
        let invalid = |message: String| Reply::Now(Err(RpcError::new(INVALID_PARAMS, message)));
        let Some(params) = request.params else {
            return invalid("invalid params: tools/call needs `params` with `name` and `arguments`".into());
        };
        let name = match params.get("name") {
            Some(Value::String(name)) => name.clone(),
            Some(other) => {
                return invalid(format!(
                    "invalid params: `name` must be a string, got {}",
                    crate::tool_args::json_kind(other)
                ));
            }
            None => return invalid("invalid params: `name` (the tool to call) is missing".into()),
        };
        // Clients may qualify the name (`bash.execute`); from here on the
        // call uses the tool's own name, so the gate, the audit log and the
        // tool all see one spelling.
        // A tool turned off by configuration (sessions while they are off)
        // is called too: nothing runs, and its error says how to turn it on.
        let canonical = self
            .server
            .find_tool(&name)
            .map(|t| t.definition().name.clone())
            .filter(|n| self.exposed(n))
            .or_else(|| {
                self.server
                    .find_disabled_tool(&name)
                    .map(|t| t.definition().name.clone())
            });
        let Some(canonical) = canonical else {
            let args = params
                .get("arguments")
                .map_or_else(|| ToolArgs::from(Map::new()), |args| ToolArgs::from_value(args.clone()));
            self.server.record_rejected_call(&name, &args, ErrorCode::UnknownTool);
            let names: Vec<String> = self
                .server
                .tools()
                .iter()
                .map(|t| t.definition().name.clone())
                .filter(|n| self.exposed(n))
                .collect();
            return invalid(format!(
                "invalid params: unknown tool {name:?}; tools: {}",
                names.join(", ")
            ));
        };
        // The arguments are parsed JSON already (the request's): the gate, the
        // tool and the audit log read this one value.
        let args = match params.get("arguments") {
            None | Some(Value::Null) => ToolArgs::from(Map::new()),
            Some(Value::Object(args)) => ToolArgs::from(args.clone()),
            Some(other) => {
                self.server.record_rejected_call(
                    &canonical,
                    &ToolArgs::from_value(other.clone()),
                    ErrorCode::InvalidArguments,
                );
                return invalid(format!(
                    "invalid params: `arguments` must be an object, got {}",
                    crate::tool_args::json_kind(other)
                ));
            }
        };
        let progress_token = match params.get("_meta").and_then(|m| m.get("progressToken")) {
            None | Some(Value::Null) => None,
            Some(token @ (Value::String(_) | Value::Number(_))) => Some(token.clone()),
            Some(other) => {
                return invalid(format!(
                    "invalid params: `_meta.progressToken` must be a string or a number, got {}",
                    crate::tool_args::json_kind(other)
                ));
            }
        };
        if self.shutting_down.load(Ordering::SeqCst) {
            return Reply::Now(Err(RpcError::new(SHUTTING_DOWN, "the server is shutting down")));
        }
        // A 2026-07-28 retry carries the person's answers with the state
        // they answer; the state is checked (and used up) before anything runs.
        let digest = state::request_digest(&canonical, args.object().unwrap_or(&Map::new()));
        let input = match self.input_of(era, params, &digest) {
            Ok(input) => input,
            Err(e) => return Reply::Now(Err(e)),
        };
        let client_capabilities = era::stateless_client_capabilities(params);
        if let Some(reply) = self.task_call(era, request, &canonical, &args, progress_token.as_ref(), input.clone()) {
            return reply;
        }
        let Some(call) = self.inflight.start(request.key.clone()) else {
            return Reply::Now(Err(RpcError::new(
                INVALID_REQUEST,
                format!("invalid request: request id {} already in flight", request.id),
            )));
        };
        let job = Job {
            inner: self.clone(),
            era,
            id: request.id.clone(),
            key: request.key.clone(),
            call,
            tool: canonical,
            args,
            progress_token,
            input,
            client_capabilities,
            digest,
            principal: request.principal.map(str::to_owned),
        };
        let worker = self.inflight.worker();
        let key = request.key.clone();
        let spawned = std::thread::Builder::new().name("mcp-call".into()).spawn(move || {
            let _worker = worker;
            job.run();
        });
        self.answered_later(spawned, &key, "a worker thread for the call")
    }

    /// The verified answers a 2026-07-28 retry carries (`inputResponses`
    /// with the `requestState` they answer), or `None` on a first call.
    fn input_of(
        &self,
        era: Era,
        params: &Map<String, Value>,
        digest: &str,
    ) -> Result<Option<Map<String, Value>>, RpcError> {
        let state = params.get("requestState");
        let responses = params.get("inputResponses");
        if !era.is_stateless() || (state.is_none() && responses.is_none()) {
            return Ok(None);
        }
        let invalid = |why: String| {
            RpcError::new(
                INVALID_PARAMS,
                format!(
                    "invalid params: {why}; nothing was run. Call the tool again without `requestState` and `inputResponses` to be asked anew"
                ),
            )
        };
        let Some(Value::String(state)) = state else {
            return Err(invalid(
                "`inputResponses` without the `requestState` they answer".into(),
            ));
        };
        self.states.accept(state, digest).map_err(invalid)?;
        match responses {
            None | Some(Value::Null) => Ok(Some(Map::new())),
            Some(Value::Object(map)) => Ok(Some(map.clone())),
            Some(other) => Err(invalid(format!(
                "`inputResponses` must be an object, got {}",
                crate::tool_args::json_kind(other)
            ))),
        }
    }

    /// The reply for a request whose answer a thread sends: later, or now,
    /// as an error, when the thread (`what`) could not start. Then the call
    /// is forgotten; its closure, with any worker guard, was dropped.
    fn answered_later(&self, spawned: std::io::Result<std::thread::JoinHandle<()>>, key: &IdKey, what: &str) -> Reply {
        match spawned {
            Ok(_) => Reply::Later,
            Err(e) => {
                if let Some(call) = self.inflight_call(key) {
                    self.inflight.forget(key, &call);
                }
                Reply::Now(Err(RpcError::new(
                    INTERNAL_ERROR,
                    format!("could not start {what}: {e}"),
                )))
            }
        }
    }

    fn inflight_call(&self, key: &IdKey) -> Option<Arc<Call>> {
        self.inflight.get(key)
    }

    fn notification(&self, method: &str, params: Option<&Map<String, Value>>) {
        match method {
            "notifications/cancelled" => {
                let Some(key) = params.and_then(|p| p.get("requestId")).and_then(IdKey::of) else {
                    tracing::debug!("notifications/cancelled without a usable requestId; ignored");
                    return;
                };
                if self.inflight.cancel(&key) {
                    tracing::info!(request = ?key, "call cancelled by the client");
                } else {
                    tracing::debug!(request = ?key, "cancel for a request not in flight; ignored");
                }
            }
            "notifications/initialized" => tracing::debug!("client initialized"),
            other => tracing::debug!(method = other, "notification ignored"),
        }
    }
}

enum Reply {
    Now(Result<(Option<Era>, Value), RpcError>),
    Later,
}

/// One `tools/call` on its worker thread.
struct Job {
    inner: Arc<Inner>,
    era: Era,
    id: Value,
    key: IdKey,
    call: Arc<Call>,
    tool: String,
    args: ToolArgs,
    progress_token: Option<Value>,
    /// A 2026-07-28 retry's verified answers, by question key.
    input: Option<Map<String, Value>>,
    /// The capabilities a 2026-07-28 request declared in its `_meta`.
    client_capabilities: Option<Value>,
    /// The digest of this request, which a `requestState` is bound to.
    digest: String,
    principal: Option<String>,
}

/// What a call ends with: the tool's response, or (2026-07-28) questions
/// for the person that the client must answer in a retry.
enum Finished {
    Response(ToolResponse),
    InputRequired(Value),
}

/// The key of a question in `inputRequests` and `inputResponses`.
fn question_key(request: &crate::approval::ApprovalRequest) -> &'static str {
    match request.kind {
        crate::approval::ApprovalKind::Escalation => "escalation",
        crate::approval::ApprovalKind::Connection => "connection",
        _ => "command",
    }
}

impl Job {
    fn run(self) {
        let tail = self.progress_token.as_ref().map(|_| Arc::new(OutputTail::default()));
        let ticker = match (&self.progress_token, &tail) {
            (Some(token), Some(tail)) => Some(self.start_ticker(token.clone(), tail.clone())),
            _ => None,
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| self.execute(tail.as_deref())));
        // The ticker thread has ended once stop() returns: no progress can
        // follow the response.
        if let Some(ticker) = ticker {
            ticker.stop();
        }
        let line = match outcome {
            Ok(Finished::Response(response)) => {
                let result = tools::call_result(response, self.era);
                jsonrpc::response(&self.id, self.inner.finish_result(Some(self.era), result))
            }
            Ok(Finished::InputRequired(result)) => {
                jsonrpc::response(&self.id, self.inner.finish_result(Some(self.era), result))
            }
            Err(_) => {
                tracing::error!(tool = %self.tool, "tool call panicked");
                let e = RpcError::new(
                    INTERNAL_ERROR,
                    format!("internal error: the tool {:?} failed", self.tool),
                );
                jsonrpc::error_response(&self.id, &e)
            }
        };
        let inner = &self.inner;
        let sent = inner
            .inflight
            .finish(&self.key, &self.call, || (inner.outbound)(line, Some(&self.id)));
        if !sent {
            tracing::debug!(id = %self.id, "call was cancelled; no response sent");
        }
    }

    fn execute(&self, tail: Option<&OutputTail>) -> Finished {
        let decision = self
            .inner
            .options
            .gate
            .as_ref()
            .map(|gate| gate.check(&self.tool, &self.args));
        if let Some(questions) = self.input_required(decision.as_ref()) {
            return Finished::InputRequired(questions);
        }
        Finished::Response(self.respond(decision, tail))
    }

    /// 2026-07-28: the questions this call needs the person to answer that
    /// the client has not answered yet, as an `input_required` result; `None`
    /// when there are none, or the client cannot be asked this way.
    fn input_required(&self, decision: Option<&GateDecision>) -> Option<Value> {
        if !self.era.is_stateless() || !elicit::can_elicit_form(self.client_capabilities.as_ref()) {
            return None;
        }
        let server = &*self.inner.server;
        let approvals = server.approvals()?;
        let base = match decision {
            Some(GateDecision::AllowInSandbox(sandbox)) => Some(sandbox),
            _ => None,
        };
        let mut questions = Vec::new();
        if let Some(GateDecision::Ask { request, .. }) = decision {
            questions.push((**request).clone());
        }
        if let Ok(Some((request, _))) = server.escalation(&self.tool, &self.args, base) {
            questions.push(request);
        }
        let answered = self.input.as_ref();
        let pending: Map<String, Value> = questions
            .iter()
            .filter(|q| approvals.remembered(q).is_none() && !approvals.has_approver())
            .filter(|q| !answered.is_some_and(|a| a.contains_key(question_key(q))))
            .map(|q| {
                let ask = json!({"method": "elicitation/create", "params": elicit::elicit_params(q, true)});
                (question_key(q).to_owned(), ask)
            })
            .collect();
        if pending.is_empty() {
            return None;
        }
        let state = self.inner.states.issue(&self.digest)?;
        // Every question is audited when asked; its answer when it comes.
        let asked = crate::approval::ApprovalOutcome {
            answer: None,
            by: crate::approval::AnsweredBy::Client,
            note: Some("asked in an input_required result; the answer comes with the client's retry".into()),
        };
        for question in questions.iter().filter(|q| pending.contains_key(question_key(q))) {
            server.record_approval(&self.tool, &self.args, question, &asked);
        }
        Some(json!({"resultType": "input_required", "inputRequests": pending, "requestState": state}))
    }

    fn respond(&self, decision: Option<GateDecision>, tail: Option<&OutputTail>) -> ToolResponse {
        let server = &*self.inner.server;
        let sandbox = match approve::settle_call(server, &self.tool, &self.args, decision, &mut |request| {
            self.ask_client(request)
        }) {
            Ok(sandbox) => sandbox,
            Err(refused) => return refused,
        };
        let args = approve::without_escalate(&self.args);
        let sandbox = sandbox.as_ref();
        let mut observe = |chunk: &[u8], _stream| {
            if let Some(tail) = tail {
                tail.observe(chunk);
            }
        };
        let options = CallOptions {
            cancel: Some(&self.call.token),
            on_output: tail
                .is_some()
                .then_some(&mut observe as &mut dyn FnMut(&[u8], crate::OutputStream)),
            sandbox,
            principal: self.principal.as_deref(),
            client: Some(self),
        };
        self.inner.server.call_tool(&self.tool, &args, options)
    }

    /// Sends a notification of this call, while it runs.
    fn notify(&self, method: &str, params: Value) {
        let Value::Object(params) = params else { return };
        let line = jsonrpc::notification(method, params);
        let inner = &self.inner;
        self.call.emit_if_running(|| (inner.outbound)(line, Some(&self.id)));
    }

    /// Asks the person through the client, when it declared form
    /// elicitation in a handshake revision that has it (from 2025-06-18):
    /// `elicitation/create` during the call. `None` when it cannot be asked.
    /// Whether the client, in the handshake era of `version`, can be asked
    /// through a form elicitation.
    fn can_elicit(&self, version: &str) -> bool {
        let capabilities = self
            .inner
            .client_capabilities
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        era::has_elicitation(version) && elicit::can_elicit_form(capabilities.as_ref())
    }

    fn ask_client(&self, request: &crate::approval::ApprovalRequest) -> Option<approve::ClientAnswer> {
        let Era::Handshake(version) = self.era else {
            // 2026-07-28: the answer came with the retry, if it came.
            let response = self.input.as_ref()?.get(question_key(request))?;
            return Some(elicit::answer_of(response));
        };
        if !self.can_elicit(version) {
            return None;
        }
        let params = elicit::elicit_params(request, era::has_elicitation_modes(version));
        let inner = &self.inner;
        let sent = inner.outgoing.request(
            "elicitation/create",
            params,
            |line| self.call.emit_if_running(|| (inner.outbound)(line, Some(&self.id))),
            &self.call.token,
            inner.options.approval_wait,
        );
        Some(sent.and_then(|result| elicit::answer_of(&result)))
    }

    fn start_ticker(&self, token: Value, tail: Arc<OutputTail>) -> Ticker {
        let inner = self.inner.clone();
        let call = self.call.clone();
        let id = self.id.clone();
        Ticker::start(self.inner.options.progress_interval, move |n, elapsed| {
            let params = json!({
                "progressToken": token,
                "progress": n,
                "message": progress::progress_message(elapsed, tail.last_line()),
            });
            let Value::Object(params) = params else { return };
            let line = jsonrpc::notification("notifications/progress", params);
            call.emit_if_running(|| (inner.outbound)(line, Some(&id)));
        })
    }
}

/// Asks the person through a 2025-11-25 (handshake-era) call's client,
/// with `elicitation/create` while the call runs: owned, for the proxy of
/// the call's command. Holds the handler weakly, so a command that outlives
/// its connection keeps nothing alive.
struct CallAsker {
    inner: std::sync::Weak<Inner>,
    call: Arc<Call>,
    id: Value,
    with_mode: bool,
}

impl crate::approval::ClientAsker for CallAsker {
    fn ask(&self, request: &crate::approval::ApprovalRequest, wait: Duration) -> Option<approve::ClientAnswer> {
        let inner = self.inner.upgrade()?;
        // A call already answered (a command handed back as a job) has no
        // client waiting on it to ask.
        if !self.call.is_running() {
            return None;
        }
        let params = elicit::elicit_params(request, self.with_mode);
        let sent = inner.outgoing.request(
            "elicitation/create",
            params,
            |line| self.call.emit_if_running(|| (inner.outbound)(line, Some(&self.id))),
            &self.call.token,
            wait,
        );
        Some(sent.and_then(|result| elicit::answer_of(&result)))
    }
}

/// A call's client, as its tool reaches it.
impl CallClient for Job {
    fn client_asker(&self) -> Option<Arc<dyn crate::approval::ClientAsker>> {
        let Era::Handshake(version) = self.era else {
            // 2026-07-28 asks only through input_required results, before a
            // command runs (a task can ask while it runs: see tasks/).
            return None;
        };
        if !self.can_elicit(version) {
            return None;
        }
        Some(Arc::new(CallAsker {
            inner: Arc::downgrade(&self.inner),
            call: self.call.clone(),
            id: self.id.clone(),
            with_mode: era::has_elicitation_modes(version),
        }))
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else { return };
        let mut params = json!({"progressToken": token, "progress": progress});
        if let Some(total) = total {
            params["total"] = total.into();
        }
        if let Some(message) = message {
            params["message"] = message.into();
        }
        self.notify("notifications/progress", params);
    }

    fn log(&self, level: LogLevel, data: Value) {
        // 2026-07-28 has no logging/setLevel: nothing was asked for.
        if !self.inner.options.logging || self.era.is_stateless() {
            return;
        }
        let wanted = *self.inner.log_level.lock().unwrap_or_else(PoisonError::into_inner);
        if wanted.is_some_and(|wanted| level >= wanted) {
            self.notify(
                "notifications/message",
                json!({"level": level.as_str(), "logger": self.tool, "data": data}),
            );
        }
    }

    fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let Era::Handshake(_) = self.era else {
            return Err(format!(
                "a 2026-07-28 call cannot send {method} while it runs (that revision asks through input_required results)"
            ));
        };
        let needs = match method {
            "sampling/createMessage" => Some("sampling"),
            "elicitation/create" => Some("elicitation"),
            "roots/list" => Some("roots"),
            _ => None,
        };
        if let Some(capability) = needs {
            let capabilities = self
                .inner
                .client_capabilities
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if capabilities.as_ref().and_then(|c| c.get(capability)).is_none() {
                return Err(format!(
                    "the client did not declare the `{capability}` capability that {method} needs"
                ));
            }
        }
        let inner = &self.inner;
        inner.outgoing.request(
            method,
            params,
            |line| self.call.emit_if_running(|| (inner.outbound)(line, Some(&self.id))),
            &self.call.token,
            inner.options.approval_wait,
        )
    }
}

/// A duration in whole milliseconds, as the protocol's `*Ms` fields carry it.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
