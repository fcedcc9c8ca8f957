//! A running command's connection that its network policy does not allow,
//! put to the person while it waits (`network_ask`): allowed once (this
//! command's later connections there pass too), allowed for the server (a
//! later command passes unasked, until the grants are revoked), denied, not
//! answered in time, and refused at once past the cap of waiting
//! connections. Through the library's approver here, on bubblewrap (the
//! supervisor's shared proxy) and Landlock + seccomp (a proxy of the
//! command's own); every refusal is in `sandbox.denied` with its reason,
//! every question in the audit log; /proc is checked for survivors.
//!
//! The origins are the test's own servers on the host's loopback, which the
//! operator's policy lists by address (`127.0.0.1:<port>`): the command
//! reaches them by the name `localhost`, which no allow entry names, so the
//! proxy asks; once allowed, the address the name resolves to is the listed
//! one.

mod common;

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

use bash_mcp::McpServer;
use bash_mcp::approval::{ApprovalAnswer, ApprovalKind, ApprovalRequest};
use common::host_service::HostService;
use common::sandboxes::*;
use common::*;
use serde_json::{Value, json};

/// The routes that ask: bubblewrap through the supervisor, and Landlock.
const ROUTES: &[&str] = &["bwrap", "landlock"];

/// A command that fetches `http://localhost:<port>/` through its proxy
/// (`localhost` is in `NO_PROXY`, which `--noproxy ''` sets aside) and
/// prints the HTTP status and the body.
fn fetch(port: u16) -> String {
    format!("curl -sS --noproxy '' -w ' [%{{http_code}}]\\n' http://localhost:{port}/")
}

/// A server on `route` whose policy lists the origins by address, with the
/// audit log at `audit` and `extra` configuration over it.
fn server(dir: &Path, route: &str, origins: &[u16], audit: &Path, extra: Value) -> TestServer {
    let allow: Vec<String> = origins.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let server = sandboxed_server(dir, route, json!({"network": {"allow": allow}}));
    let mut config = json!({"audit": {"path": audit}});
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    server.configure(&config.to_string()).unwrap();
    server
}

/// What the approver was asked: the place (`localhost:<port>`) of each
/// connection question.
#[derive(Default)]
struct Asked {
    places: Mutex<Vec<String>>,
}

impl Asked {
    fn places(&self) -> Vec<String> {
        self.places.lock().unwrap().clone()
    }
}

fn output(result: &Value) -> String {
    result["output"]
        .as_str()
        .unwrap_or_else(|| panic!("no output: {result}"))
        .to_owned()
}

fn denied(result: &Value) -> Vec<Value> {
    result["sandbox"]["denied"].as_array().cloned().unwrap_or_default()
}

/// The audit log's connection questions: (place, answer, by).
fn audited(audit: &Path) -> Vec<(String, Value, Value)> {
    std::fs::read_to_string(audit)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["approval"]["kind"] == "connection")
        .map(|e| {
            let a = &e["approval"];
            (
                a["widens"]["network"][0].as_str().unwrap_or_default().to_owned(),
                a["answer"].clone(),
                a["by"].clone(),
            )
        })
        .collect()
}

