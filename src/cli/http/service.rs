//! One HTTP request: `/healthz`, and `/mcp` in both protocol eras.
//!
//! The era is chosen per request: a `MCP-Protocol-Version` header naming a
//! revision without a handshake (2026-07-28, or one this server does not
//! know, which the stateless checks then refuse by name) goes to the one
//! stateless endpoint; everything else belongs to a session that
//! `initialize` opened (`Mcp-Session-Id`).

use std::sync::Arc;

use bash_mcp::mcp::{
    CLIENT_CAPABILITIES_KEY, HANDSHAKE_VERSIONS, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY, PARSE_ERROR, PROTOCOL_VERSION_KEY, UNSUPPORTED_PROTOCOL_VERSION,
};
use hyper::body::Incoming;
use hyper::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use serde_json::{Map, Value, json};

use super::Front;
use super::access::Refusal;
use super::endpoint::{Answer, Endpoint, Frame};
use super::sessions::Session;
use super::sse::{self, ResponseBody};

/// The MCP endpoint's path.
pub const MCP_PATH: &str = "/mcp";
/// The health endpoint's path.
pub const HEALTH_PATH: &str = "/healthz";

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
/// The headers' disagreement with the body (2026-07-28).
const HEADER_MISMATCH: i64 = -32020;

type Reply = Response<ResponseBody>;

pub async fn handle(front: Arc<Front>, request: Request<Incoming>) -> Result<Reply, std::convert::Infallible> {
    let path = request.uri().path();
    if let Some(oauth) = front.access.oauth()
        && (path == oauth.metadata_path() || path == super::oauth::METADATA_PREFIX)
    {
        // The protected-resource metadata: public, as clients read it before they have a token.
        let mut reply = Response::new(sse::full(oauth.metadata().to_string()));
        reply
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        return Ok(reply);
    }
    if path == HEALTH_PATH {
        // Probes: no credentials, nothing run.
        return Ok(if request.method() == Method::GET || request.method() == Method::HEAD {
            text(StatusCode::OK, "ok\n")
        } else {
            with_allow(text(StatusCode::METHOD_NOT_ALLOWED, "GET /healthz\n"), "GET, HEAD")
        });
    }
    if path != MCP_PATH {
        return Ok(text(
            StatusCode::NOT_FOUND,
            &format!("no such endpoint {path:?}: MCP is served at {MCP_PATH}, health at {HEALTH_PATH}\n"),
        ));
    }
    if let Err(refusal) = front.access.check_origin(request.headers()) {
        return Ok(refused(&refusal));
    }
    let principal = match front.access.check_auth(request.headers()) {
        Ok(principal) => principal,
        Err(refusal) => return Ok(refused(&refusal)),
    };
    let stateless = request
        .headers()
        .get(VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| !HANDSHAKE_VERSIONS.contains(&v));
    Ok(match (request.method().clone(), stateless) {
        (Method::POST, true) => post_stateless(front, request, principal).await,
        (Method::POST, false) => post_session(front, request, principal).await,
        (Method::GET, false) => get_stream(front, request.headers()),
        (Method::DELETE, false) => delete_session(front, request.headers()).await,
        (_, true) => with_allow(
            text(StatusCode::METHOD_NOT_ALLOWED, "a 2026-07-28 request is a POST\n"),
            "POST",
        ),
        _ => with_allow(
            text(StatusCode::METHOD_NOT_ALLOWED, "MCP takes POST, GET and DELETE\n"),
            "GET, POST, DELETE",
        ),
    })
}

