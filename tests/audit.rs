//! The audit log: what is recorded, redaction, rotation under concurrent
//! writers, gzip backups, and failures that never fail a call.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bash_mcp::audit::{AuditLog, AuditSettings};
use bash_mcp::{ErrorCode, McpServer, ToolArgs};
use common::*;
use serde_json::{Map, Value, json};

fn dir(name: &str) -> TempDir {
    TempDir::new(&format!("audit-{name}"))
}

/// A fresh directory, the audit log in it, and a server writing that log.
fn audited(name: &str) -> (TempDir, PathBuf, TestServer) {
    let d = dir(name);
    let log = d.join("audit.jsonl");
    let s = server();
    s.configure(&json!({"audit": {"path": log}}).to_string()).unwrap();
    (d, log, s)
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON object"))
        .collect()
}

#[test]
fn every_call_is_recorded_with_its_audit_id_and_no_output_or_secret() {
    let (_d, log, s) = audited("record");

    let r = call(
        &s,
        json!({"command": "echo SECRET_OUTPUT_TEXT; exit 4", "env": {"API_TOKEN": "tok-value-123"}}),
    );
    assert_eq!(r["exit_code"], 4);
    let id = r["audit_id"].as_str().expect("audit_id in the result").to_owned();
    let bad = call(&s, json!({"command": ""}));
    assert_eq!(bad["error"], "empty_command");
    call(
        &s,
        json!({"command": "curl -H 'Authorization: Bearer abc123secret' https://x", "timeout_seconds": 0.01}),
    );

    let entries = lines(&log);
    assert_eq!(entries.len(), 3, "{entries:?}");
    let first = &entries[0];
    assert_eq!(first["audit_id"], id.as_str());
    assert_eq!(first["tool"], "execute");
    assert_eq!(first["server"], "bash");
    assert_eq!(first["exit_code"], 4);
    assert_eq!(first["command"], "echo SECRET_OUTPUT_TEXT; exit 4");
    assert_eq!(first["env_names"], json!(["API_TOKEN"]));
    assert!(first["output_bytes"].as_u64().unwrap() > 0);
    assert!(first["duration_ms"].is_u64());
    assert!(
        first["permission_pattern"]
            .as_str()
            .unwrap()
            .starts_with("bash.execute")
    );
    let ts = first["timestamp"].as_str().unwrap();
    assert_eq!(ts.len(), "2026-11-29T18:45:03.123Z".len(), "{ts}");
    assert!(
        ts.ends_with('Z') && ts.as_bytes()[10] == b'T' && ts.as_bytes()[19] == b'.',
        "{ts}"
    );
    assert_eq!(entries[1]["error"], "empty_command");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("tok-value-123"), "env value leaked");
    assert!(!text.contains("abc123secret"), "secret leaked");
    assert!(text.contains("[REDACTED]"));
    assert!(
        text.matches("SECRET_OUTPUT_TEXT").count() == 1,
        "only the command, never the output"
    );
}

