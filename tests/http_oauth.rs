//! `bash-mcp serve --http` as an OAuth 2.1 resource server, against an
//! issuer this test plays: Ed25519 keys generated here, their JWKS in a
//! file, access tokens signed here. Missing, expired, wrong-audience,
//! wrong-issuer, wrong-signature, unsigned and under-scoped tokens are
//! refused with the status and challenge the MCP authorization
//! specification gives, and run nothing; a good token runs the call, and
//! the audit log names its subject, for plain calls and for calls run as
//! tasks (the call and the job's end). The issuer rotating its keys (a new
//! JWKS file) takes effect without a restart.

mod common;
#[path = "common/http.rs"]
mod http;

use std::io::Read;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use common::*;
use ed25519_dalek::SigningKey;
use http::HttpServe;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_bash-mcp");
const RESOURCE: &str = "https://workspace.example/mcp";
const ISSUER: &str = "https://issuer.example";
const METADATA_URL: &str = "https://workspace.example/.well-known/oauth-protected-resource/mcp";

/// One signing key of the test's issuer.
struct Key {
    kid: &'static str,
    signing: SigningKey,
}

impl Key {
    fn generate(kid: &'static str) -> Key {
        let mut seed = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .unwrap()
            .read_exact(&mut seed)
            .unwrap();
        Key {
            kid,
            signing: SigningKey::from_bytes(&seed),
        }
    }

    fn jwk(&self) -> Value {
        json!({"kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA", "kid": self.kid,
               "x": base64url(self.signing.verifying_key().as_bytes())})
    }

    /// A token with these claims, signed by this key but naming `kid`.
    fn sign_as(&self, kid: &str, claims: &Value) -> String {
        // PKCS#8 of an Ed25519 private key: a fixed prefix, then the seed.
        let mut der = vec![
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
        ];
        der.extend_from_slice(self.signing.as_bytes());
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ed_der(&der)).unwrap()
    }

    fn sign(&self, claims: &Value) -> String {
        self.sign_as(self.kid, claims)
    }
}

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
        }
    }
    out
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn claims(subject: &str) -> Value {
    json!({"iss": ISSUER, "aud": RESOURCE, "sub": subject, "exp": now() + 600, "iat": now(), "scope": "openid mcp:tools"})
}

fn write_jwks(path: &Path, keys: &[&Key]) {
    let set = json!({"keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>()});
    // Written whole, then renamed: the server never reads half a file.
    let partial = path.with_extension("partial");
    std::fs::write(&partial, set.to_string()).unwrap();
    std::fs::rename(&partial, path).unwrap();
}

fn stateless_call(id: &str, command: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "execute", "arguments": {"command": command},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
}

fn post(server: &HttpServe, message: &Value, token: Option<&str>) -> http::Answer {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "execute"),
    ];
    if let Some(bearer) = &bearer {
        headers.push(("Authorization", bearer));
    }
    server.post(message, &headers)
}