/// A 2026-07-28 request: no session, headers checked against the body.
async fn post_stateless(front: Arc<Front>, request: Request<Incoming>, principal: Option<String>) -> Reply {
    let (parts, body) = request.into_parts();
    let message = match read_message(&front, &parts.headers, body).await {
        Ok(message) => message,
        Err(reply) => return reply,
    };
    if !message.contains_key("id") {
        // The revision defines no notification from client to server over
        // HTTP (a client cancels by closing the stream): acknowledged, dropped.
        return if message.contains_key("method") {
            status_only(StatusCode::ACCEPTED)
        } else {
            rpc_error(
                StatusCode::BAD_REQUEST,
                Value::Null,
                INVALID_REQUEST,
                "a POST carries one JSON-RPC request or notification",
            )
        };
    }
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    if !message.contains_key("method") {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            INVALID_REQUEST,
            "a POST carries one JSON-RPC request or notification; this server sends no requests to answer",
        );
    }
    if let Err(message_text) = check_routing_headers(&parts.headers, &message) {
        return rpc_error(StatusCode::BAD_REQUEST, id, HEADER_MISMATCH, &message_text);
    }
    let endpoint = front.stateless.clone();
    answer(endpoint, message, principal, &parts.headers, true, None).await
}

/// A handshake-era POST: `initialize` opens a session, anything else names one.
async fn post_session(front: Arc<Front>, request: Request<Incoming>, principal: Option<String>) -> Reply {
    let (parts, body) = request.into_parts();
    let message = match read_message(&front, &parts.headers, body).await {
        Ok(message) => message,
        Err(reply) => return reply,
    };
    let initialize = message.get("method").and_then(Value::as_str) == Some("initialize") && message.contains_key("id");
    let (session, new_id) = match session_of(&front, &parts.headers) {
        Ok(Some(session)) => (session, None),
        Ok(None) if initialize => {
            let endpoint = Endpoint::new(front.server.clone(), front.options.clone());
            match front.sessions.open(endpoint) {
                Ok((id, session)) => (session, Some(id)),
                Err(why) => return text(StatusCode::SERVICE_UNAVAILABLE, &format!("{why}\n")),
            }
        }
        Ok(None) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                message.get("id").cloned().unwrap_or(Value::Null),
                INVALID_REQUEST,
                "Bad Request: no Mcp-Session-Id header: send `initialize` first and then the session id it answers with \
                 (or send 2026-07-28 requests with their MCP-Protocol-Version header)",
            );
        }
        Err(reply) => return *reply,
    };
    let _active = session.active();
    if !message.contains_key("id") || !message.contains_key("method") {
        // A notification, or the client's answer to a request of the server
        // (a question for the person during a call).
        let endpoint = session.endpoint.clone();
        let is_notification = message.contains_key("method");
        let _ = tokio::task::spawn_blocking(move || {
            if is_notification {
                endpoint.notify(message)
            } else {
                endpoint.respond(message)
            }
        })
        .await;
        return status_only(StatusCode::ACCEPTED);
    }
    let mut reply = answer(
        session.endpoint.clone(),
        message,
        principal,
        &parts.headers,
        false,
        Some(session.clone()),
    )
    .await;
    if let Some(id) = new_id {
        let ok = reply.status() == StatusCode::OK;
        if ok && let Ok(value) = HeaderValue::from_str(&id) {
            reply.headers_mut().insert(SESSION_HEADER, value);
        } else {
            // A failed initialize leaves no session behind.
            if let Some(session) = front.sessions.remove(&id) {
                tokio::task::spawn_blocking(move || session.endpoint.shutdown_within(std::time::Duration::ZERO));
            }
        }
    }
    reply
}

