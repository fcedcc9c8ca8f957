//! Background jobs of `execute`: start, status, kill, list, retention.

mod common;

use std::time::{Duration, Instant};

use bash_mcp::{BashServer, McpServer};
use common::*;
use serde_json::json;

fn background(s: &BashServer, command: &str, tag: &str) -> String {
    let r = call_tagged(s, command, tag, json!({"background": true}));
    // Returned while the command runs, not after it.
    assert_eq!(r["status"], "running", "{r}");
    r["job_id"].as_str().unwrap().to_owned()
}

#[test]
fn background_job_finishes_with_exit_code_and_output() {
    let s = server();
    let tag = unique_tag("job");
    let dir = TempDir::new("job");
    let go = dir.join("go");
    let command = format!("echo start; {}; sleep 0.5; echo end; exit 3", until_file_exists(&go));
    let id = background(&s, &command, &tag);
    let r = call_tool(&s, "job_status", json!({"job_id": id}));
    assert_eq!(r["status"], "running");
    std::fs::write(&go, "").unwrap();
    let r = call_tool(&s, "job_status", json!({"job_id": id, "wait_seconds": 30}));
    assert_eq!(r["status"], "finished");
    assert_eq!(r["exit_code"], 3);
    assert_eq!(r["output"], "start\nend\n");
    assert!(r["duration_ms"].as_u64().unwrap() >= 500);
    // A finished job's result stays readable: a second look gets it again.
    let again = call_tool(&s, "job_status", json!({"job_id": id}));
    assert_eq!(again, r);
    assert_no_survivors(&tag);
}

