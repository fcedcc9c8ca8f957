//! Protections that hold when what they cover is moved or replaced: a
//! command cannot move a hidden path out of sight by renaming a parent, and
//! a long-lived sandbox is not reused as it is after the host replaces a
//! protected or hidden file (the kernel takes a bind mount away from every
//! namespace when the file under it is replaced by a rename, as `git
//! config` and editors save).

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use bash_mcp::{BashServer, McpServer};
use common::*;
use serde_json::{Value, json};

const HELPER: &str = env!("CARGO_BIN_EXE_bash-mcp");
const BACKENDS: &[&str] = &["bwrap", "bwrap-per-command", "landlock"];

fn backend_keys(backend: &str) -> Value {
    match backend {
        "bwrap-per-command" => json!({"backend": "bwrap", "supervisor": false}),
        other => json!({"backend": other}),
    }
}

/// The backends that hide paths (`read_deny`): Landlock refuses to run
/// with it (tested in sandbox.rs).
fn hiding_backends() -> impl Iterator<Item = &'static str> {
    backends().filter(|b| b.starts_with("bwrap"))
}

fn backends() -> impl Iterator<Item = &'static str> {
    BACKENDS.iter().copied().filter(|backend| {
        let mut value = json!({"mode": "workspace-write", "helper_path": HELPER});
        for (k, v) in backend_keys(backend).as_object().unwrap() {
            value[k] = v.clone();
        }
        let config = bash_mcp::sandbox::SandboxConfig::default()
            .apply(&value, Path::new("/"))
            .unwrap();
        sandbox_works(&config, backend)
    })
}

fn sandboxed(root: &Path, backend: &str, extra: Value) -> TestServer {
    let server = tagged(BashServer::new(root, None, Duration::from_secs(30)).unwrap());
    let mut sandbox = json!({"mode": "workspace-write", "helper_path": HELPER, "writable_roots": [root]});
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

/// Writes `text` to a new file beside `path` and renames it over `path`.
fn replace(path: &Path, text: &str) {
    let next = path.with_extension("next");
    std::fs::write(&next, text).unwrap();
    std::fs::rename(&next, path).unwrap();
}

/// This process's live children that are supervisors' bwraps for `dir`.
fn supervisors_for(dir: &Path) -> usize {
    let me = std::process::id().to_string();
    let dir = dir.to_string_lossy();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                return false;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let ppid = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().nth(1));
            let cmdline =
                String::from_utf8_lossy(&std::fs::read(entry.path().join("cmdline")).unwrap_or_default()).into_owned();
            ppid == Some(me.as_str())
                && cmdline.contains(&*dir)
                && cmdline.contains("__sandbox-supervise")
                && !is_zombie(pid)
        })
        .count()
}

#[test]
fn a_protected_file_the_host_replaces_stays_read_only_for_the_next_command() {
    for backend in backends() {
        let root = TempDir::new("replaced-protected");
        let init = Command::new("git").args(["init", "-q"]).current_dir(&root).status();
        if !init.is_ok_and(|s| s.success()) {
            skip("git is not installed (apt-get install git)");
            return;
        }
        let server = sandboxed(&root, backend, json!({}));
        assert_eq!(run(&server, "true")["exit_code"], 0, "{backend}");
        // The host saves the file the way git config does: a new file renamed over it.
        let config = root.join(".git/config");
        let saved = std::fs::read_to_string(&config).unwrap() + "[user]\n\tname = p\n";
        replace(&config, &saved);
        let result = run(&server, "echo '[core] fsmonitor = x' >> .git/config; echo rc=$?");
        let text = result["output"]
            .as_str()
            .unwrap_or_else(|| panic!("{backend}: {result}"));
        assert!(!text.contains("rc=0"), "{backend}: {result}");
        assert_eq!(std::fs::read_to_string(&config).unwrap(), saved, "{backend}");
        if backend == "bwrap" {
            wait_until("the stale supervisor did not exit", || supervisors_for(&root) == 1);
        }
    }
}

#[test]
fn a_hidden_file_the_host_replaces_stays_hidden_for_the_next_command() {
    for backend in hiding_backends() {
        let root = TempDir::new("replaced-hidden");
        let secret = root.join("token");
        std::fs::write(&secret, "old-token").unwrap();
        let server = sandboxed(&root, backend, json!({"read_deny": [&secret]}));
        let before = run(&server, "cat token; echo done");
        assert!(
            !before["output"]
                .as_str()
                .unwrap_or_else(|| panic!("{backend}: {before}"))
                .contains("old-token"),
            "{backend}: {before}"
        );
        replace(&secret, "new-token");
        let result = run(&server, "cat token; echo done");
        let text = result["output"].as_str().unwrap_or_default();
        assert!(
            text.ends_with("done\n") && !text.contains("new-token"),
            "{backend}: {result}"
        );
    }
}

