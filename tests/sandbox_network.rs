//! The network by name (`sandbox.network` as a policy): real tools reach the
//! real package registries through the server's proxy and nothing else;
//! what the proxy refuses is named with its rule; commands have no direct
//! route out. Through the binary, the Rust API and sessions, on every route
//! that enforces it; every test checks /proc for survivors.

mod common;

use std::io::Write;
use std::net::ToSocketAddrs;
use std::path::Path;

use bash_mcp::McpServer;
use common::host_service::HostService;
use common::sandboxes::*;
use common::*;
use serde_json::{Value, json};

/// The routes that enforce a policy by name: bubblewrap through the
/// supervisor (its sandbox's shared proxy, each command a client with a
/// token of its own), with a bwrap per command (a proxy of its own), and
/// Landlock + seccomp (a proxy of its own on the host's loopback, which
/// serves its token only).
const BY_NAME: &[&str] = &["bwrap", "bwrap-per-command", "landlock"];

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
        "landlock" => {
            let rest = url
                .strip_prefix("http://bash-mcp:")
                .unwrap_or_else(|| panic!("{route}: {url}"));
            let (token, port) = rest
                .split_once("@127.0.0.1:")
                .unwrap_or_else(|| panic!("{route}: {url}"));
            assert!(token.len() == 32 && port.parse::<u16>().is_ok(), "{route}: {url}");
        }
        _ => assert_eq!(url, "http://127.0.0.1:3128", "{route}"),
    }
}

/// What a direct TCP connection and a UDP socket get on `route`: no route
/// in bubblewrap's network namespace; on Landlock, a connect the Landlock
/// domain refuses and a socket the seccomp handler refuses.
fn direct_errors(route: &str) -> (&'static str, &'static str) {
    match route {
        "landlock" => (
            "tcp refused: [Errno 13] Permission denied",
            "udp refused: [Errno 1] Operation not permitted",
        ),
        _ => (
            "tcp refused: [Errno 101] Network is unreachable",
            "udp refused: [Errno 101] Network is unreachable",
        ),
    }
}

/// `@package-registries`, plus the address of each registry host where this
/// machine resolves it to a special-purpose one (an egress proxy on a
/// private address): the proxy refuses those unless the
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
         \x20   try:\n\
         \x20       s = socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == 'tcp' else socket.SOCK_DGRAM)\n\
         \x20       s.settimeout(10)\n\
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
        let (tcp, udp) = direct_errors(route);
        assert!(out.contains(tcp), "{route}: {result}");
        assert!(out.contains(udp), "{route}: {result}");
        if *route == "landlock" {
            // The UDP socket is refused before any address: named as such.
            assert!(
                denied(&result).contains(&json!({"op": "socket", "family": "AF_INET SOCK_DGRAM (UDP)"})),
                "{route}: {result}"
            );
            assert!(
                result["sandbox_message"]
                    .as_str()
                    .unwrap()
                    .contains("(network is off, or open by name: TCP through the sandbox's proxy only)"),
                "{route}: {result}"
            );
        }
        assert!(
            denied(&result)
                .iter()
                .any(|d| d["op"] == "connect" && d["rule"].as_str().unwrap().contains("only the sandbox's proxy")),
            "{route}: {result}"
        );
        assert_no_survivors(&tag);
    }
}

