//! The OS sandbox, on a real kernel with real tools: writable roots,
//! protected paths, network, escape attempts, survivors, sessions, and an
//! honest probe. Both backends; every test checks /proc for survivors.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bash_mcp::{BashServer, McpServer};
use common::sandboxes::Binary;
use common::*;
use serde_json::{Value, json};

const HELPER: &str = env!("CARGO_BIN_EXE_bash-mcp");
/// `bwrap` runs commands through the long-lived supervisor (the default);
/// `bwrap-per-command` gives each command a bwrap of its own.
const BACKENDS: &[&str] = &["bwrap", "bwrap-per-command", "landlock"];

/// The `sandbox` keys that select `backend` (one of [`BACKENDS`]).
fn backend_keys(backend: &str) -> Value {
    match backend {
        "bwrap-per-command" => json!({"backend": "bwrap", "supervisor": false}),
        other => json!({"backend": other}),
    }
}

/// The backend name results report for `backend`.
fn reported(backend: &str) -> &str {
    backend.strip_suffix("-per-command").unwrap_or(backend)
}

/// The backends that work here (a SKIP line names each that does not; in CI a
/// missing one fails the test).
fn available_backends() -> impl Iterator<Item = &'static str> {
    BACKENDS.iter().copied().filter(|b| available(b))
}

/// Whether `backend` works here; in CI a missing backend fails the test.
fn available(backend: &str) -> bool {
    sandbox_works(&sandbox_config(backend, json!({})), backend)
}

fn sandbox_config(backend: &str, extra: Value) -> bash_mcp::sandbox::SandboxConfig {
    let mut value = json!({"mode": "workspace-write", "helper_path": HELPER});
    for (k, v) in backend_keys(backend)
        .as_object()
        .unwrap()
        .iter()
        .chain(extra.as_object().unwrap())
    {
        value[k] = v.clone();
    }
    bash_mcp::sandbox::SandboxConfig::default()
        .apply(&value, Path::new("/"))
        .unwrap()
}

/// A tagged server in `dir` whose commands run in `backend`'s sandbox.
fn sandboxed(dir: &Path, backend: &str, extra: Value) -> TestServer {
    let server = tagged(BashServer::new(dir, None, Duration::from_secs(30)).unwrap());
    let mut sandbox = json!({"mode": "workspace-write", "helper_path": HELPER, "writable_roots": [dir]});
    for (k, v) in backend_keys(backend)
        .as_object()
        .unwrap()
        .iter()
        .chain(extra.as_object().unwrap())
    {
        sandbox[k] = v.clone();
    }
    server.configure(&json!({"sandbox": sandbox}).to_string()).unwrap();
    server
}

fn run(server: &TestServer, command: &str) -> Value {
    call_tagged(server, command, server.tag(), json!({}))
}

fn output(result: &Value) -> String {
    result["output"].as_str().unwrap_or_default().to_owned()
}

/// Live `sleep <duration>` processes (found by their command line: they
/// dropped their environment with `env -i`).
fn with_arg(duration: &str) -> Vec<i32> {
    let wanted = format!("sleep\0{duration}\0");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if cmdline == wanted.as_bytes() && !is_zombie(pid) {
            found.push(pid);
        }
    }
    found
}

