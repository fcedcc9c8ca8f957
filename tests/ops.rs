//! Operator tools: status, check_env, which, list_binaries, and their switches.

mod common;

use bash_mcp::McpServer;
use common::*;
use serde_json::{Value, json};

fn tool_names(s: &impl McpServer) -> Vec<String> {
    let list: Value = serde_json::from_str(&s.list_tools()).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn optional_tools_are_hidden_until_switched_on() {
    let s = server();
    let optional = ["audit_read", "status", "check_env", "which", "list_binaries"];
    let names = tool_names(&s);
    assert_eq!(names[0], "execute");
    assert!(optional.iter().all(|t| !names.contains(&t.to_string())), "{names:?}");
    assert_eq!(call_tool(&s, "status", json!({}))["error"], "unknown_tool");
    s.configure(
        r#"{"tools": {"status": true, "check_env": true, "which": true, "list_binaries": true, "audit_read": true}}"#,
    )
    .unwrap();
    let names = tool_names(&s);
    let shown: Vec<&String> = names.iter().filter(|n| optional.contains(&n.as_str())).collect();
    assert_eq!(shown, optional, "registration order: {names:?}");
    s.configure(r#"{"tools": {"status": false}}"#).unwrap();
    assert!(!tool_names(&s).contains(&"status".to_owned()));
    let err = s.configure(r#"{"tools": {"rm_rf": true}}"#).unwrap_err();
    assert!(err.message.contains("tools.rm_rf"), "{err}");
}

#[test]
fn status_reports_health_with_secrets_masked() {
    let s = server();
    s.configure(r#"{"tools": {"status": true}, "env": {"set": {"DEPLOY_TOKEN": "hunter2"}}}"#)
        .unwrap();
    call(&s, json!({"command": "true"}));
    call(&s, json!({"command": ""}));
    let st = call_tool(&s, "status", json!({}));
    assert_eq!(st["version"], bash_mcp::VERSION);
    assert_eq!(st["server"], "bash");
    assert!(st["uptime_seconds"].is_u64());
    assert_eq!(st["concurrency"]["max"], 8);
    assert_eq!(st["concurrency"]["running"], 0);
    assert_eq!(st["calls"]["served"], 2);
    assert_eq!(st["calls"]["failed"], 1);
    assert_eq!(st["configuration"]["env"]["set"]["DEPLOY_TOKEN"], "***");
    assert_eq!(st["configuration"]["sessions"]["max_sessions"], 8);
    assert_eq!(st["configuration"]["sessions"]["history"], "suppress");
    assert_eq!(st["configuration"]["jobs"]["max_finished"], 32);
    assert!(!st.to_string().contains("hunter2"));
    assert_eq!(st["audit"], Value::Null);
    assert_eq!(st["jobs"], json!({"running": 0, "finished_unread": 0}));
    assert_eq!(st["sessions"]["enabled"], false);
    assert_eq!(st["sessions"]["open"], 0);
    assert_eq!(call_tool(&s, "status", json!({"x": 1}))["error"], "unknown_argument");
}

#[test]
fn check_env_describes_the_machine() {
    let s = server();
    s.configure(r#"{"tools": {"check_env": true}}"#).unwrap();
    let env = call_tool(&s, "check_env", json!({}));
    assert_eq!(env["architecture"], std::env::consts::ARCH);
    assert!(
        env["kernel"].as_str().unwrap().chars().next().unwrap().is_ascii_digit(),
        "{env}"
    );
    assert_eq!(env["shell"]["path"], "/bin/sh");
    let path = env["path"].as_array().unwrap();
    assert!(
        path.iter().any(|p| p["dir"] == "/usr/bin" && p["exists"] == true),
        "{env}"
    );
    assert!(env["user"].is_string());
    assert!(env["wsl"].is_boolean());
    assert!(env["container_hints"].is_array());
}

#[test]
fn which_and_list_binaries_resolve_on_the_command_path() {
    let s = server();
    s.configure(r#"{"tools": {"which": true, "list_binaries": true}}"#)
        .unwrap();
    let sh = call_tool(&s, "which", json!({"name": "sh"}));
    assert_eq!(sh["found"], true, "{sh}");
    assert!(sh["path"].as_str().unwrap().ends_with("/sh"));
    let git = call_tool(&s, "which", json!({"name": "git"}));
    assert_eq!(git["found"], true, "{git}");
    assert!(git["version"].as_str().unwrap().starts_with("git version"), "{git}");
    let none = call_tool(&s, "which", json!({"name": "no-such-program-xyz"}));
    assert_eq!(none["found"], false);
    assert_eq!(
        call_tool(&s, "which", json!({"name": "../bin/sh"}))["error"],
        "invalid_arguments"
    );
    assert_eq!(call_tool(&s, "which", json!({}))["error"], "invalid_arguments");

    let some = call_tool(
        &s,
        "list_binaries",
        json!({"names": ["git", "sh", "no-such-program-xyz"]}),
    );
    assert_eq!(some["checked"], 3);
    assert_eq!(some["found"], 2);
    let all = call_tool(&s, "list_binaries", json!({}));
    assert_eq!(all["checked"], bash_mcp::DEFAULT_BINARIES.len());
    assert!(all["found"].as_u64().unwrap() >= 3, "{all}");
}

#[test]
fn status_counts_jobs_and_sessions() {
    let s = server();
    s.configure(r#"{"tools": {"status": true}, "sessions": {"enabled": true}}"#)
        .unwrap();
    let tag = unique_tag("status-counts");
    let job = call_tool(
        &s,
        "execute",
        json!({"command": "sleep 30", "background": true, "env": {TAG_VAR: &tag}}),
    );
    let job_id = job["job_id"].as_str().expect("job id").to_owned();
    let session = call_tool(&s, "session_start", json!({"env": {TAG_VAR: &tag}}));
    let session_id = session["session_id"].as_str().expect("session id").to_owned();
    let st = call_tool(&s, "status", json!({}));
    assert_eq!(st["jobs"]["running"], 1, "{st}");
    assert_eq!(st["sessions"]["open"], 1, "{st}");
    assert_eq!(st["sessions"]["enabled"], true);
    call_tool(&s, "job_kill", json!({"job_id": job_id}));
    call_tool(&s, "session_close", json!({"session_id": session_id}));
    assert_no_survivors(&tag);
}
