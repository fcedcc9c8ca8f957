//! One MCP handler behind HTTP, and the routing of what it sends.
//!
//! The library's handler answers some requests at once and the others
//! (`tools/call`, a waiting `tasks/result`) later, through one outbound
//! callback, from worker threads. Over HTTP each answer must reach the
//! response of the POST that asked, so every request gets an id of the
//! endpoint's own (`http-N`) on its way in: the outbound callback finds the
//! waiting exchange by it, puts the client's id back, and hands the message
//! over. What the handler sends while a call runs (progress, log messages,
//! questions to the client) names the request it belongs to, and goes on
//! that request's stream; a request's `progressToken` is renamed to its
//! key too, so progress finds the stream even without that. Renaming also keeps clients apart on the one
//! endpoint that serves every stateless (2026-07-28) request: two clients
//! may both send id 1.
//!
//! An exchange dropped before its answer (the client went away) cancels
//! its call, as `notifications/cancelled` would: without resumable streams
//! its result could not be delivered anywhere.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bash_mcp::McpServer;
use bash_mcp::mcp::{HandlerOptions, McpHandler};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

/// A message for one HTTP response.
pub enum Frame {
    /// A notification for the request (progress).
    Message(String),
    /// The answer; nothing follows it.
    Last(String),
}

struct Waiting {
    /// The client's id of the request.
    id: Value,
    /// The client's progress token, when it sent one.
    token: Option<Value>,
    tx: mpsc::UnboundedSender<Frame>,
}

#[derive(Default)]
struct Routes {
    waiting: Mutex<HashMap<String, Waiting>>,
    /// The GET stream of a session, when one is open: messages that belong
    /// to no request go there.
    listener: Mutex<Option<mpsc::UnboundedSender<Frame>>>,
}

impl Routes {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Delivers one outbound line of the handler; `related`: the key of
    /// the request it belongs to, if any.
    fn route(&self, line: String, related: Option<&Value>) {
        let Ok(Value::Object(mut message)) = serde_json::from_str::<Value>(&line) else {
            tracing::warn!("the handler sent a line that is not a JSON object; dropped");
            return;
        };
        let is_answer = message.contains_key("id") && !message.contains_key("method");
        if is_answer {
            let key = message.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
            match self.waiting().remove(&key) {
                Some(waiting) => {
                    message.insert("id".into(), waiting.id);
                    let _ = waiting.tx.send(Frame::Last(Value::Object(message).to_string()));
                }
                None => tracing::debug!(id = %key, "answer for an exchange that has ended; dropped"),
            }
            return;
        }
        let related = related.and_then(Value::as_str);
        if let Some(w) = related.and_then(|key| self.waiting().get(key).map(|w| (w.tx.clone(), w.token.clone()))) {
            let (tx, token) = w;
            if let Some(slot) = message.get_mut("params").and_then(|p| p.get_mut("progressToken")) {
                *slot = token.unwrap_or(Value::Null);
            }
            let _ = tx.send(Frame::Message(Value::Object(message).to_string()));
            return;
        }
        if message.get("method").and_then(Value::as_str) == Some("notifications/progress") {
            let token = message.get_mut("params").and_then(|p| p.get_mut("progressToken"));
            let key = token.as_deref().and_then(Value::as_str).unwrap_or_default().to_owned();
            let waiting = self.waiting();
            if let (Some(w), Some(token)) = (waiting.get(&key), token) {
                *token = w.token.clone().unwrap_or(Value::Null);
                let _ = w.tx.send(Frame::Message(Value::Object(message).to_string()));
            }
            return;
        }
        if let Some(tx) = &*self.listener.lock().unwrap_or_else(PoisonError::into_inner)
            && tx.send(Frame::Message(line.clone())).is_ok()
        {
            return;
        }
        if message.contains_key("id") {
            // A request to the client (a question for the person during a
            // call) without a GET stream: on the streams of the requests
            // waiting, all this one client's. It answers once (a second
            // answer to the same id is ignored).
            let waiting = self.waiting();
            for w in waiting.values() {
                let _ = w.tx.send(Frame::Message(line.clone()));
            }
            if waiting.is_empty() {
                tracing::warn!("a request to the client with no stream open to carry it; dropped");
            }
            return;
        }
        tracing::debug!("a notification for no request and no open GET stream; dropped");
    }
}

/// An MCP handler and the exchanges waiting for its answers.
pub struct Endpoint {
    handler: McpHandler,
    routes: Arc<Routes>,
    next: AtomicU64,
}

/// What a request gets.
pub enum Answer {
    /// The whole answer, now.
    Now(String),
    /// The answer will come on this exchange.
    Later(Exchange),
}

/// A request whose answer comes later. Dropping it before the answer
/// cancels the call.
pub struct Exchange {
    endpoint: Arc<Endpoint>,
    key: String,
    pub frames: mpsc::UnboundedReceiver<Frame>,
}