/// A job's output reads the same while it runs and once it has finished:
/// terminal sequences and `\r\n` are cleaned in both.
#[test]
fn finished_job_output_is_cleaned_like_running_output() {
    let s = server();
    let tag = unique_tag("jobclean");
    let command = r"printf 'a\033[1mb\r\n'; sleep 0.5";
    let id = background(&s, command, &tag);
    let deadline = Instant::now() + Duration::from_secs(10);
    let running = loop {
        let r = call_tool(&s, "job_status", json!({"job_id": id}));
        if r["status"] == "running" && r["output"] != "" {
            break r;
        }
        assert!(Instant::now() < deadline && r["status"] == "running", "{r}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(running["output"], "ab\n", "{running}");
    let finished = call_tool(&s, "job_status", json!({"job_id": id, "wait_seconds": 10}));
    assert_eq!(finished["status"], "finished", "{finished}");
    assert_eq!(finished["output"], "ab\n", "{finished}");
    assert_no_survivors(&tag);
}

#[test]
fn running_job_shows_output_so_far_and_can_be_killed() {
    let s = server();
    let tag = unique_tag("jobkill");
    let id = background(&s, "echo partial; sleep 1000 & sleep 1000", &tag);
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        let r = call_tool(&s, "job_status", json!({"job_id": id}));
        if r["output"] == "partial\n" {
            assert_eq!(r["status"], "running");
            break;
        }
        assert!(Instant::now() < deadline, "{r}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let list = call_tool(&s, "job_list", json!({}));
    assert_eq!(list["jobs"][0]["job_id"], id.as_str());
    assert_eq!(list["jobs"][0]["state"], "running");
    let r = call_tool(&s, "job_kill", json!({"job_id": id}));
    assert_eq!(r["status"], "stopped", "{r}");
    assert_eq!(r["error"], "cancelled");
    assert_no_survivors(&tag);
    // Killing it again returns the same final result.
    assert_eq!(call_tool(&s, "job_kill", json!({"job_id": id})), r);
}

#[test]
fn job_time_limit_applies() {
    let s = server();
    let tag = unique_tag("joblimit");
    let id = background(&s, "sleep 1000", &tag);
    call_tool(&s, "job_kill", json!({"job_id": id}));
    let r = call_tagged(
        &s,
        "sleep 1000",
        &tag,
        json!({"background": true, "timeout_seconds": 0.3}),
    );
    let id = r["job_id"].as_str().unwrap();
    let r = call_tool(&s, "job_status", json!({"job_id": id, "wait_seconds": 30}));
    assert_eq!(r["error"], "timeout", "{r}");
    assert_no_survivors(&tag);
}

#[test]
fn finished_jobs_are_bounded() {
    let s = server();
    s.configure(r#"{"jobs": {"max_finished": 2}}"#).unwrap();
    let tag = unique_tag("jobbound");
    let mut ids = Vec::new();
    for i in 0..4 {
        ids.push(background(&s, &format!("exit {i}"), &tag));
        // One at a time, so they finish in order.
        let deadline = Instant::now() + HANG_GUARD;
        while call_tool(&s, "job_list", json!({}))["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|j| j["state"] == "running")
        {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let r = call_tool(&s, "job_status", json!({"job_id": ids[3]}));
    assert_eq!(r["exit_code"], 3, "{r}");
    // The two oldest were dropped once more than two had finished.
    assert_eq!(
        call_tool(&s, "job_status", json!({"job_id": ids[0]}))["error"],
        "job_not_found"
    );
    assert_eq!(
        call_tool(&s, "job_status", json!({"job_id": ids[1]}))["error"],
        "job_not_found"
    );
    assert_eq!(call_tool(&s, "job_status", json!({"job_id": ids[2]}))["exit_code"], 2);
    assert_no_survivors(&tag);
}

#[test]
fn bad_job_arguments_are_clear_errors() {
    let s = server();
    assert_eq!(call_tool(&s, "job_status", json!({}))["error"], "invalid_arguments");
    assert_eq!(
        call_tool(&s, "job_status", json!({"job_id": "x", "wait_seconds": -1}))["error"],
        "invalid_timeout"
    );
    assert_eq!(
        call_tool(&s, "job_status", json!({"job_id": "x", "x": 1}))["error"],
        "unknown_argument"
    );
    assert_eq!(
        call(&s, json!({"command": "true", "background": "yes"}))["error"],
        "invalid_arguments"
    );
    assert_eq!(
        call(&s, json!({"command": " ", "background": true}))["error"],
        "empty_command"
    );
    // A working dir the run would refuse is refused at once, not in job_status.
    assert_eq!(
        call(
            &s,
            json!({"command": "true", "background": true, "working_dir": "/no/such/dir"})
        )["error"],
        "working_dir_not_found"
    );
}

#[test]
fn dropping_the_server_kills_jobs() {
    let s = server();
    let tag = unique_tag("jobdrop");
    background(&s, "sleep 1000", &tag);
    background(&s, "sleep 1000 & wait", &tag);
    let deadline = Instant::now() + HANG_GUARD;
    while survivors(&tag).len() < 3 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(s);
    assert_no_survivors(&tag);
}

#[test]
fn a_call_with_yield_seconds_hands_a_running_command_back_as_a_job() {
    let s = server();
    let tag = unique_tag("yield");
    let r = call_tagged(&s, "sleep 3; echo done", &tag, json!({"yield_seconds": 1}));
    assert_eq!(r["status"], "running", "{r}");
    assert_eq!(r["output"], "", "{r}");
    let id = r["job_id"].as_str().unwrap().to_owned();
    assert!(r["hint"].as_str().unwrap().contains(&id), "{r}");
    let r = call_tool(
        &s,
        "job_status",
        json!({"job_id": id, "wait_seconds": HANG_GUARD.as_secs()}),
    );
    assert_eq!(r["status"], "finished", "{r}");
    assert_eq!(r["exit_code"], 0, "{r}");
    assert_eq!(r["output"], "done\n", "{r}");
    assert_no_survivors(&tag);
}

#[test]
fn a_command_that_ends_within_yield_seconds_is_a_plain_result() {
    let s = server();
    let tag = unique_tag("yieldquick");
    let r = call_tagged(
        &s,
        "echo quick; exit 4",
        &tag,
        json!({"yield_seconds": HANG_GUARD.as_secs()}),
    );
    assert_eq!(r["exit_code"], 4, "{r}");
    assert_eq!(r["output"], "quick\n", "{r}");
    assert!(r.get("job_id").is_none(), "{r}");
    // It was never a job.
    assert_eq!(call_tool(&s, "job_list", json!({}))["jobs"], json!([]));
    assert_no_survivors(&tag);
}

/// The call runs its command itself until the window closes, then hands
/// the run over: what it printed before and after, and stdin still unwritten
/// (more than a pipe holds), all reach the job's result, once each.
#[test]
fn a_handed_back_run_loses_no_output_and_no_stdin() {
    let s = server();
    let tag = unique_tag("yieldrest");
    let dir = TempDir::new("yieldrest");
    let go = dir.join("go");
    let input = "x".repeat(300_000);
    let command = format!("echo before; {}; echo after; wc -c", until_file_exists(&go));
    let r = call_tagged(&s, &command, &tag, json!({"yield_seconds": 0, "stdin": input}));
    assert_eq!(r["status"], "running", "{r}");
    let so_far = r["output"].as_str().unwrap().to_owned();
    std::fs::write(&go, "").unwrap();
    let done = call_tool(
        &s,
        "job_status",
        json!({"job_id": r["job_id"], "wait_seconds": HANG_GUARD.as_secs()}),
    );
    assert_eq!(done["status"], "finished", "{done}");
    assert_eq!(done["exit_code"], 0, "{done}");
    let output = done["output"].as_str().unwrap();
    assert_eq!(
        output.split_whitespace().collect::<Vec<_>>(),
        ["before", "after", "300000"],
        "{done}"
    );
    assert!(output.starts_with(&so_far), "{so_far:?} is not the start of {output:?}");
    assert_no_survivors(&tag);
}

/// A handed-back run holds its place under `max_concurrent` until it ends,
/// as it would have if the call had waited.
#[test]
fn a_handed_back_run_keeps_its_concurrency_slot_until_it_ends() {
    let s = server();
    s.configure(r#"{"tools": {"status": true}, "max_concurrent": 1}"#)
        .unwrap();
    let tag = unique_tag("yieldslot");
    let dir = TempDir::new("yieldslot");
    let go = dir.join("go");
    let r = call_tagged(&s, &until_file_exists(&go), &tag, json!({"yield_seconds": 0}));
    assert_eq!(r["status"], "running", "{r}");
    let st = call_tool(&s, "status", json!({}));
    assert_eq!(st["concurrency"]["running"], 1, "{st}");
    std::fs::write(&go, "").unwrap();
    let done = call_tool(
        &s,
        "job_status",
        json!({"job_id": r["job_id"], "wait_seconds": HANG_GUARD.as_secs()}),
    );
    assert_eq!(done["exit_code"], 0, "{done}");
    let st = call_tool(&s, "status", json!({}));
    assert_eq!(st["concurrency"]["running"], 0, "{st}");
    // The slot is free again: a plain call runs.
    assert_eq!(call_tagged(&s, "echo again", &tag, json!({}))["output"], "again\n");
    assert_no_survivors(&tag);
}

#[test]
fn a_handed_back_job_keeps_its_own_time_limit() {
    let s = server();
    let tag = unique_tag("yieldlimit");
    let r = call_tagged(
        &s,
        "sleep 1000",
        &tag,
        json!({"yield_seconds": 0, "timeout_seconds": 0.5}),
    );
    assert_eq!(r["status"], "running", "{r}");
    let r = call_tool(
        &s,
        "job_status",
        json!({"job_id": r["job_id"], "wait_seconds": HANG_GUARD.as_secs()}),
    );
    assert_eq!(r["error"], "timeout", "{r}");
    assert_no_survivors(&tag);
}

#[test]
fn the_configured_yield_seconds_applies_unless_the_call_says_null() {
    let s = server();
    s.configure(r#"{"yield_seconds": 0.2}"#).unwrap();
    let tag = unique_tag("yieldconf");
    let dir = TempDir::new("yieldconf");
    let go = dir.join("go");
    let command = until_file_exists(&go);
    let r = call_tagged(&s, &command, &tag, json!({}));
    assert_eq!(r["status"], "running", "{r}");
    std::fs::write(&go, "").unwrap();
    let r = call_tool(
        &s,
        "job_status",
        json!({"job_id": r["job_id"], "wait_seconds": HANG_GUARD.as_secs()}),
    );
    assert_eq!(r["exit_code"], 0, "{r}");
    // null waits for the end whatever the setting.
    std::fs::remove_file(&go).unwrap();
    let waiter = {
        let go = go.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            std::fs::write(&go, "").unwrap();
        })
    };
    let r = call_tagged(&s, &command, &tag, json!({"yield_seconds": null}));
    waiter.join().unwrap();
    assert_eq!(r["exit_code"], 0, "{r}");
    assert_no_survivors(&tag);
}

#[test]
fn cancelling_the_call_within_its_window_kills_the_command() {
    let s = server();
    let tag = unique_tag("yieldcancel");
    let token = bash_mcp::CancelToken::new();
    let canceller = token.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        canceller.cancel();
    });
    let args = json!({"command": "echo on; sleep 1000", "env": {TAG_VAR: &tag}, "yield_seconds": HANG_GUARD.as_secs()});
    let mut seen = Vec::new();
    let mut sink = |chunk: &[u8], _stream| seen.extend_from_slice(chunk);
    let response = s.call_tool(
        "execute",
        &bash_mcp::ToolArgs::from_value(args),
        bash_mcp::CallOptions {
            cancel: Some(&token),
            on_output: Some(&mut sink),
            sandbox: None,
            principal: None,
            client: None,
        },
    );
    let r = response.to_value();
    assert_eq!(r["error"], "cancelled", "{r}");
    assert_eq!(seen, b"on\n");
    assert_no_survivors(&tag);
}

#[test]
fn job_status_returns_what_was_printed_since_the_last_look() {
    let s = server();
    let tag = unique_tag("jobcursor");
    let dir = TempDir::new("jobcursor");
    let (one, two) = (dir.join("one"), dir.join("two"));
    let command = format!(
        "echo first; {}; echo second; {}",
        until_file_exists(&one),
        until_file_exists(&two)
    );
    let id = background(&s, &command, &tag);
    let wait_for = |text: &str| {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            let r = call_tool(&s, "job_status", json!({"job_id": id}));
            if r["output"] != "" {
                assert_eq!(r["output"], text, "{r}");
                return r;
            }
            assert!(Instant::now() < deadline, "{r}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let first = wait_for("first\n");
    assert_eq!(
        (first["output_from"].as_u64(), first["cursor"].as_u64()),
        (Some(0), Some(6))
    );
    std::fs::write(&one, "").unwrap();
    let second = wait_for("second\n");
    assert_eq!(second["output_from"], 6, "{second}");
    // An explicit cursor reads again from there.
    let again = call_tool(&s, "job_status", json!({"job_id": id, "cursor": 0}));
    assert_eq!(again["output"], "first\nsecond\n", "{again}");
    assert_eq!(
        call_tool(&s, "job_status", json!({"job_id": id, "cursor": "x"}))["error"],
        "invalid_arguments"
    );
    std::fs::write(&two, "").unwrap();
    let done = call_tool(
        &s,
        "job_status",
        json!({"job_id": id, "wait_seconds": HANG_GUARD.as_secs()}),
    );
    assert_eq!(done["exit_code"], 0, "{done}");
    assert_no_survivors(&tag);
}

#[test]
fn bad_yield_seconds_is_a_clear_error() {
    let s = server();
    let r = call(&*s, json!({"command": "true", "yield_seconds": -1}));
    assert_eq!(r["error"], "invalid_timeout", "{r}");
    assert!(r["message"].as_str().unwrap().contains("yield_seconds"), "{r}");
}
