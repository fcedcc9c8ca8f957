//! Protocol revisions and the two eras they belong to.
//!
//! - Handshake era (2024-11-05 … 2025-11-25): `initialize` picks a revision
//!   for the whole stdio connection.
//! - Stateless era (2026-07-28): no handshake; every request names its
//!   revision and the client's capabilities in `params._meta`.
//!
//! One handler serves both: a request whose `_meta` carries
//! [`PROTOCOL_VERSION_KEY`] is served statelessly at that revision; any other
//! request uses the revision `initialize` negotiated.

use serde_json::{Map, Value, json};

use super::jsonrpc::{INVALID_PARAMS, RpcError, UNSUPPORTED_PROTOCOL_VERSION};

/// Revisions reachable through `initialize`, oldest first.
pub const HANDSHAKE_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// Stateless revisions, oldest first.
pub const STATELESS_VERSIONS: &[&str] = &["2026-07-28"];
/// Every revision served, oldest first.
pub const SUPPORTED_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];
/// The `initialize` counter-offer when the client asks for a revision we do not speak.
pub const LATEST_HANDSHAKE_VERSION: &str = "2025-11-25";

/// `_meta` key naming a stateless request's revision.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key carrying a stateless request's client capabilities.
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// Result `_meta` key carrying the server's name and version (stateless era).
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// The revision a request is served at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// Negotiated by `initialize`.
    Handshake(&'static str),
    /// Named by the request's own `_meta`.
    Stateless(&'static str),
}

impl Era {
    fn at_least(version: &str, floor: &str) -> bool {
        let index = |v: &str| SUPPORTED_VERSIONS.iter().position(|s| *s == v);
        index(version) >= index(floor)
    }

    /// The revision string.
    pub(crate) fn version(self) -> &'static str {
        match self {
            Era::Handshake(v) | Era::Stateless(v) => v,
        }
    }

    /// Whether the stateless result conventions apply (`resultType`, serverInfo stamp).
    pub(crate) fn is_stateless(self) -> bool {
        matches!(self, Era::Stateless(_))
    }

    /// `structuredContent`, `outputSchema` and tool `title` exist from 2025-06-18.
    pub(crate) fn has_structured_content(self) -> bool {
        Self::at_least(self.version(), "2025-06-18")
    }

    /// Tool `annotations` exist from 2025-03-26.
    pub(crate) fn has_annotations(self) -> bool {
        Self::at_least(self.version(), "2025-03-26")
    }
}

/// The client capabilities a stateless request declares in its `_meta`.
pub(crate) fn stateless_client_capabilities(params: &Map<String, Value>) -> Option<Value> {
    params.get("_meta")?.get(CLIENT_CAPABILITIES_KEY).cloned()
}

/// Whether a handshake revision has `elicitation/create` (from 2025-06-18).
pub(crate) fn has_elicitation(version: &str) -> bool {
    Era::at_least(version, "2025-06-18") && HANDSHAKE_VERSIONS.contains(&version)
}

/// Whether its `elicitation/create` takes a `mode` (from 2025-11-25).
pub(crate) fn has_elicitation_modes(version: &str) -> bool {
    Era::at_least(version, "2025-11-25")
}

/// The revision `initialize` answers for a requested one: the same when
/// supported, else the latest handshake revision (a counter-offer, not an error).
pub(crate) fn negotiate(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| HANDSHAKE_VERSIONS.iter().find(|v| **v == r))
        .copied()
        .unwrap_or(LATEST_HANDSHAKE_VERSION)
}

/// Reads the stateless envelope of a request's params.
///
/// `Ok(None)`: no envelope (a handshake-era request). `Ok(Some(era))`: a
/// valid stateless request. `Err`: an envelope that is incomplete (-32602)
/// or names a revision we do not serve statelessly (-32022).
pub(crate) fn stateless_envelope(params: Option<&Map<String, Value>>) -> Result<Option<Era>, RpcError> {
    let Some(meta) = params.and_then(|p| p.get("_meta")).and_then(Value::as_object) else {
        return Ok(None);
    };
    let Some(version) = meta.get(PROTOCOL_VERSION_KEY) else {
        return Ok(None);
    };
    check_envelope(meta, version).map(Some)
}

