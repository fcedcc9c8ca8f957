//! The entropic plugin, loaded the way the engine loads it: a C program
//! dlopens the shared library (RTLD_NOW | RTLD_LOCAL), resolves all nine
//! symbols, and drives create, name, set_working_dir, list_tools, execute, a
//! timeout, configure, destroy and dlclose. It prints what list_tools and
//! execute return, and this file parses it as JSON the way the engine does.
#![cfg(feature = "entropic-plugin")]

mod cbuild;
mod common;

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::time::Duration;

use cbuild::*;
use common::{TAG_VAR, assert_no_survivors, unique_tag};
use serde_json::Value;

const BUILD_LOADER: &str = "cc -std=c11 -Wall -Wextra -Werror -I include tests/c/plugin_loader.c -ldl -o {OUT}";

/// What one loader run printed, parsed.
struct Report {
    output: Output,
    /// The list_tools array, when a server was created.
    tools: Option<Vec<Value>>,
    /// Each execute call's `result` document, by the loader's call name.
    results: BTreeMap<String, Value>,
}

/// Runs the loader with `env` (and `extra` arguments), expecting `name` and a
/// default time limit of `timeout` seconds; checks nothing survived and that
/// what list_tools and execute returned is what the engine expects.
fn load_with(env: &[(&str, &str)], name: &str, timeout: u32, extra: &[&str]) -> Report {
    let scratch = Scratch::new("plugin");
    let loader = scratch.path("plugin_loader");
    compile(BUILD_LOADER, &loader);
    let project = scratch.path("project");
    std::fs::create_dir(&project).unwrap();
    let tag = unique_tag("plugin");
    let mut cmd = Command::new(&loader);
    cmd.arg(&library().shared)
        .arg(&project)
        .arg(name)
        .arg(timeout.to_string())
        .args(extra)
        .env_remove("BASH_MCP_PLUGIN_NAME")
        .env_remove("BASH_MCP_PLUGIN_CONFIG")
        .env_remove("BASH_MCP_TEST_FORCE_PANIC")
        .env(TAG_VAR, &tag);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let output = run(&mut cmd, Duration::from_secs(60));
    assert_no_survivors(&tag);
    let stdout = text(&output.stdout);
    assert!(
        output.status.success() && stdout.trim_end().ends_with(" passed, 0 failed"),
        "plugin_loader failed ({}):\n{stdout}\n{}",
        output.status,
        text(&output.stderr)
    );
    let report = parse(output, &stdout);
    if name != "NULL" {
        check_tools(report.tools.as_deref().expect("a tools line"));
        check_results(&report.results, &project, timeout);
    }
    report
}

fn load(env: &[(&str, &str)], name: &str, timeout: u32) -> Report {
    load_with(env, name, timeout, &[])
}

/// Parses the "tools: " line and the "envelope <call>: " lines; each
/// envelope must be what the engine accepts: a JSON object whose `result` is
/// a string and whose `directives` is an array. Here `result` must also be a
/// JSON object itself.
fn parse(output: Output, stdout: &str) -> Report {
    let mut tools = None;
    let mut results = BTreeMap::new();
    for line in stdout.lines() {
        if let Some(json) = line.strip_prefix("tools: ") {
            let value: Value =
                serde_json::from_str(json).unwrap_or_else(|e| panic!("list_tools is not JSON ({e}): {json}"));
            let Value::Array(items) = value else {
                panic!("list_tools is not an array: {json}")
            };
            tools = Some(items);
        } else if let Some(rest) = line.strip_prefix("envelope ") {
            let (call, json) = rest.split_once(": ").expect("envelope <call>: <json>");
            let envelope: Value =
                serde_json::from_str(json).unwrap_or_else(|e| panic!("{call}: the envelope is not JSON ({e}): {json}"));
            let object = envelope
                .as_object()
                .unwrap_or_else(|| panic!("{call}: not an object: {json}"));
            let result = object
                .get("result")
                .and_then(Value::as_str)
                .unwrap_or_else(|| panic!("{call}: `result` is not a string: {json}"));
            assert!(
                object.get("directives").is_some_and(Value::is_array),
                "{call}: `directives` is not an array: {json}"
            );
            let document: Value = serde_json::from_str(result)
                .unwrap_or_else(|e| panic!("{call}: `result` is not a JSON document ({e}): {result}"));
            assert!(document.is_object(), "{call}: `result` is not an object: {result}");
            assert!(
                results.insert(call.to_owned(), document).is_none(),
                "{call} printed twice"
            );
        }
    }
    Report { output, tools, results }
}

