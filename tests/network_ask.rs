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