#[test]
fn a_host_approver_decides_on_connections_the_policy_refuses() {
    if !have("curl") {
        return skip_missing("curl");
    }
    for route in ROUTES.iter().filter(|r| route_available(r)) {
        let (once, kept, refused) = (
            HostService::start("from once"),
            HostService::start("from kept"),
            HostService::start("from refused"),
        );
        let dir = TempDir::new("net-ask-host");
        let logs = TempDir::new("net-ask-audit");
        let audit = logs.join("audit.jsonl");
        let server = server(&dir, route, &[once.port, kept.port, refused.port], &audit, json!({}));
        let asked = Arc::new(Asked::default());
        let seen = asked.clone();
        let (p_once, p_kept) = (once.port, kept.port);
        server.set_approver(
            Some(Arc::new(move |r: &ApprovalRequest| {
                assert_eq!(r.kind, ApprovalKind::Connection);
                let place = r.widens.network[0].clone();
                seen.places.lock().unwrap().push(place.clone());
                if place == format!("localhost:{p_once}") {
                    ApprovalAnswer::AllowOnce
                } else if place == format!("localhost:{p_kept}") {
                    ApprovalAnswer::AllowForServer
                } else {
                    ApprovalAnswer::Deny
                }
            })),
            HANG_GUARD,
        );

        // Allowed once: both connections of the command pass, asked once.
        let twice = format!("{}; {}", fetch(once.port), fetch(once.port));
        let result = call(&*server, json!({"command": twice}));
        assert_eq!(
            output(&result),
            "from once [200]\nfrom once [200]\n",
            "{route}: {result}"
        );
        assert!(denied(&result).is_empty(), "{route}: {result}");
        let o = format!("localhost:{}", once.port);
        assert_eq!(asked.places(), std::slice::from_ref(&o), "{route}");
        // Once is once: the next command is asked again.
        let result = call(&*server, json!({"command": fetch(once.port)}));
        assert_eq!(output(&result), "from once [200]\n", "{route}: {result}");
        assert_eq!(asked.places().len(), 2, "{route}");

        // Allowed for the server: a second command passes unasked.
        let k = format!("localhost:{}", kept.port);
        for _ in 0..2 {
            let result = call(&*server, json!({"command": fetch(kept.port)}));
            assert_eq!(output(&result), "from kept [200]\n", "{route}: {result}");
        }
        assert_eq!(asked.places(), [o.clone(), o.clone(), k.clone()], "{route}");
        let grants = McpServer::approvals(&*server).unwrap().grants();
        assert_eq!(grants.len(), 1, "{route}");
        assert_eq!(
            serde_json::to_value(&grants[0]).unwrap(),
            json!({"id": grants[0].id, "type": "connect", "host": "localhost", "port": kept.port})
        );
        // Revoked: asked again.
        assert_eq!(server.revoke_grants(None).len(), 1, "{route}");
        let result = call(&*server, json!({"command": fetch(kept.port)}));
        assert_eq!(output(&result), "from kept [200]\n", "{route}: {result}");
        assert_eq!(asked.places().len(), 4, "{route}");

        // Denied: a 403 naming why, the denial in the result, nothing reached.
        let result = call(&*server, json!({"command": fetch(refused.port)}));
        let out = output(&result);
        assert!(!out.contains("from refused"), "{route}: {result}");
        let reason = format!(
            "bash-mcp sandbox: the sandbox's network policy refused localhost:{} (not in network.allow; the person denied it)\n [403]\n",
            refused.port
        );
        assert_eq!(out, reason, "{route}: {result}");
        assert_eq!(
            denied(&result),
            [json!({"op": "connect", "host": "localhost", "port": refused.port,
                "rule": "not in network.allow; the person denied it"})],
            "{route}: {result}"
        );
        // The same command again gets the earlier denial, unasked.
        let result = call(&*server, json!({"command": fetch(refused.port)}));
        assert!(
            output(&result).contains("the person denied it before"),
            "{route}: {result}"
        );
        assert_eq!(asked.places().len(), 5, "{route}");

        let r = format!("localhost:{}", refused.port);
        let log = audited(&audit);
        let expected = [
            (o.clone(), json!("allow_once"), json!("host")),
            (o.clone(), json!("allow_once"), json!("host")),
            (k.clone(), json!("allow_for_server"), json!("host")),
            (k.clone(), json!("allow_for_server"), json!("grant")),
            (k.clone(), json!("allow_for_server"), json!("host")),
            (r.clone(), json!("deny"), json!("host")),
            (r.clone(), json!("deny"), json!("earlier_denial")),
        ];
        assert_eq!(log, expected, "{route}: the audit log's questions");
        drop(server);
    }
}