impl Drop for Exchange {
    fn drop(&mut self) {
        self.endpoint.abandon(&self.key);
    }
}

/// Keeps a session's GET stream registered while it lives.
pub struct Listening {
    endpoint: Arc<Endpoint>,
    pub frames: mpsc::UnboundedReceiver<Frame>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        *self
            .endpoint
            .routes
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }
}

impl Endpoint {
    pub fn new(server: Arc<dyn McpServer>, options: HandlerOptions) -> Arc<Self> {
        let routes = Arc::new(Routes::default());
        let out = routes.clone();
        let handler = McpHandler::with_routing(server, move |line, related| out.route(line, related), options);
        Arc::new(Self {
            handler,
            routes,
            next: AtomicU64::new(1),
        })
    }

    /// Hands a request (an object with `id` and `method`) to the handler.
    /// Blocking: call it off the async runtime.
    /// `principal`: who sent it (an OAuth token's subject), for the audit log.
    pub fn request(self: &Arc<Self>, mut message: Map<String, Value>, principal: Option<&str>) -> Answer {
        let key = format!("http-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let id = message.insert("id".into(), key.clone().into()).unwrap_or(Value::Null);
        let token = message
            .get_mut("params")
            .and_then(|p| p.get_mut("_meta"))
            .and_then(|m| m.get_mut("progressToken"))
            .filter(|t| !t.is_null())
            .map(|t| std::mem::replace(t, key.clone().into()));
        let (tx, frames) = mpsc::unbounded_channel();
        self.routes.waiting().insert(
            key.clone(),
            Waiting {
                id: id.clone(),
                token,
                tx,
            },
        );
        let exchange = Exchange {
            endpoint: self.clone(),
            key: key.clone(),
            frames,
        };
        let line = Value::Object(message).to_string();
        match self.handler.handle_line_as(&line, principal).pop() {
            Some(reply) => {
                self.routes.waiting().remove(&key);
                Answer::Now(with_id(&reply, id))
            }
            None => Answer::Later(exchange),
        }
    }

    /// Hands a response of the client (to a request of the server's) to
    /// the handler. Blocking: call it off the async runtime.
    pub fn respond(&self, message: Map<String, Value>) {
        let _ = self.handler.handle_line(&Value::Object(message).to_string());
    }

    /// Hands a notification to the handler; a `notifications/cancelled`
    /// names the request by the client's id, which is translated here.
    /// Blocking: call it off the async runtime.
    pub fn notify(&self, mut message: Map<String, Value>) {
        if message.get("method").and_then(Value::as_str) == Some("notifications/cancelled") {
            let Some(request) = message.get_mut("params").and_then(|p| p.get_mut("requestId")) else {
                return;
            };
            let key = self
                .routes
                .waiting()
                .iter()
                .find(|(_, w)| w.id == *request)
                .map(|(key, _)| key.clone());
            let Some(key) = key else {
                tracing::debug!(request = %request, "cancel for a request not waiting; ignored");
                return;
            };
            *request = key.into();
        }
        let _ = self.handler.handle_line(&Value::Object(message).to_string());
    }

    /// Opens the GET stream, unless one is open already.
    pub fn listen(self: &Arc<Self>) -> Option<Listening> {
        let mut listener = self.routes.listener.lock().unwrap_or_else(PoisonError::into_inner);
        if listener.as_ref().is_some_and(|tx| !tx.is_closed()) {
            return None;
        }
        let (tx, frames) = mpsc::unbounded_channel();
        *listener = Some(tx);
        Some(Listening {
            endpoint: self.clone(),
            frames,
        })
    }

    /// The number of requests waiting for their answer.
    pub fn waiting(&self) -> usize {
        self.routes.waiting().len()
    }

    /// Cancels every call and waits for the workers (at most `limit`).
    pub fn shutdown_within(&self, limit: std::time::Duration) -> bool {
        self.handler.shutdown_within(limit)
    }

    fn abandon(&self, key: &str) {
        if self.routes.waiting().remove(key).is_none() {
            return;
        }
        tracing::info!(
            request = key,
            "the client went away before the answer; cancelling the call"
        );
        let cancel = json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": key, "reason": "the HTTP client disconnected"},
        });
        let _ = self.handler.handle_line(&cancel.to_string());
    }
}

/// `reply` (a JSON-RPC response line) with the client's `id` put back.
fn with_id(reply: &str, id: Value) -> String {
    match serde_json::from_str::<Value>(reply) {
        Ok(Value::Object(mut message)) => {
            // An error about the message itself (id null) keeps its null.
            if message.get("id").is_some_and(|v| !v.is_null()) {
                message.insert("id".into(), id);
            }
            Value::Object(message).to_string()
        }
        _ => reply.to_owned(),
    }
}