/// Like [`stateless_envelope`], for methods that exist only statelessly
/// (`server/discover`): a missing envelope is an error.
pub(crate) fn required_envelope(params: Option<&Map<String, Value>>) -> Result<Era, RpcError> {
    match stateless_envelope(params)? {
        Some(era) => Ok(era),
        None => Err(missing(PROTOCOL_VERSION_KEY)),
    }
}

fn check_envelope(meta: &Map<String, Value>, version: &Value) -> Result<Era, RpcError> {
    let Value::String(version) = version else {
        return Err(RpcError::new(
            INVALID_PARAMS,
            format!("invalid params: `_meta[\"{PROTOCOL_VERSION_KEY}\"]` must be a string"),
        ));
    };
    match meta.get(CLIENT_CAPABILITIES_KEY) {
        Some(Value::Object(_)) => {}
        Some(_) => {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("invalid params: `_meta[\"{CLIENT_CAPABILITIES_KEY}\"]` must be an object"),
            ));
        }
        None => return Err(missing(CLIENT_CAPABILITIES_KEY)),
    }
    if let Some(v) = STATELESS_VERSIONS.iter().find(|v| **v == version) {
        return Ok(Era::Stateless(v));
    }
    let advice = if HANDSHAKE_VERSIONS.contains(&version.as_str()) {
        format!("{version} is a handshake-era revision: send `initialize` instead of a per-request envelope")
    } else {
        format!("stateless revisions served: {}", STATELESS_VERSIONS.join(", "))
    };
    Err(RpcError::new(
        UNSUPPORTED_PROTOCOL_VERSION,
        format!("unsupported protocol version {version:?}; {advice}"),
    )
    .with_data(json!({"supported": SUPPORTED_VERSIONS, "requested": version})))
}

fn missing(key: &str) -> RpcError {
    RpcError::new(
        INVALID_PARAMS,
        format!(
            "invalid params: `_meta[\"{key}\"]` is missing; a 2026-07-28 request carries `{PROTOCOL_VERSION_KEY}` and `{CLIENT_CAPABILITIES_KEY}` in `params._meta` (or send `initialize` first to use the handshake era)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(meta: Value) -> Map<String, Value> {
        json!({"_meta": meta}).as_object().unwrap().clone()
    }

    #[test]
    fn counter_offers_the_latest_handshake_revision() {
        assert_eq!(negotiate(Some("2025-03-26")), "2025-03-26");
        assert_eq!(negotiate(Some("2099-01-01")), LATEST_HANDSHAKE_VERSION);
        assert_eq!(negotiate(Some("2026-07-28")), LATEST_HANDSHAKE_VERSION);
        assert_eq!(negotiate(None), LATEST_HANDSHAKE_VERSION);
    }

    #[test]
    fn reads_the_envelope() {
        let ok = params(json!({PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}}));
        assert_eq!(stateless_envelope(Some(&ok)), Ok(Some(Era::Stateless("2026-07-28"))));
        let none = params(json!({"progressToken": 1}));
        assert_eq!(stateless_envelope(Some(&none)), Ok(None));
        assert_eq!(required_envelope(Some(&none)).unwrap_err().code, INVALID_PARAMS);
        let no_caps = params(json!({PROTOCOL_VERSION_KEY: "2026-07-28"}));
        assert_eq!(stateless_envelope(Some(&no_caps)).unwrap_err().code, INVALID_PARAMS);
        let old = params(json!({PROTOCOL_VERSION_KEY: "2030-01-01", CLIENT_CAPABILITIES_KEY: {}}));
        let e = stateless_envelope(Some(&old)).unwrap_err();
        assert_eq!(e.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(e.data.unwrap()["requested"], "2030-01-01");
    }

    #[test]
    fn feature_floors() {
        assert!(!Era::Handshake("2025-03-26").has_structured_content());
        assert!(Era::Handshake("2025-03-26").has_annotations());
        assert!(!Era::Handshake("2024-11-05").has_annotations());
        assert!(Era::Handshake("2025-06-18").has_structured_content());
        assert!(Era::Stateless("2026-07-28").has_structured_content());
    }
}