/// Hands a request to `endpoint` and answers: JSON when the answer is there
/// at once or the client takes no event stream, else an SSE stream.
async fn answer(
    endpoint: Arc<Endpoint>,
    message: Map<String, Value>,
    principal: Option<String>,
    headers: &HeaderMap,
    stateless: bool,
    session: Option<Arc<Session>>,
) -> Reply {
    let handed = tokio::task::spawn_blocking(move || endpoint.request(message, principal.as_deref())).await;
    let Ok(answer) = handed else {
        return text(StatusCode::INTERNAL_SERVER_ERROR, "the request's handler failed\n");
    };
    match answer {
        Answer::Now(line) => json_reply(&line, stateless),
        Answer::Later(exchange) if accepts(headers, "text/event-stream") => {
            let active = session.map(|s| s.active());
            let mut reply = Response::new(sse::stream(exchange, active));
            set_sse_headers(reply.headers_mut());
            reply
        }
        Answer::Later(mut exchange) => {
            // Dropped with this future when the client goes away: the call is cancelled.
            let _active = session.map(|s| s.active());
            loop {
                match exchange.frames.recv().await {
                    Some(Frame::Last(line)) => break json_reply(&line, stateless),
                    Some(Frame::Message(_)) => continue,
                    None => break text(StatusCode::SERVICE_UNAVAILABLE, "the server is shutting down\n"),
                }
            }
        }
    }
}

/// GET: the session's stream of messages that belong to no request.
fn get_stream(front: Arc<Front>, headers: &HeaderMap) -> Reply {
    if !accepts(headers, "text/event-stream") {
        return text(
            StatusCode::NOT_ACCEPTABLE,
            "GET /mcp opens an event stream: send Accept: text/event-stream\n",
        );
    }
    let session = match session_of(&front, headers) {
        Ok(Some(session)) => session,
        Ok(None) => {
            return text(
                StatusCode::BAD_REQUEST,
                "GET /mcp needs the Mcp-Session-Id header of a session\n",
            );
        }
        Err(reply) => return *reply,
    };
    let Some(listening) = session.endpoint.listen() else {
        return text(StatusCode::CONFLICT, "this session has a GET stream open already\n");
    };
    let mut reply = Response::new(sse::stream(listening, session.active()));
    set_sse_headers(reply.headers_mut());
    reply
}

/// DELETE: ends the session, cancelling its calls.
async fn delete_session(front: Arc<Front>, headers: &HeaderMap) -> Reply {
    let id = match headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
        Some(id) => id.to_owned(),
        None => {
            return text(
                StatusCode::BAD_REQUEST,
                "DELETE /mcp needs the Mcp-Session-Id header of the session to end\n",
            );
        }
    };
    let Some(session) = front.sessions.remove(&id) else {
        return text(StatusCode::NOT_FOUND, "no such session (ended or idled out)\n");
    };
    tracing::info!(session = %id, "session ended by the client");
    let endpoint = session.endpoint.clone();
    let _ = tokio::task::spawn_blocking(move || endpoint.shutdown_within(std::time::Duration::from_secs(5))).await;
    status_only(StatusCode::OK)
}

/// The session a request names: `Ok(None)` when it names none, a 404 when
/// it names one that does not exist (any more).
fn session_of(front: &Front, headers: &HeaderMap) -> Result<Option<Arc<Session>>, Box<Reply>> {
    let Some(id) = headers.get(SESSION_HEADER) else {
        return Ok(None);
    };
    let found = id.to_str().ok().and_then(|id| front.sessions.get(id));
    match found {
        Some(session) => Ok(Some(session)),
        None => Err(Box::new(rpc_error(
            StatusCode::NOT_FOUND,
            Value::Null,
            INVALID_REQUEST,
            "Not Found: no such MCP session (it ended or idled out): send `initialize` without Mcp-Session-Id to start a new one",
        ))),
    }
}