fn assert_none_with_arg(needle: &str) {
    let start = Instant::now();
    while !with_arg(needle).is_empty() {
        if start.elapsed() > Duration::from_secs(5) {
            let left = with_arg(needle);
            for pid in &left {
                // SAFETY: kill takes plain integers and touches no memory of ours;
                // the pids were just read from /proc (a `sleep` with this test's unique duration).
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
            panic!("processes survived: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A unique `sleep` duration (300 s and a bit) to find escapees by.
fn unique_sleep() -> String {
    format!("300.{}{}", std::process::id(), unique_tag("s").len() + rand_digits())
}

fn rand_digits() -> usize {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1000);
    N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
}

#[test]
fn writes_inside_the_roots_succeed_and_outside_fail() {
    for backend in available_backends() {
        let dir = TempDir::new("sbx-write");
        let outside = TempDir::outside_tmp("sbx-outside");
        let server = sandboxed(&dir, backend, json!({}));
        let result = run(
            &server,
            &format!(
                "echo in > inside.txt && echo ok; echo out > {}/x; echo rc=$?",
                outside.display()
            ),
        );
        let text = output(&result);
        assert!(text.contains("ok\n") && text.contains("rc=2"), "{backend}: {result}");
        assert_eq!(std::fs::read_to_string(dir.join("inside.txt")).unwrap(), "in\n");
        assert!(!outside.join("x").exists(), "{backend}: wrote outside the roots");
        assert_eq!(result["sandbox"]["backend"], reported(backend));
        let denied = &result["sandbox"]["denied"];
        assert_eq!(denied[0]["op"], "write", "{result}");
        assert_eq!(denied[0]["path"], format!("{}/x", outside.display()), "{result}");
        assert!(
            result["sandbox_message"].as_str().unwrap().contains("refused a write"),
            "{result}"
        );
    }
}

/// A call's own `sandbox` argument tightens the configured sandbox for that
/// command only, and a widening one is refused before anything runs.
#[test]
fn a_call_may_tighten_the_sandbox_but_not_widen_it() {
    for backend in available_backends() {
        let dir = TempDir::new("sbx-tighten");
        let server = sandboxed(&dir, backend, json!({}));
        let tag = server.tag().to_owned();
        let write = "echo in > t.txt; echo rc=$?";
        let tightened = call_tagged(&server, write, &tag, json!({"sandbox": {"mode": "read-only"}}));
        assert!(
            output(&tightened).contains("rc=1") || output(&tightened).contains("rc=2"),
            "{backend}: {tightened}"
        );
        assert!(!dir.join("t.txt").exists(), "{backend}: a read-only call wrote");
        let plain = run(&server, write);
        assert!(
            output(&plain).contains("rc=0"),
            "{backend}: the next call is back to the configuration: {plain}"
        );
        for widening in [json!({"mode": "off"}), json!({"writable_roots": ["/"]})] {
            let refused = call_tagged(&server, "touch /tmp/should-not-run", &tag, json!({"sandbox": widening}));
            assert_eq!(refused["error"], "invalid_arguments", "{backend}: {refused}");
            assert!(
                refused["message"].as_str().unwrap().contains("widen"),
                "{backend}: {refused}"
            );
        }
        let not_object = call_tagged(&server, "true", &tag, json!({"sandbox": "off"}));
        assert_eq!(not_object["error"], "invalid_arguments", "{not_object}");
    }
}

/// A result with a denial keeps to execute's output schema, which allows no
/// other keys: a client that validates structured content must accept it.
#[test]
fn a_result_with_a_denial_uses_only_output_schema_keys() {
    let definition: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/tools/bash/execute.json")).unwrap(),
    )
    .unwrap();
    let schema = &definition["outputSchema"];
    assert_eq!(schema["additionalProperties"], false);
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    for backend in available_backends() {
        let dir = TempDir::new("sbx-schema");
        let outside = TempDir::outside_tmp("sbx-schema-outside");
        let server = sandboxed(&dir, backend, json!({}));
        let result = run(&server, &format!("echo out > {}/x", outside.display()));
        assert!(result["sandbox_message"].is_string(), "{backend}: {result}");
        for key in keys(&result) {
            assert!(
                schema["properties"].get(&key).is_some(),
                "{backend}: `{key}` not in the schema: {result}"
            );
        }
        let sandbox = &schema["properties"]["sandbox"];
        for key in keys(&result["sandbox"]) {
            assert!(
                sandbox["properties"].get(&key).is_some(),
                "{backend}: sandbox.{key} not in the schema"
            );
        }
        let backends = sandbox["properties"]["backend"]["enum"].as_array().unwrap();
        assert!(backends.contains(&result["sandbox"]["backend"]), "{backend}: {result}");
        assert!(result["sandbox"]["denied"].is_array() && result["sandbox_message"].is_string());
    }
}

#[test]
fn exit_codes_signals_and_timeouts_are_exact_inside_the_sandbox() {
    for backend in available_backends() {
        let dir = TempDir::new("sbx-exit");
        let server = sandboxed(&dir, backend, json!({}));
        assert_eq!(run(&server, "exit 7")["exit_code"], 7, "{backend}");
        assert_eq!(run(&server, "kill -9 $$")["exit_code"], 137, "{backend}");
        let timed = call_tagged(&server, "sleep 100", server.tag(), json!({"timeout_seconds": 0.5}));
        assert_eq!(timed["error"], "timeout", "{backend}: {timed}");
        assert_no_survivors(server.tag());
    }
}

#[test]
fn protected_paths_stay_read_only_inside_a_writable_root() {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-protect");
    std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
    std::fs::write(dir.join(".git/config"), "[core]\n").unwrap();
    let server = sandboxed(&dir, "bwrap", json!({}));
    let attempts = [
        ("direct write", "echo x >> .git/config"),
        ("new hook", "echo x > .git/hooks/pre-commit"),
        ("symlink", "ln -s .git/config link && echo x >> link"),
        ("hard link", "ln .git/config hard && echo x >> hard"),
        ("rename over", "echo x > f && mv -f f .git/config"),
        (
            "rename the parent",
            "mv .git git2 && mkdir -p .git/hooks && echo x > .git/config",
        ),
        (
            "remove the hooks dir",
            "rm -rf .git/hooks && mkdir .git/hooks && echo x > .git/hooks/pre-commit",
        ),
        (
            "bind the parent",
            "mkdir -p m && mount --bind . m && echo x >> m/.git/config",
        ),
    ];
    for (what, command) in attempts {
        let result = run(&server, command);
        assert_ne!(result["exit_code"], 0, "{what}: {result}");
        assert_eq!(
            std::fs::read_to_string(dir.join(".git/config")).unwrap(),
            "[core]\n",
            "{what}"
        );
        assert!(!dir.join(".git/hooks/pre-commit").exists(), "{what}");
        assert!(!dir.join("git2").exists(), "{what}");
    }
    // The rest of .git stays writable (git must work).
    assert_eq!(run(&server, "mkdir -p .git/objects/aa && echo ok")["exit_code"], 0);
}

#[test]
fn connect_to_a_host_listener_fails_with_network_off_and_works_with_it_on() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let connect = format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && echo connected");
    for backend in available_backends() {
        let dir = TempDir::new("sbx-net");
        let off = sandboxed(&dir, backend, json!({"network": false}));
        let result = run(&off, &connect);
        assert_ne!(result["exit_code"], 0, "{backend}: {result}");
        assert!(!output(&result).contains("connected"), "{backend}: {result}");
        assert!(listener.accept().is_err(), "{backend}: a connection got through");
        let on = sandboxed(&dir, backend, json!({"network": true}));
        let result = run(&on, &connect);
        assert_eq!(result["exit_code"], 0, "{backend}: {result}");
        let mut accepted = None;
        for _ in 0..200 {
            if let Ok((stream, _)) = listener.accept() {
                accepted = Some(stream);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut stream = accepted.expect("the connection reached the host listener");
        let mut rest = Vec::new();
        stream.set_nonblocking(false).unwrap();
        let _ = stream.read_to_end(&mut rest);
    }
}

/// What docs/sandbox.md's threat model says of host processes, backend by
/// backend: under bubblewrap a command does not see them at all (a PID
/// namespace of its own); under Landlock, which has no PID namespace, it
/// sees them listed in /proc with their command lines, but cannot read
/// their environment or memory (Landlock keeps ptrace access inside the
/// domain) nor signal them (from ABI 6; the probe says which ABI).
#[test]
fn host_processes_are_hidden_under_bubblewrap_and_only_listed_under_landlock() {
    let marker = unique_tag("host-secret");
    let mut victim = Command::new("sleep")
        .arg("60")
        .env("HOST_SECRET", &marker)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pid = victim.id();
    let probe = format!(
        "exec 2>/dev/null; test -e /proc/{pid} && echo listed; tr '\\0' '\\n' < /proc/{pid}/cmdline | grep -qx 60 && echo cmdline; \
         tr '\\0' '\\n' < /proc/{pid}/environ 2>/dev/null | grep -q HOST_SECRET && echo environ; \
         head -c 1 /proc/{pid}/mem > /dev/null 2>&1 && echo mem; kill -0 {pid} 2>/dev/null && echo signal; echo end"
    );
    for backend in available_backends() {
        let dir = TempDir::new("sbx-host-procs");
        let server = sandboxed(&dir, backend, json!({}));
        let result = run(&server, &probe);
        let seen: Vec<String> = output(&result).lines().map(str::to_owned).collect();
        let expected: Vec<&str> = match backend {
            "landlock" => {
                server
                    .configure(&json!({"tools": {"check_env": true}}).to_string())
                    .unwrap();
                let env = call_tool(&server, "check_env", json!({}));
                let abi = env["sandbox"]["probe"]["features"]["landlock_abi"]
                    .as_u64()
                    .unwrap_or(0);
                // Below ABI 6 no signal scope: the docs say so.
                let signal = (abi < 6).then_some("signal");
                ["listed", "cmdline"].into_iter().chain(signal).chain(["end"]).collect()
            }
            _ => vec!["end"],
        };
        assert_eq!(seen, expected, "{backend}: {result}");
    }
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[cfg(target_arch = "x86_64")]
#[test]
fn ptrace_proc_mem_mount_unshare_and_pivot_root_fail_inside() {
    let host = std::process::id();
    // ptrace targets a child of the host, not the test itself: a sandbox
    // that failed to stop it would leave the test process stopped.
    let mut victim = Command::new("sleep").arg("60").stdin(Stdio::null()).spawn().unwrap();
    let victim_pid = victim.id();
    let attempts = [
        (
            "ptrace",
            format!("perl -e 'exit(syscall(101, 16, {victim_pid}, 0, 0) == -1 ? 1 : 0)'"),
        ),
        ("mem", format!("head -c 1 /proc/{host}/mem > /dev/null")),
        ("signal", format!("kill -0 {host}")),
        ("mount", "mount -t tmpfs none /mnt".to_owned()),
        ("unshare user", "unshare -U true".to_owned()),
        ("unshare mount", "unshare -m true".to_owned()),
        ("pivot_root", "cd / && pivot_root . .".to_owned()),
    ];
    for backend in available_backends() {
        let dir = TempDir::new("sbx-escape");
        let server = sandboxed(&dir, backend, json!({}));
        for (what, command) in &attempts {
            let result = run(&server, command);
            assert_ne!(result["exit_code"], 0, "{backend} {what}: {result}");
        }
    }
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[test]
fn a_setsid_double_fork_with_a_clean_environment_dies_with_the_call() {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-survive");
    let server = sandboxed(&dir, "bwrap", json!({}));
    let sleep = unique_sleep();
    let result = run(&server, &format!("env -i setsid sh -c 'sleep {sleep} &'; echo started"));
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_none_with_arg(&sleep);
}

#[test]
fn a_setsid_escapee_dies_when_the_host_is_killed() {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-host");
    let etc = TempDir::new("sbx-host-etc");
    let config = etc.config(&json!({"sandbox": {"mode": "workspace-write", "backend": "bwrap"}}));
    let sleep = unique_sleep();
    let mut host = Command::new(HELPER)
        .args(["exec", "-c", &config, "-C"])
        .arg(&*dir)
        .arg(format!("env -i setsid sh -c 'sleep {sleep} &'; sleep 100"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the escapee never started", || !with_arg(&sleep).is_empty());
    host.kill().unwrap();
    host.wait().unwrap();
    assert_none_with_arg(&sleep);
    // The host's supervisor went with it (its control socket closed).
    let root = dir.to_string_lossy().into_owned();
    wait_until("the supervisor outlived its killed host", || {
        supervisor_processes(&root).is_empty()
    });
}

/// A sandboxed server with sessions on.
fn sandboxed_sessions(dir: &Path) -> TestServer {
    let server = sandboxed(dir, "bwrap", json!({}));
    server
        .configure(&json!({"sessions": {"enabled": true}}).to_string())
        .unwrap();
    server
}

fn session_start(server: &TestServer, tag: &str) -> String {
    let started = call_tool(server, "session_start", json!({"shell": "bash", "env": {TAG_VAR: tag}}));
    started["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned()
}

fn session_run(server: &TestServer, id: &str, command: &str) -> Value {
    call_tool(
        server,
        "session_run",
        json!({"session_id": id, "command": command, "timeout_seconds": 10}),
    )
}

#[test]
fn a_session_lives_in_the_sandbox_even_after_exec_bash() {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-session");
    let server = sandboxed_sessions(&dir);
    let id = session_start(&server, server.tag());
    let outside = TempDir::outside_tmp("sbx-session-out");
    let result = session_run(&server, &id, &format!("touch {}/a; echo rc=$?", outside.display()));
    assert!(result["output"].as_str().unwrap().contains("rc=1"), "{result}");
    // The shell replaces itself; what runs next is still sandboxed.
    let _ = session_run(
        &server,
        &id,
        &format!(
            "exec bash --norc -c 'touch {out}/b; touch {d}/after-exec'",
            out = outside.display(),
            d = dir.display()
        ),
    );
    wait_until("the exec'd bash never ran", || dir.join("after-exec").exists());
    assert!(!outside.join("a").exists() && !outside.join("b").exists());
    let _ = call_tool(&server, "session_close", json!({"session_id": id}));
}

#[test]
fn a_setsid_escapee_dies_with_its_session() {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-session-esc");
    let server = sandboxed_sessions(&dir);
    let id = session_start(&server, server.tag());
    let sleep = unique_sleep();
    let result = session_run(
        &server,
        &id,
        &format!("env -i setsid sh -c 'sleep {sleep} &'; echo started"),
    );
    assert!(result["output"].as_str().unwrap().contains("started"), "{result}");
    wait_until("the escapee never started", || !with_arg(&sleep).is_empty());
    let closed = call_tool(&server, "session_close", json!({"session_id": id}));
    assert!(closed.get("error").is_none(), "{closed}");
    assert_none_with_arg(&sleep);
}

#[test]
fn the_probe_names_a_missing_bwrap_and_the_call_fails_typed() {
    let dir = TempDir::new("sbx-nobwrap");
    let server = sandboxed(&dir, "bwrap", json!({"bwrap_path": "/nonexistent/bwrap"}));
    let envelope: Value =
        serde_json::from_str(&server.execute("execute", &json!({"command": "true"}).to_string())).unwrap();
    let result: Value = serde_json::from_str(envelope["result"].as_str().unwrap()).unwrap();
    assert_eq!(result["error"], "sandbox_unavailable", "{result}");
    assert!(
        result["message"].as_str().unwrap().contains("/nonexistent/bwrap"),
        "{result}"
    );
    // warn-and-run-unsandboxed runs it, and says so nowhere in a sandbox field.
    server
        .configure(&json!({"sandbox": {"on_unavailable": "warn-and-run-unsandboxed"}}).to_string())
        .unwrap();
    let result = run(&server, "echo ran");
    assert_eq!(result["exit_code"], 0, "{result}");
    assert!(result.get("sandbox").is_none(), "{result}");
}

#[test]
fn the_probe_names_a_missing_helper() {
    let config = sandbox_config("landlock", json!({"helper_path": "/nonexistent/bash-mcp"}));
    let probe = bash_mcp::sandbox::Probe::run(&config);
    assert!(probe.chosen.is_none());
    assert!(
        probe.landlock.detail.contains("/nonexistent/bash-mcp"),
        "{:?}",
        probe.landlock
    );
    assert!(
        probe.landlock.fix.as_deref().unwrap().contains("helper_path"),
        "{:?}",
        probe.landlock
    );
}

#[test]
fn with_user_namespaces_off_bwrap_is_reported_unavailable_and_landlock_still_works() {
    if !available("bwrap") {
        return;
    }
    // A child user namespace whose limit for further user namespaces is 0.
    let dir = TempDir::new("sbx-nouserns");
    // The configuration lies outside the roots of the sandbox it configures.
    let etc = TempDir::new("sbx-nouserns-etc");
    let config = etc.config(&json!({"sandbox": {"mode": "workspace-write", "helper_path": HELPER}}));
    let script = format!(
        "echo 0 > /proc/sys/user/max_user_namespaces && exec {HELPER} exec --json -c {config} -C {dir} 'touch /etc/nope-$$; echo inside'",
        dir = dir.display()
    );
    let out = Command::new("unshare")
        .args(["-U", "-r", "--fork", "sh", "-c", &script])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| panic!("{stdout} {out:?}"));
    assert_eq!(result["sandbox"]["backend"], "landlock", "{result}");
    assert!(output(&result).contains("inside"), "{result}");
    let config = etc.config(&json!({"sandbox": {"mode": "workspace-write", "backend": "bwrap"}}));
    let script = format!(
        "echo 0 > /proc/sys/user/max_user_namespaces && exec {HELPER} exec --json -c {config} -C {dir} true",
        dir = dir.display()
    );
    let out = Command::new("unshare")
        .args(["-U", "-r", "--fork", "sh", "-c", &script])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| panic!("{stdout} {out:?}"));
    assert_eq!(result["error"], "sandbox_unavailable", "{result}");
    let message = result["message"].as_str().unwrap();
    assert!(
        message.contains("max_user_namespaces") || message.contains("namespace"),
        "{result}"
    );
    assert!(result["hint"].as_str().unwrap().contains("user namespaces"), "{result}");
}

#[test]
fn status_and_check_env_report_the_probe() {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-status");
    let server = sandboxed(&dir, "auto", json!({}));
    server
        .configure(&json!({"tools": {"status": true, "check_env": true}}).to_string())
        .unwrap();
    let status = call_tool(&server, "status", json!({}));
    assert_eq!(status["sandbox"]["probe"]["backend"], "bwrap", "{status}");
    assert_eq!(status["sandbox"]["config"]["mode"], "workspace-write", "{status}");
    let env = call_tool(&server, "check_env", json!({}));
    assert_eq!(env["sandbox"]["probe"]["bwrap"]["available"], true, "{env}");
    assert!(
        env["sandbox"]["probe"]["features"]["landlock_abi"].is_number()
            || env["sandbox"]["probe"]["features"]["landlock_abi"].is_null()
    );
}

#[test]
fn read_only_mode_writes_nowhere_but_a_private_tmp() {
    for &backend in ["bwrap"].iter() {
        if !available(backend) {
            continue;
        }
        let dir = TempDir::new("sbx-ro");
        let server = sandboxed(&dir, backend, json!({"mode": "read-only"}));
        let marker = unique_tag("ro-tmp");
        let result = run(
            &server,
            &format!("touch here; echo rc=$?; echo x > /tmp/{marker} && cat /tmp/{marker}"),
        );
        let text = output(&result);
        assert!(text.contains("rc=1") && text.ends_with("x\n"), "{result}");
        assert!(!dir.join("here").exists());
        assert!(
            !Path::new("/tmp").join(&marker).exists(),
            "the private /tmp leaked to the host"
        );
    }
}

#[test]
fn read_deny_fails_closed_on_the_landlock_backend() {
    if !available("landlock") {
        return;
    }
    let dir = TempDir::new("sbx-deny");
    let secret = TempDir::new("sbx-secret");
    let server = sandboxed(&dir, "landlock", json!({"read_deny": [&*secret]}));
    let result = call(&*server, json!({"command": "echo ran"}));
    assert_eq!(result["error"], "sandbox_unavailable", "{result}");
    assert!(result["message"].as_str().unwrap().contains("read_deny"), "{result}");
}

#[test]
fn read_deny_hides_a_directory_with_bwrap() {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-deny-bwrap");
    let secret = TempDir::new("sbx-secret-bwrap");
    std::fs::write(secret.join("key"), "s3cret").unwrap();
    let server = sandboxed(&dir, "bwrap", json!({"read_deny": [&*secret]}));
    let result = run(
        &server,
        &format!("cat {}/key; ls -A {}; echo done", secret.display(), secret.display()),
    );
    assert!(
        !output(&result).contains("s3cret") && output(&result).ends_with("done\n"),
        "{result}"
    );
}

/// Every code block of docs/sandbox.md: configuration blocks apply, the
/// result example is the shape `execute` returns.
#[test]
fn the_sandbox_document_blocks_are_valid() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/sandbox.md")).unwrap();
    let blocks = |lang: &str| -> Vec<String> {
        doc.split(&format!("```{lang}\n"))
            .skip(1)
            .map(|b| b.split("```").next().unwrap().to_owned())
            .collect()
    };
    let base = bash_mcp::Config::with_timeout(Duration::from_secs(30));
    // Every JSON configuration block applies; the first is the sandbox's.
    let config_blocks = blocks("json config");
    assert!(config_blocks.len() >= 2, "the sandbox and the escalation ceiling");
    for block in &config_blocks {
        base.apply_json(block).unwrap_or_else(|e| panic!("{block}: {e:?}"));
    }
    let config = base.apply_json(&config_blocks[0]).unwrap();
    assert_eq!(config.sandbox.mode, bash_mcp::sandbox::Mode::WorkspaceWrite);
    let result_blocks = blocks("json result");
    assert_eq!(result_blocks.len(), 1);
    let example: Value = serde_json::from_str(&result_blocks[0]).unwrap();
    assert_eq!(example["sandbox"]["denied"][0]["op"], "write");
    // Every TOML block applies. The first two are the binary's, over its
    // default sandbox: one widens it (the project and one more place, one
    // more host), one opts out.
    let tomls = blocks("toml");
    let apply = |base: &bash_mcp::Config, block: &str| {
        let table: Value = toml::from_str(block).unwrap();
        base.apply_map(table.as_object().unwrap())
            .unwrap_or_else(|e| panic!("{block}: {e}"))
    };
    let binary = base
        .apply_json(r#"{"sandbox": {"mode": "workspace-write", "network": {"allow": ["@package-registries"]}}}"#)
        .unwrap();
    let widened = apply(&binary, &tomls[0]).sandbox;
    assert!(widened.mode == bash_mcp::sandbox::Mode::WorkspaceWrite && widened.writable_working_dir);
    let allowed: Vec<&str> = widened.network.policy().unwrap().allow().collect();
    assert_eq!(allowed, ["@package-registries", "*.github.com"]);
    assert!(!apply(&binary, &tomls[1]).sandbox.is_on(), "{}", tomls[1]);
    // Then the library's: the plain one, with the network off, one that adds
    // a writable place to the working directory, one that opens the network
    // by name, and the network_ask table with its values written out.
    let configs: Vec<bash_mcp::Config> = tomls[2..].iter().map(|block| apply(&base, block)).collect();
    assert_eq!(configs.len(), 4);
    assert!(configs[0].sandbox.network == bash_mcp::sandbox::Network::Off && configs[0].sandbox.is_on());
    let added = &configs[1].sandbox;
    assert!(added.is_on() && added.writable_working_dir && added.writable_roots.as_ref().is_some_and(|r| r.len() == 1));
    assert!(configs[2].sandbox.is_on());
    assert!(configs[2].sandbox.network != bash_mcp::sandbox::Network::Off);
    let ask = &configs[3].network_ask;
    assert!(tomls[5].contains("[network_ask]"), "{}", tomls[5]);
    assert_eq!((ask.ask, ask.wait.as_secs(), ask.max_waiting), (true, 60, 8));
}

/// Live processes whose command line contains `needle` and
/// `__sandbox-supervise`: a supervisor's bwrap (its argv holds the roots),
/// or the supervisor itself.
fn supervisor_processes(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline);
        if text.contains("__sandbox-supervise") && text.contains(needle) && !is_zombie(pid) {
            found.push(pid);
        }
    }
    found
}

/// This process's live children that are supervisors' bwraps for `dir`.
fn bwrap_children_for(dir: &str) -> Vec<i32> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let ppid = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().nth(1));
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline);
        if ppid == Some(me.as_str()) && text.contains(dir) && text.contains("__sandbox-supervise") && !is_zombie(pid) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn the_supervisor_keeps_exit_codes_env_cwd_stdin_streams_and_a_clean_process() {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-sup");
    std::fs::create_dir(dir.join("sub")).unwrap();
    let server = sandboxed(&dir, "bwrap", json!({}));
    assert_eq!(run(&server, "exit 7")["exit_code"], 7);
    assert_eq!(run(&server, "kill -TERM $$")["exit_code"], 143);
    assert_eq!(run(&server, "kill -SEGV $$")["exit_code"], 139);
    let sub = dir.join("sub").canonicalize().unwrap();
    let result = call_tagged(
        &server,
        "printf '%s|' \"$GREETING\" \"$(pwd)\"; cat",
        server.tag(),
        json!({"env": {"GREETING": "hello"}, "working_dir": sub, "stdin": "from stdin"}),
    );
    assert_eq!(
        output(&result),
        format!("hello|{}|from stdin", sub.display()),
        "{result}"
    );
    let result = call_tagged(
        &server,
        "echo out; echo err >&2; exit 3",
        server.tag(),
        json!({"streams": "separate"}),
    );
    assert_eq!(result["exit_code"], 3, "{result}");
    assert_eq!(result["stdout"], "out\n", "{result}");
    assert_eq!(result["stderr"], "err\n", "{result}");
    // Only fds 0-2 (and ls's own directory fd); no capability; its own PID
    // namespace, whose /proc shows the shell as $$.
    assert_eq!(output(&run(&server, "ls /proc/self/fd")), "0\n1\n2\n3\n");
    let caps = output(&run(&server, "grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status"));
    assert_eq!(caps.matches("0000000000000000").count(), 4, "{caps}");
    let ps = output(&run(&server, "cat /proc/$$/comm; ls /proc | grep -c '^[0-9]'"));
    let mut lines = ps.lines();
    assert_eq!(lines.next(), Some("sh"), "{ps}");
    let visible: usize = lines.next().unwrap().parse().unwrap();
    assert!(visible <= 4, "the command sees processes beyond its own call: {ps}");
    // No signal blocked or ignored, as unsandboxed.
    let status = output(&run(&server, "grep -E '^Sig(Blk|Ign)' /proc/self/status"));
    assert_eq!(status.matches("0000000000000000").count(), 2, "{status}");
}

#[test]
fn a_command_cannot_reach_the_supervisor_or_get_capabilities_back() {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-sup-reach");
    let server = sandboxed(&dir, "bwrap", json!({}));
    for (what, command) in [
        ("init memory", "head -c 1 /proc/1/mem"),
        ("user namespace", "unshare -U true"),
        ("user namespace, mapped root", "unshare -Ur true"),
        ("new mount", "mount -t proc proc /proc"),
    ] {
        let result = run(&server, command);
        assert_ne!(result["exit_code"], 0, "{what}: {result}");
    }
    // The control socket is nowhere in the command's reach: no socket fd.
    let result = run(
        &server,
        "for p in /proc/[0-9]*/fd/*; do readlink $p; done 2>/dev/null | grep -c socket",
    );
    assert_eq!(output(&result).trim(), "0", "{result}");
}

#[test]
fn timeout_and_cancel_kill_everything_a_supervised_command_started() {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-sup-kill");
    let server = sandboxed(&dir, "bwrap", json!({}));
    let sleep = unique_sleep();
    let timed = call_tagged(
        &server,
        &format!("sleep {sleep} & env -i setsid sleep {sleep} & sleep {sleep}"),
        server.tag(),
        json!({"timeout_seconds": 0.5}),
    );
    assert_eq!(timed["error"], "timeout", "{timed}");
    assert_none_with_arg(&sleep);

    let token = bash_mcp::CancelToken::new();
    let canceller = {
        let token = token.clone();
        let sleep = sleep.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            while with_arg(&sleep).len() < 2 && start.elapsed() < HANG_GUARD {
                std::thread::sleep(Duration::from_millis(10));
            }
            token.cancel();
        })
    };
    let request =
        bash_mcp::ExecRequest::new(format!("env -i setsid sleep {sleep} & sleep {sleep}")).env(TAG_VAR, server.tag());
    let outcome = run_cancellable(&server, &request, &token);
    canceller.join().unwrap();
    assert_eq!(outcome.status, bash_mcp::Status::Cancelled);
    assert_none_with_arg(&sleep);
}

#[test]
fn the_supervisor_is_restarted_after_it_dies_and_stopped_with_its_server() {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-sup-life");
    let root = dir.to_string_lossy().into_owned();
    let server = sandboxed(&dir, "bwrap", json!({}));
    assert_eq!(run(&server, "true")["exit_code"], 0);
    assert_eq!(run(&server, "true")["exit_code"], 0);
    assert_eq!(bwrap_children_for(&root).len(), 1, "one supervisor serves every call");
    let supervisors = supervisor_processes(&root);
    assert!(supervisors.len() >= 2, "bwrap and the supervisor: {supervisors:?}");
    for pid in &supervisors {
        // SAFETY: kill takes plain integers; the pids are this test's supervisor (its roots are the test's dir).
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    wait_until("the killed supervisor did not go", || {
        supervisor_processes(&root).is_empty()
    });
    let result = run(&server, "echo again");
    assert_eq!(output(&result), "again\n", "{result}");
    assert_eq!(
        bwrap_children_for(&root).len(),
        1,
        "the dead one was reaped and replaced"
    );
    drop(server);
    wait_until("the supervisor outlived its server", || {
        supervisor_processes(&root).is_empty() && bwrap_children_for(&root).is_empty()
    });
    assert_no_lasting_zombies();
}

/// Every process below `root_pid` (its children, theirs, ...).
fn descendants(root_pid: i32) -> Vec<i32> {
    let mut parents: Vec<(i32, i32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let ppid = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().nth(1));
        if let Some(ppid) = ppid.and_then(|p| p.parse().ok()) {
            parents.push((pid, ppid));
        }
    }
    let mut found = vec![root_pid];
    let mut at = 0;
    while at < found.len() {
        let parent = found[at];
        found.extend(parents.iter().filter(|(_, ppid)| *ppid == parent).map(|(pid, _)| *pid));
        at += 1;
    }
    found.remove(0);
    found
}

/// The live processes below a supervisor's bwrap that run the supervisor's
/// binary: the supervisor and its ready or running inits.
/// The helper processes under a supervisor's bwrap: the supervisor (the
/// first of them), its inits, and the command processes the inits made
/// ahead of their requests.
struct Pool {
    supervisor: i32,
    inits: Vec<i32>,
    ready: Vec<i32>,
}

impl Pool {
    fn of(bwrap: i32) -> Pool {
        let helpers: Vec<i32> = descendants(bwrap)
            .into_iter()
            .filter(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                cmdline.starts_with(HELPER.as_bytes()) && !is_zombie(*pid)
            })
            .collect();
        let supervisor = helpers.first().copied().unwrap_or(-1);
        let children_of = |parents: &[i32]| -> Vec<i32> {
            helpers
                .iter()
                .copied()
                .filter(|pid| parent_of(*pid).is_some_and(|ppid| parents.contains(&ppid)))
                .collect()
        };
        let inits = children_of(&[supervisor]);
        let ready = children_of(&inits);
        Pool {
            supervisor,
            inits,
            ready,
        }
    }

    fn all(&self) -> Vec<i32> {
        let mut all = vec![self.supervisor];
        all.extend(&self.inits);
        all.extend(&self.ready);
        all
    }
}

