//! JSON-RPC 2.0 framing: parsing one incoming line, building responses,
//! errors and notifications (compact, one line each).

use serde_json::{Map, Value, json};

/// The line was not JSON (or not UTF-8).
pub const PARSE_ERROR: i64 = -32700;
/// The JSON was not a valid request (or the line was too long).
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist on this server.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The parameters were missing or of the wrong shape.
pub const INVALID_PARAMS: i64 = -32602;
/// A failure inside the server (a bug).
pub const INTERNAL_ERROR: i64 = -32603;
/// The server is shutting down and takes no new calls.
pub const SHUTTING_DOWN: i64 = -32000;
/// The request's protocol revision is not one this server speaks (2026-07-28 era).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// The request needs a client capability it did not declare (2026-07-28 era;
/// `data.requiredCapabilities` names it).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// One of the codes above.
    pub code: i64,
    /// A sentence naming the problem.
    pub message: String,
    /// Optional structured detail.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds structured data.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    fn to_value(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

/// A request id, as a map key: integers and strings never collide.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum IdKey {
    Int(i128),
    Str(String),
}

impl IdKey {
    /// The key of an id value; `None` for anything but a string or an integer.
    pub(crate) fn of(id: &Value) -> Option<Self> {
        match id {
            Value::String(s) => Some(Self::Str(s.clone())),
            Value::Number(n) => n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from))
                .map(Self::Int),
            _ => None,
        }
    }
}

/// One parsed message.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A call that wants an answer.
    Request {
        id: Value,
        key: IdKey,
        method: String,
        params: Option<Value>,
    },
    /// A message that must not be answered.
    Notification { method: String, params: Option<Value> },
    /// A response from the peer to a request this server sent (an
    /// elicitation): its id, and its result or error object.
    Response {
        key: Option<IdKey>,
        outcome: Result<Value, Value>,
    },
}

/// Why a line could not be used: the error and the id to answer with
/// (`Value::Null` when none could be read), or `None` when nothing may be
/// answered (a malformed notification).
pub(crate) type ParseFailure = Option<(Value, RpcError)>;

/// Parses one line (without its newline).
pub(crate) fn parse(line: &[u8]) -> Result<Incoming, ParseFailure> {
    let text = std::str::from_utf8(line).map_err(|e| {
        Some((
            Value::Null,
            RpcError::new(
                PARSE_ERROR,
                format!(
                    "parse error: the message is not valid UTF-8 (invalid byte at offset {})",
                    e.valid_up_to()
                ),
            ),
        ))
    })?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Some((Value::Null, RpcError::new(PARSE_ERROR, format!("parse error: {e}")))))?;
    let mut map = match value {
        Value::Object(map) => map,
        Value::Array(_) => {
            return Err(Some((
                Value::Null,
                RpcError::new(
                    INVALID_REQUEST,
                    "invalid request: JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send one message per line",
                ),
            )));
        }
        other => {
            return Err(Some((
                Value::Null,
                RpcError::new(
                    INVALID_REQUEST,
                    format!(
                        "invalid request: expected a JSON object, got {}",
                        crate::tool_args::json_kind(&other)
                    ),
                ),
            )));
        }
    };
    let id = map.remove("id");
    let key = id.as_ref().map(IdKey::of);
    // The id to answer with: the request's own when it is usable, else null.
    let reply_id = match (&id, &key) {
        (Some(id), Some(Some(_))) => id.clone(),
        _ => Value::Null,
    };
    let invalid = |message: String| Err(Some((reply_id.clone(), RpcError::new(INVALID_REQUEST, message))));
    if map.get("jsonrpc") != Some(&Value::from("2.0")) {
        return invalid("invalid request: `jsonrpc` must be \"2.0\"".into());
    }
    let method = match map.remove("method") {
        Some(Value::String(method)) => method,
        Some(other) => {
            return invalid(format!(
                "invalid request: `method` must be a string, got {}",
                crate::tool_args::json_kind(&other)
            ));
        }
        None if id.is_some() && (map.contains_key("result") || map.contains_key("error")) => {
            let outcome = match map.remove("result") {
                Some(result) => Ok(result),
                None => Err(map.remove("error").unwrap_or(Value::Null)),
            };
            return Ok(Incoming::Response {
                key: key.flatten(),
                outcome,
            });
        }
        None => return invalid("invalid request: `method` is missing".into()),
    };
    let params = map.remove("params");
    match (id, key) {
        (None, _) => Ok(Incoming::Notification { method, params }),
        (Some(id), Some(Some(key))) => Ok(Incoming::Request {
            id,
            key,
            method,
            params,
        }),
        (Some(id), _) => invalid(format!(
            "invalid request: `id` must be a string or an integer, got {}",
            describe_id(&id)
        )),
    }
}

fn describe_id(id: &Value) -> String {
    match id {
        Value::Number(n) => format!("the number {n}"),
        other => crate::tool_args::json_kind(other).to_owned(),
    }
}

/// `{"jsonrpc":"2.0","id":...,"result":...}`
pub(crate) fn response(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// `{"jsonrpc":"2.0","id":...,"error":{...}}`
pub(crate) fn error_response(id: &Value, error: &RpcError) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_value()}).to_string()
}

/// `{"jsonrpc":"2.0","method":...,"params":...}`
pub(crate) fn notification(method: &str, params: Map<String, Value>) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(line: &str) -> (Value, i64) {
        match parse(line.as_bytes()) {
            Err(Some((id, e))) => (id, e.code),
            other => panic!("expected an error for {line}, got {other:?}"),
        }
    }

    #[test]
    fn classifies_messages() {
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(Incoming::Request { key: IdKey::Int(1), .. })
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#),
            Ok(Incoming::Request { key: IdKey::Str(_), .. })
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Incoming::Notification { .. })
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":4,"result":{}}"#),
            Ok(Incoming::Response {
                key: Some(IdKey::Int(4)),
                outcome: Ok(_)
            })
        ));
    }

    #[test]
    fn rejects_bad_messages() {
        assert_eq!(err("{"), (Value::Null, PARSE_ERROR));
        assert_eq!(err("[]"), (Value::Null, INVALID_REQUEST));
        assert_eq!(err("7"), (Value::Null, INVALID_REQUEST));
        assert_eq!(err(r#"{"id":3,"method":"ping"}"#), (json!(3), INVALID_REQUEST));
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","id":3,"method":5}"#),
            (json!(3), INVALID_REQUEST)
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#),
            (Value::Null, INVALID_REQUEST)
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            (Value::Null, INVALID_REQUEST)
        );
        assert_eq!(err(r#"{"jsonrpc":"2.0","id":2}"#), (json!(2), INVALID_REQUEST));
        match parse(b"{\"a\":\"\xff\"}") {
            Err(Some((_, e))) => assert!(e.message.contains("UTF-8"), "{}", e.message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn integer_and_string_ids_differ() {
        assert_ne!(IdKey::of(&json!(1)), IdKey::of(&json!("1")));
        assert_eq!(IdKey::of(&json!(u64::MAX)), Some(IdKey::Int(u64::MAX as i128)));
        assert_eq!(IdKey::of(&json!(-3)), Some(IdKey::Int(-3)));
    }
}
