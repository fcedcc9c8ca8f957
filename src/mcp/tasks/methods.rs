//! The handler's side of tasks: task-augmented `tools/call` in both eras,
//! and the `tasks/*` methods.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{End, Task, TaskStore, handshake_tasks, shape};
use crate::mcp::era::{CLIENT_CAPABILITIES_KEY, Era};
use crate::mcp::jsonrpc::{
    self, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, MISSING_REQUIRED_CLIENT_CAPABILITY,
    RpcError,
};
use crate::mcp::progress::{OutputTail, progress_message};
use crate::mcp::{Inner, Reply, Request, approve, tools};
use crate::tool::ToolResponse;
use crate::tool_args::ToolArgs;

/// Whether a stateless request's client capabilities list the tasks extension.
fn declares_extension(params: Option<&Map<String, Value>>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(CLIENT_CAPABILITIES_KEY))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(super::TASKS_EXTENSION))
        .is_some_and(Value::is_object)
}

fn missing_extension() -> RpcError {
    RpcError::new(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "Missing required client capability: list `{}` under `extensions` in the request's `_meta[\"{CLIENT_CAPABILITIES_KEY}\"]`",
            super::TASKS_EXTENSION
        ),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {super::TASKS_EXTENSION: {}}}}))
}

/// The `task.ttl` of a 2025-11-25 `tools/call` (milliseconds; `null`: unlimited).
fn requested_ttl(task: &Value) -> Result<Option<Duration>, RpcError> {
    let bad = |what: String| Err(RpcError::new(INVALID_PARAMS, format!("invalid params: {what}")));
    let Value::Object(task) = task else {
        return bad(format!(
            "`task` must be an object, got {}",
            crate::tool_args::json_kind(task)
        ));
    };
    match task.get("ttl") {
        None | Some(Value::Null) => Ok(None),
        Some(ttl) => match ttl.as_f64().filter(|t| t.is_finite() && *t >= 0.0) {
            Some(ms) => Ok(Some(Duration::from_secs_f64((ms / 1000.0).min(1e9)))),
            None => bad(format!("`task.ttl` must be a number of milliseconds from 0, got {ttl}")),
        },
    }
}

fn task_id(params: Option<&Map<String, Value>>) -> Result<&str, RpcError> {
    match params.and_then(|p| p.get("taskId")) {
        Some(Value::String(id)) => Ok(id),
        Some(other) => Err(RpcError::new(
            INVALID_PARAMS,
            format!(
                "invalid params: `taskId` must be a string, got {}",
                crate::tool_args::json_kind(other)
            ),
        )),
        None => Err(RpcError::new(INVALID_PARAMS, "invalid params: `taskId` is missing")),
    }
}

impl Inner {
    fn store(&self) -> Result<&Arc<TaskStore>, RpcError> {
        self.tasks
            .as_ref()
            .ok_or_else(|| RpcError::new(METHOD_NOT_FOUND, "method not found: this server offers no tasks"))
    }

    /// A `tools/call` that becomes a task, or `None` for a plain call: in
    /// 2025-11-25 when the client sends `task` (answered at once with the
    /// task); in 2026-07-28 when the client lists the extension and the tool
    /// can run as a job (the server waits one poll interval, then answers
    /// with the plain result or the task).
    pub(in crate::mcp) fn task_call(
        self: &Arc<Self>,
        era: Era,
        request: &Request<'_>,
        tool: &str,
        args: &ToolArgs,
        progress_token: Option<&Value>,
        input: Option<Map<String, Value>>,
    ) -> Option<Reply> {
        let store = self.tasks.as_ref()?;
        let params = request.params?;
        if handshake_tasks(era) {
            let task = params.get("task")?;
            let ttl = match requested_ttl(task) {
                Ok(ttl) => ttl,
                Err(e) => return Some(Reply::Now(Err(e))),
            };
            if !self.server.task_support(tool) {
                return Some(Reply::Now(Err(RpcError::new(
                    METHOD_NOT_FOUND,
                    format!(
                        "tool {tool:?} does not support task-augmented calls (its execution.taskSupport is forbidden); call it without `task`"
                    ),
                ))));
            }
            let ttl = store.options.grant(ttl);
            let capabilities = self
                .client_capabilities
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            let asker = super::ask::Asker::new(era, capabilities.as_ref(), None);
            return Some(Reply::Now(
                self.start_task(
                    era,
                    (tool, args),
                    progress_token.cloned(),
                    (ttl, request.principal),
                    asker,
                )
                .map(|(_, created)| (Some(era), shape::created_2025(&created))),
            ));
        }
        // A call that asks for a job id (`background: true`) gets one at once, as it asked.
        let background = args
            .object()
            .is_ok_and(|a| a.get("background") == Some(&Value::Bool(true)));
        if !era.is_stateless() || !declares_extension(request.params) || !self.server.task_support(tool) || background {
            return None;
        }
        let capabilities = crate::mcp::era::stateless_client_capabilities(params);
        let asker = super::ask::Asker::new(era, capabilities.as_ref(), input);
        Some(self.stateless_task_call(era, request, tool, args, asker))
    }