/// An approver that holds each question until the test lets it answer,
/// telling the test (through a file in the command's directory) that it
/// was asked.
struct Held {
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl Held {
    fn new() -> Arc<Held> {
        Arc::new(Held {
            state: Mutex::new((0, false)),
            changed: Condvar::new(),
        })
    }

    fn release(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }

    fn asked(&self) -> usize {
        self.state.lock().unwrap().0
    }

    fn approver(self: &Arc<Self>, signal: std::path::PathBuf) -> Arc<dyn bash_mcp::approval::Approver> {
        let held = self.clone();
        Arc::new(move |_: &ApprovalRequest| {
            let mut state = held.state.lock().unwrap();
            state.0 += 1;
            std::fs::write(&signal, "asked").unwrap();
            while !state.1 {
                state = held.changed.wait(state).unwrap();
            }
            ApprovalAnswer::AllowOnce
        })
    }
}

#[test]
fn a_connection_nobody_answers_in_time_gets_a_403_saying_so() {
    if !have("curl") {
        return skip_missing("curl");
    }
    for route in ROUTES.iter().filter(|r| route_available(r)) {
        let origin = HostService::start("from silent");
        let dir = TempDir::new("net-ask-silent");
        let logs = TempDir::new("net-ask-silent-audit");
        let audit = logs.join("audit.jsonl");
        let server = server(
            &dir,
            route,
            &[origin.port],
            &audit,
            json!({"network_ask": {"wait_seconds": 1}}),
        );
        let held = Held::new();
        server.set_approver(Some(held.approver(dir.join("asked"))), HANG_GUARD);
        let result = call(&*server, json!({"command": fetch(origin.port)}));
        held.release();
        let out = output(&result);
        assert!(
            out.contains("(not in network.allow; no answer from the person within 1 s)\n [403]"),
            "{route}: {result}"
        );
        assert_eq!(held.asked(), 1, "{route}");
        assert_eq!(
            denied(&result),
            [json!({"op": "connect", "host": "localhost", "port": origin.port,
                "rule": "not in network.allow; no answer from the person within 1 s"})],
            "{route}: {result}"
        );
        drop(server);
    }
}

#[test]
fn past_the_cap_of_waiting_connections_one_is_refused_at_once_naming_it() {
    if !have("curl") {
        return skip_missing("curl");
    }
    for route in ROUTES.iter().filter(|r| route_available(r)) {
        let (first, second) = (HostService::start("from first"), HostService::start("from second"));
        let dir = TempDir::new("net-ask-cap");
        let logs = TempDir::new("net-ask-cap-audit");
        let audit = logs.join("audit.jsonl");
        let server = server(
            &dir,
            route,
            &[first.port, second.port],
            &audit,
            json!({"network_ask": {"max_waiting": 1}}),
        );
        let held = Held::new();
        server.set_approver(Some(held.approver(dir.join("asked"))), HANG_GUARD);
        // The first connection waits for the person; once it does (the
        // approver wrote `asked`), the second is refused at once, and then
        // the test lets the person answer the first.
        let command = format!(
            "({}) > first.out & {}; {}; touch second-done; wait; cat first.out",
            fetch(first.port),
            until_file_exists(&dir.join("asked")),
            fetch(second.port)
        );
        let releaser = {
            let held = held.clone();
            let done = dir.join("second-done");
            std::thread::spawn(move || {
                wait_until("the command's second connection ends", || done.exists());
                held.release();
            })
        };
        let result = call(&*server, json!({"command": command}));
        releaser.join().unwrap();
        let out = output(&result);
        assert!(
            out.contains(&format!(
                "refused localhost:{} (not in network.allow; not asked: the 1 connections that may wait for the person's answer at once (network_ask.max_waiting) already do)\n [403]",
                second.port
            )),
            "{route}: {result}"
        );
        assert!(out.ends_with("from first [200]\n"), "{route}: {result}");
        assert_eq!(held.asked(), 1, "{route}: the second was not asked");
        assert_eq!(denied(&result).len(), 1, "{route}: {result}");
        drop(server);
    }
}

/// `bash-mcp serve` on `route`, driven line by line over stdio as a
/// 2025-11-25 client that declared form elicitation and tasks.
struct Stdio {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<Value>,
    config: std::path::PathBuf,
    next: i64,
}

impl Stdio {
    fn start(dir: &Path, route: &str, origins: &[u16]) -> Stdio {
        use std::io::BufRead;
        let allow: Vec<String> = origins.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let config = std::path::PathBuf::from(format!("{}-{route}.json", dir.display()));
        let sandbox = sandbox_value(route, dir, json!({"network": {"allow": allow}}));
        std::fs::write(
            &config,
            json!({"sandbox": sandbox, "tasks": {"enabled": true}, "audit": null}).to_string(),
        )
        .unwrap();
        let mut child = std::process::Command::new(HELPER)
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .arg("--working-dir")
            .arg(dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(serde_json::from_str::<Value>(&line).unwrap()).is_err() {
                    break;
                }
            }
        });
        let mut stdio = Stdio {
            child,
            lines,
            config,
            next: 0,
        };
        let capabilities = json!({"elicitation": {"form": {}}, "tasks": {"requests": {"elicitation": {"create": {}}}}});
        let id = stdio.send_request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}),
        );
        stdio.reply_to(id);
        stdio.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        stdio
    }

    fn send(&mut self, message: Value) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn send_request(&mut self, method: &str, params: Value) -> i64 {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn next_message(&self) -> Value {
        self.lines.recv_timeout(HANG_GUARD).expect("a message from the server")
    }

    /// The response to `id`, skipping notifications.
    fn reply_to(&self, id: i64) -> Value {
        loop {
            let message = self.next_message();
            if message.get("method").is_some() && message.get("id").is_none() {
                continue;
            }
            assert_eq!(message["id"], id, "expected the response to {id}: {message}");
            return message;
        }
    }

    /// The next request from the server, skipping notifications.
    fn next_request(&self) -> Value {
        loop {
            let message = self.next_message();
            if message.get("id").is_some() && message.get("method").is_some() {
                return message;
            }
            assert!(message.get("id").is_none(), "expected a request: {message}");
        }
    }

    fn answer(&mut self, request: &Value, decision: &str) {
        let result = json!({"action": "accept", "content": {"decision": decision}});
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
    }
}

