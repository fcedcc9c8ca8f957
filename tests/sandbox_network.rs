//! The network by name (`sandbox.network` as a policy): real tools reach the
//! real package registries through the server's proxy and nothing else;
//! what the proxy refuses is named with its rule; commands have no direct
//! route out. Through the binary, the Rust API and sessions, on every route
//! that enforces it; every test checks /proc for survivors.

mod common;

use std::io::{BufRead, Write};
use std::net::{TcpListener, ToSocketAddrs};
use std::path::Path;

use bash_mcp::McpServer;
use common::sandboxes::*;
use common::*;
use serde_json::{Value, json};

/// The routes that enforce a policy by name: bubblewrap through the
/// supervisor (its sandbox's shared proxy, each command a client with a
/// token of its own) and with a bwrap per command (a proxy of its own).
const BY_NAME: &[&str] = &["bwrap", "bwrap-per-command"];

/// The proxy URL a command on `route` gets: with its own token as the
/// password on the supervisor's shared proxy.
fn assert_proxy_url(route: &str, out: &str) {
    let url = out
        .lines()
        .find_map(|l| l.strip_prefix("https_proxy="))
        .unwrap_or_else(|| panic!("{route}: no https_proxy in {out}"));
    match route {
        "bwrap" => {
            let token = url
                .strip_prefix("http://bash-mcp:")
                .and_then(|rest| rest.strip_suffix("@127.0.0.1:3128"))
                .unwrap_or_else(|| panic!("{route}: {url}"));
            assert!(
                token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit()),
                "{route}: {url}"
            );
        }
        _ => assert_eq!(url, "http://127.0.0.1:3128", "{route}"),
    }
}

/// `@package-registries`, plus the address of each registry host where this
/// machine resolves it to a special-purpose one (an egress proxy on a
/// private or documentation address): the proxy refuses those unless the
/// operator lists them, as an operator here would.
fn registries() -> Vec<String> {
    let mut allow = vec!["@package-registries".to_owned()];
    for host in [
        "pypi.org",
        "files.pythonhosted.org",
        "registry.npmjs.org",
        "index.crates.io",
        "static.crates.io",
    ] {
        for addr in (host, 443).to_socket_addrs().into_iter().flatten() {
            let ip = addr.ip().to_string();
            if bash_mcp::sandbox::network::address::special_purpose(addr.ip()).is_some() && !allow.contains(&ip) {
                allow.push(ip);
            }
        }
    }
    allow
}

fn policy(allow: &[String]) -> Value {
    json!({"network": {"allow": allow, "deny": ["*.invalid"]}})
}

fn denied(result: &Value) -> Vec<Value> {
    result["sandbox"]["denied"].as_array().cloned().unwrap_or_default()
}

fn output(result: &Value) -> &str {
    result["output"]
        .as_str()
        .unwrap_or_else(|| panic!("no output: {result}"))
}

#[test]
fn registries_are_reached_through_the_proxy_and_an_unlisted_host_gets_a_403_naming_its_rule() {
    if !have("curl") {
        return skip_missing("curl");
    }
    for route in BY_NAME.iter().filter(|r| route_available(r)) {
        let dir = TempDir::new("net-curl");
        let config = binary_config(&dir, route, policy(&registries()));
        let tag = unique_tag("net-curl");
        let result = exec_json(
            &config,
            &dir,
            &tag,
            "curl -sS -o /dev/null -w 'pypi %{http_code}\\n' https://pypi.org/simple/six/; \
             curl -sS -o /dev/null -w 'plain %{http_code}\\n' http://deb.debian.org/debian/; \
             curl -sS https://example.com/ 2>&1; echo \"https_proxy=$https_proxy\"",
        );
        let out = output(&result);
        assert!(
            out.contains("pypi 200") && out.contains("plain 200"),
            "{route}: {result}"
        );
        assert!(out.contains("CONNECT tunnel failed, response 403"), "{route}: {result}");
        assert_proxy_url(route, out);
        assert_eq!(
            denied(&result),
            vec![json!({"op": "connect", "host": "example.com", "port": 443, "rule": "not in network.allow"})],
            "{route}: {result}"
        );
        assert!(
            result["sandbox_message"]
                .as_str()
                .unwrap()
                .contains("example.com:443 (the network policy: not in network.allow)"),
            "{route}: {result}"
        );
        assert_no_survivors(&tag);
    }
}