/// The parent pid of `pid`, from `/proc/<pid>/stat`.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn every_supervised_command_finds_an_empty_pid_namespace_and_the_waiting_inits_are_bounded_and_die_with_their_supervisor()
 {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-sup-pool");
    let root = dir.to_string_lossy().into_owned();
    let server = sandboxed(&dir, "bwrap", json!({}));
    // In a namespace used before, the shell and its child would get higher
    // pids; the child dies with its call.
    let sleep = unique_sleep();
    for _ in 0..20 {
        let result = run(&server, &format!("echo $$; sleep {sleep} & echo $!"));
        assert_eq!(output(&result), "2\n3\n", "{result}");
    }
    assert_none_with_arg(&sleep);
    // More at once than inits are kept ready: the others wait for theirs.
    std::thread::scope(|scope| {
        let calls: Vec<_> = (0..8).map(|_| scope.spawn(|| run(&server, "echo $$"))).collect();
        for call in calls {
            let result = call.join().unwrap();
            assert_eq!(output(&result), "2\n", "{result}");
        }
    });
    let bwrap = bwrap_children_for(&root);
    assert_eq!(bwrap.len(), 1, "one supervisor serves every call");
    // At least one init ready for the next call; the inits made for the
    // calls beyond the pool exit once theirs ended, so at most two wait,
    // each with the process of its next command made ahead.
    wait_until("the supervisor made no ready init", || {
        !Pool::of(bwrap[0]).inits.is_empty()
    });
    wait_until("more than two inits stayed after their commands ended", || {
        Pool::of(bwrap[0]).inits.len() <= 2
    });
    wait_until("a waiting init has no command process made ahead", || {
        let pool = Pool::of(bwrap[0]);
        pool.inits
            .iter()
            .all(|init| pool.ready.iter().filter(|p| parent_of(**p) == Some(*init)).count() == 1)
    });
    let gone = |pids: &[i32]| pids.iter().all(|pid| !pid_exists(*pid) || is_zombie(*pid));
    // The supervisor alone killed: its ready inits and their command
    // processes go with it, and the next call gets a new supervisor.
    let pool = Pool::of(bwrap[0]);
    // SAFETY: kill takes plain integers; this is this test's supervisor
    // (the first of its bwrap's descendants that runs the helper).
    unsafe { libc::kill(pool.supervisor, libc::SIGKILL) };
    wait_until("a ready init or its command process outlived its supervisor", || {
        gone(&pool.all())
    });
    assert_eq!(output(&run(&server, "echo $$")), "2\n");
    let bwrap = bwrap_children_for(&root);
    assert_eq!(bwrap.len(), 1, "the dead supervisor was replaced");
    wait_until("the new supervisor made no ready init", || {
        let pool = Pool::of(bwrap[0]);
        !pool.inits.is_empty() && !pool.ready.is_empty()
    });
    let pool = Pool::of(bwrap[0]);
    drop(server);
    wait_until("a ready init or its command process outlived its server", || {
        gone(&pool.all()) && bwrap_children_for(&root).is_empty()
    });
    assert_no_lasting_zombies();
}

