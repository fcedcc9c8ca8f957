//! What a newcomer meets in the first hour, each with a message that says
//! what to do: a session tool called while sessions are off, a command whose
//! options reach `bash-mcp exec`, a working directory that does not exist, a
//! call without a command (logged once), durations a person reads, and an
//! audit log that shows each server only its own entries.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use bash_mcp::{BashServer, McpServer};
use common::*;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_bash-mcp");

/// Runs the binary with `args` and `stdin`, in a private data home (so the
/// default audit log lands there); returns (status, stdout, stderr). Input
/// stays open until `responses` JSON-RPC responses have come (end of input
/// cancels calls still running, and a cancelled call is not answered).
fn bash_mcp(args: &[&str], stdin: &str, data_home: &std::path::Path) -> (i32, String, String) {
    use std::io::{BufRead, Write};
    let responses = stdin.lines().count();
    let tag = unique_tag("first-hour");
    let mut child = Command::new(BIN)
        .args(args)
        .env("XDG_DATA_HOME", data_home)
        .env(TAG_VAR, &tag)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start bash-mcp");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    let mut stdout = String::new();
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    for _ in 0..responses {
        if reader.read_line(&mut stdout).unwrap_or(0) == 0 {
            break;
        }
    }
    drop(input);
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut reader, &mut rest);
    stdout.push_str(&rest);
    assert_no_survivors(&tag);
    (
        out.status.code().unwrap_or(-1),
        stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// MCP lines: `initialize`, then one `tools/call` per (tool, arguments).
fn mcp_session(calls: &[(&str, Value)]) -> String {
    let mut lines = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        .to_string(),
    ];
    for (i, (tool, args)) in calls.iter().enumerate() {
        lines.push(
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": tool, "arguments": args}})
                .to_string(),
        );
    }
    lines.join("\n") + "\n"
}

/// The response to request `id` among the binary's output lines.
fn response(stdout: &str, id: u64) -> Value {
    stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no response {id} in:\n{stdout}"))
}

#[test]
fn session_tools_while_sessions_are_off_say_how_to_turn_them_on() {
    let s = server();
    let r = call_tool(&s, "session_start", json!({}));
    assert_eq!(r["error"], "sessions_disabled", "{r}");
    let hint = r["hint"].as_str().unwrap();
    assert!(hint.contains("enabled = true") && hint.contains("[sessions]"), "{hint}");
    // Qualified names too; an unknown tool is still unknown.
    assert_eq!(
        call_tool(&s, "bash.session_run", json!({}))["error"],
        "sessions_disabled"
    );
    assert_eq!(call_tool(&s, "no_such_tool", json!({}))["error"], "unknown_tool");
    // Turned off, not hidden from a caller: still not listed.
    assert!(!s.list_tools().contains("session_start"));

    // Over MCP: a tool result with the error, not "unknown tool".
    let home = TempDir::new("first-hour-mcp");
    let input = mcp_session(&[("session_start", json!({})), ("no_such_tool", json!({}))]);
    let (status, stdout, _) = bash_mcp(&["serve"], &input, &home);
    assert_eq!(status, 0);
    let r = response(&stdout, 1);
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(r["result"]["structuredContent"]["error"], "sessions_disabled", "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("enabled = true"),
        "{r}"
    );
    assert_eq!(response(&stdout, 2)["error"]["code"], -32602);
}

