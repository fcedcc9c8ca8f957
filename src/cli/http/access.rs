//! Who may talk to the HTTP server: the Host and Origin checks against DNS
//! rebinding, the bearer token, and the refusal to listen beyond loopback
//! without authentication.
//!
//! DNS rebinding: a web page from `evil.example` whose name is made to
//! resolve to 127.0.0.1 reaches a local server with the browser's
//! cooperation. The browser then sends `Host: evil.example` and `Origin:
//! http://evil.example`, so a server on loopback accepts only loopback
//! names in `Host`, and every server refuses an `Origin` it does not list
//! (clients that are not browsers send none).

use std::net::SocketAddr;
use std::path::Path;

use hyper::HeaderMap;
use hyper::header::{AUTHORIZATION, HOST, ORIGIN};

use super::oauth::{OAuth, TokenError};

/// Why a request is refused before anything reads its body.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// `Host` names something other than loopback on a loopback server: 421.
    Host(String),
    /// `Origin` is not an allowed one: 403.
    Origin(String),
    /// No valid credentials: 401 (403 when a valid token lacks the scope),
    /// with the `WWW-Authenticate` challenge to send.
    Unauthenticated {
        why: String,
        challenge: String,
        forbidden: bool,
    },
}

/// The principal of a call made with the `--auth-token-file` token: the
/// token names no one, so the audit log says which credential opened it
/// (an OAuth token's subject is never this: subjects are the issuer's).
pub const TOKEN_FILE_PRINCIPAL: &str = "auth-token-file";

/// The access rules of one server.
pub struct Access {
    loopback: bool,
    allowed_origins: Vec<String>,
    token: Option<Vec<u8>>,
    oauth: Option<OAuth>,
}

/// The shortest bearer token accepted, in bytes.
pub const MIN_TOKEN_BYTES: usize = 16;

impl Access {
    /// The rules for a server listening on `addr`. Listening beyond
    /// loopback without a token is refused with how to set one.
    pub fn new(
        addr: SocketAddr,
        token_file: Option<&Path>,
        oauth: Option<OAuth>,
        allowed_origins: &[String],
    ) -> Result<Self, String> {
        let loopback = addr.ip().is_loopback();
        let token = token_file.map(read_token).transpose()?;
        if !loopback && token.is_none() && oauth.is_none() {
            return Err(format!(
                "refusing to serve {addr} without authentication: anyone who can reach that address could run commands. \
                 Pass --auth-token-file FILE (a file holding a secret of at least {MIN_TOKEN_BYTES} characters, e.g. made with \
                 `head -c 32 /dev/urandom | base64 > FILE`; clients send it as `Authorization: Bearer <token>`), \
                 or OAuth (--oauth-resource, --oauth-issuer and --oauth-jwks-file; see docs/mcp.md), \
                 or listen on loopback only (--http 127.0.0.1:PORT)"
            ));
        }
        let allowed_origins = allowed_origins
            .iter()
            .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
            .collect();
        Ok(Self {
            loopback,
            allowed_origins,
            token,
            oauth,
        })
    }

    /// Whether requests must carry credentials.
    pub fn authenticates(&self) -> bool {
        self.token.is_some() || self.oauth.is_some()
    }

    /// The OAuth resource server, when configured.
    pub fn oauth(&self) -> Option<&OAuth> {
        self.oauth.as_ref()
    }