    fn stateless_task_call(
        self: &Arc<Self>,
        era: Era,
        request: &Request<'_>,
        tool: &str,
        args: &ToolArgs,
        asker: super::ask::Asker,
    ) -> Reply {
        let Some(call) = self.inflight.start(request.key.clone()) else {
            return Reply::Now(Err(RpcError::new(
                INVALID_REQUEST,
                format!("invalid request: request id {} already in flight", request.id),
            )));
        };
        let inner = self.clone();
        let (id, key, tool, args) = (request.id.clone(), request.key.clone(), tool.to_owned(), args.clone());
        let principal = request.principal.map(str::to_owned);
        let worker = self.inflight.worker();
        let spawned = std::thread::Builder::new().name("mcp-task-call".into()).spawn(move || {
            let _worker = worker;
            let Ok(store) = inner.store() else { return };
            let grant = (store.options.grant(None), principal.as_deref());
            let line = match inner.start_task(era, (&tool, &args), None, grant, asker) {
                Err(e) => jsonrpc::error_response(&id, &e),
                Ok((task, _)) => {
                    // A question for the person makes it a task at once.
                    task.wait_settled(store.options.poll_interval, &call.token);
                    let end = task.wait_end(Some(std::time::Duration::ZERO), None);
                    if call.token.is_cancelled() {
                        // The client gave up on the call before it knew of a task.
                        let _ = store.cancel(&task, &*inner.server);
                        store.discard(&task);
                        return;
                    }
                    match end {
                        Some(End::Result { result, .. }) => {
                            store.discard(&task);
                            jsonrpc::response(&id, inner.finish_result(Some(era), result))
                        }
                        Some(End::Error(e)) => {
                            store.discard(&task);
                            jsonrpc::error_response(&id, &e)
                        }
                        None => jsonrpc::response(
                            &id,
                            inner.finish_result(Some(era), shape::created_2026(&task.view(true))),
                        ),
                    }
                }
            };
            inner.inflight.finish(&key, &call, || (inner.outbound)(line, Some(&id)));
        });
        self.answered_later(spawned, request.key, "a worker thread for the call")
    }

