//! Commands observed by seccomp user notification leave no fd, no thread
//! and no process behind, even when they fork hard. Its own test binary,
//! so fd and thread counts see this test alone.

mod common;

use std::path::Path;
use std::time::Duration;

use bash_mcp::{BashServer, McpServer};
use common::*;
use serde_json::{Value, json};

const HELPER: &str = env!("CARGO_BIN_EXE_bash-mcp");

/// The backends with a listener: bwrap through its supervisor, Landlock.
const BACKENDS: &[&str] = &["bwrap", "landlock"];

fn available(backend: &str) -> bool {
    let config = bash_mcp::sandbox::SandboxConfig::default()
        .apply(
            &json!({"mode": "workspace-write", "helper_path": HELPER, "backend": backend}),
            Path::new("/"),
        )
        .unwrap();
    sandbox_works(&config, backend)
}

/// Live threads of this process that observe a command (`sandbox-notify`).
fn observers() -> usize {
    thread_names().iter().filter(|name| *name == "sandbox-notify").count()
}

fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .map(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .unwrap_or_default()
                .trim()
                .to_owned()
        })
        .collect()
}

fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

fn run(server: &TestServer, command: &str) -> Value {
    call_tagged(server, command, server.tag(), json!({}))
}

#[test]
fn a_fork_heavy_observed_command_finishes_and_leaves_no_fd_thread_or_process() {
    for backend in BACKENDS.iter().copied().filter(|b| available(b)) {
        let dir = TempDir::new("notify-leaks");
        let server = tagged(BashServer::new(&dir, None, Duration::from_secs(30)).unwrap());
        let sandbox = json!({"mode": "workspace-write", "helper_path": HELPER, "backend": backend,
                             "writable_roots": [&*dir]});
        server.configure(&json!({"sandbox": sandbox}).to_string()).unwrap();
        // Starts the supervisor and the guard before counting, once that
        // call's own observer has ended (it may outlive the call briefly).
        run(&server, "true");
        wait_until("the first call's observer to end", || observers() == 0);
        let (fds, threads) = (fd_count(), thread_count());
        // Forks, writes in the root and refused writes, all observed; the
        // call's own time limit (30 s) is the hang guard.
        let result = run(
            &server,
            "for i in $(seq 200); do (echo $i > f$i; echo x 2>/dev/null > /f$i) & done; wait; ls | wc -l",
        );
        assert_eq!(result["exit_code"], 0, "{backend}: {result}");
        assert_eq!(result["output"].as_str().unwrap().trim(), "200", "{backend}: {result}");
        assert_eq!(
            result["sandbox"]["denials_from"], "seccomp notification",
            "{backend}: {result}"
        );
        assert_eq!(
            result["sandbox"]["denied"].as_array().unwrap().len(),
            20,
            "{backend}: the refused writes, kept up to the cap: {result}"
        );
        for _ in 0..50 {
            run(&server, "echo x > g; echo y 2>/dev/null > /g");
        }
        let settled = || fd_count() == fds && thread_count() == threads;
        let start = std::time::Instant::now();
        while !settled() && start.elapsed() < HANG_GUARD {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            settled(),
            "{backend}: the observers' fds and threads did not go: {} fds against {fds}, threads {:?} against {threads}",
            fd_count(),
            thread_names()
        );
        assert_no_survivors(server.tag());
    }
}