/// Tools are objects with a string `name`, a string `description` and an
/// object `inputSchema` (camelCase, as the engine reads it).
fn check_tools(tools: &[Value]) {
    assert!(!tools.is_empty(), "no tools");
    for tool in tools {
        assert!(tool["name"].is_string(), "{tool}");
        assert!(tool["description"].is_string(), "{tool}");
        assert!(tool["inputSchema"].is_object(), "{tool}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(tool.get("input_schema").is_none(), "{tool}");
    }
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    // `execute` first; jobs and sessions are never offered to the engine (the
    // tests that configure nothing check that it is the only tool).
    assert_eq!(names[0], "execute", "{tools:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("job_") || n.starts_with("session_")),
        "{tools:?}"
    );
    let execute = &tools[0];
    assert_eq!(
        execute["inputSchema"]["properties"]["command"]["type"], "string",
        "{execute}"
    );
    assert!(
        execute["inputSchema"]["required"]
            .as_array()
            .is_some_and(|r| r.contains(&Value::from("command"))),
        "{execute}"
    );
    // No argument sorts before `command`: the engine keys its rules on the first.
    let properties: Vec<&String> = execute["inputSchema"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(properties.first().map(|k| k.as_str()), Some("command"), "{execute}");
    assert!(!properties.iter().any(|k| *k == "background"), "{execute}");
    assert!(
        !execute["description"].as_str().unwrap().contains("background: true"),
        "{execute}"
    );
}

/// An error document: `error` is `code`, with a message and a hint.
fn assert_error(results: &BTreeMap<String, Value>, call: &str, code: &str) {
    let result = &results[call];
    assert_eq!(result["error"], code, "{call}: {result}");
    assert!(
        result["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{call}: {result}"
    );
    assert!(result["hint"].is_string(), "{call}: {result}");
}

fn check_results(results: &BTreeMap<String, Value>, project: &std::path::Path, timeout: u32) {
    let project = project.to_str().unwrap();
    let run = &results["execute"];
    assert_eq!(run["exit_code"], 0, "{run}");
    assert_eq!(run["output"], format!("hello\n{project}\n"), "{run}");
    assert_eq!(run["working_dir"], project, "{run}");
    assert!(run["duration_ms"].is_u64(), "{run}");
    assert_eq!(results["qualified"]["exit_code"], 4, "{}", results["qualified"]);
    assert_error(results, "null-args", "invalid_arguments");
    assert_error(results, "not-json", "invalid_json");
    assert_error(results, "unknown-tool", "unknown_tool");
    assert_error(results, "timeout", "timeout");
    let timed_out = &results["timeout"];
    assert_eq!(timed_out["output"], "before\n", "{timed_out}");
    let limit = if timeout <= 5 { f64::from(timeout) } else { 0.5 };
    assert_eq!(timed_out["timeout_seconds"].as_f64(), Some(limit), "{timed_out}");
    assert!(timed_out["elapsed_ms"].is_u64(), "{timed_out}");
}

fn tool_names(report: &Report) -> Vec<&str> {
    let tools = report.tools.as_deref().expect("a tools line");
    tools.iter().filter_map(|t| t["name"].as_str()).collect()
}

#[test]
fn plugin_loads_unconfigured_as_shell() {
    let report = load(&[], "shell", 30);
    assert!(text(&report.output.stdout).contains("name: shell\n"));
    // Only `execute`: no whole outputs are kept, so no result names output_read.
    assert_eq!(tool_names(&report), ["execute"]);
}

/// A file that turns the output store on makes cut results carry an
/// `output_id`, and the plugin then lists the tool that reads it.
#[test]
fn plugin_lists_output_read_when_its_file_keeps_outputs() {
    let dir = Scratch::new("plugin-store");
    let config = dir.path("plugin.json");
    std::fs::write(&config, r#"{"output_store": {"enabled": true}}"#).unwrap();
    let report = load(&[("BASH_MCP_PLUGIN_CONFIG", config.to_str().unwrap())], "shell", 30);
    assert_eq!(tool_names(&report), ["execute", "output_read"]);
}

#[test]
fn plugin_reads_its_name_and_config_from_the_environment() {
    let dir = Scratch::new("plugin-config");
    let config = dir.path("plugin.json");
    std::fs::write(&config, r#"{"timeout_seconds": 1, "max_concurrent": 4}"#).unwrap();
    let report = load(
        &[
            ("BASH_MCP_PLUGIN_NAME", "my-shell_2"),
            ("BASH_MCP_PLUGIN_CONFIG", config.to_str().unwrap()),
        ],
        "my-shell_2",
        1,
    );
    assert!(text(&report.output.stdout).contains("name: my-shell_2\n"));
}

#[test]
fn plugin_execute_stops_a_panic_with_an_error_envelope() {
    if !cfg!(debug_assertions) {
        common::skip("the forced-panic hook exists only in builds with debug assertions");
        return;
    }
    let report = load_with(&[], "shell", 30, &["force-panic"]);
    assert_error(&report.results, "panic", "internal");
    assert!(
        report.results["panic"]["message"]
            .as_str()
            .unwrap()
            .contains("panicked"),
        "{}",
        report.results["panic"]
    );
    assert!(text(&report.output.stderr).contains("BASH_MCP_TEST_FORCE_PANIC=1"));
    let after = &report.results["after-panic"];
    assert_eq!(
        (after["exit_code"].as_i64(), after["output"].as_str()),
        (Some(0), Some("after\n")),
        "{after}"
    );
}

#[test]
fn plugin_refuses_a_builtin_or_invalid_name_with_a_warning() {
    for bad in ["git", "filesystem", "has space", ""] {
        let report = load(&[("BASH_MCP_PLUGIN_NAME", bad)], "shell", 30);
        let stderr = text(&report.output.stderr);
        assert!(
            stderr.contains("BASH_MCP_PLUGIN_NAME") && stderr.contains("using `shell`"),
            "{bad:?}: {stderr}"
        );
    }
}

#[test]
fn plugin_may_be_named_bash_by_its_config_file_or_the_environment() {
    let dir = Scratch::new("plugin-bash");
    let config = dir.path("plugin.json");
    std::fs::write(&config, r#"{"name": "bash", "timeout_seconds": 1}"#).unwrap();
    let report = load(&[("BASH_MCP_PLUGIN_CONFIG", config.to_str().unwrap())], "bash", 1);
    assert!(text(&report.output.stdout).contains("name: bash\n"));
    let report = load(&[("BASH_MCP_PLUGIN_NAME", "bash")], "bash", 30);
    let stderr = text(&report.output.stderr);
    assert!(
        !stderr.contains("BASH_MCP_PLUGIN_NAME"),
        "the name was refused:\n{stderr}"
    );
}

#[test]
fn plugin_with_an_invalid_config_file_is_not_created() {
    let dir = Scratch::new("plugin-bad-config");
    let config = dir.path("plugin.json");
    std::fs::write(&config, r#"{"timeout_seconds": 1, "bogus": true}"#).unwrap();
    let report = load(&[("BASH_MCP_PLUGIN_CONFIG", config.to_str().unwrap())], "NULL", 30);
    assert!(report.tools.is_none() && report.results.is_empty());
    let stderr = text(&report.output.stderr);
    assert!(
        stderr.contains("BASH_MCP_PLUGIN_CONFIG") && stderr.contains("bogus"),
        "{stderr}"
    );

    let missing = dir.path("missing.json");
    let report = load(&[("BASH_MCP_PLUGIN_CONFIG", missing.to_str().unwrap())], "NULL", 30);
    assert!(
        text(&report.output.stderr).contains("cannot read"),
        "{}",
        text(&report.output.stderr)
    );
}

#[test]
fn plugin_exports_all_nine_symbols() {
    let output = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&library().shared)
        .output()
        .expect("nm");
    let symbols = text(&output.stdout);
    for name in [
        "entropic_plugin_api_version",
        "entropic_create_server",
        "entropic_mcp_server_name",
        "entropic_mcp_server_list_tools",
        "entropic_mcp_server_execute",
        "entropic_mcp_server_configure",
        "entropic_mcp_server_set_working_dir",
        "entropic_mcp_server_destroy",
        "entropic_free",
    ] {
        assert!(
            symbols.lines().any(|l| l.ends_with(&format!(" T {name}"))),
            "{name} is not exported"
        );
    }
}

/// The arguments docs/entropic.md says `execute` takes through the plugin
/// are exactly those of the plugin's own schema, as the engine lists them.
#[test]
fn the_docs_list_the_arguments_the_plugin_accepts() {
    let report = load(&[], "shell", 30);
    let execute = &report.tools.as_deref().expect("a tools line")[0];
    let mut schema: Vec<&str> = execute["inputSchema"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    schema.sort_unstable();
    let docs = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/entropic.md"))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let start = docs
        .find("`execute` takes only ")
        .expect("docs/entropic.md lists execute's arguments");
    let list = &docs[start + "`execute` takes only ".len()..];
    let list = &list[..list.find(" (").expect("the list ends before its parenthesis")];
    let mut documented: Vec<&str> = list.split('`').skip(1).step_by(2).collect();
    documented.sort_unstable();
    assert_eq!(documented, schema, "docs/entropic.md: {list}");
}