#[test]
fn an_audited_error_result_still_starts_with_its_error_key() {
    let (_d, log, s) = audited("error-first");
    let envelope: Value = serde_json::from_str(&s.execute("execute", r#"{"command": ""}"#)).unwrap();
    let result = envelope["result"].as_str().unwrap();
    assert!(result.starts_with(r#"{"error":"empty_command","#), "{result}");
    let doc: Value = serde_json::from_str(result).unwrap();
    assert_eq!(doc["audit_id"], lines(&log)[0]["audit_id"]);
}

#[test]
fn refusals_are_recorded() {
    let (_d, log, s) = audited("refusal");
    s.record_refusal(
        "execute",
        &ToolArgs::parse(r#"{"command":"rm -rf /"}"#),
        "denied by rule bash.execute:rm *",
    );
    let entries = lines(&log);
    assert_eq!(entries[0]["error"], "refused");
    assert_eq!(entries[0]["command"], "rm -rf /");
    assert!(entries[0]["refusal"].as_str().unwrap().contains("rm *"));
}

#[test]
fn rotation_under_eight_writers_loses_no_line() {
    let d = dir("rotate");
    let path = d.join("audit.jsonl");
    let mut settings = AuditSettings::new(&path);
    settings.max_bytes = 16 * 1024;
    settings.backups = 1000;
    let log = Arc::new(AuditLog::open(settings).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..1000 {
                    let mut entry = Map::new();
                    entry.insert("tool".into(), "execute".into());
                    entry.insert("writer".into(), t.into());
                    entry.insert("seq".into(), i.into());
                    entry.insert("padding".into(), "x".repeat(i % 50).into());
                    log.record(entry);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut seen = std::collections::HashSet::new();
    let mut files = vec![path.clone()];
    files.extend((1..=1000).filter_map(|i| log.backup_path(i)));
    assert!(files.len() > 10, "expected many rotations, got {}", files.len());
    for file in &files {
        for entry in lines(file) {
            assert!(
                seen.insert((entry["writer"].as_u64().unwrap(), entry["seq"].as_u64().unwrap())),
                "duplicate {entry}"
            );
        }
    }
    assert_eq!(seen.len(), 8000, "lines lost across rotations");
}

#[test]
fn backups_are_bounded_and_gzip_backups_read_back() {
    let d = dir("gzip");
    let path = d.join("audit.jsonl");
    let s = server();
    s.configure(
        &json!({"audit": {"path": path, "max_bytes": 2048, "backups": 2, "gzip_min_bytes": 0}, "tools": {"audit_read": true}})
            .to_string(),
    )
    .unwrap();
    for i in 0..40 {
        call(&s, json!({"command": format!("echo call-{i}")}));
    }
    assert!(Path::new(&format!("{}.1.gz", path.display())).exists());
    assert!(Path::new(&format!("{}.2.gz", path.display())).exists());
    assert!(
        !Path::new(&format!("{}.3.gz", path.display())).exists(),
        "only 2 backups kept"
    );
    // Newest first, from the live file (or the newest backup if call 39 just rotated it).
    let mut newest = call_tool(&s, "audit_read", json!({"max_entries": 2}));
    assert!(newest["count"].as_u64().unwrap() <= 2);
    if newest["count"] == 0 {
        newest = call_tool(&s, "audit_read", json!({"backup_index": 1, "max_entries": 2}));
    }
    assert!(
        newest["entries"][0]["command"].as_str().unwrap().ends_with("call-39"),
        "{newest}"
    );
    // A gzip backup reads back, filtered by tool.
    let backup = call_tool(&s, "audit_read", json!({"backup_index": 1, "tool": "execute"}));
    let entries = backup["entries"].as_array().unwrap();
    assert!(!entries.is_empty());
    assert!(
        entries
            .iter()
            .all(|e| e["tool"] == "execute" && e["command"].as_str().unwrap().starts_with("echo call-"))
    );
    // since: a timestamp in the future selects nothing.
    let none = call_tool(&s, "audit_read", json!({"since": "2999-01-01T00:00:00Z"}));
    assert_eq!(none["count"], 0);
    let missing = call_tool(&s, "audit_read", json!({"backup_index": 9}));
    assert_eq!(missing["error"], "invalid_arguments");
}

#[test]
fn unwritable_path_fails_configure_and_disk_errors_never_fail_a_call() {
    let s = server();
    let before = s.config();
    let err = s
        .configure(r#"{"audit": {"path": "/proc/self/no/such/audit.jsonl"}}"#)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidConfig);
    assert!(err.message.contains("audit.path"), "{err}");
    assert_eq!(*s.config(), *before);
    // /dev/full accepts the open but fails every write (ENOSPC).
    s.configure(r#"{"audit": {"path": "/dev/full"}}"#).unwrap();
    let r = call(&s, json!({"command": "echo still works"}));
    assert_eq!(r["output"], "still works\n");
    assert_eq!(r["exit_code"], 0);
}

#[test]
fn refusal_reasons_are_redacted_like_the_command() {
    let (_d, log, s) = audited("refusal-redact");
    let command = "curl -H 'Authorization: Bearer abc123secret' https://x";
    // A policy's reason quotes the command, as its parser normalized it (quotes removed).
    s.record_refusal(
        "execute",
        &ToolArgs::from_value(json!({"command": command})),
        "`curl -H Authorization: Bearer abc123secret https://x` matched `bash.execute:curl *`",
    );
    // A quoted value with a space, quoted in the reason without its quotes.
    s.record_refusal(
        "execute",
        &ToolArgs::from_value(json!({"command": "export API_TOKEN='two words' && deploy"})),
        "`export API_TOKEN=two words` matches no allow rule",
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("abc123secret"), "secret leaked: {text}");
    assert!(
        !text.contains("two") && !text.contains("words"),
        "quoted secret leaked: {text}"
    );
    let entries = lines(&log);
    let refusal = entries[0]["refusal"].as_str().unwrap();
    assert!(
        refusal.contains("[REDACTED]") && refusal.contains("bash.execute:curl *"),
        "{refusal}"
    );
}

#[test]
fn error_messages_are_recorded_redacted() {
    let (_d, log, s) = audited("message-redact");
    // The message of a working-dir error quotes the path it was given.
    let r = call(
        &s,
        json!({"command": "true", "working_dir": "/no/such/dir/API_TOKEN=hunter2hunter2"}),
    );
    assert_eq!(r["error"], "working_dir_not_found", "{r}");
    let entries = lines(&log);
    let message = entries[0]["message"].as_str().expect("the error message is recorded");
    assert!(message.contains("/no/such/dir/API_TOKEN=[REDACTED]"), "{message}");
    assert!(!std::fs::read_to_string(&log).unwrap().contains("hunter2"));
}

/// Variable that makes [`child_writer`] write: `<path>|<writer>|<lines>`.
const CHILD_VAR: &str = "BASH_MCP_AUDIT_CHILD";

/// Settings both child processes of the test below use.
fn shared_settings(path: &Path) -> AuditSettings {
    let mut settings = AuditSettings::new(path);
    settings.max_bytes = 16 * 1024;
    settings.backups = 1000;
    settings.gzip_min_bytes = Some(0);
    settings
}

/// Not a test of its own: the body of each writer process that
/// `two_processes_sharing_a_log_lose_no_line_across_rotation` starts.
#[test]
#[ignore = "run as a child process by two_processes_sharing_a_log_lose_no_line_across_rotation"]
fn child_writer() {
    let Ok(spec) = std::env::var(CHILD_VAR) else {
        println!("SKIP: only meaningful as a child process of the test named above");
        return;
    };
    let mut parts = spec.split('|');
    let path = PathBuf::from(parts.next().unwrap());
    let writer: u64 = parts.next().unwrap().parse().unwrap();
    let count: u64 = parts.next().unwrap().parse().unwrap();
    let log = AuditLog::open(shared_settings(&path)).unwrap();
    for i in 0..count {
        let mut entry = Map::new();
        entry.insert("tool".into(), "execute".into());
        entry.insert("writer".into(), writer.into());
        entry.insert("seq".into(), i.into());
        entry.insert("padding".into(), "x".repeat((i % 50) as usize).into());
        log.record(entry);
    }
}

#[test]
fn two_processes_sharing_a_log_lose_no_line_across_rotation() {
    let d = dir("two-processes");
    let path = d.join("audit.jsonl");
    let tag = unique_tag("audit-writers");
    let per_writer = 3000u64;
    let children: Vec<std::process::Child> = (0..2)
        .map(|writer| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--ignored", "--exact", "child_writer", "--test-threads=1", "--quiet"])
                .env(CHILD_VAR, format!("{}|{writer}|{per_writer}", path.display()))
                .env(TAG_VAR, &tag)
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("start a writer process")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a writer process failed");
    }
    assert_no_survivors(&tag);

    let log = AuditLog::open(shared_settings(&path)).unwrap();
    let mut seen = std::collections::HashSet::new();
    let mut files = 1;
    for index in 0..=1000 {
        if index > 0 && log.backup_path(index).is_none() {
            continue;
        }
        files += usize::from(index > 0);
        let query = bash_mcp::audit::AuditQuery {
            backup_index: index,
            max_entries: Some(usize::MAX),
            ..Default::default()
        };
        for entry in log.read(&query).unwrap() {
            let key = (entry["writer"].as_u64().unwrap(), entry["seq"].as_u64().unwrap());
            assert!(seen.insert(key), "duplicate {entry}");
        }
    }
    assert!(files > 10, "expected many rotations, got {files} files");
    assert_eq!(seen.len() as u64, 2 * per_writer, "lines lost across rotations");
}

#[test]
fn since_compares_instants_and_rejects_what_is_not_a_time() {
    let d = dir("since");
    let path = d.join("audit.jsonl");
    let s = server();
    s.configure(&json!({"audit": {"path": path}, "tools": {"audit_read": true}}).to_string())
        .unwrap();
    let log = s.audit_log().unwrap();
    for ts in [
        "2026-11-29T23:59:59.999Z",
        "2026-11-30T08:33:41.999Z",
        "2026-11-30T08:33:42.123Z",
        "2026-11-30T10:00:00.000Z",
    ] {
        let mut entry = Map::new();
        entry.insert("tool".into(), "execute".into());
        entry.insert("timestamp".into(), ts.into());
        log.record(entry);
    }
    // Read through the API: calls of the tool would add lines of their own.
    let count = |since: &str| {
        let query = bash_mcp::audit::AuditQuery {
            since: Some(since.to_owned()),
            ..Default::default()
        };
        log.read(&query).unwrap().len()
    };
    // Whole seconds select entries within that second, fractions compare as numbers.
    assert_eq!(count("2026-11-30T08:33:42Z"), 2);
    assert_eq!(count("2026-11-30T08:33:42.1Z"), 2);
    assert_eq!(count("2026-11-30T08:33:42.124Z"), 1);
    // Offsets are honoured: 09:33:42+01:00 is 08:33:42Z.
    assert_eq!(count("2026-11-30T09:33:42+01:00"), 2);
    assert_eq!(count("2026-11-30T03:33:42-05:00"), 2);
    // A date is midnight UTC.
    assert_eq!(count("2026-11-30"), 3);
    assert_eq!(count("2026-11-29"), 4);
    for bad in [
        "yesterday",
        "2026-11-30T08:33",
        "2026-13-01",
        "2026-02-30",
        "2026-11-30T08:33:42",
    ] {
        let r = call_tool(&s, "audit_read", json!({"since": bad}));
        assert_eq!(r["error"], "invalid_arguments", "{bad}: {r}");
        assert!(r["message"].as_str().unwrap().contains(bad), "{r}");
        assert!(r["hint"].as_str().unwrap().contains("2026-"), "{r}");
    }
}

/// Audit lines of `tool`, waiting up to 30 s for at least `count` of them
/// (a background job's line is written by its worker thread).
fn wait_for_lines(path: &Path, tool: &str, count: usize) -> Vec<Value> {
    let start = std::time::Instant::now();
    loop {
        let found: Vec<Value> = lines(path).into_iter().filter(|e| e["tool"] == tool).collect();
        if found.len() >= count || start.elapsed() > std::time::Duration::from_secs(30) {
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn every_line_names_its_working_dir() {
    let d = dir("working-dir");
    let log = d.join("audit.jsonl");
    let default_dir = std::fs::canonicalize(&d).unwrap();
    let s = tagged(bash_mcp::BashServer::new(&default_dir, None, Duration::from_secs(30)).unwrap());
    s.configure(&json!({"audit": {"path": log}, "sessions": {"enabled": true}}).to_string())
        .unwrap();
    let tag = s.tag().to_owned();

    // A background job, started without a working_dir.
    let r = call(&s, json!({"command": "true", "background": true}));
    let job = r["job_id"].as_str().unwrap().to_owned();
    call_tool(&s, "job_status", json!({"job_id": job, "wait_seconds": 10}));
    // A session started without a working_dir (its result says `cwd`), a run in it.
    let r = call_tool(&s, "session_start", json!({"env": {TAG_VAR: tag}}));
    let id = r["session_id"].as_str().expect("session started").to_owned();
    call_tool(&s, "session_run", json!({"session_id": id, "command": "cd / && true"}));
    call_tool(&s, "session_close", json!({"session_id": id}));
    // A refusal.
    s.record_refusal("execute", &ToolArgs::parse(r#"{"command":"rm -rf /"}"#), "denied");

    let entries = lines(&log);
    let dir_of = |tool: &str| -> Vec<String> {
        entries
            .iter()
            .filter(|e| e["tool"] == tool)
            .map(|e| {
                e["working_dir"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no working_dir: {e}"))
                    .to_owned()
            })
            .collect()
    };
    let here = default_dir.to_str().unwrap();
    let execute = dir_of("execute");
    assert_eq!(execute, [here, here], "the job start and the refusal");
    assert_eq!(dir_of("session_start"), [here]);
    assert_eq!(dir_of("session_run"), ["/"], "the run's own cwd");
    assert_eq!(dir_of("session_close"), [here], "the server's default");
    assert_eq!(dir_of("job_status"), [here]);
    assert_eq!(dir_of("job"), [here]);
    drop(s);
    assert_no_survivors(&tag);
}

#[test]
fn background_jobs_record_their_outcome_when_they_finish() {
    let d = dir("jobs");
    let log = d.join("audit.jsonl");
    // Not a TestServer: its survivor check runs before the server (and its
    // jobs) is dropped; this test checks after.
    let tag = unique_tag("audit-jobs");
    let s = bash_mcp::BashServer::new(std::env::temp_dir(), None, Duration::from_secs(30)).unwrap();
    s.configure(&json!({"audit": {"path": log}, "env": {"set": {TAG_VAR: tag}}}).to_string())
        .unwrap();
    // Never polled.
    let finished = call(&s, json!({"command": "printf abc; exit 3", "background": true}));
    // Killed.
    let killed = call(&s, json!({"command": "sleep 30", "background": true}));
    let r = call_tool(&s, "job_kill", json!({"job_id": killed["job_id"]}));
    assert_eq!(r["error"], "cancelled", "{r}");
    // Still running when the server goes away.
    let dropped = call(
        &s,
        json!({"command": "sleep 30", "background": true, "env": {"A_TOKEN": "x"}}),
    );
    let jobs = wait_for_lines(&log, "job", 2);
    let line = by_id_in(&jobs, &finished["job_id"]).expect("a line for the finished job that nobody polled");
    assert_eq!(line["exit_code"], 3, "{line}");
    assert_eq!(line["output_bytes"], 3, "{line}");
    assert_eq!(line["command"], "printf abc; exit 3");
    assert!(line["duration_ms"].is_u64() && line["audit_id"].is_string() && line["server"] == "bash");
    assert!(line["working_dir"].is_string(), "{line}");
    let line = by_id_in(&jobs, &killed["job_id"]).expect("a line for the killed job");
    assert_eq!(line["error"], "cancelled", "{line}");
    assert!(line.get("exit_code").is_none(), "{line}");
    drop(s);
    assert_no_survivors(&tag);
    let jobs = wait_for_lines(&log, "job", 3);
    let line = by_id_in(&jobs, &dropped["job_id"]).expect("a line for the job the server's end stopped");
    assert_eq!(line["error"], "cancelled", "{line}");
    assert_eq!(line["env_names"], json!(["A_TOKEN"]));
}

fn by_id_in(entries: &[Value], id: &Value) -> Option<Value> {
    entries.iter().find(|e| e["job_id"] == *id).cloned()
}

#[test]
fn timestamps_are_when_the_call_or_job_started() {
    let (_d, log, s) = audited("start-time");
    // The command prints the time it began, then runs for a while: a
    // timestamp taken at the start is before that time, one taken at the end
    // is after it.
    let command = "date +%s%N; sleep 1";
    let r = call(&s, json!({"command": command}));
    let began: u128 = r["output"].as_str().unwrap().trim().parse().unwrap();
    let r = call(&s, json!({"command": command, "background": true}));
    let r = call_tool(&s, "job_status", json!({"job_id": r["job_id"], "wait_seconds": 30}));
    let job_began: u128 = r["output"].as_str().unwrap().trim().parse().unwrap();
    let nanos = |e: &Value| {
        let (secs, nanos) = bash_mcp::audit::parse_instant(e["timestamp"].as_str().unwrap()).unwrap();
        secs as u128 * 1_000_000_000 + u128::from(nanos)
    };
    let entries = lines(&log);
    assert!(nanos(&entries[0]) <= began, "{} is after the command began", entries[0]);
    assert!(entries[0]["duration_ms"].as_u64().unwrap() >= 1000, "{}", entries[0]);
    let job = wait_for_lines(&log, "job", 1);
    assert!(nanos(&job[0]) <= job_began, "{} is after the job began", job[0]);
}
