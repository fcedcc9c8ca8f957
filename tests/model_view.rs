//! What a model learns through the `bash-mcp` binary's own door: `bash-mcp
//! serve` with its default tool list (or a configuration file), spoken to
//! over stdio JSON-RPC, reading what a host that forwards only the text
//! `content` would show. Each server runs with a private temp dir and data
//! home, and the test checks afterwards that nothing it started is alive and
//! nothing is left in that temp dir.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};

use common::*;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_bash-mcp");

/// `bash-mcp serve` over pipes, with a tag on every process it starts.
struct Serve {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    tag: String,
    /// The server's own temp dir (`TMPDIR`), checked empty after it exits.
    tmp: TempDir,
    _home: TempDir,
    next_id: u64,
}

impl Serve {
    /// Starts the binary in `dir` with `config` (a JSON configuration file's
    /// contents; `None`: no file, the binary's defaults) and initializes at
    /// revision 2025-11-25.
    fn start(dir: &Path, config: Option<&Value>) -> Serve {
        let tag = unique_tag("model-view");
        let tmp = TempDir::new("model-view-tmp");
        let home = TempDir::new("model-view-home");
        let mut command = Command::new(BIN);
        command.arg("serve").arg("--working-dir").arg(dir);
        if let Some(config) = config {
            command.arg("--config").arg(home.config(config));
        }
        let mut child = command
            .env(TAG_VAR, &tag)
            .env("TMPDIR", &*tmp)
            .env("XDG_DATA_HOME", &*home)
            .env_remove("XDG_RUNTIME_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start bash-mcp serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut serve = Serve {
            stdin: child.stdin.take(),
            child,
            lines,
            tag,
            tmp,
            _home: home,
            next_id: 0,
        };
        serve.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        serve.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        serve
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("the server's stdin is open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and returns its response (lines for other ids, such
    /// as notifications, are passed over).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self
                .lines
                .recv_timeout(HANG_GUARD)
                .unwrap_or_else(|e| panic!("no response to {method} ({e})"));
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// The `tools/list` result's tools.
    fn tools(&mut self) -> Vec<Value> {
        let reply = self.request("tools/list", json!({}));
        reply["result"]["tools"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("{reply}"))
    }

    /// The `tools/call` result (`content`, `structuredContent`, `isError`).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(reply["result"].is_object(), "{tool}: {reply}");
        reply["result"].clone()
    }

    /// Ends the server (end of input) and checks it left nothing behind.
    fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "bash-mcp serve exited with {status}");
        assert_no_survivors(&self.tag);
        // The guard process removes what the server kept once the server is gone.
        wait_until("the server's temp dir is empty", || {
            std::fs::read_dir(&*self.tmp)
                .map(|mut d| d.next().is_none())
                .unwrap_or(true)
        });
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
            kill_tagged(&self.tag);
        }
    }
}

/// The text block of a `tools/call` result: what a host that forwards only
/// `content` shows the model.
fn text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{result}"))
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().filter_map(|t| t["name"].as_str()).collect()
}

/// A cut result says `output_read {"output_id": …} reads any part`: the
/// binary's default tool list offers that tool, and calling it as the text
/// says reads the part of the output the result left out.
#[test]
fn the_default_tool_list_offers_output_read_and_it_reads_a_cut_result() {
    let dir = TempDir::new("model-view-out");
    let mut serve = Serve::start(&dir, None);
    let listed = serve.tools();
    assert!(names(&listed).contains(&"output_read"), "{:?}", names(&listed));

    // 30 000 numbered lines (about 170 KB): far over the 32 KiB shown.
    let cut = serve.call("execute", json!({"command": "seq 1 30000"}));
    let doc = &cut["structuredContent"];
    assert_eq!(doc["truncated"], true, "{doc}");
    let id = doc["output_id"].as_str().expect("a cut result carries an output_id");
    assert!(!text(&cut).contains("\n15000\n"), "the middle was shown");
    assert!(
        text(&cut).contains(&format!("output_read {{\"output_id\": \"{id}\"}}")),
        "{}",
        text(&cut)
    );

    // What the marker promises, as the model would call it.
    let read = serve.call("output_read", json!({"output_id": id, "grep": "^15000$", "context": 1}));
    assert_eq!(read["isError"], false, "{read}");
    let shown = text(&read);
    for line in ["14999", "15000", "15001"] {
        assert!(shown.contains(line), "{line} missing from {shown}");
    }
    serve.finish();
}