    /// Checks `Host` and `Origin`.
    pub fn check_origin(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        if self.loopback {
            let host = headers.get(HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
            if !is_loopback_authority(host) {
                return Err(Refusal::Host(host.to_owned()));
            }
        }
        let Some(origin) = headers.get(ORIGIN) else {
            return Ok(());
        };
        let origin = origin.to_str().unwrap_or("").trim_end_matches('/').to_ascii_lowercase();
        let loopback_origin = ["http://", "https://"]
            .iter()
            .find_map(|scheme| origin.strip_prefix(scheme))
            .is_some_and(is_loopback_authority);
        if loopback_origin || self.allowed_origins.contains(&origin) {
            Ok(())
        } else {
            Err(Refusal::Origin(origin))
        }
    }

    /// Checks the credentials, when any are configured: the bearer token
    /// of the token file, or an OAuth access token. `Ok(Some(subject))` for
    /// an OAuth token, `Ok(Some(TOKEN_FILE_PRINCIPAL))` for the token
    /// file's, `Ok(None)` without authentication.
    pub fn check_auth(&self, headers: &HeaderMap) -> Result<Option<String>, Refusal> {
        if !self.authenticates() {
            return Ok(None);
        }
        let refuse = |why: &str, error: Option<&TokenError>| Refusal::Unauthenticated {
            why: why.to_owned(),
            challenge: self
                .oauth
                .as_ref()
                .map_or_else(|| "Bearer realm=\"bash-mcp\"".to_owned(), |o| o.challenge(error)),
            forbidden: matches!(error, Some(TokenError::InsufficientScope(_))),
        };
        let Some(value) = headers.get(AUTHORIZATION) else {
            return Err(refuse("no Authorization header", None));
        };
        let presented = value
            .as_bytes()
            .strip_prefix(b"Bearer ")
            .or_else(|| value.as_bytes().strip_prefix(b"bearer "));
        let Some(presented) = presented.map(<[u8]>::trim_ascii) else {
            return Err(refuse("the Authorization header is not `Bearer <token>`", None));
        };
        if let Some(token) = &self.token
            && constant_time_eq(presented, token)
        {
            return Ok(Some(TOKEN_FILE_PRINCIPAL.to_owned()));
        }
        let Some(oauth) = &self.oauth else {
            return Err(refuse("the bearer token is not the configured one", None));
        };
        let text = std::str::from_utf8(presented).unwrap_or("");
        match oauth.verify(text) {
            Ok(subject) => Ok(Some(subject)),
            Err(error) => {
                let why = match &error {
                    TokenError::Invalid(why) | TokenError::InsufficientScope(why) => why.clone(),
                };
                Err(refuse(&why, Some(&error)))
            }
        }
    }
}

/// The token in `path`: its content without surrounding whitespace.
fn read_token(path: &Path) -> Result<Vec<u8>, String> {
    let content =
        std::fs::read(path).map_err(|e| format!("cannot read the auth token file {}: {e}", path.display()))?;
    let token = content.trim_ascii().to_vec();
    if token.len() < MIN_TOKEN_BYTES {
        return Err(format!(
            "the auth token in {} is {} bytes long; use at least {MIN_TOKEN_BYTES} (e.g. `head -c 32 /dev/urandom | base64`)",
            path.display(),
            token.len()
        ));
    }
    if token.iter().any(|b| !b.is_ascii_graphic()) {
        return Err(format!(
            "the auth token in {} holds a space or a character that is not printable ASCII, which no client can send in a header",
            path.display()
        ));
    }
    Ok(token)
}

/// Compares in time that depends on the lengths only, never on where the
/// first difference is.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0);
    }
    std::hint::black_box(diff) == 0
}

/// Whether a `host[:port]` names loopback: `localhost`, `127.x.y.z`, `[::1]`.
fn is_loopback_authority(authority: &str) -> bool {
    let host = if let Some(rest) = authority.strip_prefix('[') {
        match rest.split_once(']') {
            Some((host, port)) if port.is_empty() || port.starts_with(':') => host,
            _ => return false,
        }
    } else {
        authority.split_once(':').map_or(authority, |(host, _)| host)
    };
    let host = host.to_ascii_lowercase();
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names() {
        for ok in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "127.1.2.3",
            "[::1]:80",
            "[::1]",
            "LOCALHOST:1",
        ] {
            assert!(is_loopback_authority(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "10.0.0.1:80",
            "[::2]:1",
            "",
            "[::1]x",
        ] {
            assert!(!is_loopback_authority(bad), "{bad}");
        }
    }

    #[test]
    fn comparison_is_exact() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
    }
}
