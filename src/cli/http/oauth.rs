//! An OAuth 2.1 resource server, as the MCP authorization specification
//! has it: access tokens are JWTs from one issuer, checked against its
//! JWKS (signature, `exp`, `iss`, `aud` = this resource, the required
//! scope); the protected-resource metadata (RFC 9728) tells clients where
//! to get one, and every 401 points at it.
//!
//! The JWKS comes from a file, read again whenever it changes: the binary
//! carries no TLS client, and the deployment keeps the file current (a
//! mounted ConfigMap or Secret, a sidecar that fetches the issuer's
//! `jwks_uri`). A token names its key by `kid` (or the set holds one key);
//! the algorithm is the key's, never the token's choice.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Value, json};

/// Where the metadata document lives, before the resource's path.
pub const METADATA_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// The settings of the resource server.
pub struct OAuth {
    resource: String,
    issuer: String,
    scope: Option<String>,
    jwks_file: PathBuf,
    keys: Mutex<Keys>,
}

struct Keys {
    set: JwkSet,
    modified: Option<SystemTime>,
}

/// Why a token is refused.
#[derive(Debug, PartialEq)]
pub enum TokenError {
    /// Malformed, unsigned by a known key, expired, for another audience
    /// or issuer: 401 `invalid_token`.
    Invalid(String),
    /// Valid, without the required scope: 403 `insufficient_scope`.
    InsufficientScope(String),
}

#[derive(Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    scope: Option<String>,
}

impl OAuth {
    /// `resource` is this server's MCP endpoint as clients reach it (the
    /// tokens' audience), `issuer` the authorization server.
    pub fn new(resource: &str, issuer: &str, jwks_file: &Path, scope: Option<&str>) -> Result<Self, String> {
        for (flag, url) in [("--oauth-resource", resource), ("--oauth-issuer", issuer)] {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(format!("{flag} must be an absolute http(s) URL, got {url:?}"));
            }
        }
        let (set, modified) = read_jwks(jwks_file)?;
        Ok(Self {
            resource: resource.to_owned(),
            issuer: issuer.to_owned(),
            scope: scope.map(str::to_owned),
            jwks_file: jwks_file.to_owned(),
            keys: Mutex::new(Keys { set, modified }),
        })
    }

    /// The path of the metadata document: the prefix, then the resource's path.
    pub fn metadata_path(&self) -> String {
        format!("{METADATA_PREFIX}{}", path_of(&self.resource))
    }

    /// The protected-resource metadata document.
    pub fn metadata(&self) -> Value {
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "bash-mcp",
        });
        if let Some(scope) = &self.scope {
            doc["scopes_supported"] = json!([scope]);
        }
        doc
    }

    /// The `WWW-Authenticate` value of a refusal (`error` when a token was
    /// presented and refused).
    pub fn challenge(&self, error: Option<&TokenError>) -> String {
        let url = format!("{}{}", origin_of(&self.resource), self.metadata_path());
        let mut value = format!("Bearer resource_metadata=\"{url}\"");
        match error {
            Some(TokenError::Invalid(why)) => {
                value.push_str(&format!(
                    ", error=\"invalid_token\", error_description=\"{}\"",
                    quoted(why)
                ));
            }
            Some(TokenError::InsufficientScope(why)) => {
                value.push_str(&format!(
                    ", error=\"insufficient_scope\", error_description=\"{}\"",
                    quoted(why)
                ));
            }
            None => {}
        }
        if let Some(scope) = &self.scope {
            value.push_str(&format!(", scope=\"{}\"", quoted(scope)));
        }
        value
    }

    /// Checks an access token; its subject.
    pub fn verify(&self, token: &str) -> Result<String, TokenError> {
        let invalid = |why: String| TokenError::Invalid(why);
        let header = jsonwebtoken::decode_header(token).map_err(|e| invalid(format!("not a JWT: {e}")))?;
        let (key, algorithm) = self.key_for(header.kid.as_deref())?;
        if header.alg != algorithm {
            return Err(invalid(format!(
                "the token is signed with {:?}, its key is for {algorithm:?}",
                header.alg
            )));
        }
        let mut validation = Validation::new(algorithm);
        validation.set_audience(&[&self.resource]);
        validation.set_issuer(&[&self.issuer]);
        validation.set_required_spec_claims(&["exp", "aud", "iss", "sub"]);
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|e| invalid(format!("the token is refused: {e}")))?;
        if let Some(required) = &self.scope {
            let scopes = data.claims.scope.as_deref().unwrap_or("");
            if !scopes.split_whitespace().any(|s| s == required) {
                return Err(TokenError::InsufficientScope(format!(
                    "the token's scope {scopes:?} lacks {required:?}"
                )));
            }
        }
        Ok(data.claims.sub)
    }

    /// The key a token names, from the JWKS as the file holds it now.
    fn key_for(&self, kid: Option<&str>) -> Result<(DecodingKey, Algorithm), TokenError> {
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        let modified = std::fs::metadata(&self.jwks_file).and_then(|m| m.modified()).ok();
        if modified != keys.modified {
            match read_jwks(&self.jwks_file) {
                Ok((set, modified)) => *keys = Keys { set, modified },
                // Keep the keys in force: a file caught mid-write is read again next time.
                Err(e) => tracing::warn!("{e}; keeping the keys read before"),
            }
        }
        let jwk = match kid {
            Some(kid) => keys.set.find(kid),
            None if keys.set.keys.len() == 1 => keys.set.keys.first(),
            None => None,
        }
        .ok_or_else(|| TokenError::Invalid(format!("no key {kid:?} in the issuer's key set")))?;
        let algorithm = algorithm_of(jwk).map_err(TokenError::Invalid)?;
        let key = DecodingKey::from_jwk(jwk).map_err(|e| TokenError::Invalid(format!("unusable key: {e}")))?;
        Ok((key, algorithm))
    }
}