/// Reads and parses a POST body: one JSON object, within the size limit.
async fn read_message(front: &Front, headers: &HeaderMap, body: Incoming) -> Result<Map<String, Value>, Reply> {
    if !(accepts(headers, "application/json") || accepts(headers, "text/event-stream")) {
        return Err(text(
            StatusCode::NOT_ACCEPTABLE,
            "send Accept: application/json, text/event-stream (the answers are one or the other)\n",
        ));
    }
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim();
    if !media.eq_ignore_ascii_case("application/json") {
        return Err(text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &format!("a POST to {MCP_PATH} carries application/json; got Content-Type {content_type:?}\n"),
        ));
    }
    let limit = front.max_body;
    let too_large = || {
        text(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the request body is over the limit of {limit} bytes\n"),
        )
    };
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    use http_body_util::BodyExt;
    let bytes = match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
        Err(e) => {
            return Err(text(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the request body: {e}\n"),
            ));
        }
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(message)) => Ok(message),
        Ok(Value::Array(_)) => Err(rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            INVALID_REQUEST,
            "invalid request: batches are not supported; send one JSON-RPC message per POST",
        )),
        Ok(_) => Err(rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            INVALID_REQUEST,
            "invalid request: the body must be one JSON-RPC message (an object)",
        )),
        Err(e) => Err(rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            PARSE_ERROR,
            &format!("parse error: the body is not JSON: {e}"),
        )),
    }
}

/// The 2026-07-28 routing headers against the body: each present once,
/// `MCP-Protocol-Version` equal to the envelope's version, `Mcp-Method` to
/// the method, `Mcp-Name` to the tool's name. A body without the envelope
/// passes: the handler says what it lacks.
fn check_routing_headers(headers: &HeaderMap, message: &Map<String, Value>) -> Result<(), String> {
    for name in [VERSION_HEADER, METHOD_HEADER, NAME_HEADER] {
        if headers.get_all(name).iter().count() > 1 {
            return Err(format!("the {name} header appears more than once"));
        }
    }
    let params = message.get("params").and_then(Value::as_object);
    let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object);
    let Some(meta) = meta.filter(|m| m.contains_key(PROTOCOL_VERSION_KEY) && m.contains_key(CLIENT_CAPABILITIES_KEY))
    else {
        return Ok(());
    };
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    if header(VERSION_HEADER).map(Value::from).as_ref() != meta.get(PROTOCOL_VERSION_KEY) {
        return Err(format!(
            "the {VERSION_HEADER} header ({:?}) does not match params._meta[\"{PROTOCOL_VERSION_KEY}\"] ({})",
            header(VERSION_HEADER).unwrap_or(""),
            meta.get(PROTOCOL_VERSION_KEY).unwrap_or(&Value::Null)
        ));
    }
    let method = message.get("method").and_then(Value::as_str);
    if header(METHOD_HEADER) != method {
        return Err(format!(
            "the {METHOD_HEADER} header ({:?}) does not match the body's method ({:?})",
            header(METHOD_HEADER).unwrap_or(""),
            method.unwrap_or("")
        ));
    }
    if method == Some("tools/call")
        && let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str)
        && header(NAME_HEADER).and_then(decode_header_value).as_deref() != Some(name)
    {
        return Err(format!(
            "the {NAME_HEADER} header ({:?}) does not match the tool name in the body ({name:?})",
            header(NAME_HEADER).unwrap_or("")
        ));
    }
    Ok(())
}

/// A header value as sent: verbatim, or `=?base64?…?=` for a value that is
/// not printable ASCII (the encoding the specification gives).
fn decode_header_value(value: &str) -> Option<String> {
    let Some(payload) = value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) else {
        return Some(value.to_owned());
    };
    let bytes = base64_decode(payload)?;
    String::from_utf8(bytes).ok()
}

/// Standard base64 with padding; `None` for anything else.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if !text.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for chunk in text.as_bytes().chunks(4) {
        let pad = chunk.iter().rev().take_while(|b| **b == b'=').count();
        if pad > 2 {
            return None;
        }
        let mut n: u32 = 0;
        for (i, b) in chunk.iter().enumerate() {
            let v = if i >= 4 - pad {
                0
            } else {
                u32::try_from(ALPHABET.iter().position(|a| a == b)?).ok()?
            };
            n = (n << 6) | v;
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..4 - pad]);
    }
    Some(out)
}