#[test]
fn a_turned_off_operator_tool_names_the_switch() {
    let s = server();
    let r = call_tool(&s, "status", json!({}));
    assert_eq!(r["error"], "unknown_tool", "{r}");
    assert!(r["message"].as_str().unwrap().contains("turned off"), "{r}");
    assert!(
        r["hint"].as_str().unwrap().contains(r#"{"tools": {"status": true}}"#),
        "{r}"
    );
}

#[test]
fn exec_with_unquoted_options_suggests_quoting() {
    let home = TempDir::new("first-hour-quote");
    let (status, stdout, stderr) = bash_mcp(&["exec", "ls", "-la"], "", &home);
    assert_eq!(status, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("quote it") && stderr.contains("bash-mcp exec 'ls -la'"),
        "{stderr}"
    );
}

#[test]
fn exec_in_a_missing_directory_exits_with_the_could_not_run_status() {
    let home = TempDir::new("first-hour-dir");
    let (status, _, stderr) = bash_mcp(&["exec", "-C", "/nonexistent/bash-mcp-dir", "true"], "", &home);
    assert_eq!(status, 125, "{stderr}");
    assert!(stderr.contains("/nonexistent/bash-mcp-dir"), "{stderr}");
}

#[test]
fn a_call_without_a_command_is_logged_once() {
    let home = TempDir::new("first-hour-log");
    let input = mcp_session(&[("execute", json!({}))]);
    let (status, stdout, stderr) = bash_mcp(&["serve", "--log-level", "warn"], &input, &home);
    assert_eq!(status, 0);
    assert_eq!(
        response(&stdout, 1)["result"]["structuredContent"]["error"],
        "invalid_arguments"
    );
    let warnings = stderr.lines().filter(|l| l.contains("no `command`")).count();
    assert_eq!(warnings, 1, "{stderr}");
}

/// Whole tenths, as a person reads them.
fn tenths(v: &Value) -> bool {
    let x = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    ((x * 10.0).round() - x * 10.0).abs() < 1e-9
}

#[test]
fn durations_in_results_are_rounded_for_people() {
    let s = server();
    s.configure(r#"{"sessions": {"enabled": true}}"#).unwrap();
    let tag = s.tag().to_owned();
    let job = call_tagged(&s, "sleep 100", &tag, json!({"background": true}));
    let id = job["job_id"].as_str().unwrap().to_owned();
    std::thread::sleep(Duration::from_millis(123));
    let list = call_tool(&s, "job_list", json!({}));
    let elapsed = &list["jobs"][0]["elapsed_seconds"];
    assert!(tenths(elapsed), "{list}");
    call_tool(&s, "job_kill", json!({"job_id": id}));
    let started = call_tool(&s, "session_start", json!({"env": {TAG_VAR: tag}}));
    let sid = started["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    std::thread::sleep(Duration::from_millis(123));
    let sessions = call_tool(&s, "session_list", json!({}));
    assert!(tenths(&sessions["sessions"][0]["idle_seconds"]), "{sessions}");
    call_tool(&s, "session_close", json!({"session_id": sid}));
}

/// Commands recorded in the log at `path`, as `audit_read` on `server` returns them.
fn read_commands(server: &BashServer) -> Vec<String> {
    let r = call_tool(server, "audit_read", json!({}));
    r["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .filter_map(|e| e["command"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn each_server_reads_back_only_its_own_audit_entries() {
    let dir = TempDir::new("first-hour-audit");
    let log = dir.join("audit.jsonl");
    let config = json!({"audit": {"path": log}, "tools": {"audit_read": true, "status": true}}).to_string();
    let a = server();
    a.configure(&config).unwrap();
    let b = server();
    b.configure(&config).unwrap();
    call_tagged(&a, "echo from-a", a.tag(), json!({}));
    call_tagged(&b, "echo from-b", b.tag(), json!({}));
    assert_eq!(read_commands(&a), ["echo from-a"]);
    assert_eq!(read_commands(&b), ["echo from-b"]);
    // Both lines are in the one file, each with its server's instance.
    let text = std::fs::read_to_string(&log).unwrap();
    let instances: std::collections::BTreeSet<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["instance"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(instances.len(), 2, "{text}");
    // The operator may widen the view.
    a.configure(&json!({"audit": {"path": log, "read_all": true}}).to_string())
        .unwrap();
    let mut all = read_commands(&a);
    all.sort();
    assert_eq!(all, ["echo from-a", "echo from-b"]);
    assert_eq!(call_tool(&a, "status", json!({}))["audit"]["read_all"], true);
}

#[test]
fn one_off_exec_calls_stay_out_of_the_default_audit_log() {
    let home = TempDir::new("first-hour-exec-audit");
    let (status, stdout, stderr) = bash_mcp(&["exec", "echo one-off"], "", &home);
    assert_eq!((status, stdout.as_str()), (0, "one-off\n"), "{stderr}");
    let default_log = home.join("bash-mcp/audit.jsonl");
    assert!(
        !default_log.exists(),
        "exec wrote the shared log {}",
        default_log.display()
    );
    // The server does write it.
    let input = mcp_session(&[("execute", json!({"command": "echo served"}))]);
    let (status, _, stderr) = bash_mcp(&["serve"], &input, &home);
    assert_eq!(status, 0, "{stderr}");
    assert!(std::fs::read_to_string(&default_log).unwrap().contains("echo served"));
    // A log the configuration names is written by exec too.
    let config = home.join("bash-mcp.json");
    let named = home.join("named.jsonl");
    std::fs::write(&config, json!({"audit": {"path": named}}).to_string()).unwrap();
    let (status, _, stderr) = bash_mcp(
        &["exec", "--config", config.to_str().unwrap(), "echo logged"],
        "",
        &home,
    );
    assert_eq!(status, 0, "{stderr}");
    assert!(std::fs::read_to_string(&named).unwrap().contains("echo logged"));
}

/// A pane of a tmux server of the test's own, running `script` at a
/// terminal as a person would; the server is killed on drop.
struct Terminal {
    socket: std::path::PathBuf,
    _dir: TempDir,
}

impl Terminal {
    /// `None` (after a SKIP line) when tmux is not installed.
    fn open(script: &str) -> Option<Self> {
        if Command::new("tmux").arg("-V").output().is_err() {
            skip_missing("tmux");
            return None;
        }
        let dir = TempDir::new("terminal");
        let terminal = Self {
            socket: dir.join("tmux.sock"),
            _dir: dir,
        };
        let status = terminal
            .tmux()
            .args(["new-session", "-d", "-x", "300", "-y", "50", script])
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session failed");
        Some(terminal)
    }

    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-f").arg("/dev/null").arg("-S").arg(&self.socket);
        c
    }

    fn screen(&self) -> String {
        let out = self.tmux().args(["capture-pane", "-p", "-J"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits (at most the hang guard) until the screen shows `what`.
    fn wait_for(&self, what: &str) -> String {
        let deadline = std::time::Instant::now() + HANG_GUARD;
        loop {
            let screen = self.screen();
            if screen.contains(what) {
                return screen;
            }
            assert!(std::time::Instant::now() < deadline, "never showed {what:?}:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn type_line(&self, text: &str) {
        assert!(self.tmux().args(["send-keys", "-l", text]).status().unwrap().success());
        assert!(self.tmux().args(["send-keys", "Enter"]).status().unwrap().success());
    }

    fn keys(&self, keys: &str) {
        assert!(self.tmux().args(["send-keys", keys]).status().unwrap().success());
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").output();
    }
}

/// `bash-mcp serve` typed at a terminal says what it is for and how to try
/// it by hand, and the lines it offers work when pasted.
#[test]
fn serve_at_a_terminal_says_how_to_try_it() {
    let tag = unique_tag("serve-tty");
    let data = TempDir::new("serve-tty-data");
    let script = format!(
        "export {TAG_VAR}={tag} XDG_DATA_HOME='{}'; '{BIN}' serve --log-level off; echo \"[serve exited $?]\"; exec sleep 600",
        data.display()
    );
    let Some(terminal) = Terminal::open(&script) else {
        return;
    };
    let screen = terminal.wait_for("Ctrl-D");
    assert!(screen.contains("speaks MCP"), "{screen}");
    let offered: Vec<String> = screen
        .lines()
        .filter(|l| l.starts_with("{\"jsonrpc\""))
        .map(str::to_owned)
        .collect();
    assert_eq!(offered.len(), 2, "two lines to paste:\n{screen}");
    for line in &offered {
        terminal.type_line(line);
    }
    let screen = terminal.wait_for(r#""structuredContent""#);
    let reply: Value = screen
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["id"] == 2 && v.get("result").is_some())
        .unwrap_or_else(|| panic!("a JSON reply to the call:\n{screen}"));
    assert_eq!(reply["result"]["structuredContent"]["output"], "hello\n", "{reply}");
    terminal.keys("C-d");
    terminal.wait_for("[serve exited 0]");
    drop(terminal);
    assert_no_survivors(&tag);
}

/// With a client on its input (a pipe), `serve` says nothing of the kind.
#[test]
fn serve_under_a_client_prints_no_terminal_note() {
    let data = TempDir::new("serve-pipe");
    let (_, _, stderr) = bash_mcp(
        &["serve", "--log-level", "off"],
        &format!("{}\n", r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
        &data,
    );
    assert!(!stderr.contains("speaks MCP"), "{stderr}");
}