/// The algorithm a key is for: its `alg`, or what its type implies.
fn algorithm_of(jwk: &Jwk) -> Result<Algorithm, String> {
    if let Some(alg) = &jwk.common.key_algorithm {
        return alg
            .to_string()
            .parse()
            .map_err(|_| format!("the key's alg {alg:?} is not one for signatures"));
    }
    match &jwk.algorithm {
        AlgorithmParameters::OctetKeyPair(_) => Ok(Algorithm::EdDSA),
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => Ok(Algorithm::ES256),
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P384 => Ok(Algorithm::ES384),
        AlgorithmParameters::RSA(_) => Ok(Algorithm::RS256),
        _ => Err("the key has no `alg` and its type implies none (shared secrets are not accepted)".into()),
    }
}

fn read_jwks(path: &Path) -> Result<(JwkSet, Option<SystemTime>), String> {
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let text = std::fs::read(path).map_err(|e| format!("cannot read the JWKS file {}: {e}", path.display()))?;
    let set: JwkSet = serde_json::from_slice(&text).map_err(|e| {
        format!(
            "the JWKS file {} is not a JSON Web Key Set ({{\"keys\": [...]}}): {e}",
            path.display()
        )
    })?;
    if set
        .keys
        .iter()
        .any(|k| matches!(k.algorithm, AlgorithmParameters::OctetKey(_)))
    {
        return Err(format!(
            "the JWKS file {} holds a shared secret (kty oct): only an issuer's public keys belong there",
            path.display()
        ));
    }
    Ok((set, modified))
}

/// `scheme://authority` of a URL.
fn origin_of(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    url[after_scheme..].find('/').map_or(url, |i| &url[..after_scheme + i])
}

/// The path of a URL (empty for `https://host`).
fn path_of(url: &str) -> &str {
    &url[origin_of(url).len()..]
}

/// Text fit for a quoted string of a header.
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii() && !c.is_ascii_control())
        .map(|c| if c == '"' || c == '\\' { '\'' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(origin_of("https://ws.example/mcp"), "https://ws.example");
        assert_eq!(path_of("https://ws.example/mcp"), "/mcp");
        assert_eq!(path_of("https://ws.example"), "");
        assert_eq!(quoted("a \"b\"\n"), "a 'b'");
    }
}
