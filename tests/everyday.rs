//! Everyday work inside the default sandbox: git, a Python venv with pip,
//! cargo, npm, make and a test server on the loopback, run through the
//! `bash-mcp serve` binary over MCP stdio in a fresh project directory, on
//! each backend, in `execute` and in a session; and what stays refused,
//! each refusal named in the result. The commands are the blocks of
//! docs/sandbox.md's "Everyday work", read from there. Every test checks
//! afterwards that no process it started survived and that the server left
//! nothing in its temp dir.

mod common;
#[path = "common/serve.rs"]
mod serve;

use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::host_service::HostService;
use common::sandboxes::{HELPER, have, have_python, route_available};
use common::*;
use serde_json::{Value, json};
use serve::Serve;

/// The backends: bubblewrap (the default where it works) and Landlock +
/// seccomp (forced by the configuration).
const BACKENDS: &[&str] = &["bwrap", "landlock"];

/// How long one workflow may take on a busy machine before it is a hang
/// (a cold `cargo build` or `pip install` takes seconds to a minute).
const WORKFLOW_GUARD: Duration = Duration::from_secs(600);

fn backends() -> Vec<&'static str> {
    BACKENDS.iter().copied().filter(|b| route_available(b)).collect()
}

/// The configuration the server gets for `backend`: none at all for
/// bubblewrap (the binary's default sandbox: `workspace-write`, the network
/// open to `@package-registries`), and for Landlock + seccomp only the
/// backend forced.
fn settings(backend: &str) -> Option<Value> {
    (backend != "bwrap").then(|| json!({"sandbox": {"backend": backend}}))
}