/// `output_read` may be named in a `tools` list, and comes with `execute`
/// when the list leaves it out (every cut result names it); without an
/// output store there is nothing to read and it is not offered.
#[test]
fn a_tools_list_may_name_output_read_and_execute_brings_it() {
    let dir = TempDir::new("model-view-list");
    for (tools, store, expected) in [
        (json!(["execute", "output_read"]), true, true),
        (json!(["execute"]), true, true),
        (json!(["status", "output_read"]), true, true),
        (json!(["status"]), true, false),
        (json!(["execute", "output_read"]), false, false),
    ] {
        let config = json!({"tools": tools, "output_store": {"enabled": store}});
        let mut serve = Serve::start(&dir, Some(&config));
        let listed = serve.tools();
        assert_eq!(
            names(&listed).contains(&"output_read"),
            expected,
            "{config}: {:?}",
            names(&listed)
        );
        serve.finish();
    }
}

/// The backends a sandboxed test runs on: bubblewrap through the supervisor
/// (denials named from seccomp notification), bubblewrap with a sandbox per
/// command (named from the error text), Landlock + seccomp.
const BACKENDS: &[&str] = &["bwrap", "bwrap-per-command", "landlock"];

/// The `sandbox` configuration key for `backend`, writable only in `root`.
fn sandbox_key(backend: &str, root: &Path) -> Value {
    let mut sandbox = json!({"mode": "workspace-write", "writable_roots": [root], "helper_path": BIN});
    match backend {
        "bwrap-per-command" => {
            sandbox["backend"] = "bwrap".into();
            sandbox["supervisor"] = false.into();
        }
        other => sandbox["backend"] = other.into(),
    }
    sandbox
}

/// The backends that work here; a SKIP line names each one that does not.
fn working_backends() -> Vec<&'static str> {
    BACKENDS
        .iter()
        .copied()
        .filter(|backend| {
            let config = bash_mcp::sandbox::SandboxConfig::default()
                .apply(&sandbox_key(backend, Path::new("/")), Path::new("/"))
                .unwrap();
            sandbox_works(&config, backend)
        })
        .collect()
}

/// A host that forwards only the text `content` still shows the model what
/// the sandbox refused, worded by how the command ended: a command that
/// succeeded is told so, without the advice to ask before retrying; one that
/// failed is told the refusal may be why, and to ask the user first.
#[test]
fn the_text_names_what_the_sandbox_refused_worded_by_outcome() {
    for backend in working_backends() {
        let dir = TempDir::new("model-view-sbx");
        let outside = TempDir::outside_tmp("model-view-outside");
        let config = json!({"sandbox": sandbox_key(backend, &dir)});
        let mut serve = Serve::start(&dir, Some(&config));

        // Like a build that exits 0 although some cache writes were refused.
        let command = format!("touch {}/cache; echo built", outside.display());
        let succeeded = serve.call("execute", json!({"command": command}));
        let shown = text(&succeeded);
        assert!(shown.contains("built\n[exit code: 0]\nsandbox: "), "{backend}: {shown}");
        assert!(
            shown.contains(&format!("the sandbox refused a write to {}/cache", outside.display())),
            "{backend}: {shown}"
        );
        assert!(shown.contains("The command succeeded"), "{backend}: {shown}");
        assert!(!shown.contains("Ask the user"), "{backend}: {shown}");
        assert!(!outside.join("cache").exists(), "{backend}");

        let command = format!("touch {0}/a {0}/b", outside.display());
        let failed = serve.call("execute", json!({"command": command}));
        let shown = text(&failed);
        assert!(shown.contains("[exit code: 1]\nsandbox: "), "{backend}: {shown}");
        assert!(shown.contains("The command failed (exit code 1)"), "{backend}: {shown}");
        assert!(
            shown.contains(&format!("writes to {0}/a and {0}/b", outside.display())),
            "{backend}: {shown}"
        );
        assert!(shown.contains("Ask the user before retrying"), "{backend}: {shown}");

        // Nothing refused, nothing said.
        let clean = serve.call("execute", json!({"command": "touch inside"}));
        assert_eq!(text(&clean), "[exit code: 0]", "{backend}");
        serve.finish();
    }
}

/// Every refusal names only what decided it, true for the rules configured:
/// a denial names what the deny rules matched, never a harmless part as one
/// "no allow rule" matches (here a tool-level rule allows every part); an ask
/// under allow rules names the parts none of them matches.
#[test]
fn a_refusal_names_only_what_decided_it() {
    let dir = TempDir::new("model-view-rules");
    std::fs::create_dir(dir.join("x")).unwrap();
    let config = json!({"permissions": {"allow": ["bash.execute"], "deny": ["bash.execute:rm *"]}});
    let mut serve = Serve::start(&dir, Some(&config));
    let refused = serve.call("execute", json!({"command": "ls; rm -rf x"}));
    let shown = text(&refused);
    assert_eq!(refused["isError"], true, "{shown}");
    assert!(
        shown.contains("`rm -rf x` matches the deny rule `bash.execute:rm *`"),
        "{shown}"
    );
    assert!(!shown.contains("`ls`") && !shown.contains("allow rule"), "{shown}");
    assert!(dir.join("x").exists());
    serve.finish();

    let config = json!({"permissions": {"allow": ["bash.execute:git *"]}});
    let mut serve = Serve::start(&dir, Some(&config));
    let asked = serve.call("execute", json!({"command": "git --version; ls"}));
    let shown = text(&asked);
    assert!(shown.contains("`ls` matches no allow rule"), "{shown}");
    assert!(!shown.contains("`git --version`"), "{shown}");
    serve.finish();
}