/// A JSON-RPC response as an HTTP response. Stateless-era errors about the
/// request itself carry a 4xx status, as the specification asks; in the
/// handshake era a JSON-RPC error is an answer like any other (200).
fn json_reply(line: &str, stateless: bool) -> Reply {
    let code = serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.get("code")).and_then(Value::as_i64));
    let status =
        match code {
            Some(PARSE_ERROR | INVALID_REQUEST) => StatusCode::BAD_REQUEST,
            Some(
                INVALID_PARAMS | HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION,
            ) if stateless => StatusCode::BAD_REQUEST,
            Some(METHOD_NOT_FOUND) if stateless => StatusCode::NOT_FOUND,
            _ => StatusCode::OK,
        };
    let mut reply = Response::new(sse::full(line.to_owned()));
    *reply.status_mut() = status;
    reply
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    reply
}

fn rpc_error(status: StatusCode, id: Value, code: i64, message: &str) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut reply = Response::new(sse::full(body.to_string()));
    *reply.status_mut() = status;
    reply
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    reply
}

fn refused(refusal: &Refusal) -> Reply {
    match refusal {
        Refusal::Host(host) => text(
            StatusCode::MISDIRECTED_REQUEST,
            &format!(
                "Host {host:?} is not a loopback name: this server listens on loopback and answers only requests for \
                 localhost, 127.0.0.1 or [::1] (a page elsewhere must not reach it through DNS rebinding)\n"
            ),
        ),
        Refusal::Origin(origin) => text(
            StatusCode::FORBIDDEN,
            &format!(
                "Origin {origin:?} is not allowed: start the server with --allow-origin {origin} to let pages from it call\n"
            ),
        ),
        Refusal::Unauthenticated {
            why,
            challenge,
            forbidden,
        } => {
            let (status, lead) = if *forbidden {
                (StatusCode::FORBIDDEN, "the token does not allow this")
            } else {
                (StatusCode::UNAUTHORIZED, "authentication required")
            };
            let mut reply = text(status, &format!("{lead}: {why}; send Authorization: Bearer <token>\n"));
            if let Ok(value) = HeaderValue::from_str(challenge) {
                reply.headers_mut().insert(hyper::header::WWW_AUTHENTICATE, value);
            }
            reply
        }
    }
}

/// Whether the `Accept` header takes `media` (or anything).
fn accepts(headers: &HeaderMap, media: &str) -> bool {
    let (kind, _) = media.split_once('/').unwrap_or((media, ""));
    headers.get_all(ACCEPT).iter().filter_map(|v| v.to_str().ok()).any(|v| {
        v.split(',')
            .map(|m| m.split(';').next().unwrap_or("").trim())
            .any(|m| m.eq_ignore_ascii_case(media) || m == "*/*" || m.eq_ignore_ascii_case(&format!("{kind}/*")))
    })
}

fn set_sse_headers(headers: &mut HeaderMap) {
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(
        hyper::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
}

fn text(status: StatusCode, body: &str) -> Reply {
    let mut reply = Response::new(sse::full(body.to_owned()));
    *reply.status_mut() = status;
    reply
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    reply
}

fn status_only(status: StatusCode) -> Reply {
    let mut reply = Response::new(sse::empty());
    *reply.status_mut() = status;
    reply
}

fn with_allow(mut reply: Reply, allow: &'static str) -> Reply {
    reply
        .headers_mut()
        .insert(hyper::header::ALLOW, HeaderValue::from_static(allow));
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_header_values() {
        assert_eq!(decode_header_value("execute").as_deref(), Some("execute"));
        assert_eq!(
            decode_header_value("=?base64?ZXhlY3V0ZQ==?=").as_deref(),
            Some("execute")
        );
        assert_eq!(decode_header_value("=?base64?w6k=?=").as_deref(), Some("é"));
        assert_eq!(decode_header_value("=?base64?!!!!?="), None);
        assert_eq!(decode_header_value("=?base64?abc?="), None);
    }
}