impl Drop for Stdio {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.config);
    }
}

/// The elicitation's message names the place and the command exactly.
fn assert_asks_about(ask: &Value, place: &str, command: &str) {
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["mode"], "form", "{ask}");
    let message = ask["params"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("is connecting to {place}")), "{message}");
    assert!(message.contains(&format!("\n    {command}\n")), "{message}");
}

#[test]
fn a_2025_call_asks_through_elicitation_while_its_command_waits() {
    if !have("curl") {
        return skip_missing("curl");
    }
    for route in ROUTES.iter().filter(|r| route_available(r)) {
        let origin = HostService::start("from elicited");
        let dir = TempDir::new("net-ask-elicit");
        let mut client = Stdio::start(&dir, route, &[origin.port]);
        let place = format!("localhost:{}", origin.port);
        let tag = unique_tag("net-ask-elicit");
        for (decision, expected) in [
            ("allow_once", "from elicited [200]\n".to_owned()),
            (
                "deny",
                format!(
                    "bash-mcp sandbox: the sandbox's network policy refused {place} (not in network.allow; the person denied it)\n [403]\n"
                ),
            ),
        ] {
            let command = fetch(origin.port);
            let id = client.send_request(
                "tools/call",
                json!({"name": "execute", "arguments": {"command": command, "env": {TAG_VAR: tag}}}),
            );
            let ask = client.next_request();
            assert_asks_about(&ask, &place, &command);
            client.answer(&ask, decision);
            let result = client.reply_to(id)["result"]["structuredContent"].clone();
            assert_eq!(output(&result), expected, "{route} {decision}: {result}");
            if decision == "deny" {
                assert_eq!(
                    denied(&result),
                    [json!({"op": "connect", "host": "localhost", "port": origin.port,
                        "rule": "not in network.allow; the person denied it"})],
                    "{route}: {result}"
                );
            }
        }
        drop(client);
        assert_no_survivors(&tag);
    }
}

#[test]
fn a_2025_task_asks_through_tasks_result_while_its_command_waits() {
    if !have("curl") {
        return skip_missing("curl");
    }
    for route in ROUTES.iter().filter(|r| route_available(r)) {
        let origin = HostService::start("from tasked");
        let dir = TempDir::new("net-ask-task");
        let mut client = Stdio::start(&dir, route, &[origin.port]);
        let place = format!("localhost:{}", origin.port);
        let tag = unique_tag("net-ask-task");
        for (decision, expected) in [
            ("allow_for_server", "from tasked [200]\n".to_owned()),
            (
                "",
                "from tasked [200]\n".to_owned(), // the grant answers: nobody is asked
            ),
        ] {
            let command = fetch(origin.port);
            let id = client.send_request(
                "tools/call",
                json!({"name": "execute", "arguments": {"command": command, "env": {TAG_VAR: tag}}, "task": {"ttl": 60000}}),
            );
            let reply = client.reply_to(id);
            let task = reply["result"]["task"]["taskId"].as_str().unwrap().to_owned();
            let result_id = client.send_request("tasks/result", json!({"taskId": task}));
            if !decision.is_empty() {
                let ask = client.next_request();
                assert_asks_about(&ask, &place, &command);
                assert_eq!(
                    ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task,
                    "{ask}"
                );
                client.answer(&ask, decision);
            }
            let result = client.reply_to(result_id)["result"].clone();
            assert_eq!(
                output(&result["structuredContent"]),
                expected,
                "{route} {decision:?}: {result}"
            );
        }
        let status = client.send_request("tools/call", json!({"name": "status", "arguments": {}}));
        let status = client.reply_to(status)["result"]["structuredContent"].clone();
        assert_eq!(
            status["approvals"]["grants"][0]["type"], "connect",
            "{route}: the grant is listed: {status}"
        );
        drop(client);
        assert_no_survivors(&tag);
    }
}