/// A command the supervisor cannot start (its shell is gone) is a typed
/// `spawn_failed` error that names the shell, and the next command runs.
#[test]
fn a_supervised_command_that_cannot_exec_is_a_spawn_error_and_the_next_one_runs() {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-sup-noexec");
    let server = sandboxed(&dir, "bwrap", json!({}));
    assert_eq!(output(&run(&server, "echo up")), "up\n");
    let shell = dir.join("sh");
    std::fs::copy("/bin/sh", &shell).unwrap();
    server.configure(&json!({"shell": shell}).to_string()).unwrap();
    std::fs::remove_file(&shell).unwrap();
    let result = run(&server, "true");
    assert_eq!(result["error"], "spawn_failed", "{result}");
    assert!(
        result["message"].as_str().unwrap().contains(shell.to_str().unwrap()),
        "{result}"
    );
    server.configure(r#"{"shell": "/bin/sh"}"#).unwrap();
    for _ in 0..3 {
        assert_eq!(output(&run(&server, "echo $$")), "2\n");
    }
    drop(server);
    assert_no_lasting_zombies();
}

/// A command longer than a request message carries (16 KiB) reaches the
/// supervisor's init on the command's socket instead, whole.
#[test]
fn a_supervised_command_longer_than_a_request_message_runs_whole() {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-sup-long");
    let server = sandboxed(&dir, "bwrap", json!({}));
    for len in [100, 16 << 10, 64 << 10] {
        let word = "x".repeat(len);
        let result = run(&server, &format!("w={word}; echo ${{#w}}"));
        assert_eq!(output(&result), format!("{len}\n"), "{result}");
    }
    drop(server);
    assert_no_lasting_zombies();
}

/// The processes inits make ahead for their next commands, killed from the
/// host before their requests, are made again: every command still runs,
/// in an empty PID namespace.
#[test]
fn command_processes_killed_before_their_requests_are_made_again() {
    if !available("bwrap") {
        return;
    }
    let dir = TempDir::new("sbx-sup-ready-killed");
    let root = dir.to_string_lossy().into_owned();
    let server = sandboxed(&dir, "bwrap", json!({}));
    assert_eq!(output(&run(&server, "echo up")), "up\n");
    let bwrap = bwrap_children_for(&root);
    assert_eq!(bwrap.len(), 1, "one supervisor serves every call");
    wait_until("no init made its next command's process", || {
        !Pool::of(bwrap[0]).ready.is_empty()
    });
    let killed = Pool::of(bwrap[0]).ready;
    for pid in &killed {
        // SAFETY: kill takes plain integers; each is a process this test's
        // supervisor made.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    wait_until("a killed command process still runs", || {
        killed.iter().all(|pid| !pid_exists(*pid) || is_zombie(*pid))
    });
    for _ in 0..4 {
        assert_eq!(output(&run(&server, "echo $$")), "2\n");
    }
    drop(server);
    assert_no_lasting_zombies();
}