#[test]
fn access_tokens_are_checked_against_the_issuers_keys() {
    let dir = TempDir::new("http-oauth");
    let tag = unique_tag("http-oauth");
    let home = dir.to_str().unwrap();
    let jwks = dir.join("jwks.json");
    let key = Key::generate("k1");
    let other = Key::generate("k2");
    write_jwks(&jwks, &[&key]);
    let server = HttpServe::start(
        BIN,
        "127.0.0.1:0",
        &[
            "--working-dir",
            home,
            "--oauth-resource",
            RESOURCE,
            "--oauth-issuer",
            ISSUER,
            "--oauth-jwks-file",
            jwks.to_str().unwrap(),
            "--oauth-scope",
            "mcp:tools",
        ],
        &[("HOME", home), ("XDG_DATA_HOME", home), (TAG_VAR, &tag)],
        dir.join("server.log"),
    );

    // The protected-resource metadata, without credentials.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let metadata = server.request("GET", path, &[], b"");
        assert_eq!(metadata.status, 200, "{path}");
        let doc = metadata.json();
        assert_eq!(doc["resource"], RESOURCE);
        assert_eq!(doc["authorization_servers"], json!([ISSUER]));
        assert_eq!(doc["scopes_supported"], json!(["mcp:tools"]));
    }

    // Refused: each with 401 (403 for the scope), a challenge naming the metadata, and nothing run.
    let mut expired = claims("user-17");
    expired["exp"] = json!(now() - 3600);
    let mut audience = claims("user-17");
    audience["aud"] = json!("https://other.example/mcp");
    let mut issuer = claims("user-17");
    issuer["iss"] = json!("https://evil.example");
    let mut scope = claims("user-17");
    scope["scope"] = json!("openid mcp:read");
    let mut no_subject = claims("user-17");
    no_subject.as_object_mut().unwrap().remove("sub");
    let unsigned = {
        let good = key.sign(&claims("user-17"));
        let mut parts: Vec<&str> = good.split('.').collect();
        let header = base64url(br#"{"alg":"none","typ":"JWT","kid":"k1"}"#);
        parts[0] = &header;
        format!("{}.{}.", parts[0], parts[1])
    };
    let cases: Vec<(&str, Option<String>, u16, Option<&str>)> = vec![
        ("missing", None, 401, None),
        ("garbage", Some("not-a-jwt".into()), 401, Some("invalid_token")),
        ("expired", Some(key.sign(&expired)), 401, Some("invalid_token")),
        ("audience", Some(key.sign(&audience)), 401, Some("invalid_token")),
        ("issuer", Some(key.sign(&issuer)), 401, Some("invalid_token")),
        (
            "signature",
            Some(other.sign_as("k1", &claims("user-17"))),
            401,
            Some("invalid_token"),
        ),
        (
            "unknown-key",
            Some(other.sign(&claims("user-17"))),
            401,
            Some("invalid_token"),
        ),
        ("unsigned", Some(unsigned), 401, Some("invalid_token")),
        ("no-subject", Some(key.sign(&no_subject)), 401, Some("invalid_token")),
        ("scope", Some(key.sign(&scope)), 403, Some("insufficient_scope")),
    ];
    for (name, token, status, error) in &cases {
        let answer = post(
            &server,
            &stateless_call(name, &format!("touch {name}")),
            token.as_deref(),
        );
        assert_eq!(answer.status, *status, "{name}: {answer:?}");
        let challenge = answer
            .header("www-authenticate")
            .unwrap_or_else(|| panic!("{name}: no challenge"));
        assert!(
            challenge.starts_with(&format!("Bearer resource_metadata=\"{METADATA_URL}\"")),
            "{name}: {challenge}"
        );
        match error {
            Some(error) => assert!(challenge.contains(&format!("error=\"{error}\"")), "{name}: {challenge}"),
            None => assert!(!challenge.contains("error="), "{name}: {challenge}"),
        }
        assert!(!dir.join(name).exists(), "{name}: a refused request ran its command");
    }

    // A good token runs the call; the audit log names its subject.
    let answer = post(
        &server,
        &stateless_call("good", "echo authorized"),
        Some(&key.sign(&claims("user-17"))),
    );
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.json()["result"]["structuredContent"]["output"], "authorized\n");
    let audit_id = answer.json()["result"]["structuredContent"]["audit_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let audit = std::fs::read_to_string(dir.join("bash-mcp/audit.jsonl")).expect("the audit log");
    let entry: Value = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["audit_id"] == audit_id.as_str())
        .expect("the call's audit entry");
    assert_eq!(entry["principal"], "user-17", "{entry}");

    // The handshake era too: the session carries no credential, each request does.
    let token = key.sign(&claims("user-18"));
    let bearer = format!("Bearer {token}");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "oauth", "version": "0"}}});
    let answer = server.post(&init, &[("Authorization", &bearer)]);
    let session = answer.header("mcp-session-id").expect("a session").to_owned();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "execute", "arguments": {"command": "echo in session"}}});
    let answer = server.post(&call, &[("Authorization", &bearer), ("Mcp-Session-Id", &session)]);
    assert_eq!(answer.json()["result"]["structuredContent"]["output"], "in session\n");
    assert_eq!(server.post(&call, &[("Mcp-Session-Id", &session)]).status, 401);

    // Calls run as tasks name the subject too, in the call and in the job's end.
    let bearer = format!("Bearer {}", key.sign(&claims("user-20")));
    for entry in http::task_calls_audited(&server, &dir, &bearer) {
        assert_eq!(entry["principal"], "user-20", "{entry}");
    }

    // The issuer rotates to k2: its tokens are taken, k1's no longer.
    write_jwks(&jwks, &[&other]);
    let answer = post(
        &server,
        &stateless_call("rotated", "echo rotated"),
        Some(&other.sign(&claims("user-19"))),
    );
    assert_eq!(
        answer.json()["result"]["structuredContent"]["output"],
        "rotated\n",
        "{answer:?}"
    );
    let answer = post(
        &server,
        &stateless_call("retired", "touch retired"),
        Some(&key.sign(&claims("user-17"))),
    );
    assert_eq!(answer.status, 401);
    assert!(!dir.join("retired").exists());

    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn oauth_settings_are_all_or_nothing_and_refuse_shared_secrets() {
    let dir = TempDir::new("http-oauth-settings");
    let home = dir.to_str().unwrap();
    let run = |args: &[&str]| {
        let output = std::process::Command::new(BIN)
            .args(["serve", "--http", "127.0.0.1:0", "--working-dir", home])
            .args(args)
            .env("HOME", home)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!output.status.success());
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let message = run(&["--oauth-issuer", ISSUER]);
    assert!(
        message.contains("--oauth-resource") && message.contains("--oauth-jwks-file"),
        "{message}"
    );
    let secret = dir.join("secret.json");
    std::fs::write(
        &secret,
        r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0", "alg": "HS256"}]}"#,
    )
    .unwrap();
    let message = run(&[
        "--oauth-resource",
        RESOURCE,
        "--oauth-issuer",
        ISSUER,
        "--oauth-jwks-file",
        secret.to_str().unwrap(),
    ]);
    assert!(message.contains("shared secret"), "{message}");
    // OAuth is authentication enough to listen beyond loopback.
    let jwks = dir.join("jwks.json");
    write_jwks(&jwks, &[&Key::generate("k1")]);
    let tag = unique_tag("http-oauth-exposed");
    let server = HttpServe::start(
        BIN,
        "0.0.0.0:0",
        &[
            "--working-dir",
            home,
            "--oauth-resource",
            RESOURCE,
            "--oauth-issuer",
            ISSUER,
            "--oauth-jwks-file",
            jwks.to_str().unwrap(),
        ],
        &[("HOME", home), (TAG_VAR, &tag)],
        dir.join("server.log"),
    );
    server.stop();
    assert_no_survivors(&tag);
}
