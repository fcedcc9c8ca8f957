//! `bash-mcp serve --http` over raw HTTP: both protocol eras, sessions,
//! the stream of a call, and every request that must be refused (malformed,
//! oversized, wrong Host or Origin, unauthenticated) with its status and
//! nothing run. Each test tags the server's environment, so every command
//! it runs carries the tag, and checks /proc for them (and the server)
//! afterwards. The real SDKs over HTTP are in tests/mcp_clients.rs.

mod common;
#[path = "common/http.rs"]
mod http;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use common::*;
use http::{HttpServe, audit_entries, task_calls_audited, token_file};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_bash-mcp");
const STATELESS: &str = "2026-07-28";

/// A server in `dir` (its HOME and working directory) whose processes carry `tag`.
fn start(dir: &Path, tag: &str, args: &[&str]) -> HttpServe {
    let home = dir.to_str().unwrap();
    let mut all = vec!["--working-dir", home];
    all.extend_from_slice(args);
    HttpServe::start(
        BIN,
        "127.0.0.1:0",
        &all,
        &[("HOME", home), (TAG_VAR, tag), ("XDG_DATA_HOME", home)],
        dir.join("server.log"),
    )
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
}

fn call(id: i64, command: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "execute", "arguments": {"command": command}}})
}

/// A 2026-07-28 request with its envelope.
fn stateless(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Opens a session; its id.
fn open_session(server: &HttpServe) -> String {
    let answer = server.post(&initialize(), &[]);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.json()["result"]["protocolVersion"], "2025-11-25");
    let id = answer.header("mcp-session-id").expect("a session id").to_owned();
    assert!(id.len() >= 32 && id.bytes().all(|b| b.is_ascii_graphic()), "{id}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(server.post(&initialized, &[("Mcp-Session-Id", &id)]).status, 202);
    id
}

#[test]
fn handshake_era_session_from_initialize_to_delete() {
    let dir = TempDir::new("http-session");
    let tag = unique_tag("http-session");
    let server = start(&dir, &tag, &[]);
    let session = open_session(&server);
    let with = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];

    let list = server.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), &with);
    assert_eq!(list.status, 200);
    assert_eq!(list.json()["result"]["tools"][0]["name"], "execute");
    assert!(
        list.json()["result"].get("resultType").is_none(),
        "no resultType in the handshake era"
    );

    // Accepting both, a call is answered on an event stream, with the client's id.
    let answer = server.post(&call(3, "echo over http"), &with);
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("content-type"), Some("text/event-stream"));
    let reply = answer.json();
    assert_eq!(reply["id"], 3);
    assert_eq!(reply["result"]["structuredContent"]["output"], "over http\n");

    // Accepting JSON only, the same call is answered with JSON.
    let json_only = [with[0], with[1], ("Accept", "application/json")];
    let answer = server.request(
        "POST",
        "/mcp",
        &[
            json_only[0],
            json_only[1],
            json_only[2],
            ("Content-Type", "application/json"),
        ],
        call(4, "echo as json").to_string().as_bytes(),
    );
    assert_eq!(answer.header("content-type"), Some("application/json"));
    assert_eq!(answer.json()["id"], 4);
    assert_eq!(answer.json()["result"]["structuredContent"]["output"], "as json\n");

    // A JSON-RPC error in the handshake era is an answer like another.
    let unknown = server.post(&json!({"jsonrpc": "2.0", "id": 5, "method": "nope"}), &with);
    assert_eq!(unknown.status, 200);
    assert_eq!(unknown.json()["error"]["code"], -32601);

    // One GET stream per session.
    let get = server.send("GET", "/mcp", &[("Accept", "text/event-stream"), with[0]], b"");
    let mut reader = BufReader::new(get);
    let (status, headers) = http::read_head(&mut reader);
    assert_eq!(status, 200);
    assert!(headers.contains(&("content-type".into(), "text/event-stream".into())));
    let second = server.request("GET", "/mcp", &[("Accept", "text/event-stream"), with[0]], b"");
    assert_eq!(second.status, 409, "{second:?}");
    drop(reader);

    // DELETE ends it; the id is then unknown.
    assert_eq!(server.request("DELETE", "/mcp", &[with[0]], b"").status, 200);
    let after = server.post(&call(6, "touch after-delete"), &with);
    assert_eq!(after.status, 404, "{after:?}");
    assert_eq!(server.request("DELETE", "/mcp", &[with[0]], b"").status, 404);
    assert!(!dir.join("after-delete").exists());
    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn progress_reaches_the_call_stream_before_its_answer() {
    let dir = TempDir::new("http-progress");
    let tag = unique_tag("http-progress");
    let server = start(&dir, &tag, &[]);
    let session = open_session(&server);
    let release = dir.join("release");
    let mut message = call(
        7,
        &format!("echo waiting; {}; echo released", until_file_exists(&release)),
    );
    message["params"]["_meta"] = json!({"progressToken": "tok-1"});
    let stream = server.send(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", &session),
        ],
        message.to_string().as_bytes(),
    );
    let mut reader = BufReader::new(stream);
    let (status, _) = http::read_head(&mut reader);
    assert_eq!(status, 200);
    let mut events = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the stream ended early: {events:?}"
        );
        let Some(data) = line.trim_end().strip_prefix("data: ") else {
            continue;
        };
        let event: Value = serde_json::from_str(data).unwrap();
        let is_answer = event.get("id").is_some();
        if !is_answer {
            // The first progress: let the command end.
            assert_eq!(event["method"], "notifications/progress");
            assert_eq!(event["params"]["progressToken"], "tok-1", "the client's own token");
            std::fs::write(&release, "").unwrap();
        }
        events.push(event);
        if is_answer {
            break;
        }
    }
    let last = events.last().unwrap();
    assert_eq!(last["id"], 7);
    assert_eq!(last["result"]["structuredContent"]["output"], "waiting\nreleased\n");
    assert!(events.len() >= 2, "{events:?}");
    let mut rest = String::new();
    reader.read_to_string(&mut rest).unwrap();
    assert!(!rest.contains("data:"), "nothing after the answer: {rest:?}");
    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn stateless_era_requests_and_their_headers() {
    let dir = TempDir::new("http-stateless");
    let tag = unique_tag("http-stateless");
    let server = start(&dir, &tag, &[]);
    let headers = |method: &'static str, name: Option<&'static str>| {
        let mut h = vec![("MCP-Protocol-Version", STATELESS), ("Mcp-Method", method)];
        if let Some(name) = name {
            h.push(("Mcp-Name", name));
        }
        h
    };

    let discover = server.post(
        &stateless(1, "server/discover", json!({})),
        &headers("server/discover", None),
    );
    assert_eq!(discover.status, 200, "{discover:?}");
    assert!(
        discover.header("mcp-session-id").is_none(),
        "no session in the stateless era"
    );
    let result = &discover.json()["result"];
    assert_eq!(result["resultType"], "complete");
    assert!(
        result["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!(STATELESS))
    );

    let list = server.post(&stateless(2, "tools/list", json!({})), &headers("tools/list", None));
    assert_eq!(list.json()["result"]["resultType"], "complete");
    assert!(list.json()["result"]["ttlMs"].is_u64());

    let params = json!({"name": "execute", "arguments": {"command": "echo stateless"}});
    let answer = server.post(
        &stateless(3, "tools/call", params.clone()),
        &headers("tools/call", Some("execute")),
    );
    assert_eq!(answer.json()["id"], 3);
    assert_eq!(answer.json()["result"]["structuredContent"]["output"], "stateless\n");
    assert_eq!(answer.json()["result"]["resultType"], "complete");
    // The name may come base64-encoded.
    let encoded = server.post(
        &stateless(4, "tools/call", params),
        &headers("tools/call", Some("=?base64?ZXhlY3V0ZQ==?=")),
    );
    assert_eq!(encoded.json()["result"]["structuredContent"]["output"], "stateless\n");

    // Headers that disagree with the body: 400, -32020, nothing run.
    let touch = json!({"name": "execute", "arguments": {"command": "touch ran"}});
    let mismatches: [(Value, Vec<(&str, &str)>); 5] = [
        (
            stateless(5, "tools/call", touch.clone()),
            headers("tools/list", Some("execute")),
        ),
        (
            stateless(6, "tools/call", touch.clone()),
            headers("tools/call", Some("job_status")),
        ),
        (stateless(7, "tools/call", touch.clone()), headers("tools/call", None)),
        (
            stateless(8, "tools/call", touch.clone()),
            vec![
                ("MCP-Protocol-Version", STATELESS),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "execute"),
            ],
        ),
        (stateless(9, "tools/call", touch.clone()), {
            let mut h = headers("tools/call", Some("execute"));
            h[0] = ("MCP-Protocol-Version", "2099-01-01");
            h
        }),
    ];
    for (message, h) in &mismatches {
        let answer = server.post(message, h);
        assert_eq!(answer.status, 400, "{h:?}: {answer:?}");
        assert_eq!(answer.json()["error"]["code"], -32020, "{h:?}: {answer:?}");
        assert_eq!(answer.json()["id"], message["id"]);
    }
    // An unsupported version, consistently stated: -32022 naming the supported one.
    let mut future = stateless(10, "tools/list", json!({}));
    future["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let answer = server.post(
        &future,
        &[("MCP-Protocol-Version", "2099-01-01"), ("Mcp-Method", "tools/list")],
    );
    assert_eq!(answer.status, 400);
    assert_eq!(answer.json()["error"]["code"], -32022);
    // An unknown method: 404, -32601.
    let answer = server.post(&stateless(11, "nope/nope", json!({})), &headers("nope/nope", None));
    assert_eq!(answer.status, 404);
    assert_eq!(answer.json()["error"]["code"], -32601);
    // A notification is acknowledged; GET and DELETE are not this era's.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    assert_eq!(server.post(&note, &[("MCP-Protocol-Version", STATELESS)]).status, 202);
    let get = server.request(
        "GET",
        "/mcp",
        &[("MCP-Protocol-Version", STATELESS), ("Accept", "text/event-stream")],
        b"",
    );
    assert_eq!(get.status, 405);
    assert_eq!(get.header("allow"), Some("POST"));

    assert!(!dir.join("ran").exists(), "a refused request ran its command");
    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn malformed_oversized_and_misdirected_requests_get_their_status_and_run_nothing() {
    let dir = TempDir::new("http-refused");
    let tag = unique_tag("http-refused");
    let server = start(&dir, &tag, &[]);
    let session = open_session(&server);
    let json_headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Mcp-Session-Id", session.as_str()),
    ];
    let touch = |name: &str| call(20, &format!("touch {name}")).to_string();

    // Not JSON: 400 with -32700.
    let answer = server.request("POST", "/mcp", &json_headers, b"{\"jsonrpc\": \"2.0\", \"id\": 1, ");
    assert_eq!(answer.status, 400);
    assert_eq!(answer.json()["error"]["code"], -32700);
    // A batch: 400 with -32600.
    let batch = format!("[{}]", touch("batch"));
    let answer = server.request("POST", "/mcp", &json_headers, batch.as_bytes());
    assert_eq!(answer.status, 400);
    assert_eq!(answer.json()["error"]["code"], -32600);
    // Not JSON by its type: 415.
    let answer = server.request(
        "POST",
        "/mcp",
        &[("Content-Type", "text/plain"), json_headers[1], json_headers[2]],
        touch("plain").as_bytes(),
    );
    assert_eq!(answer.status, 415);
    // Accepting neither answer type: 406.
    let answer = server.request(
        "POST",
        "/mcp",
        &[json_headers[0], ("Accept", "text/html"), json_headers[2]],
        touch("html").as_bytes(),
    );
    assert_eq!(answer.status, 406);
    // Over the 4 MiB limit, declared: 413 before the body is read.
    let big = vec![b' '; 4 * 1024 * 1024 + 1];
    let answer = server.request("POST", "/mcp", &json_headers, &big);
    assert_eq!(answer.status, 413, "{:?}", answer.status);
    // Over the limit, in a call whose padding is inside the JSON: 413 too.
    let mut padded = call(21, "touch padded");
    padded["params"]["arguments"]["pad"] = json!("x".repeat(4 * 1024 * 1024));
    let answer = server.request("POST", "/mcp", &json_headers, padded.to_string().as_bytes());
    assert_eq!(answer.status, 413);
    // No session, an unknown one: 400 and 404.
    let answer = server.request("POST", "/mcp", &json_headers[..2], touch("nosession").as_bytes());
    assert_eq!(answer.status, 400);
    let answer = server.request(
        "POST",
        "/mcp",
        &[
            json_headers[0],
            json_headers[1],
            ("Mcp-Session-Id", "0123456789abcdef0123456789abcdef"),
        ],
        touch("unknown").as_bytes(),
    );
    assert_eq!(answer.status, 404);
    // DNS rebinding: a page's Host or Origin.
    let answer = server.request(
        "POST",
        "/mcp",
        &[
            json_headers[0],
            json_headers[1],
            json_headers[2],
            ("Host", "evil.example"),
        ],
        touch("host").as_bytes(),
    );
    assert_eq!(answer.status, 421);
    let answer = server.request(
        "POST",
        "/mcp",
        &[
            json_headers[0],
            json_headers[1],
            json_headers[2],
            ("Origin", "http://evil.example"),
        ],
        touch("origin").as_bytes(),
    );
    assert_eq!(answer.status, 403);
    assert!(answer.body.contains("--allow-origin"), "{answer:?}");
    let answer = server.request(
        "POST",
        "/mcp",
        &[("Host", "evil.example:80"), json_headers[0], json_headers[1]],
        initialize().to_string().as_bytes(),
    );
    assert_eq!(answer.status, 421, "initialize from a rebinding page");
    // A loopback Origin is a local page: allowed.
    let answer = server.request(
        "POST",
        "/mcp",
        &[
            json_headers[0],
            json_headers[1],
            json_headers[2],
            ("Origin", &format!("http://localhost:{}", server.port())),
        ],
        call(22, "echo local page").to_string().as_bytes(),
    );
    assert_eq!(answer.json()["result"]["structuredContent"]["output"], "local page\n");
    // Other paths and methods.
    assert_eq!(server.request("GET", "/other", &[], b"").status, 404);
    assert_eq!(
        server
            .request("PUT", "/mcp", &json_headers, touch("put").as_bytes())
            .status,
        405
    );

    for name in [
        "batch",
        "plain",
        "html",
        "padded",
        "nosession",
        "unknown",
        "host",
        "origin",
        "put",
    ] {
        assert!(!dir.join(name).exists(), "the refused request {name:?} ran its command");
    }
    // Still serving.
    let answer = server.post(&call(23, "echo still"), &[("Mcp-Session-Id", &session)]);
    assert_eq!(answer.json()["result"]["structuredContent"]["output"], "still\n");
    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn a_bearer_token_is_required_when_configured_names_its_calls_and_health_needs_none() {
    let dir = TempDir::new("http-token");
    let tag = unique_tag("http-token");
    let token = "s3cret-token-of-enough-length";
    let file = token_file(&dir, token);
    let server = start(&dir, &tag, &["--auth-token-file", file.to_str().unwrap()]);

    let health = server.request("GET", "/healthz", &[], b"");
    assert_eq!((health.status, health.body.as_str()), (200, "ok\n"));
    let basic = format!("Basic {token}");
    let refused: [(&str, Vec<(&str, &str)>); 4] = [
        ("missing", vec![]),
        ("wrong", vec![("Authorization", "Bearer s3cret-token-of-enough-lengtX")]),
        ("prefix", vec![("Authorization", "Bearer s3cret-token")]),
        ("scheme", vec![("Authorization", &basic)]),
    ];
    for (name, headers) in &refused {
        let mut message = initialize();
        message["params"]["_probe"] = json!(name);
        let answer = server.post(&message, headers);
        assert_eq!(answer.status, 401, "{name}: {answer:?}");
        assert!(
            answer
                .header("www-authenticate")
                .is_some_and(|v| v.starts_with("Bearer")),
            "{name}"
        );
        assert!(
            answer.header("mcp-session-id").is_none(),
            "{name}: no session for a refused request"
        );
        let mut message = stateless(
            2,
            "tools/call",
            json!({"name": "execute", "arguments": {"command": format!("touch {name}")}}),
        );
        message["id"] = json!(name);
        let mut h = headers.clone();
        h.extend([
            ("MCP-Protocol-Version", STATELESS),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "execute"),
        ]);
        assert_eq!(server.post(&message, &h).status, 401, "{name}");
        assert!(!dir.join(name).exists(), "{name}: a refused request ran");
    }
    let bearer = format!("Bearer {token}");
    let answer = server.post(&initialize(), &[("Authorization", &bearer)]);
    assert_eq!(answer.status, 200);
    let session = answer.header("mcp-session-id").unwrap().to_owned();
    let answer = server.post(
        &call(3, "echo authenticated"),
        &[("Authorization", &bearer), ("Mcp-Session-Id", &session)],
    );
    assert_eq!(
        answer.json()["result"]["structuredContent"]["output"],
        "authenticated\n"
    );
    // The session id alone is no credential.
    assert_eq!(
        server
            .post(&call(4, "touch no-token"), &[("Mcp-Session-Id", &session)])
            .status,
        401
    );
    assert!(!dir.join("no-token").exists());
    // Who sent a call is recorded: the token file's holder, for plain calls and tasks.
    let audit_id = answer.json()["result"]["structuredContent"]["audit_id"].clone();
    let entries = audit_entries(&dir);
    let plain = entries
        .iter()
        .find(|e| e["audit_id"] == audit_id)
        .expect("the call's entry");
    assert_eq!(plain["principal"], "auth-token-file", "{plain}");
    for entry in task_calls_audited(&server, &dir, &bearer) {
        assert_eq!(entry["principal"], "auth-token-file", "{entry}");
    }
    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn listening_beyond_loopback_needs_a_token() {
    let dir = TempDir::new("http-exposed");
    let home = dir.to_str().unwrap();
    let refuse = |args: &[&str]| {
        let output = std::process::Command::new(BIN)
            .args(["serve", "--http", "0.0.0.0:0", "--working-dir", home])
            .args(args)
            .env("HOME", home)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!output.status.success());
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let message = refuse(&[]);
    assert!(
        message.contains("refusing to serve 0.0.0.0:0 without authentication") && message.contains("--auth-token-file"),
        "{message}"
    );
    let short = token_file(&dir, "short");
    let message = refuse(&["--auth-token-file", short.to_str().unwrap()]);
    assert!(message.contains("at least 16"), "{message}");
    let missing = dir.join("missing-token");
    let message = refuse(&["--auth-token-file", missing.to_str().unwrap()]);
    assert!(message.contains("cannot read the auth token file"), "{message}");

    // With a token it serves, on every address.
    let tag = unique_tag("http-exposed");
    let file = token_file(&dir, "a-long-enough-token-for-this");
    let server = HttpServe::start(
        BIN,
        "0.0.0.0:0",
        &["--working-dir", home, "--auth-token-file", file.to_str().unwrap()],
        &[("HOME", home), (TAG_VAR, &tag)],
        dir.join("server.log"),
    );
    let answer = server.post(
        &initialize(),
        &[
            ("Authorization", "Bearer a-long-enough-token-for-this"),
            ("Host", "workspace.example:8080"),
        ],
    );
    assert_eq!(answer.status, 200, "any Host name beyond loopback: {answer:?}");
    server.stop();
    assert_no_survivors(&tag);
}

/// Starts a call that runs `sleep` twice (a process group), waits until
/// both run, and drops the connection.
fn disconnect_mid_call(server: &HttpServe, tag: &str, headers: &[(&str, &str)], message: &Value) {
    let stream = server.send("POST", "/mcp", headers, message.to_string().as_bytes());
    assert!(
        wait_for_survivors(tag, 3),
        "the server and the command's two processes run"
    );
    drop(stream);
    wait_until("the disconnected call's processes to end", || survivors(tag).len() == 1);
}

#[test]
fn a_client_that_disconnects_mid_call_leaves_no_process() {
    let dir = TempDir::new("http-disconnect");
    let tag = unique_tag("http-disconnect");
    let server = start(&dir, &tag, &[]);
    let session = open_session(&server);
    let command = "sleep 300 & sleep 300";
    for accept in ["application/json, text/event-stream", "application/json"] {
        let headers = [
            ("Content-Type", "application/json"),
            ("Accept", accept),
            ("Mcp-Session-Id", session.as_str()),
        ];
        disconnect_mid_call(&server, &tag, &headers, &call(30, command));
    }
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", STATELESS),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "execute"),
    ];
    let message = stateless(
        31,
        "tools/call",
        json!({"name": "execute", "arguments": {"command": command}}),
    );
    disconnect_mid_call(&server, &tag, &headers, &message);
    // The session still serves.
    let answer = server.post(&call(32, "echo after"), &[("Mcp-Session-Id", &session)]);
    assert_eq!(answer.json()["result"]["structuredContent"]["output"], "after\n");
    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn connections_beyond_the_bound_get_503_and_the_rest_are_served() {
    const BOUND: usize = 512; // MAX_CONNECTIONS in src/cli/http/mod.rs
    let dir = TempDir::new("http-bound");
    let tag = unique_tag("http-bound");
    let server = start(&dir, &tag, &[]);
    // Connections are accepted in the order they were made: these fill every slot.
    let held: Vec<std::net::TcpStream> = (0..BOUND)
        .map(|_| std::net::TcpStream::connect(&server.addr).expect("connect"))
        .collect();
    let answer = server.request("GET", "/healthz", &[], b"");
    assert_eq!(answer.status, 503, "{answer:?}");
    assert!(answer.body.contains("too many connections"), "{answer:?}");
    // A slot freed is a slot to use.
    drop(held);
    wait_until("a connection to be served after the others closed", || {
        server.request("GET", "/healthz", &[], b"").status == 200
    });
    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn an_idle_session_is_released_and_a_busy_one_kept() {
    let dir = TempDir::new("http-idle");
    let tag = unique_tag("http-idle");
    let server = start(&dir, &tag, &["--session-idle", "1", "--log-level", "info"]);
    let idle = open_session(&server);
    let busy = open_session(&server);
    // The busy session's call runs until the test creates the file.
    let release = dir.join("release");
    let stream = server.send(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
            ("Mcp-Session-Id", &busy),
        ],
        call(50, &until_file_exists(&release)).to_string().as_bytes(),
    );
    wait_until("the idle session to be released", || {
        server.log().contains(&format!("session={idle}"))
    });
    let answer = server.post(&call(51, "touch after-idle"), &[("Mcp-Session-Id", &idle)]);
    assert_eq!(answer.status, 404, "{answer:?}");
    assert!(!dir.join("after-idle").exists());
    assert!(
        !server.log().contains(&format!("session={busy}")),
        "a session with a call running was released"
    );
    std::fs::write(&release, "").unwrap();
    let answer = http::read_answer(stream);
    assert_eq!(answer.json()["id"], 50);
    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn sigterm_ends_running_calls_and_the_server() {
    let dir = TempDir::new("http-sigterm");
    let tag = unique_tag("http-sigterm");
    let server = start(&dir, &tag, &[]);
    let session = open_session(&server);
    let stream = server.send(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
            ("Mcp-Session-Id", &session),
        ],
        call(40, "sleep 300 & sleep 300").to_string().as_bytes(),
    );
    assert!(wait_for_survivors(&tag, 3));
    server.stop();
    assert_no_survivors(&tag);
    drop(stream);
}