#[test]
fn pip_npm_and_cargo_install_from_the_real_registries() {
    let tools: [(&str, &str, &str); 3] = [
        (
            "python3",
            "python3 -m venv v && v/bin/pip install -q --no-cache-dir --disable-pip-version-check six && v/bin/python -c 'import six; print(\"six\", six.__version__)'",
            "six 1.",
        ),
        (
            "npm",
            "npm install --cache ./npm-cache --no-audit --no-fund --loglevel=error left-pad >/dev/null && node -e 'console.log(\"left-pad\", require(\"left-pad\")(\"x\", 3))'",
            "left-pad   x",
        ),
        (
            "cargo",
            "export CARGO_HOME=$PWD/cargo-home; cargo new -q --vcs none c && cd c && echo 'itoa = \"1\"' >> Cargo.toml && cargo fetch -q && ls $CARGO_HOME/registry/cache/*/ | grep itoa-1",
            "itoa-1.",
        ),
    ];
    for route in BY_NAME.iter().filter(|r| route_available(r)) {
        for (tool, command, expect) in tools {
            if !have(tool) {
                skip_missing(tool);
                continue;
            }
            let dir = TempDir::new("net-tools");
            let config = binary_config(&dir, route, policy(&registries()));
            let tag = unique_tag("net-tools");
            let result = exec_json(&config, &dir, &tag, command);
            assert_eq!(result["exit_code"], 0, "{route} {tool}: {result}");
            assert!(output(&result).contains(expect), "{route} {tool}: {result}");
            // No connection refused (a tool's probe of read-only temp dirs
            // is named on the supervisor's route, which observes writes).
            let connects: Vec<Value> = denied(&result).into_iter().filter(|d| d["op"] == "connect").collect();
            assert_eq!(connects, Vec::<Value>::new(), "{route} {tool}: {result}");
            assert_no_survivors(&tag);
        }
    }
}

#[test]
fn a_direct_connection_and_udp_have_no_route_and_the_connection_is_named() {
    if !have_python() {
        return;
    }
    let ip = ("pypi.org", 443)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.find(|a| a.is_ipv4()))
        .map_or_else(|| "151.101.0.223".to_owned(), |a| a.ip().to_string());
    let script = format!(
        "import socket\n\
         for kind, go in (('tcp', lambda s: s.connect(('{ip}', 443))), ('udp', lambda s: s.sendto(b'x', ('8.8.8.8', 53)))):\n\
         \x20   s = socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == 'tcp' else socket.SOCK_DGRAM)\n\
         \x20   s.settimeout(10)\n\
         \x20   try:\n\
         \x20       go(s); print(kind, 'reached')\n\
         \x20   except OSError as e:\n\
         \x20       print(kind, 'refused:', e)\n"
    );
    for route in BY_NAME.iter().filter(|r| route_available(r)) {
        let dir = TempDir::new("net-direct");
        std::fs::write(dir.join("direct.py"), &script).unwrap();
        let config = binary_config(&dir, route, policy(&registries()));
        let tag = unique_tag("net-direct");
        let result = exec_json(&config, &dir, &tag, "python3 direct.py");
        let out = output(&result);
        assert!(
            out.contains("tcp refused: [Errno 101] Network is unreachable"),
            "{route}: {result}"
        );
        assert!(
            out.contains("udp refused: [Errno 101] Network is unreachable"),
            "{route}: {result}"
        );
        assert!(
            denied(&result)
                .iter()
                .any(|d| d["op"] == "connect" && d["rule"].as_str().unwrap().contains("only the sandbox's proxy")),
            "{route}: {result}"
        );
        assert_no_survivors(&tag);
    }
}