/// A block of docs/sandbox.md's "Everyday work": the one whose info string
/// is `text everyday <name>: ...`.
fn doc_block(name: &str) -> String {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/sandbox.md")).unwrap();
    let opening = format!("```text everyday {name}:");
    let start = doc
        .lines()
        .position(|l| l.starts_with(&opening))
        .unwrap_or_else(|| panic!("docs/sandbox.md has no block {opening}"));
    doc.lines()
        .skip(start + 1)
        .take_while(|l| !l.starts_with("```"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The registries are reachable from here (the tools go there through the
/// proxy); a SKIP line says why not.
fn registries_reachable() -> bool {
    for host in ["pypi.org", "registry.npmjs.org", "index.crates.io"] {
        let reached = (host, 443)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .is_some_and(|addr| TcpStream::connect_timeout(&addr, Duration::from_secs(20)).is_ok());
        if !reached {
            skip(format_args!(
                "{host}:443 is not reachable from this machine, so the workflows that download packages are not run"
            ));
            return false;
        }
    }
    true
}

/// One test's world, all in a directory of its own outside `/tmp`: a fresh
/// project, a home directory, the server's temp dir, and the server.
struct World {
    root: TempDir,
    project: PathBuf,
    home: PathBuf,
    tag: String,
    serve: Option<Serve>,
    backend: &'static str,
}

impl World {
    /// Starts `bash-mcp serve` in a fresh project on `backend`, with
    /// sessions on when `sessions`.
    fn new(name: &str, backend: &'static str, sessions: bool) -> World {
        let root = TempDir::outside_tmp(&format!("everyday-{name}"));
        let project = root.join("project");
        let home = root.join("home");
        let temp = root.join("tmp");
        for dir in [&project, &home, &temp] {
            std::fs::create_dir(dir).unwrap();
        }
        let tag = unique_tag(&format!("everyday-{name}"));
        let mut command = Command::new(HELPER);
        command.arg("serve").arg("--working-dir").arg(&project);
        let mut config = settings(backend).unwrap_or_else(|| json!({}));
        if sessions {
            config["sessions"] = json!({"enabled": true});
        }
        if config != json!({}) {
            // Beside the project: the binary refuses a file its commands could rewrite.
            let file = root.join("config.json");
            std::fs::write(&file, config.to_string()).unwrap();
            command.arg("--config").arg(file);
        }
        // A user's environment: their home (with the toolchains where they
        // are installed), their git identity, nothing of the test runner's.
        command.env_clear();
        for keep in ["PATH", "LANG", "USER", "LOGNAME"] {
            if let Some(v) = std::env::var_os(keep) {
                command.env(keep, v);
            }
        }
        let real_home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
        for (var, dir) in [("RUSTUP_HOME", ".rustup"), ("PYENV_ROOT", ".pyenv")] {
            match std::env::var_os(var) {
                Some(v) => drop(command.env(var, v)),
                None if real_home.join(dir).is_dir() => drop(command.env(var, real_home.join(dir))),
                None => {}
            }
        }
        command
            .env("HOME", &home)
            .env("TMPDIR", &temp)
            .env(TAG_VAR, &tag)
            .env("GIT_AUTHOR_NAME", "Everyday")
            .env("GIT_AUTHOR_EMAIL", "everyday@example.com")
            .env("GIT_COMMITTER_NAME", "Everyday")
            .env("GIT_COMMITTER_EMAIL", "everyday@example.com");
        let serve = Serve::launch(command, root.join("serve.log"));
        World {
            root,
            project,
            home,
            tag,
            serve: Some(serve),
            backend,
        }
    }

    fn serve(&mut self) -> &mut Serve {
        self.serve.as_mut().unwrap()
    }

    /// `execute` of `command` with `extra` arguments; the result document.
    fn execute(&mut self, command: &str, extra: Value) -> Value {
        let mut args = json!({"command": command, "timeout_seconds": WORKFLOW_GUARD.as_secs(), "yield_seconds": null});
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        let reply = self.serve().request_within(
            "tools/call",
            json!({"name": "execute", "arguments": args}),
            WORKFLOW_GUARD + Duration::from_secs(30),
        );
        reply["result"]["structuredContent"].clone()
    }

    /// Any tool; its result document.
    fn call(&mut self, tool: &str, args: Value) -> Value {
        let reply = self.serve().request_within(
            "tools/call",
            json!({"name": tool, "arguments": args}),
            WORKFLOW_GUARD + Duration::from_secs(30),
        );
        reply["result"]["structuredContent"].clone()
    }

    /// Stops the server and checks what it leaves: no process of the test,
    /// nothing in its temp dir.
    fn finish(mut self) {
        self.serve.take().unwrap().stop();
        assert_no_survivors(&self.tag);
        // The server's guard removes its commands' temp dir once it has exited.
        let temp = self.root.join("tmp");
        let left = || -> Vec<_> {
            std::fs::read_dir(&temp)
                .unwrap()
                .flatten()
                .map(|e| e.file_name())
                .collect()
        };
        let start = std::time::Instant::now();
        while !left().is_empty() && start.elapsed() < HANG_GUARD {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            left(),
            Vec::<std::ffi::OsString>::new(),
            "{}: the server left these in its temp dir",
            self.backend
        );
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if let Some(serve) = self.serve.take() {
            drop(serve);
            kill_tagged(&self.tag);
        }
    }
}

fn output(result: &Value) -> &str {
    result["output"]
        .as_str()
        .unwrap_or_else(|| panic!("no output: {result}"))
}

fn denied(result: &Value) -> Vec<Value> {
    result["sandbox"]["denied"].as_array().cloned().unwrap_or_default()
}

/// A workflow that ran: exit code 0, and nothing refused (so no note asks
/// the model to ask the user about a cache write it did not need).
fn assert_clean_success(what: &str, result: &Value) {
    assert_eq!(result["exit_code"], 0, "{what}: {result}");
    assert_eq!(denied(result), Vec::<Value>::new(), "{what}: {result}");
    let message = result["sandbox_message"].as_str().unwrap_or_default();
    assert!(!message.contains("Ask the user"), "{what}: {result}");
    assert!(!message.contains("refused"), "{what}: {result}");
}

/// The git block's output: the stash, and the worktree's history.
fn assert_git_ran(what: &str, result: &Value) {
    let out = output(result);
    assert!(out.contains("stash@{0}: WIP on main: "), "{what}: {result}");
    assert!(
        out.lines().last().is_some_and(|l| l.ends_with(" first")),
        "{what}: {result}"
    );
}

#[test]
fn git_init_add_commit_branch_stash_and_worktree_add_work_in_a_fresh_project() {
    for backend in backends() {
        let mut world = World::new("git", backend, false);
        let result = world.execute(&doc_block("git"), json!({}));
        let what = format!("{backend}: git");
        assert_clean_success(&what, &result);
        assert_git_ran(&what, &result);
        assert!(world.project.join("trees/feature/README").is_file(), "{what}");
        // Hooks and configuration stayed the user's.
        let hook = world.execute("echo 'touch pwned' > .git/hooks/pre-commit", json!({}));
        assert_ne!(hook["exit_code"], 0, "{what}: {hook}");
        assert!(!world.project.join(".git/hooks/pre-commit").exists(), "{what}");
        world.finish();
    }
}

#[test]
fn make_builds_a_program_in_a_fresh_project() {
    if !have("make") || !have("cc") {
        return skip_missing(if have("make") { "cc" } else { "make" });
    }
    for backend in backends() {
        let mut world = World::new("make", backend, false);
        let result = world.execute(&doc_block("make"), json!({}));
        assert_clean_success(&format!("{backend}: make"), &result);
        assert_eq!(output(&result), "built\n", "{backend}: {result}");
        world.finish();
    }
}

/// The server block's output: the page, fetched from the server it started.
fn assert_served(what: &str, out: &str) {
    assert!(out.contains("served"), "{what}: {out}");
}

#[test]
fn a_test_server_on_the_loopback_is_reached_from_the_same_command() {
    if !have_python() || !have("curl") {
        return skip_missing("curl");
    }
    for backend in backends() {
        let mut world = World::new("server", backend, false);
        let result = world.execute(&doc_block("server"), json!({}));
        let what = format!("{backend}: server");
        assert_clean_success(&what, &result);
        assert_served(&what, output(&result));
        world.finish();
    }
}

/// The rule of a connection that skipped the proxy.
const DIRECT: &str = "no direct route: only the sandbox's proxy (HTTP_PROXY, HTTPS_PROXY) reaches the network";

#[test]
fn a_service_on_the_hosts_loopback_that_the_command_did_not_start_is_refused_and_named() {
    if !have("curl") {
        return skip_missing("curl");
    }
    let service = HostService::start("host service");
    for backend in backends() {
        let mut world = World::new("host-loopback", backend, false);
        // Also while a server of its own listens: its port opens nothing else.
        let command = format!(
            "python3 -u -m http.server --bind 127.0.0.1 0 > server.log 2>&1 &\n\
             until grep -q ' port ' server.log; do kill -0 $! || exit 1; sleep 0.1; done\n\
             curl -sS --noproxy '*' http://127.0.0.1:{}/ 2>&1; echo \"curl=$?\"\n\
             kill $!",
            service.port
        );
        let result = world.execute(&command, json!({}));
        let out = output(&result);
        assert!(!out.contains("host service"), "{backend}: {result}");
        assert!(!out.contains("curl=0"), "{backend}: {result}");
        let addr = format!("127.0.0.1:{}", service.port);
        assert!(
            denied(&result).contains(&json!({"op": "connect", "addr": addr, "rule": DIRECT})),
            "{backend}: {result}"
        );
        world.finish();
    }
}

/// The files under `home` besides the server's own audit log.
fn written_in(home: &Path) -> Vec<PathBuf> {
    let own = home.join(".local/share/bash-mcp");
    let mut found = Vec::new();
    let mut todo = vec![home.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.starts_with(&own) {
                continue;
            }
            match entry.file_type().unwrap().is_dir() {
                true if own.starts_with(&path) => todo.push(path),
                true => found.push(path),
                false => found.push(path),
            }
        }
    }
    found
}

#[test]
fn pip_cargo_and_npm_install_from_the_registries_in_a_fresh_project() {
    if !registries_reachable() {
        return;
    }
    let workflows: [(&str, &str, &str); 3] = [
        ("python3", "python", "six 1."),
        ("cargo", "cargo", "42\n"),
        ("npm", "npm", "is-number true\n"),
    ];
    for backend in backends() {
        for (tool, block, expect) in workflows {
            if !have(tool) {
                skip_missing(tool);
                continue;
            }
            let mut world = World::new(block, backend, false);
            let result = world.execute(&doc_block(block), json!({}));
            let what = format!("{backend}: {block}");
            assert_clean_success(&what, &result);
            assert!(output(&result).contains(expect), "{what}: {result}");
            // The downloads went where the sandbox lets them, not the home.
            assert_eq!(
                written_in(&world.home),
                Vec::<PathBuf>::new(),
                "{what}: written in the home directory"
            );
            world.finish();
        }
    }
}

#[test]
fn git_pip_and_a_loopback_server_work_in_a_session() {
    if !have_python() || !have("curl") {
        return skip_missing("curl");
    }
    let network = registries_reachable();
    for backend in backends() {
        let mut world = World::new("session", backend, true);
        let started = world.call("session_start", json!({"shell": "bash"}));
        let id = started["session_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{backend}: {started}"))
            .to_owned();
        let run = |world: &mut World, command: &str| {
            let result = world.call(
                "session_run",
                json!({"session_id": id, "command": command, "timeout_seconds": WORKFLOW_GUARD.as_secs()}),
            );
            assert_eq!(result["exit_code"], 0, "{backend}: {command}: {result}");
            output(&result).to_owned()
        };
        let git = run(&mut world, &doc_block("git"));
        assert_git_ran(&format!("{backend}: session git"), &json!({"output": git}));
        if network {
            let pip = run(&mut world, &doc_block("python"));
            assert!(pip.contains("six 1."), "{backend}: session pip: {pip}");
        }
        // The server started by one run, reached by the next.
        run(
            &mut world,
            "echo served > page.txt; python3 -u -m http.server --bind 127.0.0.1 0 > server.log 2>&1 & echo started",
        );
        let fetched = run(
            &mut world,
            "until grep -q ' port ' server.log; do kill -0 %1 || exit 1; sleep 0.1; done; \
             curl -sS \"http://127.0.0.1:$(grep -o ' port [0-9]*' server.log | cut -d' ' -f3)/page.txt\"; kill %1; wait",
        );
        assert_served(&format!("{backend}: session server"), &fetched);
        let closed = world.call("session_close", json!({"session_id": id}));
        assert!(closed.get("error").is_none(), "{backend}: {closed}");
        world.finish();
    }
}

#[test]
fn an_unlisted_host_and_a_direct_connection_are_refused_and_named() {
    if !have("curl") {
        return skip_missing("curl");
    }
    if !registries_reachable() {
        return;
    }
    let ip = ("pypi.org", 443)
        .to_socket_addrs()
        .unwrap()
        .find(|a| a.is_ipv4())
        .expect("pypi.org has an IPv4 address")
        .ip()
        .to_string();
    for backend in backends() {
        let mut world = World::new("refused-net", backend, false);
        let result = world.execute(
            &format!(
                "curl -sS -o /dev/null https://example.com/ 2>&1; echo \"proxied=$?\"\n\
                 curl -sS -i http://example.com/ | head -1\n\
                 curl -sS -o /dev/null --noproxy '*' --connect-timeout 20 -k https://{ip}/ 2>&1; echo \"direct=$?\""
            ),
            json!({}),
        );
        let out = output(&result);
        assert!(
            out.contains("CONNECT tunnel failed, response 403"),
            "{backend}: {result}"
        );
        // Plain HTTP shows the proxy's answer itself, the reason in its status line.
        assert!(
            out.contains("HTTP/1.1 403 the sandbox's network policy refused example.com:80 (not in network.allow)"),
            "{backend}: {result}"
        );
        assert!(
            !out.contains("proxied=0") && !out.contains("direct=0"),
            "{backend}: {result}"
        );
        let denied = denied(&result);
        assert!(
            denied.contains(
                &json!({"op": "connect", "host": "example.com", "port": 443, "rule": "not in network.allow"})
            ),
            "{backend}: {result}"
        );
        assert!(
            denied.contains(&json!({"op": "connect", "addr": format!("{ip}:443"), "rule": DIRECT})),
            "{backend}: {result}"
        );
        world.finish();
    }
}

#[test]
fn writes_to_the_home_ssh_dir_to_etc_and_a_planted_project_file_are_refused_and_named() {
    for backend in backends() {
        let mut world = World::new("refused-files", backend, false);
        std::fs::create_dir(world.home.join(".ssh")).unwrap();
        let keys = world.home.join(".ssh/authorized_keys");
        let result = world.execute("echo 'ssh-ed25519 AAAA planted' >> ~/.ssh/authorized_keys", json!({}));
        assert_ne!(result["exit_code"], 0, "{backend}: {result}");
        assert!(!keys.exists(), "{backend}: {result}");
        assert!(
            denied(&result).contains(&json!({"op": "write", "path": keys.display().to_string()})),
            "{backend}: {result}"
        );

        let name = unique_tag("everyday-planted");
        let result = world.execute(&format!("echo x > {name}"), json!({"working_dir": "/etc"}));
        assert_ne!(result["exit_code"], 0, "{backend}: {result}");
        assert!(!Path::new("/etc").join(&name).exists(), "{backend}: {result}");
        assert!(
            denied(&result).contains(&json!({"op": "write", "path": format!("/etc/{name}")})),
            "{backend}: {result}"
        );

        // In the fresh project, no repository in it.
        let result = world.execute("printf '[sandbox]\\nmode = \"off\"\\n' > .bash-mcp.toml", json!({}));
        assert_ne!(result["exit_code"], 0, "{backend}: {result}");
        let planted = world.project.join(".bash-mcp.toml");
        assert!(!planted.exists(), "{backend}: {result}");
        assert!(
            denied(&result).contains(&json!({"op": "write", "path": planted.display().to_string()})),
            "{backend}: {result}"
        );
        world.finish();
    }
}