/// `execute` as this server's `tools/list` shows it.
fn execute_tool(tools: &[Value]) -> &Value {
    tools
        .iter()
        .find(|t| t["name"] == "execute")
        .expect("execute is listed")
}

fn sandbox_modes(execute: &Value) -> Vec<&str> {
    execute["inputSchema"]["properties"]["sandbox"]["properties"]["mode"]["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("{execute}"))
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

/// The model learns what this server allows from `tools/list`: `execute`'s
/// `sandbox` argument and description follow the configuration (the sandbox
/// in force, the modes a call may ask for, whether `sandbox_overrides` rules
/// let some commands widen it and which), and a refused widening says the
/// same, naming the part no rule matched.
#[test]
fn the_sandbox_argument_follows_the_configuration() {
    let dir = TempDir::new("model-view-schema");
    let sandbox = json!({"mode": "workspace-write", "writable_roots": [&*dir], "helper_path": BIN, "network": false});

    // The binary's default: the model is told its commands run sandboxed,
    // the network open to the registries only, and may only tighten.
    let mut serve = Serve::start(&dir, None);
    let tools = serve.tools();
    let execute = execute_tool(&tools);
    assert_eq!(sandbox_modes(execute), ["read-only", "workspace-write"]);
    let about = execute["inputSchema"]["properties"]["sandbox"]["description"]
        .as_str()
        .unwrap();
    assert!(
        about.contains("workspace-write") && about.contains("@package-registries"),
        "{about}"
    );
    serve.finish();

    // No sandbox (the explicit opt-out): a call may ask for one.
    let mut serve = Serve::start(&dir, Some(&json!({"sandbox": {"mode": "off"}})));
    let tools = serve.tools();
    let execute = execute_tool(&tools);
    assert_eq!(sandbox_modes(execute), ["off", "read-only", "workspace-write"]);
    let about = execute["inputSchema"]["properties"]["sandbox"]["description"]
        .as_str()
        .unwrap();
    assert!(about.contains("without an OS sandbox"), "{about}");
    serve.finish();

    // A sandbox and no overrides: only tighter, and the model is told so.
    let mut serve = Serve::start(&dir, Some(&json!({"sandbox": sandbox})));
    let tools = serve.tools();
    let execute = execute_tool(&tools);
    assert_eq!(sandbox_modes(execute), ["read-only", "workspace-write"]);
    let argument = &execute["inputSchema"]["properties"]["sandbox"];
    let about = argument["description"].as_str().unwrap();
    assert!(
        about.contains(&format!("workspace-write, writable: {}, network off", dir.display())),
        "{about}"
    );
    assert!(about.contains("lets no call widen its sandbox"), "{about}");
    assert_eq!(argument["properties"]["network"]["enum"], json!([false]), "{argument}");
    assert!(
        execute["description"]
            .as_str()
            .unwrap()
            .contains("Commands run in an OS sandbox"),
        "{execute}"
    );
    let refused = serve.call("execute", json!({"command": "true", "sandbox": {"network": true}}));
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        text(&refused).contains("lets no call widen its sandbox"),
        "{}",
        text(&refused)
    );
    serve.finish();

    // Overrides: `off` and network are offered, with the rules and how they apply.
    let config = json!({"sandbox": sandbox, "sandbox_overrides": ["bash.execute:npm install *"]});
    let mut serve = Serve::start(&dir, Some(&config));
    let tools = serve.tools();
    let execute = execute_tool(&tools);
    assert_eq!(sandbox_modes(execute), ["off", "read-only", "workspace-write"]);
    let argument = &execute["inputSchema"]["properties"]["sandbox"];
    let about = argument["description"].as_str().unwrap();
    assert!(
        about.contains("sandbox_overrides") && about.contains("`bash.execute:npm install *`"),
        "{about}"
    );
    assert!(about.contains("every part of the command must match a rule"), "{about}");
    assert!(argument["properties"]["network"].get("enum").is_none(), "{argument}");
    let refused = serve.call(
        "execute",
        json!({"command": "npm install && curl example.com", "sandbox": {"network": true}}),
    );
    let shown = text(&refused);
    assert_eq!(refused["isError"], true, "{shown}");
    assert!(shown.contains("`curl example.com` matches none of them"), "{shown}");
    assert!(!shown.contains("`npm install`"), "{shown}");
    assert!(shown.contains("bash.execute:npm install *"), "{shown}");
    serve.finish();
}
