//! A running command's connection that its network policy does not allow,
//! put to the person while it waits (`network_ask`): allowed once (this
//! command's later connections there pass too), allowed for the server (a
//! later command passes unasked, until the grants are revoked), denied, not
//! answered in time, and refused at once past the cap of waiting
//! connections. Through the library's approver, a 2025-11-25 call's
//! elicitation, and a task of either era (2025-11-25 through `tasks/result`,
//! 2026-07-28 through `tasks/get` and `tasks/update`), on every route that
//! asks: bubblewrap through the supervisor (its shared proxy), a bwrap per
//! command (a proxy of the command's own) and Landlock + seccomp (a proxy
//! on the host's loopback); every refusal is in `sandbox.denied` with its
//! reason, every question in the audit log; /proc is checked for survivors.
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

/// The routes that ask: bubblewrap through the supervisor, a bwrap per
/// command, and Landlock. (A bwrap whose supervisor cannot start lacks the
/// `bash-mcp` binary a network policy needs: it runs nothing.)
const ROUTES: &[&str] = &["bwrap", "bwrap-per-command", "landlock"];

/// A command that fetches `http://localhost:<port>/` through its proxy
/// (`localhost` is in `NO_PROXY`, which `--noproxy ''` sets aside) and
/// prints the body, the HTTP status and the proxy's `X-Proxy-Error` code
/// (none on a success: `body [200]`; `reason [403]blocked-by-person`).
fn fetch(port: u16) -> String {
    fetch_from("localhost", port)
}

/// [`fetch`] from `host`.
fn fetch_from(host: &str, port: u16) -> String {
    format!("curl -sS --noproxy '' -w ' [%{{http_code}}]%header{{x-proxy-error}}\\n' http://{host}:{port}/")
}