#[test]
fn an_orphan_of_a_landlock_command_dies_with_its_call() {
    if !available("landlock") {
        return;
    }
    let dir = TempDir::new("sbx-reaper");
    let server = sandboxed(&dir, "landlock", json!({}));
    let sleep = unique_sleep();
    // Outside the command's process group and without the run marker:
    // only the helper, as subreaper, still has it.
    let result = run(
        &server,
        &format!("env -i setsid sh -c 'sleep {sleep} >/dev/null 2>&1 &'; echo started"),
    );
    assert_eq!(output(&result), "started\n", "{result}");
    assert_none_with_arg(&sleep);
    assert_eq!(run(&server, "kill -TERM $$")["exit_code"], 143);
    assert_eq!(run(&server, "exit 9")["exit_code"], 9);
}

/// The audit entries of `log` for `tool`, oldest first.
fn audit_entries(log: &Path, tool: &str) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|entry| entry["tool"] == tool)
        .collect()
}

/// The host's own sandbox for one call (`CallOptions::sandbox`) may be wider
/// than the configured one; the call's own `sandbox` argument still only
/// tightens it, the next call is back to the configuration, and the audit
/// log records the sandbox the call ran in.
#[test]
fn a_host_may_widen_one_call_and_the_audit_log_records_it() {
    for backend in available_backends() {
        let dir = TempDir::new("sbx-host");
        let outside = TempDir::outside_tmp("sbx-host-out");
        let logs = TempDir::new("sbx-host-log");
        let log = logs.join("audit.jsonl");
        let server = sandboxed(&dir, backend, json!({}));
        server.configure(&json!({"audit": {"path": log}}).to_string()).unwrap();
        let target = outside.join("x");
        let write = format!("echo w > {}; echo rc=$?", target.display());
        let roots = json!({"writable_roots": [&*dir, &*outside]});
        let wider = server
            .config()
            .sandbox
            .widened(roots.as_object().unwrap(), &dir)
            .unwrap();
        let call = |extra: Value, sandbox: Option<&bash_mcp::sandbox::SandboxConfig>| {
            let mut args = json!({"command": write});
            for (k, v) in extra.as_object().unwrap() {
                args[k] = v.clone();
            }
            let options = bash_mcp::CallOptions {
                sandbox,
                ..Default::default()
            };
            server
                .call_tool("execute", &bash_mcp::ToolArgs::from_value(args), options)
                .to_value()
        };

        let widened = call(json!({}), Some(&wider));
        assert!(output(&widened).contains("rc=0"), "{backend}: {widened}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "w\n", "{backend}");
        std::fs::remove_file(&target).unwrap();

        let tightened = call(json!({"sandbox": {"mode": "read-only"}}), Some(&wider));
        assert!(!output(&tightened).contains("rc=0"), "{backend}: {tightened}");
        let plain = call(json!({}), None);
        assert!(!output(&plain).contains("rc=0"), "{backend}: {plain}");
        assert!(!target.exists(), "{backend}: only the widened call may write there");

        let entries = audit_entries(&log, "execute");
        assert_eq!(entries.len(), 3, "{backend}: {entries:?}");
        let recorded = entries[0]["sandbox_override"]["writable_roots"].to_string();
        assert!(recorded.contains(&*outside.to_string_lossy()), "{backend}: {recorded}");
        // The host's sandbox, which the call's argument then tightened.
        assert_eq!(
            entries[1]["sandbox_override"], entries[0]["sandbox_override"],
            "{backend}"
        );
        assert!(
            entries[2].get("sandbox_override").is_none(),
            "{backend}: {:?}",
            entries[2]
        );
        assert_no_survivors(server.tag());
    }
}

/// The binary widens a call's sandbox only for commands its
/// `sandbox_overrides` rules name, every part of them, and records it.
#[test]
fn the_binary_widens_a_call_only_for_commands_its_overrides_name() {
    let Some(backend) = available_backends().next() else {
        return;
    };
    let dir = TempDir::new("sbx-bin");
    let outside = TempDir::outside_tmp("sbx-bin-out");
    let logs = TempDir::new("sbx-bin-log");
    let log = logs.join("audit.jsonl");
    let tag = unique_tag("sbx-bin");
    let mut sandbox = json!({"mode": "workspace-write", "helper_path": HELPER, "writable_roots": [&*dir]});
    for (k, v) in backend_keys(backend).as_object().unwrap() {
        sandbox[k] = v.clone();
    }
    let config = logs.join("bash-mcp.json");
    let settings = json!({
        "sandbox": sandbox,
        "sandbox_overrides": ["bash.execute:touch *"],
        "audit": {"path": log},
        "env": {"set": {TAG_VAR: &tag}},
    });
    std::fs::write(&config, settings.to_string()).unwrap();
    let mut binary = Binary::serve(&config, &dir);
    let wider = json!({"writable_roots": [&*dir, &*outside]});

    let named = binary.execute(
        1,
        json!({"command": format!("touch {}/a", outside.display()), "sandbox": wider}),
    );
    assert_eq!(named["exit_code"], 0, "{backend}: {named}");
    assert!(outside.join("a").exists(), "{backend}: {named}");

    let unnamed = format!("touch {0}/b; echo x > {0}/c", outside.display());
    let refused = binary.execute(2, json!({"command": unnamed, "sandbox": wider}));
    // Refused by the rules, naming the part none of them matched.
    assert_eq!(refused["error"], "permission_denied", "{backend}: {refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("`echo x` matches none of them"),
        "{backend}: {refused}"
    );
    assert!(
        refused["hint"].as_str().unwrap().contains("sandbox_overrides"),
        "{backend}: {refused}"
    );
    let plain = binary.execute(3, json!({"command": format!("touch {}/d", outside.display())}));
    assert_ne!(plain["exit_code"], 0, "{backend}: {plain}");
    drop(binary);
    for name in ["b", "c", "d"] {
        assert!(!outside.join(name).exists(), "{backend}: {name} was written");
    }

    let entries = audit_entries(&log, "execute");
    assert_eq!(entries.len(), 3, "{entries:?}");
    assert!(
        entries[0]["sandbox_override"]["writable_roots"]
            .to_string()
            .contains(&*outside.to_string_lossy()),
        "{:?}",
        entries[0]
    );
    assert!(entries[1].get("sandbox_override").is_none() && entries[2].get("sandbox_override").is_none());
    assert_no_survivors(&tag);
}

/// The backends whose commands are observed by seccomp user notification
/// (a bwrap of its own per command is not: its denials come from the
/// error text).
fn notified_backends() -> impl Iterator<Item = &'static str> {
    available_backends().filter(|b| *b != "bwrap-per-command")
}