    /// Creates a task for a call of `tool` and a thread that carries it:
    /// the gate and the call's `escalate` are settled first (a question the
    /// client must answer puts the task in `input_required`), then the
    /// server starts the job (a refused or invalid call is a task that ends
    /// with that result), and the thread follows it to its end and ttl.
    /// `asking` says how its questions reach the client. Returns the task
    /// and how it began (`working`, for the 2025-11-25 `CreateTaskResult`).
    fn start_task(
        self: &Arc<Self>,
        era: Era,
        (tool, args): (&str, &ToolArgs),
        progress_token: Option<Value>,
        (ttl, principal): (Duration, Option<&str>),
        asking: super::ask::Asker,
    ) -> Result<(Arc<Task>, super::View), RpcError> {
        let store = self.store()?;
        let to_end = move |response: ToolResponse| End::Result {
            is_error: response.is_error(),
            result: tools::call_result(response, era),
        };
        let task = store.create(ttl, None, None)?;
        let created = task.view(false);
        tracing::info!(task = %task.id, tool, ttl_ms = ttl.as_millis() as u64, "task created");
        let inner = self.clone();
        let watched = task.clone();
        let worker = self.inflight.worker();
        let progress_interval = progress_token.as_ref().map(|_| self.options.progress_interval);
        let (tool, args, principal) = (tool.to_owned(), args.clone(), principal.map(str::to_owned));
        let spawned = std::thread::Builder::new().name("mcp-task".into()).spawn(move || {
            let _worker = worker;
            let Ok(store) = inner.store() else { return };
            let id = watched.id.clone();
            // 2025-11-25 lets a receiver announce a status change; the
            // extension of 2026-07-28 sends its notifications only to a
            // subscription, which this server does not offer.
            let announce = |task: &Task| super::announce(&inner, era, task);
            let server = &*inner.server;
            let decision = inner.options.gate.as_ref().map(|gate| gate.check(&tool, &args));
            let settled = approve::settle_call(server, &tool, &args, decision, &mut |request| {
                asking.ask(&inner, &watched, request, &announce)
            });
            let started = watched.start_job(|| {
                let sandbox = settled.map_err(&to_end)?;
                let args = approve::without_escalate(&args);
                let asker = asking.for_connections(&inner, &watched);
                server
                    .start_task_job(&tool, &args, sandbox.as_ref(), principal.as_deref(), asker)
                    .map_err(&to_end)
            });
            if started && watched.is_terminal() {
                tracing::info!(task = %id, "task ended before a job started (refused, or invalid)");
                announce(&watched);
            }
            let emit = |n: u64, elapsed: Duration, recent: &str| {
                let Some(token) = &progress_token else { return };
                let tail = OutputTail::default();
                tail.observe(recent.as_bytes());
                let params = json!({
                    "progressToken": token,
                    "progress": n,
                    "message": progress_message(elapsed, tail.last_line()),
                    "_meta": shape::related_meta(&id),
                });
                if let Value::Object(params) = params {
                    (inner.outbound)(jsonrpc::notification("notifications/progress", params), None);
                }
            };
            store.watch(&watched, server, progress_interval, emit, to_end, announce);
        });
        if let Err(e) = spawned {
            let _ = store.cancel(&task, &*self.server);
            store.discard(&task);
            return Err(RpcError::new(
                INTERNAL_ERROR,
                format!("could not start a thread for the task: {e}"),
            ));
        }
        Ok((task, created))
    }

    /// `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` (2025-11-25)
    /// and `tasks/get`, `tasks/cancel`, `tasks/update` (2026-07-28).
    pub(in crate::mcp) fn task_method(self: &Arc<Self>, method: &str, request: &Request<'_>) -> Reply {
        match self.task_method_now(method, request) {
            Ok(Some(done)) => Reply::Now(Ok(done)),
            Ok(None) => self.task_result_later(request),
            Err(e) => Reply::Now(Err(e)),
        }
    }