#[test]
fn an_allowed_name_resolving_to_loopback_is_refused_unless_the_operator_lists_the_address() {
    if !have("curl") {
        return skip_missing("curl");
    }
    let service = HostService::start("host service");
    let port = service.port;
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
    drop(service);
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

/// A command behind the proxy has the same temp dir as every other: its
/// server's own (at `/tmp` under bubblewrap, by its host path on Landlock),
/// named by TMPDIR and kept between calls, not the host's shared `/tmp`;
/// the proxy's variables and TMPDIR both hold.
#[test]
fn behind_the_proxy_the_temp_dir_is_the_servers_own() {
    for route in BY_NAME.iter().filter(|r| route_available(r)) {
        let dir = TempDir::new("net-tmp");
        let server = sandboxed_server(&dir, route, policy(&registries()));
        let name = unique_tag("net-tmp-file");
        let first = call_tagged(
            &*server,
            &format!("echo kept > \"$TMPDIR/{name}\" && echo \"$TMPDIR\" && echo \"$HTTPS_PROXY\""),
            server.tag(),
            json!({}),
        );
        let out = output(&first);
        let [tmpdir, proxy] = out.lines().collect::<Vec<_>>()[..] else {
            panic!("{route}: {first}")
        };
        if *route == "landlock" {
            assert!(tmpdir.contains("/bash-mcp-tmp-"), "{route}: {first}");
        } else {
            assert_eq!(tmpdir, "/tmp", "{route}: {first}");
        }
        assert!(
            proxy.starts_with("http://") && proxy.contains("127.0.0.1:"),
            "{route}: {first}"
        );
        assert!(
            !Path::new("/tmp").join(&name).exists(),
            "{route}: written to the host's /tmp"
        );
        let second = call_tagged(&*server, &format!("cat \"$TMPDIR/{name}\""), server.tag(), json!({}));
        assert_eq!(output(&second), "kept\n", "{route}: {second}");
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
    for (route, says) in [("bwrap-fallback", "helper binary")] {
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

/// Landlock + seccomp shares the host's network namespace: what a command
/// there could reach besides its proxy, tried from inside: the host's
/// loopback services (directly, and named through the proxy), an allowed
/// host's address at the proxy's own port (the one TCP port Landlock lets
/// it connect to), the host's own address at that port, a host service's
/// abstract Unix socket, binding a TCP port off the loopback, re-binding its socket off the
/// loopback device, and TCP Fast Open; binding anything but the loopback,
/// a privileged port, sharing a port (`SO_REUSEPORT`), and a port the
/// command bound but does not listen on.
#[test]
fn on_landlock_nothing_but_the_proxy_is_reachable() {
    if !route_available("landlock") || !have_python() {
        return;
    }
    let service = HostService::start("host service");
    let port = service.port;
    let abstract_name = format!("bash-mcp-net-abstract-{}", std::process::id());
    let unix = abstract_listener(&abstract_name);
    let ip = ("pypi.org", 443)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.find(|a| a.is_ipv4()))
        .map_or_else(|| "151.101.0.223".to_owned(), |a| a.ip().to_string());
    let host_ip = std::process::Command::new("hostname")
        .arg("-I")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.split_whitespace().find(|a| !a.contains(':')).map(str::to_owned));
    let script = format!(
        "import os, socket\n\
         proxy = int(os.environ['https_proxy'].rsplit(':', 1)[1])\n\
         def attempt(name, go):\n\
         \x20   try:\n\
         \x20       go(); print(name, 'reached')\n\
         \x20   except OSError as e:\n\
         \x20       print(name, 'refused:', type(e).__name__, e.errno)\n\
         def tcp(addr):\n\
         \x20   s = socket.socket(); s.settimeout(5); s.connect(addr)\n\
         attempt('service', lambda: tcp(('127.0.0.1', {port})))\n\
         attempt('allowed-ip-at-proxy-port', lambda: tcp(('{ip}', proxy)))\n\
         attempt('host-ip-at-proxy-port', lambda: tcp(('{host_ip}', proxy)) if '{host_ip}' else None)\n\
         attempt('abstract', lambda: socket.socket(socket.AF_UNIX).connect('\\0{abstract_name}'))\n\
         attempt('bind', lambda: socket.socket().bind(('0.0.0.0', 0)))\n\
         attempt('bind-privileged', lambda: socket.socket().bind(('127.0.0.1', 80)))\n\
         attempt('reuseport', lambda: socket.socket().setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1))\n\
         def own_not_listening():\n\
         \x20   s = socket.socket(); s.bind(('127.0.0.1', 0)); tcp(('127.0.0.1', s.getsockname()[1]))\n\
         attempt('own-not-listening', own_not_listening)\n\
         def own_server(family, host, reach):\n\
         \x20   s = socket.socket(family); s.bind((host, 0)); s.listen()\n\
         \x20   c = socket.socket(socket.AF_INET6); c.settimeout(5); c.connect((reach, s.getsockname()[1]))\n\
         attempt('own-v6', lambda: own_server(socket.AF_INET6, '::1', '::1'))\n\
         attempt('own-v4-at-v6', lambda: own_server(socket.AF_INET, '127.0.0.1', '::1'))\n\
         def unbind():\n\
         \x20   s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b'')\n\
         attempt('unbind', unbind)\n\
         attempt('fastopen', lambda: socket.socket().sendto(b'x', 0x20000000, ('{ip}', proxy)))\n",
        host_ip = host_ip.clone().unwrap_or_default(),
    );
    for door in ["binary", "rust"] {
        let dir = TempDir::new("net-landlock");
        std::fs::write(dir.join("reach.py"), &script).unwrap();
        let result = match door {
            "binary" => {
                let config = binary_config(&dir, "landlock", policy(&registries()));
                let tag = unique_tag("net-landlock");
                let result = exec_json(
                    &config,
                    &dir,
                    &tag,
                    "python3 reach.py; curl -sS -o /dev/null -w 'proxied %{http_code}\\n' --noproxy '' http://127.0.0.1:1/",
                );
                assert_no_survivors(&tag);
                result
            }
            _ => {
                let server = sandboxed_server(&dir, "landlock", policy(&registries()));
                call(
                    &*server,
                    json!({"command": "python3 reach.py; curl -sS -o /dev/null -w 'proxied %{http_code}\\n' --noproxy '' http://127.0.0.1:1/"}),
                )
            }
        };
        let out = output(&result);
        for (attempt, refused) in [
            ("service", "PermissionError 13"),
            // Bound to the loopback device, its packets never leave.
            ("allowed-ip-at-proxy-port", ""),
            ("abstract", "PermissionError 1"),
            ("bind", "PermissionError 13"),
            ("bind-privileged", "PermissionError 13"),
            ("reuseport", "PermissionError 1"),
            ("own-not-listening", "PermissionError 13"),
            // A server of its own is reached at the address it listens on only.
            ("own-v4-at-v6", "PermissionError 13"),
            ("unbind", "PermissionError 1"),
            ("fastopen", "PermissionError 1"),
        ] {
            assert!(
                out.lines()
                    .any(|l| l.starts_with(&format!("{attempt} refused: {refused}"))),
                "{door}: {attempt}: {result}"
            );
        }
        assert!(out.lines().any(|l| l == "own-v6 reached"), "{door}: {result}");
        if host_ip.is_some() {
            assert!(out.contains("host-ip-at-proxy-port refused:"), "{door}: {result}");
        }
        // Through the proxy, the host's loopback is refused by address.
        assert!(out.contains("proxied 403"), "{door}: {result}");
        let denied = denied(&result);
        assert!(
            denied.contains(&json!({"op": "connect", "addr": format!("127.0.0.1:{port}"),
                "rule": "no direct route: only the sandbox's proxy (HTTP_PROXY, HTTPS_PROXY) reaches the network"})),
            "{door}: {result}"
        );
        assert!(
            denied.contains(&json!({"op": "connect", "host": "127.0.0.1", "port": 1, "rule": "not in network.allow"})),
            "{door}: {result}"
        );
        let bind_rule =
            "a server of the command's own listens on 127.0.0.1 or ::1 only, on a port from 1024 (or 0: any free one)";
        for addr in ["0.0.0.0:0", "127.0.0.1:80"] {
            assert!(
                denied.contains(&json!({"op": "bind", "addr": addr, "rule": bind_rule})),
                "{door}: {addr}: {result}"
            );
        }
    }
    assert_eq!(unix.accepted(), 0, "the host's abstract socket was reached");
    drop(service);
}

/// A listening abstract Unix socket of the host's (as a desktop's services
/// have), counting the connections it accepted.
struct AbstractListener {
    listener: std::os::unix::net::UnixListener,
}

impl AbstractListener {
    fn accepted(&self) -> usize {
        self.listener.set_nonblocking(true).unwrap();
        std::iter::from_fn(|| self.listener.accept().ok()).count()
    }
}

fn abstract_listener(name: &str) -> AbstractListener {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    AbstractListener {
        listener: std::os::unix::net::UnixListener::bind_addr(&addr).unwrap(),
    }
}

/// Any local user can reach a Landlock command's proxy on the host's
/// loopback: without the command's token it is refused, while the command
/// itself is served.
#[test]
fn on_landlock_a_foreign_client_of_the_proxy_is_refused() {
    if !route_available("landlock") || !have("curl") {
        return;
    }
    let dir = TempDir::new("net-foreign");
    let server = std::sync::Arc::new(sandboxed_server(&dir, "landlock", policy(&registries())));
    let s = server.clone();
    let command = "echo ${https_proxy##*:} > port.tmp && mv port.tmp port; \
                   while [ ! -e go ]; do sleep 0.05; done; \
                   curl -sS -o /dev/null -w 'own %{http_code}\\n' http://deb.debian.org/debian/";
    let running = std::thread::spawn(move || call(&*s, json!({"command": command})));
    wait_until("the command wrote its proxy's port", || dir.join("port").exists());
    let port: u16 = std::fs::read_to_string(dir.join("port"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for auth in [
        "",
        "Proxy-Authorization: Basic YmFzaC1tY3A6MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\r\n",
    ] {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .write_all(
                format!("GET http://deb.debian.org/debian/ HTTP/1.1\r\nHost: deb.debian.org\r\n{auth}\r\n").as_bytes(),
            )
            .unwrap();
        let mut answer = String::new();
        std::io::Read::read_to_string(&mut stream, &mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 407 "), "{answer}");
    }
    std::fs::write(dir.join("go"), "").unwrap();
    let result = running.join().unwrap();
    assert!(output(&result).contains("own 200"), "{result}");
}