/// A server on the host's loopback answering each request with `body`.
fn host_service(
    body: &'static str,
) -> (
    u16,
    std::thread::JoinHandle<()>,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    let handle = std::thread::spawn(move || {
        for stream in listener.incoming() {
            if s.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            let Ok(stream) = stream else { continue };
            let mut line = String::new();
            let mut reader = std::io::BufReader::new(&stream);
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = (&stream)
                .write_all(format!("HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
        }
    });
    (port, handle, stop)
}

#[test]
fn an_allowed_name_resolving_to_loopback_is_refused_unless_the_operator_lists_the_address() {
    if !have("curl") {
        return skip_missing("curl");
    }
    let (port, service, stop) = host_service("host service");
    for route in BY_NAME.iter().filter(|r| route_available(r)) {
        let dir = TempDir::new("net-loopback");
        // Through the Rust API this time.
        let server = sandboxed_server(&dir, route, json!({"network": {"allow": ["localhost"]}}));
        // Directly (NO_PROXY names the loopback): the sandbox's own loopback,
        // where nothing listens. Through the proxy: refused by address.
        let command = format!(
            "curl -sS http://localhost:{port}/ 2>&1; curl -sS --noproxy '' -o /dev/null -w 'proxied %{{http_code}}\\n' http://localhost:{port}/"
        );
        let result = call(&*server, json!({"command": command}));
        let out = output(&result);
        assert!(
            !out.contains("host service") && out.contains("Couldn't connect to server"),
            "{route}: {result}"
        );
        assert!(out.contains("proxied 403"), "{route}: {result}");
        let mut expected = vec![
            json!({"op": "connect", "host": "localhost", "port": port, "rule": "special-purpose address 127.0.0.1 (loopback)"}),
        ];
        if result["sandbox"]["denials_from"] == "seccomp notification" {
            // Observed (the supervisor's route): the direct attempts are named too.
            let rule = "no direct route: only the sandbox's proxy (HTTP_PROXY, HTTPS_PROXY) reaches the network";
            expected.insert(
                0,
                json!({"op": "connect", "addr": format!("[::1]:{port}"), "rule": rule}),
            );
            expected.insert(
                0,
                json!({"op": "connect", "addr": format!("127.0.0.1:{port}"), "rule": rule}),
            );
        }
        assert_eq!(denied(&result), expected, "{route}: {result}");
        drop(server);
        let listed = sandboxed_server(
            &dir,
            route,
            json!({"network": {"allow": ["localhost", format!("127.0.0.1:{port}")]}}),
        );
        let result = call(
            &*listed,
            json!({"command": format!("curl -sS --noproxy '' http://localhost:{port}/")}),
        );
        assert_eq!(output(&result), "host service", "{route}: {result}");
        assert_eq!(denied(&result), Vec::<Value>::new(), "{route}: {result}");
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = std::net::TcpStream::connect(("127.0.0.1", port));
    service.join().unwrap();
}

#[test]
fn a_call_narrows_the_hosts_and_cannot_add_any_and_the_audit_log_names_each_refusal() {
    if !have("curl") {
        return skip_missing("curl");
    }
    for route in BY_NAME.iter().filter(|r| route_available(r)) {
        let dir = TempDir::new("net-narrow");
        let server = sandboxed_server(&dir, route, policy(&registries()));
        let logs = TempDir::new("net-narrow-log");
        let log = logs.join("audit.jsonl");
        server.configure(&json!({"audit": {"path": log}}).to_string()).unwrap();
        let mut narrow = registries();
        narrow.retain(|e| e != "@package-registries");
        narrow.push("pypi.org".into());
        let result = call(
            &*server,
            json!({"command": "curl -sS -o /dev/null -w '%{http_code}\\n' https://pypi.org/simple/six/; curl -sS https://registry.npmjs.org/ 2>&1",
                   "sandbox": {"network": {"allow": narrow}}}),
        );
        assert!(output(&result).starts_with("200\n"), "{route}: {result}");
        let refusal =
            json!({"op": "connect", "host": "registry.npmjs.org", "port": 443, "rule": "not in network.allow"});
        assert_eq!(denied(&result), vec![refusal.clone()], "{route}: {result}");
        // The audit log records it too.
        let audited = std::fs::read_to_string(&log).unwrap();
        let entry: Value = serde_json::from_str(audited.lines().last().unwrap()).unwrap();
        assert_eq!(entry["sandbox_denied"], json!([refusal]), "{route}: {entry}");
        let refused = call(
            &*server,
            json!({"command": "true", "sandbox": {"network": {"allow": ["github.com"]}}}),
        );
        assert_eq!(refused["error"], "invalid_arguments", "{route}: {refused}");
        assert!(
            refused["message"].as_str().unwrap().contains("`github.com`"),
            "{route}: {refused}"
        );
    }
}

#[test]
fn each_command_is_refused_by_its_own_policy_and_the_proxy_serves_no_one_without_a_command_s_token() {
    if !have("curl") {
        return skip_missing("curl");
    }
    for route in BY_NAME.iter().filter(|r| route_available(r)) {
        let dir = TempDir::new("net-clients");
        let server = sandboxed_server(&dir, route, policy(&registries()));
        let mut narrow = registries();
        narrow.retain(|e| e != "@package-registries");
        narrow.push("pypi.org".into());
        // A narrowed command, then a wide one: each result names only its
        // own refusals, by its own policy.
        let npm = "curl -sS -o /dev/null -w 'npm %{http_code}\\n' https://registry.npmjs.org/ 2>&1";
        let first = call(
            &*server,
            json!({"command": npm, "sandbox": {"network": {"allow": narrow}}}),
        );
        assert!(output(&first).contains("response 403"), "{route}: {first}");
        assert_eq!(
            denied(&first),
            vec![json!({"op": "connect", "host": "registry.npmjs.org", "port": 443, "rule": "not in network.allow"})],
            "{route}: {first}"
        );
        let second = call(&*server, json!({"command": npm}));
        assert!(output(&second).contains("npm 200"), "{route}: {second}");
        assert_eq!(denied(&second), Vec::<Value>::new(), "{route}: {second}");
        // The proxy's port without the command's credentials, or with
        // another's: refused on the shared proxy.
        let foreign = call(
            &*server,
            json!({"command": "curl -sS -o /dev/null -w 'bare %{http_code}\\n' --proxy http://127.0.0.1:3128 http://deb.debian.org/debian/; \
                   curl -sS -o /dev/null -w 'other %{http_code}\\n' --proxy http://bash-mcp:0123456789abcdef0123456789abcdef@127.0.0.1:3128 http://deb.debian.org/debian/"}),
        );
        let out = output(&foreign);
        match *route {
            "bwrap" => assert!(
                out.contains("bare 407") && out.contains("other 407"),
                "{route}: {foreign}"
            ),
            // A command's own proxy serves whoever reaches its loopback: only it.
            _ => assert!(
                out.contains("bare 200") && out.contains("other 200"),
                "{route}: {foreign}"
            ),
        }
    }
}

#[test]
fn a_session_reaches_registries_through_the_proxy_for_its_whole_life() {
    if !have("curl") {
        return skip_missing("curl");
    }
    for route in BY_NAME.iter().filter(|r| route_available(r)) {
        let dir = TempDir::new("net-session");
        let server = sandboxed_server(&dir, route, policy(&registries()));
        server
            .configure(&json!({"sessions": {"enabled": true}}).to_string())
            .unwrap();
        let started = call_tool(
            &*server,
            "session_start",
            json!({"shell": "bash", "env": {TAG_VAR: server.tag()}}),
        );
        let id = started["session_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{started}"))
            .to_owned();
        for _ in 0..2 {
            let result = call_tool(
                &*server,
                "session_run",
                json!({"session_id": id, "timeout_seconds": 60,
                       "command": "curl -sS -o /dev/null -w '%{http_code}\\n' https://pypi.org/simple/six/; curl -sS https://example.com 2>&1 | head -1"}),
            );
            let out = result["output"].as_str().unwrap_or_else(|| panic!("{result}"));
            assert!(out.contains("200") && out.contains("response 403"), "{route}: {result}");
        }
        let _ = call_tool(&*server, "session_close", json!({"session_id": id}));
    }
}

#[test]
fn routes_that_cannot_enforce_a_policy_refuse_to_run_the_command() {
    for (route, says) in [("landlock", "bubblewrap only"), ("bwrap-fallback", "helper binary")] {
        if !route_available(route) {
            continue;
        }
        let dir = TempDir::new("net-refused");
        let server = sandboxed_server(&dir, route, policy(&["pypi.org".to_owned()]));
        let result = call(&*server, json!({"command": format!("touch {}/ran", dir.display())}));
        assert_eq!(result["error"], "sandbox_unavailable", "{route}: {result}");
        assert!(result["message"].as_str().unwrap().contains(says), "{route}: {result}");
        assert!(!Path::new(&dir.join("ran")).exists());
    }
}