/// What [`fetch`] prints when the proxy refuses `place` by `rule` with `code`.
fn refused(place: &str, rule: &str, code: &str) -> String {
    format!("bash-mcp sandbox: the sandbox's network policy refused {place} ({rule})\n [403]{code}\n")
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

/// The audit log's connection questions: (place, answer, by), each checked
/// to be an `execute` entry naming its command (one of `commands`).
fn audited(audit: &Path, commands: &[&str]) -> Vec<(String, Value, Value)> {
    std::fs::read_to_string(audit)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["approval"]["kind"] == "connection")
        .map(|e| {
            assert_eq!(e["tool"], "execute", "{e}");
            assert!(
                commands.iter().any(|c| e["command"] == *c),
                "the entry names its command: {e}"
            );
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
        let (once, kept, refused_origin) = (
            HostService::start("from once"),
            HostService::start("from kept"),
            HostService::start("from refused"),
        );
        let dir = TempDir::new("net-ask-host");
        let logs = TempDir::new("net-ask-audit");
        let audit = logs.join("audit.jsonl");
        let ports = [once.port, kept.port, refused_origin.port];
        let server = server(&dir, route, &ports, &audit, json!({}));
        let asked = Arc::new(Asked::default());
        let seen = asked.clone();
        let (p_once, p_kept) = (once.port, kept.port);
        let where_run = dir.display().to_string();
        server.set_approver(
            Some(Arc::new(move |r: &ApprovalRequest| {
                // The question names the place, the command's directory and the rule.
                assert_eq!(r.kind, ApprovalKind::Connection);
                assert_eq!(r.working_dir, where_run);
                assert!(r.why.contains("(not in network.allow)"), "{}", r.why);
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

        // Denied: a 403 naming why, the denial in the result, nothing
        // reached; the command's second connection there is refused the
        // same way, unasked.
        let r = format!("localhost:{}", refused_origin.port);
        let denied_twice = format!("{}; {}", fetch(refused_origin.port), fetch(refused_origin.port));
        let result = call(&*server, json!({"command": denied_twice}));
        let reason = refused(&r, "not in network.allow; the person denied it", "blocked-by-person");
        assert_eq!(output(&result), reason.repeat(2), "{route}: {result}");
        assert_eq!(
            denied(&result),
            [
                json!({"op": "connect", "host": "localhost", "port": refused_origin.port,
                "rule": "not in network.allow; the person denied it"})
            ],
            "{route}: {result}"
        );
        assert_eq!(asked.places().len(), 5, "{route}: asked once");
        // The same command again gets the earlier denial, unasked.
        let result = call(&*server, json!({"command": denied_twice}));
        let reason = refused(
            &r,
            "not in network.allow; the person denied it before",
            "blocked-by-person",
        );
        assert_eq!(output(&result), reason.repeat(2), "{route}: {result}");
        assert_eq!(asked.places().len(), 5, "{route}");

        let commands = [twice.as_str(), &fetch(once.port), &fetch(kept.port), &denied_twice];
        let log = audited(&audit, &commands);
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
            out.contains("(not in network.allow; no answer from the person within 1 s)\n [403]ask-timeout\n"),
            "{route}: {result}"
        );
        assert_eq!(held.asked(), 1, "{route}");
        assert_eq!(
            denied(&result),
            [json!({"op": "connect", "host": "localhost", "port": origin.port,
                "rule": "not in network.allow; no answer from the person within 1 s"})],
            "{route}: {result}"
        );
        // The question is in the audit log, unanswered: a denial (with a
        // note saying why).
        let place = format!("localhost:{}", origin.port);
        wait_until("the unanswered question is audited", || {
            !audited(&audit, &[&fetch(origin.port)]).is_empty()
        });
        assert_eq!(
            audited(&audit, &[&fetch(origin.port)]),
            [(place, json!("deny"), json!("host"))],
            "{route}"
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
                "refused localhost:{} (not in network.allow; not asked: the 1 connections that may wait for the person's answer at once (network_ask.max_waiting) already do)\n [403]ask-limit\n",
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
/// 2025-11-25 client (that declared form elicitation and tasks, unless
/// told otherwise); its requests may speak 2026-07-28 through `_meta`.
struct Stdio {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<Value>,
    config: std::path::PathBuf,
    next: i64,
}

impl Stdio {
    fn start(dir: &Path, route: &str, origins: &[u16]) -> Stdio {
        let capabilities = json!({"elicitation": {"form": {}}, "tasks": {"requests": {"elicitation": {"create": {}}}}});
        Stdio::start_with(dir, route, origins, json!({}), capabilities, &[])
    }

    /// [`Stdio::start`] with `extra` configuration over the test's, the
    /// client's `capabilities`, and `args` for `bash-mcp serve`.
    fn start_with(dir: &Path, route: &str, origins: &[u16], extra: Value, capabilities: Value, args: &[&str]) -> Stdio {
        use std::io::BufRead;
        let allow: Vec<String> = origins.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let config = std::path::PathBuf::from(format!("{}-{route}.json", dir.display()));
        let sandbox = sandbox_value(route, dir, json!({"network": {"allow": allow}}));
        let mut settings = json!({"sandbox": sandbox, "tasks": {"enabled": true}, "audit": null});
        for (k, v) in extra.as_object().unwrap() {
            settings[k] = v.clone();
        }
        std::fs::write(&config, settings.to_string()).unwrap();
        let mut child = std::process::Command::new(HELPER)
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .arg("--working-dir")
            .arg(dir)
            .args(args)
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
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": accept(decision)}));
    }

    /// `method` with `params`, answered (skipping notifications).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.reply_to(id)
    }

    /// Polls 2026-07-28 `tasks/get` until `task` has `status` (within the
    /// hang guard); the last result.
    fn task_until(&mut self, task: &str, status: &str) -> Value {
        self.task_until_in(task, status, Some(tasks_meta()))
    }

    /// Polls `tasks/get` with `meta` (none: 2025-11-25) until `task` has
    /// `status` (within the hang guard); the last result.
    fn task_until_in(&mut self, task: &str, status: &str, meta: Option<Value>) -> Value {
        let started = std::time::Instant::now();
        let mut params = json!({"taskId": task});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        loop {
            let got = self.request("tasks/get", params.clone())["result"].clone();
            if got["status"] == status {
                return got;
            }
            assert!(
                started.elapsed() < HANG_GUARD,
                "task {task} never became {status}: {got}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// An elicitation's answer: accepted with `decision`.
fn accept(decision: &str) -> Value {
    json!({"action": "accept", "content": {"decision": decision}})
}

/// The `_meta` of a 2026-07-28 request from a client with the tasks
/// extension and form elicitation.
fn tasks_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}},
            "elicitation": {"form": {}},
        },
    })
}

impl Drop for Stdio {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.config);
    }
}

/// The elicitation's message names the place, the command exactly, its
/// directory `dir` and the rule that refused it.
fn assert_asks_about(ask: &Value, place: &str, command: &str, dir: &Path) {
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["mode"], "form", "{ask}");
    let message = ask["params"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("is connecting to {place}")), "{message}");
    assert!(message.contains(&format!("\n    {command}\n")), "{message}");
    assert!(message.contains(&format!("\nin {}\n", dir.display())), "{message}");
    assert!(
        message.contains(&format!("refuses {place} (not in network.allow)")),
        "{message}"
    );
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
                refused(
                    &place,
                    "not in network.allow; the person denied it",
                    "blocked-by-person",
                ),
            ),
        ] {
            let command = fetch(origin.port);
            let id = client.send_request(
                "tools/call",
                json!({"name": "execute", "arguments": {"command": command, "env": {TAG_VAR: tag}}}),
            );
            let ask = client.next_request();
            assert_asks_about(&ask, &place, &command, &dir);
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

/// 2025-11-25: the command's connection puts the task in
/// `input_required`; the client's `tasks/result` receives the question
/// (tied to the task), and once answered the task is `working` again.
/// Allowed for the server, the next task's command passes unasked.
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
            // The command holds at its end until the test has seen the
            // task working again.
            let go = dir.join(format!("go-{}", decision.is_empty()));
            let command = format!("{}; {}", fetch(origin.port), until_file_exists(&go));
            let id = client.send_request(
                "tools/call",
                json!({"name": "execute", "arguments": {"command": command, "env": {TAG_VAR: tag}}, "task": {"ttl": 60000}}),
            );
            let reply = client.reply_to(id);
            let task = reply["result"]["task"]["taskId"].as_str().unwrap().to_owned();
            if !decision.is_empty() {
                client.task_until_in(&task, "input_required", None);
            }
            let result_id = client.send_request("tasks/result", json!({"taskId": task}));
            if !decision.is_empty() {
                let ask = client.next_request();
                assert_asks_about(&ask, &place, &command, &dir);
                assert_eq!(
                    ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task,
                    "{ask}"
                );
                client.answer(&ask, decision);
            }
            client.task_until_in(&task, "working", None);
            std::fs::write(&go, "").unwrap();
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

/// 2026-07-28 (tasks extension): the command's connection puts the task in
/// `input_required` with the question under `inputRequests.connection`;
/// `tasks/update` answers it and the task is `working` again while its
/// command goes on. Allowed once, both of the command's connections pass
/// (asked once); denied, both are refused. Each question is audited as the
/// client's answer.
#[test]
fn a_2026_task_asks_in_input_requests_and_resumes_on_tasks_update() {
    if !have("curl") {
        return skip_missing("curl");
    }
    for route in ROUTES.iter().filter(|r| route_available(r)) {
        let origin = HostService::start("from updated");
        let dir = TempDir::new("net-ask-2026");
        let logs = TempDir::new("net-ask-2026-audit");
        let audit = logs.join("audit.jsonl");
        let capabilities = json!({"elicitation": {"form": {}}});
        let mut client = Stdio::start_with(
            &dir,
            route,
            &[origin.port],
            json!({"audit": {"path": audit}}),
            capabilities,
            &[],
        );
        let place = format!("localhost:{}", origin.port);
        let tag = unique_tag("net-ask-2026");
        let mut commands = Vec::new();
        for (n, decision, expected) in [
            (0, "allow_once", "from updated [200]\n".repeat(2)),
            (
                1,
                "deny",
                refused(
                    &place,
                    "not in network.allow; the person denied it",
                    "blocked-by-person",
                )
                .repeat(2),
            ),
        ] {
            // The command holds at its end until the test has seen the
            // task working again.
            let go = dir.join(format!("go-{n}"));
            let command = format!("{f}; {f}; {}", until_file_exists(&go), f = fetch(origin.port));
            commands.push(command.clone());
            let call = json!({"name": "execute", "arguments": {"command": command, "env": {TAG_VAR: tag}}, "_meta": tasks_meta()});
            let created = client.request("tools/call", call)["result"].clone();
            assert_eq!(created["resultType"], "task", "{route}: {created}");
            let task = created["taskId"].as_str().unwrap().to_owned();
            let waiting = client.task_until(&task, "input_required");
            let ask = &waiting["inputRequests"]["connection"];
            assert_asks_about(ask, &place, &command, &dir);
            let update =
                json!({"taskId": task, "inputResponses": {"connection": accept(decision)}, "_meta": tasks_meta()});
            let ack = client.request("tasks/update", update);
            assert_eq!(ack["result"]["resultType"], "complete", "{route}: {ack}");
            let working = client.task_until(&task, "working");
            assert!(working.get("inputRequests").is_none(), "{route}: {working}");
            std::fs::write(&go, "").unwrap();
            let done = client.task_until(&task, "completed");
            let result = &done["result"]["structuredContent"];
            assert_eq!(output(result), expected, "{route} {decision}: {done}");
            if decision == "deny" {
                assert_eq!(
                    denied(result),
                    [json!({"op": "connect", "host": "localhost", "port": origin.port,
                        "rule": "not in network.allow; the person denied it"})],
                    "{route}: {done}"
                );
            }
        }
        drop(client);
        let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
        assert_eq!(
            audited(&audit, &commands),
            [
                (place.clone(), json!("allow_once"), json!("client")),
                (place.clone(), json!("deny"), json!("client")),
            ],
            "{route}: one question a command, the client's answer"
        );
        assert_no_survivors(&tag);
    }
}

/// What is never put to the person, on every route: a host a `deny` entry
/// names, a special-purpose address, a name whose approval does not change
/// the address it resolves to (judged after the answer), a host beyond
/// `escalation_ceiling.network`, and anything with `network_ask.mode =
/// "refuse"`. Each is refused as the policy says.
#[test]
fn what_the_policy_refuses_for_other_reasons_is_not_asked() {
    if !have("curl") {
        return skip_missing("curl");
    }
    for route in ROUTES.iter().filter(|r| route_available(r)) {
        let (origin, listed_denied, unlisted) = (
            HostService::start("from origin"),
            HostService::start("from denied"),
            HostService::start("from unlisted"),
        );
        let dir = TempDir::new("net-ask-unasked");
        let logs = TempDir::new("net-ask-unasked-audit");
        let audit = logs.join("audit.jsonl");
        let allow = [
            format!("127.0.0.1:{}", origin.port),
            format!("127.0.0.1:{}", listed_denied.port),
        ];
        let deny = [format!("localhost:{}", listed_denied.port)];
        let server = sandboxed_server(&dir, route, json!({"network": {"allow": allow, "deny": deny}}));
        server
            .configure(&json!({"audit": {"path": audit}}).to_string())
            .unwrap();
        let asked = Arc::new(Asked::default());
        let seen = asked.clone();
        server.set_approver(
            Some(Arc::new(move |r: &ApprovalRequest| {
                seen.places.lock().unwrap().push(r.widens.network[0].clone());
                ApprovalAnswer::AllowOnce
            })),
            HANG_GUARD,
        );
        let run = |command: &str| output(&call(&*server, json!({"command": command})));

        let place = format!("localhost:{}", listed_denied.port);
        assert_eq!(
            run(&fetch(listed_denied.port)),
            refused(&place, &format!("network.deny: {place}"), "blocked-by-denylist"),
            "{route}"
        );
        let out = run(&fetch_from("127.0.0.2", origin.port));
        assert!(
            out.contains("special-purpose address 127.0.0.2 (loopback)")
                && out.ends_with(" [403]blocked-special-address\n"),
            "{route}: {out}"
        );
        assert!(asked.places().is_empty(), "{route}: {:?}", asked.places());

        // Approved, and still refused for the address the name resolves to
        // (the host's loopback, which no allow entry lists at that port).
        let out = run(&fetch(unlisted.port));
        assert!(
            out.contains("special-purpose address") && out.ends_with(" [403]blocked-special-address\n"),
            "{route}: {out}"
        );
        assert_eq!(asked.places(), [format!("localhost:{}", unlisted.port)], "{route}");

        // Beyond the ceiling, and with asking turned off: refused unasked.
        let plain = refused(
            &format!("localhost:{}", origin.port),
            "not in network.allow",
            "blocked-by-allowlist",
        );
        server
            .configure(&json!({"escalation_ceiling": {"network": ["registry.example"]}}).to_string())
            .unwrap();
        assert_eq!(run(&fetch(origin.port)), plain, "{route}: beyond the ceiling");
        server
            .configure(
                &json!({"escalation_ceiling": {"network": ["localhost"]}, "network_ask": {"mode": "refuse"}})
                    .to_string(),
            )
            .unwrap();
        assert_eq!(run(&fetch(origin.port)), plain, "{route}: mode refuse");
        assert_eq!(asked.places().len(), 1, "{route}: {:?}", asked.places());
        // Within the ceiling and asking again: asked.
        server
            .configure(&json!({"network_ask": {"mode": "ask"}}).to_string())
            .unwrap();
        assert_eq!(run(&fetch(origin.port)), "from origin [200]\n", "{route}");
        assert_eq!(asked.places().len(), 2, "{route}");
        // Only the questions asked are audited.
        let log = audited(&audit, &[&fetch(unlisted.port), &fetch(origin.port)]);
        assert_eq!(log.len(), 2, "{route}: {log:?}");
        drop(server);
    }
}

/// Where nobody can answer while the command runs, or the operator said
/// `--network-ask refuse`, its connection is refused as without
/// `network_ask`, unasked: a client without elicitation, a client that
/// could be asked under `--network-ask refuse`, a 2026-07-28 call that is
/// not a task, and a command handed
/// back as a background job after its call answered (audited as answered
/// by nobody). A cancelled question refuses the connection, saying so.
#[test]
fn with_nobody_to_ask_a_connection_is_refused_unasked() {
    if !have("curl") {
        return skip_missing("curl");
    }
    for route in ROUTES.iter().filter(|r| route_available(r)) {
        let origin = HostService::start("from origin");
        let place = format!("localhost:{}", origin.port);
        let plain = refused(&place, "not in network.allow", "blocked-by-allowlist");
        let tag = unique_tag("net-ask-nobody");
        let execute =
            |command: &str| json!({"name": "execute", "arguments": {"command": command, "env": {TAG_VAR: tag}}});

        // A client that declared no elicitation.
        let dir = TempDir::new("net-ask-no-elicit");
        let mut client = Stdio::start_with(&dir, route, &[origin.port], json!({}), json!({}), &[]);
        let reply = client.request("tools/call", execute(&fetch(origin.port)));
        assert_eq!(output(&reply["result"]["structuredContent"]), plain, "{route}: {reply}");
        drop(client);

        // A client that can be asked, with `--network-ask refuse` over the
        // file's `ask`.
        let dir = TempDir::new("net-ask-flag");
        let mut client = Stdio::start_with(
            &dir,
            route,
            &[origin.port],
            json!({"network_ask": {"mode": "ask"}}),
            json!({"elicitation": {"form": {}}}),
            &["--network-ask", "refuse"],
        );
        let reply = client.request("tools/call", execute(&fetch(origin.port)));
        assert_eq!(output(&reply["result"]["structuredContent"]), plain, "{route}: {reply}");
        drop(client);

        let dir = TempDir::new("net-ask-nobody");
        let logs = TempDir::new("net-ask-nobody-audit");
        let audit = logs.join("audit.jsonl");
        let capabilities = json!({"elicitation": {"form": {}}});
        let mut client = Stdio::start_with(
            &dir,
            route,
            &[origin.port],
            json!({"audit": {"path": audit}}),
            capabilities,
            &[],
        );
        // A 2026-07-28 call that is not a task (no tasks extension).
        let mut call = execute(&fetch(origin.port));
        call["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        });
        let reply = client.request("tools/call", call);
        assert_eq!(output(&reply["result"]["structuredContent"]), plain, "{route}: {reply}");

        // A background job: it connects once its call has answered.
        let go = dir.join("go");
        let job_command = format!("{}; {}", until_file_exists(&go), fetch(origin.port));
        let mut call = execute(&job_command);
        call["arguments"]["background"] = json!(true);
        let reply = client.request("tools/call", call);
        let job = reply["result"]["structuredContent"]["job_id"].clone();
        assert!(job.is_string(), "{route}: {reply}");
        std::fs::write(&go, "").unwrap();
        let status = json!({"name": "job_status", "arguments": {"job_id": job, "wait_seconds": 30}});
        let reply = client.request("tools/call", status);
        let result = &reply["result"]["structuredContent"];
        assert_eq!(result["status"], "finished", "{route}: {reply}");
        assert_eq!(output(result), plain, "{route}: {reply}");

        // A question the person cancels: refused, naming the failed asking.
        let command = fetch(origin.port);
        let id = client.send_request("tools/call", execute(&command));
        let ask = client.next_request();
        assert_asks_about(&ask, &place, &command, &dir);
        let cancel = json!({"action": "cancel"});
        client.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": cancel}));
        let reply = client.reply_to(id);
        assert_eq!(
            output(&reply["result"]["structuredContent"]),
            refused(
                &place,
                "not in network.allow; asking the person failed (the person cancelled the question)",
                "ask-failed"
            ),
            "{route}: {reply}"
        );
        drop(client);
        assert_eq!(
            audited(&audit, &[&job_command, &command]),
            [
                (place.clone(), Value::Null, json!("nobody")),
                (place.clone(), json!("deny"), json!("client")),
            ],
            "{route}: the job's connection and the cancelled question"
        );
        assert_no_survivors(&tag);
    }
}

/// A session shell's command has nobody to ask while it runs (its proxy
/// lives as long as the session): its connection is refused unasked, even
/// with a host approver.
#[test]
fn a_session_shells_connection_is_refused_unasked() {
    if !have("curl") {
        return skip_missing("curl");
    }
    for route in ROUTES.iter().filter(|r| route_available(r)) {
        let origin = HostService::start("from origin");
        let dir = TempDir::new("net-ask-session");
        let logs = TempDir::new("net-ask-session-audit");
        let audit = logs.join("audit.jsonl");
        let server = server(
            &dir,
            route,
            &[origin.port],
            &audit,
            json!({"sessions": {"enabled": true}}),
        );
        let asked = Arc::new(Asked::default());
        let seen = asked.clone();
        server.set_approver(
            Some(Arc::new(move |r: &ApprovalRequest| {
                seen.places.lock().unwrap().push(r.widens.network[0].clone());
                ApprovalAnswer::AllowOnce
            })),
            HANG_GUARD,
        );
        let started = call_tool(
            &*server,
            "session_start",
            json!({"shell": "bash", "env": {TAG_VAR: server.tag()}}),
        );
        let id = started["session_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{started}"))
            .to_owned();
        let result = call_tool(
            &*server,
            "session_run",
            json!({"session_id": id, "timeout_seconds": 60, "command": fetch(origin.port)}),
        );
        let place = format!("localhost:{}", origin.port);
        assert_eq!(
            output(&result),
            refused(&place, "not in network.allow", "blocked-by-allowlist"),
            "{route}: {result}"
        );
        let _ = call_tool(&*server, "session_close", json!({"session_id": id}));
        assert!(asked.places().is_empty(), "{route}: {:?}", asked.places());
        // The same command outside the session is asked.
        let result = call(&*server, json!({"command": fetch(origin.port)}));
        assert_eq!(output(&result), "from origin [200]\n", "{route}: {result}");
        assert_eq!(asked.places(), [place], "{route}");
        drop(server);
    }
}