/// The denials of `result`, checked to come from the seccomp listener.
fn notified_denials(backend: &str, result: &Value) -> Vec<Value> {
    assert_eq!(
        result["sandbox"]["denials_from"], "seccomp notification",
        "{backend}: {result}"
    );
    result["sandbox"]["denied"].as_array().unwrap().clone()
}

fn write_of(path: &Path) -> Value {
    json!({"op": "write", "path": path.display().to_string()})
}

#[test]
fn a_write_outside_the_roots_is_named_by_the_seccomp_notification() {
    for backend in notified_backends() {
        let dir = TempDir::new("sbx-notify-out");
        let outside = TempDir::outside_tmp("sbx-notify-outside");
        let server = sandboxed(&dir, backend, json!({}));
        // An error text that names no path: only the notification can.
        let result = run(
            &server,
            &format!("echo x 2>/dev/null > {}/x; echo rc=$?", outside.display()),
        );
        assert!(
            output(&result).contains("rc=") && !output(&result).contains("rc=0"),
            "{backend}: {result}"
        );
        assert!(!outside.join("x").exists());
        assert_eq!(
            notified_denials(backend, &result),
            [write_of(&outside.join("x"))],
            "{backend}"
        );
        assert_no_survivors(server.tag());
    }
}

/// bubblewrap only: Landlock cannot keep a path read-only inside a
/// writable root (its rules only grant), so it has no such denial.
#[test]
fn a_write_to_a_protected_path_inside_a_root_is_named_by_the_notification() {
    for backend in notified_backends().filter(|b| *b == "bwrap") {
        let dir = TempDir::new("sbx-notify-protected");
        std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
        let server = sandboxed(&dir, backend, json!({}));
        let result = run(&server, "echo x > .git/hooks/pre-commit; echo rc=$?");
        assert!(!output(&result).contains("rc=0"), "{backend}: {result}");
        let hook = dir.canonicalize().unwrap().join(".git/hooks/pre-commit");
        assert!(!hook.exists(), "{backend}");
        assert_eq!(notified_denials(backend, &result), [write_of(&hook)], "{backend}");
        assert_no_survivors(server.tag());
    }
}