    #[allow(clippy::type_complexity)]
    fn task_method_now(&self, method: &str, request: &Request<'_>) -> Result<Option<(Option<Era>, Value)>, RpcError> {
        let unknown = || {
            RpcError::new(
                METHOD_NOT_FOUND,
                format!("method not found: {method:?} is not part of tasks in this protocol revision"),
            )
        };
        let store = self.store()?;
        let era = self.era_of(request)?;
        let params = request.params;
        if era.is_stateless() {
            if !matches!(method, "tasks/get" | "tasks/cancel" | "tasks/update") {
                return Err(unknown());
            }
            if !declares_extension(params) {
                return Err(missing_extension());
            }
        } else if !handshake_tasks(era) || method == "tasks/update" {
            return Err(unknown());
        }
        let stateless = era.is_stateless();
        if method == "tasks/list" {
            let cursor = match params.and_then(|p| p.get("cursor")) {
                None | Some(Value::Null) => None,
                Some(Value::String(c)) => Some(c.as_str()),
                Some(other) => {
                    return Err(RpcError::new(
                        INVALID_PARAMS,
                        format!(
                            "invalid params: `cursor` must be a string, got {}",
                            crate::tool_args::json_kind(other)
                        ),
                    ));
                }
            };
            let (page, next) = store.list(cursor)?;
            let mut result =
                json!({"tasks": page.iter().map(|t| shape::task_2025(&t.view(false))).collect::<Vec<_>>()});
            if let Some(next) = next {
                result["nextCursor"] = next.into();
            }
            return Ok(Some((Some(era), result)));
        }
        let task = store.get(task_id(params)?)?;
        let result = match method {
            "tasks/get" if stateless => Value::Object(shape::task_2026(&task.view(true))),
            "tasks/get" => shape::task_2025(&task.view(false)),
            "tasks/cancel" => {
                match store.cancel(&task, &*self.server) {
                    Ok(()) => {}
                    // Cancellation in the extension is a request to stop, acknowledged either way.
                    Err(_) if stateless => {}
                    Err(e) => return Err(e),
                }
                tracing::info!(task = %task.id, "task cancelled");
                if stateless {
                    json!({})
                } else {
                    shape::task_2025(&task.view(false))
                }
            }
            // The person's answers to the task's questions; answers to
            // questions it does not ask (any more) are acknowledged and ignored.
            "tasks/update" => {
                let taken = match params.and_then(|p| p.get("inputResponses")) {
                    Some(Value::Object(responses)) => task.give_input(responses),
                    Some(other) => {
                        return Err(RpcError::new(
                            INVALID_PARAMS,
                            format!(
                                "invalid params: `inputResponses` must be an object of answers by question key, got {}",
                                crate::tool_args::json_kind(other)
                            ),
                        ));
                    }
                    None => {
                        return Err(RpcError::new(
                            INVALID_PARAMS,
                            "invalid params: `inputResponses` is missing (the answers, by the keys of the task's `inputRequests`)",
                        ));
                    }
                };
                tracing::info!(task = %task.id, taken, "tasks/update");
                json!({})
            }
            _ => {
                // tasks/result: at once when the call has ended, else later.
                match task.wait_end(Some(Duration::ZERO), None) {
                    Some(end) => return result_of(&task, end).map(|r| Some((Some(era), r))),
                    None => return Ok(None),
                }
            }
        };
        Ok(Some((Some(era), result)))
    }

    /// A `tasks/result` for a task still working: answered from a thread
    /// when the call ends (or with an error when the task expires first).
    fn task_result_later(self: &Arc<Self>, request: &Request<'_>) -> Reply {
        let task = match self.store().and_then(|s| s.get(task_id(request.params)?)) {
            Ok(task) => task,
            Err(e) => return Reply::Now(Err(e)),
        };
        let Some(call) = self.inflight.start(request.key.clone()) else {
            return Reply::Now(Err(RpcError::new(
                INVALID_REQUEST,
                format!("invalid request: request id {} already in flight", request.id),
            )));
        };
        let inner = self.clone();
        let (id, key) = (request.id.clone(), request.key.clone());
        let worker = self.inflight.worker();
        let spawned = std::thread::Builder::new()
            .name("mcp-task-result".into())
            .spawn(move || {
                let _worker = worker;
                // Counted while it waits: a question of the task goes out now.
                let waiting = task.result_waiter();
                let end = task.wait_end(None, Some(&call.token));
                drop(waiting);
                let line = match end.map(|end| result_of(&task, end)) {
                    Some(Ok(result)) => jsonrpc::response(&id, result),
                    Some(Err(e)) => jsonrpc::error_response(&id, &e),
                    None => jsonrpc::error_response(&id, &super::not_found(&task.id, true)),
                };
                inner.inflight.finish(&key, &call, || (inner.outbound)(line, Some(&id)));
            });
        self.answered_later(spawned, request.key, "a thread for tasks/result")
    }
}

/// What `tasks/result` returns: exactly the call's result (with the
/// related-task `_meta`), or its JSON-RPC error.
fn result_of(task: &Task, end: End) -> Result<Value, RpcError> {
    match end {
        End::Result { result, .. } => Ok(shape::with_related(result, &task.id)),
        End::Error(e) => Err(e),
    }
}