#[test]
fn a_hidden_path_cannot_be_moved_out_of_sight_by_renaming_a_parent() {
    for backend in hiding_backends() {
        let root = TempDir::new("moved-deny");
        std::fs::create_dir_all(root.join("conf/secrets")).unwrap();
        std::fs::write(root.join("conf/secrets/key"), "s3cret").unwrap();
        let server = sandboxed(&root, backend, json!({"read_deny": [root.join("conf/secrets")]}));
        let moved = run(&server, "mv conf c2; mv conf/secrets s2; echo done");
        assert!(
            root.join("conf/secrets/key").exists(),
            "{backend}: a parent of the hidden path was moved: {moved}"
        );
        let read = run(&server, "cat conf/secrets/key c2/secrets/key s2/key; echo done");
        assert!(
            !read["output"]
                .as_str()
                .unwrap_or_else(|| panic!("{backend}: {read}"))
                .contains("s3cret"),
            "{backend}: {read}"
        );
    }
}

/// A repository with a protected file at its top (`.envrc`), for a session
/// or a running command to outlive a replacement of both.
fn project(root: &Path) -> bool {
    let init = Command::new("git").args(["init", "-q"]).current_dir(root).status();
    if !init.is_ok_and(|s| s.success()) {
        skip("git is not installed (apt-get install git)");
        return false;
    }
    std::fs::write(root.join(".envrc"), "export A=1\n").unwrap();
    true
}

/// The host saves both files the way `git config` and editors do; what each
/// holds afterwards.
fn replace_both(root: &Path) -> (String, String) {
    let config = std::fs::read_to_string(root.join(".git/config")).unwrap() + "[user]\n\tname = p\n";
    replace(&root.join(".git/config"), &config);
    replace(&root.join(".envrc"), "export A=2\n");
    (config, "export A=2\n".to_owned())
}

const WRITE_BOTH: &str = "echo '[core] fsmonitor = x' >> .git/config; echo 'curl x | sh' >> .envrc; echo done";

#[test]
fn a_session_keeps_protected_files_the_host_replaces_while_it_lives() {
    for backend in backends().filter(|b| *b != "bwrap-per-command") {
        let root = TempDir::new("replaced-session");
        if !project(&root) {
            return;
        }
        let server = sandboxed(&root, backend, json!({}));
        server
            .configure(&json!({"sessions": {"enabled": true}}).to_string())
            .unwrap();
        let started = call_tool(
            &server,
            "session_start",
            json!({"shell": "bash", "env": {TAG_VAR: server.tag()}}),
        );
        let id = started["session_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{started}"))
            .to_owned();
        let run = |command: &str| {
            call_tool(
                &server,
                "session_run",
                json!({"session_id": id, "command": command, "timeout_seconds": 20}),
            )
        };
        assert!(run("true")["output"].is_string(), "{backend}: the session does not run");
        let (config, envrc) = replace_both(&root);
        let result = run(WRITE_BOTH);
        assert!(
            result["output"].as_str().unwrap_or_default().contains("done"),
            "{backend}: {result}"
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config")).unwrap(),
            config,
            "{backend}: {result}"
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".envrc")).unwrap(),
            envrc,
            "{backend}: {result}"
        );
        let _ = call_tool(&server, "session_close", json!({"session_id": id}));
    }
}

#[test]
fn a_running_command_keeps_protected_files_the_host_replaces_meanwhile() {
    for backend in backends() {
        let root = TempDir::new("replaced-running");
        if !project(&root) {
            return;
        }
        let server = std::sync::Arc::new(sandboxed(&root, backend, json!({})));
        let release = TempDir::outside_tmp("replaced-release");
        let command = format!("{}; {WRITE_BOTH}", until_file_exists(&release.join("go")));
        let running = {
            let server = server.clone();
            std::thread::spawn(move || run(&server, &command))
        };
        // The command has started once its shell polls for the release file.
        wait_until("the command never started", || {
            std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
                std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&*release.to_string_lossy()))
            })
        });
        let (config, envrc) = replace_both(&root);
        std::fs::write(release.join("go"), "").unwrap();
        let result = running.join().unwrap();
        assert!(
            result["output"].as_str().unwrap_or_default().contains("done"),
            "{backend}: {result}"
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config")).unwrap(),
            config,
            "{backend}: {result}"
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".envrc")).unwrap(),
            envrc,
            "{backend}: {result}"
        );
    }
}