#[test]
fn relative_and_dirfd_writes_are_resolved_as_the_command_sees_them() {
    for backend in notified_backends() {
        let dir = TempDir::new("sbx-notify-rel");
        let outside = TempDir::outside_tmp("sbx-notify-rel-outside");
        let outside = outside.canonicalize().unwrap();
        std::fs::create_dir_all(outside.join("sub")).unwrap();
        std::fs::write(outside.join("sub/f"), "keep").unwrap();
        let server = sandboxed(&dir, backend, json!({}));
        // `rel`: relative to the working dir; `rm -r` removes `sub/f` with
        // unlinkat() relative to a dirfd it opened on `sub`.
        let result = run(
            &server,
            &format!("cd {} && echo x > rel; rm -rf sub; echo done", outside.display()),
        );
        assert!(output(&result).contains("done"), "{backend}: {result}");
        assert_eq!(std::fs::read_to_string(outside.join("sub/f")).unwrap(), "keep");
        let denied = notified_denials(backend, &result);
        assert!(denied.contains(&write_of(&outside.join("rel"))), "{backend}: {result}");
        assert!(
            denied.contains(&write_of(&outside.join("sub/f"))),
            "{backend}: {result}"
        );
        std::fs::remove_dir_all(outside.join("sub")).unwrap();
    }
}

