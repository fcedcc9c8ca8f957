//! `requestState` of the 2026-07-28 `input_required` results: what lets a
//! retry carry the person's answer without the server keeping the call
//! open. Integrity-protected with HMAC-SHA-256 under a random key of this
//! server's own, bound to a digest of the exact request (tool name and
//! arguments), expiring, and accepted once.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// How long an issued `requestState` stays valid: 10 minutes.
pub const DEFAULT_REQUEST_STATE_TTL: Duration = Duration::from_secs(600);

const VERSION: &str = "v1";

/// Issues and checks request states.
pub(super) struct StateKeeper {
    /// `None` when the kernel gave no random key: no state is issued, so a
    /// stateless client cannot be asked (it is refused, as without elicitation).
    key: Option<Vec<u8>>,
    ttl: Duration,
    /// Nonces already accepted, with their expiry (seconds since the epoch).
    used: Mutex<HashMap<String, u64>>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `value` as JSON text with every object's keys sorted, so the same
/// request always gives the same text.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::from(k.as_str()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// The digest of a `tools/call` request: SHA-256 of its tool and arguments.
pub(super) fn request_digest(tool: &str, arguments: &Map<String, Value>) -> String {
    let text = canonical(&serde_json::json!({"name": tool, "arguments": arguments}));
    hex(&Sha256::digest(text.as_bytes()))
}

impl StateKeeper {
    pub(super) fn new(ttl: Duration) -> Self {
        let key = match (crate::process::ids::random_hex(), crate::process::ids::random_hex()) {
            (Ok(a), Ok(b)) => Some(format!("{a}{b}").into_bytes()),
            _ => {
                tracing::warn!("no random key for requestState: 2026-07-28 clients will not be asked");
                None
            }
        };
        Self {
            key,
            ttl,
            used: Mutex::new(HashMap::new()),
        }
    }

    fn mac(&self, key: &[u8], text: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes a key of any length");
        mac.update(text.as_bytes());
        mac
    }

    /// A new state for the request whose digest is `digest`, or `None`
    /// without a key.
    pub(super) fn issue(&self, digest: &str) -> Option<String> {
        let key = self.key.as_ref()?;
        let nonce = crate::process::ids::random_hex().ok()?;
        let body = format!("{VERSION}.{nonce}.{}.{digest}", now() + self.ttl.as_secs());
        let tag = hex(&self.mac(key, &body).finalize().into_bytes());
        Some(format!("{body}.{tag}"))
    }

    /// Accepts `state` for the request whose digest is `digest`, once; the
    /// error says what is wrong with it.
    pub(super) fn accept(&self, state: &str, digest: &str) -> Result<(), String> {
        let forged = || "requestState was not issued by this server, or was altered".to_owned();
        let key = self.key.as_ref().ok_or_else(forged)?;
        let (body, tag) = state.rsplit_once('.').ok_or_else(forged)?;
        let tag = (0..tag.len())
            .step_by(2)
            .map(|i| tag.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(forged)?;
        self.mac(key, body).verify_slice(&tag).map_err(|_| forged())?;
        let mut fields = body.split('.');
        let (Some(VERSION), Some(nonce), Some(expiry), Some(bound), None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return Err(forged());
        };
        let expiry: u64 = expiry.parse().map_err(|_| forged())?;
        let now = now();
        if expiry < now {
            return Err(format!(
                "requestState expired {} s ago (it is valid for {} s)",
                now - expiry,
                self.ttl.as_secs()
            ));
        }
        if bound != digest {
            return Err("requestState belongs to another request (the tool or its arguments differ)".into());
        }
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        used.retain(|_, until| *until >= now);
        if used.insert(nonce.to_owned(), expiry).is_some() {
            return Err("requestState was already used; a state is accepted once".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(command: &str) -> Map<String, Value> {
        serde_json::json!({"command": command, "env": {"B": "2", "A": "1"}})
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn a_state_is_accepted_once_for_its_own_request() {
        let keeper = StateKeeper::new(DEFAULT_REQUEST_STATE_TTL);
        let digest = request_digest("execute", &args("make"));
        let state = keeper.issue(&digest).unwrap();
        let other = request_digest("execute", &args("make install"));
        assert!(keeper.accept(&state, &other).unwrap_err().contains("another request"));
        assert_eq!(keeper.accept(&state, &digest), Ok(()));
        assert!(keeper.accept(&state, &digest).unwrap_err().contains("already used"));
    }

    #[test]
    fn forged_altered_and_expired_states_are_refused() {
        let keeper = StateKeeper::new(DEFAULT_REQUEST_STATE_TTL);
        let digest = request_digest("execute", &args("make"));
        let state = keeper.issue(&digest).unwrap();
        // Another server's state: another key.
        let stranger = StateKeeper::new(DEFAULT_REQUEST_STATE_TTL).issue(&digest).unwrap();
        assert!(keeper.accept(&stranger, &digest).unwrap_err().contains("not issued"));
        // Any changed character.
        let mut altered = state.clone().into_bytes();
        altered[5] = if altered[5] == b'0' { b'1' } else { b'0' };
        let altered = String::from_utf8(altered).unwrap();
        assert!(keeper.accept(&altered, &digest).unwrap_err().contains("not issued"));
        assert!(keeper.accept("", &digest).unwrap_err().contains("not issued"));
        let expired = StateKeeper {
            ttl: Duration::ZERO,
            ..StateKeeper::new(DEFAULT_REQUEST_STATE_TTL)
        };
        let old = {
            let key = expired.key.as_ref().unwrap();
            let body = format!("{VERSION}.00ff.{}.{digest}", now() - 1);
            format!("{body}.{}", hex(&expired.mac(key, &body).finalize().into_bytes()))
        };
        assert!(expired.accept(&old, &digest).unwrap_err().contains("expired"));
    }

    #[test]
    fn the_digest_ignores_key_order_only() {
        let a: Map<String, Value> = serde_json::from_str(r#"{"command":"x","env":{"A":"1","B":"2"}}"#).unwrap();
        let b: Map<String, Value> = serde_json::from_str(r#"{"env":{"B":"2","A":"1"},"command":"x"}"#).unwrap();
        assert_eq!(request_digest("execute", &a), request_digest("execute", &b));
        assert_ne!(request_digest("execute", &a), request_digest("status", &a));
    }
}