#[test]
fn a_connect_with_network_off_is_named_with_its_address_or_socket_family() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    for backend in notified_backends() {
        let dir = TempDir::new("sbx-notify-net");
        let server = sandboxed(&dir, backend, json!({"network": false}));
        let result = run(&server, &format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'"));
        assert_ne!(result["exit_code"], 0, "{backend}: {result}");
        assert!(listener.accept().is_err(), "{backend}: a connection got through");
        // bwrap: the socket exists in an empty network namespace and the
        // connect names its address; Landlock: no network socket may exist
        // at all, so the refused socket() is what is named.
        let expected = match backend {
            "landlock" => json!({"op": "socket", "family": "AF_INET"}),
            _ => json!({"op": "connect", "addr": format!("127.0.0.1:{port}")}),
        };
        assert_eq!(notified_denials(backend, &result), [expected], "{backend}: {result}");
        assert!(
            result["sandbox_message"].as_str().unwrap().contains("network is off"),
            "{result}"
        );
        assert_no_survivors(server.tag());
    }
}

#[test]
fn allowed_writes_and_unix_socket_connects_report_nothing() {
    // perl makes the AF_UNIX connect (the shell cannot).
    if !Command::new("perl").arg("-e1").status().is_ok_and(|s| s.success()) {
        assert!(std::env::var_os("CI").is_none(), "perl must be installed in CI");
        skip_missing("perl");
        return;
    }
    for backend in notified_backends() {
        let dir = TempDir::new("sbx-notify-allowed");
        let socket = dir.join("s");
        let unix = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let server = sandboxed(&dir, backend, json!({"network": false}));
        let connect = "perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Peer => \"s\") or die \"no: $!\"; print \"connected\\n\"'";
        let result = run(
            &server,
            &format!("echo x > inside && mkdir d && mv inside d/ && {connect}"),
        );
        assert_eq!(result["exit_code"], 0, "{backend}: {result}");
        assert!(output(&result).contains("connected"), "{backend}: {result}");
        assert!(unix.accept().is_ok());
        assert_eq!(notified_denials(backend, &result), Vec::<Value>::new(), "{backend}");
        assert_no_survivors(server.tag());
    }
}

#[test]
/// `notify_denials: false` on every backend, and the per-command bwrap form
/// (which has no listener where no directory is guarded: here its one root
/// is not the server's working directory, whose protected names are always
/// kept) with it on.
fn without_a_listener_the_error_text_is_the_source() {
    let cases = available_backends()
        .map(|b| (b, json!({"notify_denials": false})))
        .chain(
            available_backends()
                .filter(|b| *b == "bwrap-per-command")
                .map(|b| (b, json!({}))),
        );
    for (backend, extra) in cases {
        let dir = TempDir::new("sbx-notify-off");
        let outside = TempDir::outside_tmp("sbx-notify-off-outside");
        let mut extra = extra;
        if extra == json!({}) {
            std::fs::create_dir(dir.join("root")).unwrap();
            extra = json!({"writable_roots": [dir.join("root")]});
        }
        let server = sandboxed(&dir, backend, extra);
        let result = run(&server, &format!("echo x > {}/x", outside.display()));
        assert_eq!(
            result["sandbox"]["denials_from"], "error text (heuristic)",
            "{backend}: {result}"
        );
        assert_eq!(
            result["sandbox"]["denied"][0],
            write_of(&outside.join("x")),
            "{backend}: {result}"
        );
        assert_no_survivors(server.tag());
    }
}
