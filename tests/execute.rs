//! The `execute` tool end to end: results, timeouts, process hygiene, bad input.

mod common;

use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bash_mcp::{BashServer, CallOptions, CancelToken, ExecRequest, McpServer, Output, Status, Streams};
use common::*;
use serde_json::{Value, json};

#[test]
fn stdout_and_stderr_are_captured_merged_in_order() {
    let s = server();
    let tag = unique_tag("merged");
    let r = call_tagged(&s, "echo out; echo err >&2; echo out2", &tag, json!({}));
    assert_eq!(r["output"], "out\nerr\nout2\n");
    assert_eq!(r["exit_code"], 0);
    assert_eq!(r["timed_out"], false);
    assert_eq!(r["truncated"], false);
    assert_eq!(r["output_bytes"], 13);
    assert!(r["duration_ms"].is_u64());
    assert_no_survivors(&tag);
}

#[test]
fn separate_streams_are_returned_apart() {
    let s = server();
    let tag = unique_tag("separate");
    let r = call_tagged(&s, "echo out; echo err >&2", &tag, json!({"streams": "separate"}));
    assert_eq!(r["stdout"], "out\n");
    assert_eq!(r["stderr"], "err\n");
    assert!(r.get("output").is_none(), "{r}");
    assert_no_survivors(&tag);
}

#[test]
fn exit_codes_follow_the_shell_convention() {
    let s = server();
    assert_eq!(call(&s, json!({"command": "exit 3"}))["exit_code"], 3);
    assert_eq!(call(&s, json!({"command": "false"}))["exit_code"], 1);
    // The shell killed by SIGTERM (15) reports 128+15.
    assert_eq!(call(&s, json!({"command": "kill -TERM $$"}))["exit_code"], 143);
    assert_eq!(call(&s, json!({"command": "kill -KILL $$"}))["exit_code"], 137);
}

#[test]
fn working_dir_with_hostile_names_is_honoured() {
    let s = server();
    let base = tempdir("wd");
    for name in [
        "with space",
        "it's \"quoted\"",
        "$HOME and $(rm -rf x)",
        "-leading-dash",
        "semi;colon&amp",
    ] {
        let dir = base.join(name);
        std::fs::create_dir(&dir).unwrap();
        let r = call(&s, json!({"command": "pwd", "working_dir": dir}));
        assert_eq!(
            r["output"].as_str().unwrap().trim_end(),
            dir.to_str().unwrap(),
            "{name}"
        );
        assert_eq!(r["working_dir"], dir.to_str().unwrap());
        // Relative names resolve against the server's working dir, not $HOME.
        s.set_working_dir(&base).unwrap();
        let r = call(&s, json!({"command": "pwd", "working_dir": name}));
        assert_eq!(
            r["output"].as_str().unwrap().trim_end(),
            dir.to_str().unwrap(),
            "{name}"
        );
    }
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn timeout_kills_the_group_and_reaps_the_shell() {
    let s = server();
    let tag = unique_tag("timeout");
    let start = Instant::now();
    let r = call_tagged(&s, "echo $$; sleep 20 & sleep 20", &tag, json!({"timeout_seconds": 1}));
    let elapsed = start.elapsed();
    assert_eq!(r["error"], "timeout", "{r}");
    assert_eq!(r["timed_out"], true);
    assert_eq!(r["timeout_seconds"], 1);
    let elapsed_ms = r["elapsed_ms"].as_u64().unwrap();
    // Not before the timeout; and well before the 20 s sleeps end (a hang
    // guard only: normal is about 1 s, the benchmark measures).
    assert!(elapsed_ms >= 1000, "{r}");
    assert!(elapsed < Duration::from_secs(15), "took {elapsed:?}");
    let message = r["message"].as_str().unwrap();
    assert!(
        message.contains("1 s timeout") && message.contains("killed"),
        "{message}"
    );
    let shell_pid: i32 = r["output"].as_str().unwrap().trim().parse().unwrap();
    assert!(!pid_exists(shell_pid), "shell {shell_pid} not reaped");
    assert_no_survivors(&tag);
}

#[test]
fn background_leftovers_die_after_a_normal_return() {
    let s = server();
    let tag = unique_tag("leftover");
    let start = Instant::now();
    let r = call_tagged(&s, "sleep 30 >/dev/null 2>&1 & echo started", &tag, json!({}));
    assert_eq!(r["output"], "started\n");
    // Returned without waiting for the 30 s sleep (a hang guard, not a speed test).
    assert!(start.elapsed() < Duration::from_secs(20));
    assert_no_survivors(&tag);
}

#[test]
fn background_child_holding_the_pipe_does_not_hang_the_call() {
    let s = server();
    let tag = unique_tag("holder");
    // A drain far longer than the sleep: a call that waited for the pipe
    // to close would wait for the sleep and report it.
    s.configure(r#"{"drain_ms": 60000}"#).unwrap();
    let start = Instant::now();
    let r = call_tagged(&s, "sleep 25 & echo hi", &tag, json!({}));
    let elapsed = start.elapsed();
    assert_eq!(r["output"], "hi\n");
    assert_eq!(r["exit_code"], 0);
    // The group is killed when the shell exits: the call neither waited for
    // the 25 s sleep nor for the drain (a hang guard, not a speed test).
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
    assert_no_survivors(&tag);
}

#[test]
fn escapee_holding_the_pipe_is_bounded_by_the_drain_then_killed() {
    let s = server();
    s.configure(r#"{"drain_ms": 500}"#).unwrap();
    let tag = unique_tag("setsid");
    let start = Instant::now();
    let r = call_tagged(&s, "setsid sleep 30 & echo hi", &tag, json!({}));
    let elapsed = start.elapsed();
    assert_eq!(r["output"], "hi\n");
    // Bounded by the drain, not by the 30 s sleep (a hang guard only; no
    // lower bound: when the group is killed before `setsid` runs, the sleep
    // dies with it and there is nothing to drain).
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
    // It left the process group, but it still held the pipe: found by its
    // run marker and killed.
    assert_no_survivors(&tag);
}

#[test]
fn escapees_are_killed_on_timeout_and_cancel() {
    let s = server();
    let tag = unique_tag("setsid-timeout");
    let r = call_tagged(
        &s,
        "setsid sleep 30 >/dev/null 2>&1 < /dev/null & setsid sh -c 'sleep 40' >/dev/null 2>&1 & sleep 30",
        &tag,
        json!({"timeout_seconds": 0.5}),
    );
    assert_eq!(r["error"], "timeout", "{r}");
    assert_no_survivors(&tag);

    let token = CancelToken::new();
    let canceller = token.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        canceller.cancel();
    });
    let tag = unique_tag("setsid-cancel");
    let request = ExecRequest::new("setsid sleep 30 >/dev/null 2>&1 & sleep 30").env(TAG_VAR, &tag);
    let outcome = run_cancellable(&s, &request, &token);
    t.join().unwrap();
    assert_eq!(outcome.status, Status::Cancelled);
    assert_no_survivors(&tag);
}

#[test]
fn every_run_has_its_own_marker() {
    let s = server();
    let a = call(&s, json!({"command": "echo $BASH_MCP_RUN_ID"}));
    let b = call(&s, json!({"command": "echo $BASH_MCP_RUN_ID"}));
    let (a, b) = (
        a["output"].as_str().unwrap().trim(),
        b["output"].as_str().unwrap().trim(),
    );
    assert!(!a.is_empty() && a != b, "{a} {b}");
}

#[test]
fn host_fds_without_cloexec_are_not_inherited() {
    let s = server();
    let file = std::fs::File::open("/dev/null").unwrap();
    let fd = file.as_raw_fd();
    // Clear close-on-exec, as a careless host would have it.
    // SAFETY: F_SETFD takes no pointer; `fd` is open, owned by `file`.
    unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
    // No pipeline: a shell building one holds pipe fds for a moment.
    let r = call(&s, json!({"command": "ls /proc/$$/fd"}));
    let out = r["output"].as_str().unwrap();
    let mut fds: Vec<i32> = out.split_whitespace().map(|f| f.parse().unwrap()).collect();
    fds.sort();
    assert_eq!(fds, [0, 1, 2], "fd {fd} leaked? {out}");
    drop(file);
}

#[test]
fn child_starts_with_default_signals_even_when_the_host_ignores_them() {
    // The host ignores SIGINT, SIGQUIT and a real-time signal, and blocks SIGUSR1 in this thread.
    let rt = libc::SIGRTMIN() + 5;
    // SAFETY: changes this test process's own dispositions and this thread's mask (its
    // own binary); the sets are locals initialized by sigemptyset before use.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
        libc::signal(rt, libc::SIG_IGN);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGUSR1);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    let s = server();
    let r = call(&s, json!({"command": "grep -E '^Sig(Ign|Blk)' /proc/self/status"}));
    let out = r["output"].as_str().unwrap();
    let mask = |name: &str| {
        let line = out.lines().find(|l| l.starts_with(name)).unwrap();
        u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
    };
    assert_eq!(mask("SigBlk:"), 0, "{out}");
    // glibc keeps its two internal signals (32 and 33, bits 31 and 32) ignored
    // across posix_spawn by design; every other signal must be at its default.
    let glibc_internal = (1u64 << 31) | (1u64 << 32);
    assert_eq!(mask("SigIgn:") & !glibc_internal, 0, "{out}");
}

#[test]
fn invalid_utf8_is_replaced_and_nul_survives() {
    let s = server();
    let r = call(&s, json!({"command": "printf 'a\\377\\376b\\000c'"}));
    assert_eq!(r["output"], "a\u{FFFD}\u{FFFD}b\u{0}c");
    assert_eq!(r["output_bytes"], 6);
}

#[test]
fn truncation_keeps_head_and_tail_with_a_marker() {
    let s = server();
    s.configure(r#"{"output_limit_bytes": 1000}"#).unwrap();
    let r = call(&s, json!({"command": "seq 1 100000"}));
    let out = r["output"].as_str().unwrap();
    assert_eq!(r["truncated"], true);
    let total = r["output_bytes"].as_u64().unwrap();
    assert_eq!(total, 588895);
    assert!(out.starts_with("1\n2\n3\n"), "{out}");
    assert!(out.ends_with("99999\n100000\n"), "{out}");
    let markers: Vec<&str> = out.lines().filter(|l| l.contains("bytes omitted")).collect();
    assert_eq!(markers.len(), 1, "{out}");
    // "[... O bytes omitted: output was T bytes, showing the first H and the last L; the
    // whole output is kept: output_read {"output_id": "<id>"} reads any part (...) ...]"
    let (figures, kept) = markers[0]
        .split_once("; the whole output is kept: ")
        .expect("a kept output");
    let id = r["output_id"].as_str().expect("an output_id");
    assert!(
        kept.starts_with(&format!("output_read {{\"output_id\": \"{id}\"}}")),
        "{kept}"
    );
    let numbers: Vec<u64> = figures
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let [omitted, whole, head, tail] = numbers[..] else {
        panic!("{}", markers[0])
    };
    assert_eq!(whole, total);
    assert_eq!(omitted, total - head - tail);
    assert!((750..=1000).contains(&(head + tail)), "{}", markers[0]);
    assert_eq!(out.len() as u64, head + tail + markers[0].len() as u64 + 1);
    // Cut at line ends: every line is a whole number or the marker.
    assert!(
        out.lines().all(|l| l.parse::<u32>().is_ok() || l.starts_with("[... ")),
        "{out}"
    );
}

#[test]
fn stdin_is_dev_null_by_default_and_can_be_given() {
    let s = server();
    let r = call(&s, json!({"command": "cat; echo done"}));
    assert_eq!(r["output"], "done\n");
    let r = call(&s, json!({"command": "wc -c", "stdin": "hello"}));
    assert_eq!(r["output"].as_str().unwrap().trim(), "5");
    // Large stdin with large output: no deadlock between writer and reader.
    let big = "x".repeat(3 << 20);
    let r = call(&s, json!({"command": "cat | wc -c", "stdin": big}));
    assert_eq!(r["output"].as_str().unwrap().trim(), (3 << 20).to_string());
    // A command that ignores its stdin: the write side must not raise SIGPIPE.
    let r = call(&s, json!({"command": "exec 0<&-; echo ok", "stdin": big}));
    assert_eq!(r["output"], "ok\n");
}

#[test]
fn env_overrides_and_non_interactive_profile() {
    let s = server();
    let r = call(
        &s,
        json!({"command": "echo $FOO $PAGER $GIT_TERMINAL_PROMPT", "env": {"FOO": "bar baz"}}),
    );
    assert_eq!(r["output"], "bar baz cat 0\n");
}

#[test]
fn bad_inputs_get_typed_errors() {
    let s = server();
    let scratch = tempdir("notdir");
    let file = scratch.join("file");
    std::fs::write(&file, "x").unwrap();
    let cases: Vec<(String, &str)> = vec![
        ("not json".into(), "invalid_json"),
        ("[1,2]".into(), "invalid_json"),
        (json!({}).to_string(), "invalid_arguments"),
        (json!({"command": 5}).to_string(), "invalid_arguments"),
        (json!({"command": ""}).to_string(), "empty_command"),
        (json!({"command": "  \t\n"}).to_string(), "empty_command"),
        (json!({"command": "echo a\u{0}b"}).to_string(), "command_contains_nul"),
        (json!({"command": "ls", "cwd": "/"}).to_string(), "unknown_argument"),
        (
            json!({"command": "ls", "working_dir": "/no/such/dir"}).to_string(),
            "working_dir_not_found",
        ),
        (
            json!({"command": "ls", "working_dir": file}).to_string(),
            "working_dir_not_directory",
        ),
        (
            json!({"command": "ls", "working_dir": 7}).to_string(),
            "invalid_arguments",
        ),
        (
            json!({"command": "ls", "timeout_seconds": 0}).to_string(),
            "invalid_timeout",
        ),
        (
            json!({"command": "ls", "timeout_seconds": -1}).to_string(),
            "invalid_timeout",
        ),
        (
            json!({"command": "ls", "timeout_seconds": 1e-12}).to_string(),
            "invalid_timeout",
        ),
        (
            json!({"command": "ls", "timeout_seconds": 86401}).to_string(),
            "invalid_timeout",
        ),
        (
            json!({"command": "ls", "timeout_seconds": "5"}).to_string(),
            "invalid_timeout",
        ),
        (json!({"command": "ls", "env": {"A": 1}}).to_string(), "invalid_env"),
        (json!({"command": "ls", "env": {"A=B": "x"}}).to_string(), "invalid_env"),
        (json!({"command": "ls", "env": []}).to_string(), "invalid_env"),
        (
            json!({"command": "ls", "streams": "both"}).to_string(),
            "invalid_streams",
        ),
        (json!({"command": "ls", "stdin": 3}).to_string(), "invalid_arguments"),
        (json!({"command": "x".repeat(200_000)}).to_string(), "command_too_long"),
        (format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000)), "invalid_json"),
    ];
    for (args, code) in cases {
        let envelope: Value = serde_json::from_str(&s.execute("execute", &args)).unwrap();
        let result: Value = serde_json::from_str(envelope["result"].as_str().unwrap()).unwrap();
        assert_eq!(result["error"], code, "args {}: {result}", &args[..args.len().min(80)]);
        assert!(!result["message"].as_str().unwrap().is_empty());
        assert!(!result["hint"].as_str().unwrap().is_empty());
    }
    let envelope: Value = serde_json::from_str(&s.execute("nope", r#"{"command":"ls"}"#)).unwrap();
    let result: Value = serde_json::from_str(envelope["result"].as_str().unwrap()).unwrap();
    assert_eq!(result["error"], "unknown_tool");
    assert!(result["hint"].as_str().unwrap().contains("execute"));
    // The unknown-argument error names the argument.
    let r = call(&s, json!({"command": "ls", "cwd": "/", "verbose": true}));
    assert!(r["message"].as_str().unwrap().contains("cwd"), "{r}");
    assert!(r["message"].as_str().unwrap().contains("verbose"), "{r}");
}

#[test]
fn spawn_failure_is_reported() {
    let s = server();
    s.configure(r#"{"shell": "/bin/sh"}"#).unwrap();
    let dir = tempdir("noexec");
    // A directory we cannot enter: chdir fails inside the spawn. Root can enter
    // anything, so fall back to a shell that disappears after configure.
    let shell = dir.join("sh");
    std::fs::copy("/bin/sh", &shell).unwrap();
    s.configure(&json!({"shell": shell}).to_string()).unwrap();
    std::fs::remove_file(&shell).unwrap();
    let r = call(&s, json!({"command": "true"}));
    assert_eq!(r["error"], "spawn_failed", "{r}");
    assert!(r["message"].as_str().unwrap().contains(shell.to_str().unwrap()), "{r}");
}

#[test]
fn timeout_is_clamped_to_the_ceiling() {
    let s = tagged(BashServer::new(std::env::temp_dir(), None, Duration::from_secs(1)).unwrap());
    // Asking for more than the operator's ceiling gets the ceiling.
    let r = call(&s, json!({"command": "sleep 5", "timeout_seconds": 100}));
    assert_eq!(r["error"], "timeout");
    assert_eq!(r["timeout_seconds"], 1);
    // Lowering works: the lower limit is the one in force.
    let r = call(&s, json!({"command": "sleep 5", "timeout_seconds": 0.3}));
    assert_eq!(r["error"], "timeout");
    assert_eq!(r["timeout_seconds"], 0.3, "{r}");
}

#[test]
fn server_construction_errors_are_typed() {
    assert_eq!(
        BashServer::new("/", None, Duration::from_secs(0)).err().unwrap().code,
        bash_mcp::ErrorCode::InvalidTimeout
    );
    assert_eq!(
        BashServer::new("/no/such", None, Duration::from_secs(5))
            .err()
            .unwrap()
            .code,
        bash_mcp::ErrorCode::WorkingDirNotFound
    );
    let s = server();
    assert_eq!(
        s.set_working_dir("/no/such".as_ref()).unwrap_err().code,
        bash_mcp::ErrorCode::WorkingDirNotFound
    );
    assert_eq!(
        s.set_working_dir("/etc/passwd".as_ref()).unwrap_err().code,
        bash_mcp::ErrorCode::WorkingDirNotDirectory
    );
}

#[test]
fn thirty_two_concurrent_calls_all_complete() {
    let s = Arc::new(server());
    let tag = unique_tag("concurrent");
    let dir = tempdir("concurrent");
    // Each call leaves a mark, then waits until eight marks exist: calls run
    // eight at a time, so every wave meets; serialized calls would give up.
    let threads: Vec<_> = (0..32)
        .map(|i| {
            let (s, tag) = (s.clone(), tag.clone());
            let d = dir.display().to_string();
            let meet = format!(
                "touch '{d}/{i}'; n=0; while [ $(ls '{d}' | wc -l) -lt 8 ]; do n=$((n+1)); \
                 if [ $n -ge 1500 ]; then echo gave up; break; fi; sleep 0.02; done; echo {i}"
            );
            std::thread::spawn(move || call_tagged(&*s, &meet, &tag, json!({})))
        })
        .collect();
    for (i, t) in threads.into_iter().enumerate() {
        let r = t.join().unwrap();
        assert_eq!(r["output"], format!("{i}\n"), "{r}");
    }
    assert_eq!(s.concurrency(), (0, 0));
    assert_no_survivors(&tag);
}

#[test]
fn max_concurrent_bounds_running_commands() {
    let s = Arc::new(server());
    s.configure(r#"{"max_concurrent": 2}"#).unwrap();
    let dir = tempdir("maxconc");
    let counter = dir.join("count");
    // Each command records how many are running at once (atomic mkdir slots).
    let cmd = format!(
        "n=0; while ! mkdir {c}.$n 2>/dev/null; do n=$((n+1)); done; echo $n; sleep 0.3; rmdir {c}.$n",
        c = counter.display()
    );
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let (s, cmd) = (s.clone(), cmd.clone());
            std::thread::spawn(move || call(&*s, json!({"command": cmd})))
        })
        .collect();
    for t in threads {
        let slot: u32 = t.join().unwrap()["output"].as_str().unwrap().trim().parse().unwrap();
        assert!(slot < 2, "a third command ran at once (slot {slot})");
    }
}

#[test]
fn cancellation_kills_the_group_and_keeps_partial_output() {
    let s = Arc::new(server());
    let tag = unique_tag("cancel");
    let token = CancelToken::new();
    // Cancelled once the first line has arrived, however long that takes.
    let mut cancel_after_output = |_: &[u8], _| token.cancel();
    let request = ExecRequest::new("echo before; sleep 30 & sleep 30").env(TAG_VAR, &tag);
    let start = Instant::now();
    let options = CallOptions {
        cancel: Some(&token),
        on_output: Some(&mut cancel_after_output),
        sandbox: None,
        principal: None,
        client: None,
    };
    let outcome = s.run_with(&request, options).unwrap();
    assert_eq!(outcome.status, Status::Cancelled);
    assert_eq!(outcome.output, Output::Merged("before\n".into()));
    // Ended by the cancel, not by the 30 s sleeps (a hang guard only).
    assert!(start.elapsed() < Duration::from_secs(20));
    let json: Value = serde_json::from_str(&outcome.to_json()).unwrap();
    assert_eq!(json["error"], "cancelled");
    assert_eq!(json["output"], "before\n");
    assert_no_survivors(&tag);
}

#[test]
fn streaming_callback_sees_chunks_as_they_arrive() {
    let s = server();
    let dir = tempdir("streaming");
    let seen_one = dir.join("seen-one");
    let mut arrivals = Vec::new();
    // The command waits until the callback has seen its first line: output
    // delivered only at the end would never release it.
    let mut on_output = |chunk: &[u8], stream: bash_mcp::OutputStream| {
        if chunk == b"one\n" {
            std::fs::write(&seen_one, "").unwrap();
        }
        arrivals.push((chunk.to_vec(), stream));
    };
    let command = format!("echo one; {}; echo two >&2", until_file_exists(&seen_one));
    let request = ExecRequest::new(command).streams(Streams::Separate);
    let outcome = s
        .run_with(
            &request,
            CallOptions {
                cancel: None,
                on_output: Some(&mut on_output),
                sandbox: None,
                principal: None,
                client: None,
            },
        )
        .unwrap();
    assert!(outcome.success());
    // The first chunk arrived while the command ran: it released the wait.
    assert_eq!(
        arrivals,
        [
            (b"one\n".to_vec(), bash_mcp::OutputStream::Stdout),
            (b"two\n".to_vec(), bash_mcp::OutputStream::Stderr)
        ]
    );
}

#[test]
fn kill_grace_sends_sigterm_first() {
    let s = server();
    s.configure(r#"{"kill_grace_ms": 1500}"#).unwrap();
    let tag = unique_tag("grace");
    let r = call_tagged(
        &s,
        "trap 'echo got TERM; exit 0' TERM; echo ready; while :; do sleep 0.05; done",
        &tag,
        json!({"timeout_seconds": 0.5}),
    );
    assert_eq!(r["error"], "timeout");
    assert!(r["output"].as_str().unwrap().contains("got TERM"), "{r}");
    assert_no_survivors(&tag);
}

#[test]
fn configure_errors_leave_the_previous_configuration() {
    let s = server();
    s.configure(r#"{"output_limit_bytes": 4096, "timeout_seconds": 12}"#)
        .unwrap();
    let before = s.config();
    // Keys are applied in name order: each bad document has a valid key that
    // sorts before its invalid one, so a configure that changed the
    // configuration in place would be caught.
    for bad in [
        r#"{"output_limit_bytes": 8192, "zz_bogus": true}"#,
        r#"{"max_concurrent": 3, "timeout_seconds": -1}"#,
        r#"{"drain_ms": 10, "shell": "/no/such/shell"}"#,
        r#"{"env": {"inherit": "none"}, "kill_grace_ms": "soon"}"#,
        r#"not json"#,
        r#"[]"#,
    ] {
        let err = s.configure(bad).unwrap_err();
        assert_eq!(err.code, bash_mcp::ErrorCode::InvalidConfig, "{bad}");
        assert_eq!(*s.config(), *before, "{bad} changed the configuration");
    }
    assert_eq!(s.timeout(), Duration::from_secs(12));
}

#[test]
fn configuring_env_merges_into_the_current_policy() {
    let s = server();
    s.configure(r#"{"env": {"inherit": ["PATH", "HOME"]}}"#).unwrap();
    // Setting a variable later must not re-open inheritance.
    s.configure(r#"{"env": {"set": {"FROM_CONFIG": "1"}}}"#).unwrap();
    let r = call_tagged(
        &s,
        "echo \"[$FROM_CONFIG] [${CARGO_PKG_NAME-unset}]\"",
        &unique_tag("envmerge"),
        json!({}),
    );
    assert_eq!(r["output"], "[1] [unset]\n", "{r}");
}

#[test]
fn a_call_cancelled_before_it_starts_has_no_effect() {
    let s = server();
    let dir = tempdir("precancel");
    let witness = dir.join("ran");
    let token = CancelToken::new();
    token.cancel();
    for _ in 0..50 {
        let request = ExecRequest::new(format!("echo ran >> '{}'", witness.display()));
        let outcome = run_cancellable(&s, &request, &token);
        assert_eq!(outcome.status, Status::Cancelled);
    }
    assert!(!witness.exists(), "a cancelled call ran its command");
}

#[test]
fn raising_max_concurrent_starts_queued_calls() {
    let s = Arc::new(server());
    s.configure(r#"{"max_concurrent": 1}"#).unwrap();
    let dir = tempdir("raise");
    // Each call waits until all four have started: with one slot they
    // cannot meet, so they meet only if raising the limit starts the queue.
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let s = s.clone();
            let d = dir.display().to_string();
            let meet = format!(
                "touch '{d}/{i}'; n=0; while [ $(ls '{d}' | wc -l) -lt 4 ]; do n=$((n+1)); \
                 if [ $n -ge 1500 ]; then echo gave up; break; fi; sleep 0.02; done; echo met"
            );
            std::thread::spawn(move || call(&*s, json!({ "command": meet })))
        })
        .collect();
    while s.concurrency().1 < 3 {
        std::thread::sleep(Duration::from_millis(5));
    }
    s.configure(r#"{"max_concurrent": 8}"#).unwrap();
    for t in threads {
        let r = t.join().unwrap();
        assert_eq!(r["output"], "met\n", "{r}");
    }
}

#[test]
fn a_directory_that_cannot_be_entered_is_a_working_dir_error() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir("locked");
    let locked = dir.join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
    // SAFETY: geteuid takes no argument and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        // Root may enter any directory: ask the binary, run as nobody, instead.
        if std::process::Command::new("setpriv").arg("--version").output().is_err() {
            common::skip(format_args!(
                "running as root and setpriv is missing: `apt-get install util-linux` installs it"
            ));
            return;
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = std::process::Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                env!("CARGO_BIN_EXE_bash-mcp"),
            ])
            .args(["exec", "--json", "--working-dir"])
            .arg(&locked)
            .arg("true")
            .output()
            .unwrap();
        // The server refuses the directory at construction, before any spawn.
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains("cannot be entered: Permission denied"), "{stderr}");
        assert!(!stderr.contains("spawn"), "{stderr}");
    } else {
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        let s = server();
        let r = call(&s, json!({"command": "true", "working_dir": locked}));
        assert_eq!(r["error"], "working_dir_not_found", "{r}");
        assert!(s.set_working_dir(&locked).is_err());
    }
}

#[test]
fn set_working_dir_is_safe_while_commands_run() {
    let s = Arc::new(server());
    let a = tempdir("swd-a");
    let b = tempdir("swd-b");
    s.set_working_dir(&a).unwrap();
    let runner = {
        let s = s.clone();
        let (a, b) = (a.to_path_buf(), b.to_path_buf());
        std::thread::spawn(move || {
            for _ in 0..50 {
                let r = call(&*s, json!({"command": "pwd"}));
                let out = r["output"].as_str().unwrap().trim().to_owned();
                assert!(out == a.to_str().unwrap() || out == b.to_str().unwrap(), "{out}");
            }
        })
    };
    for i in 0..200 {
        s.set_working_dir(if i % 2 == 0 { &a } else { &b }).unwrap();
    }
    runner.join().unwrap();
}

#[test]
fn tool_definitions_load_from_the_data_dir() {
    let data = tempdir("data");
    let tools = data.join("tools").join("bash");
    std::fs::create_dir_all(&tools).unwrap();
    // No file: built-in definition.
    let s = BashServer::new("/", Some(&data), Duration::from_secs(5)).unwrap();
    let list: Value = serde_json::from_str(&s.list_tools()).unwrap();
    assert_eq!(list[0]["name"], "execute");
    assert_eq!(list[0]["inputSchema"]["required"], json!(["command"]));
    // A valid file replaces it.
    std::fs::write(
        tools.join("execute.json"),
        r#"{"name":"execute","description":"custom","inputSchema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}"#,
    )
    .unwrap();
    let s = BashServer::new("/", Some(&data), Duration::from_secs(5)).unwrap();
    let list: Value = serde_json::from_str(&s.list_tools()).unwrap();
    assert_eq!(list[0]["description"], "custom");
    // An invalid file is a construction error naming the file.
    std::fs::write(tools.join("execute.json"), r#"{"name":"execute","description":"x"}"#).unwrap();
    let err = BashServer::new("/", Some(&data), Duration::from_secs(5)).err().unwrap();
    assert_eq!(err.code, bash_mcp::ErrorCode::InvalidToolDefinition);
    assert!(
        err.message.contains("execute.json") && err.message.contains("inputSchema"),
        "{err}"
    );
}

#[test]
fn object_model_defaults() {
    let s = server();
    assert_eq!(s.name(), "bash");
    assert!(!s.skip_duplicate_check("execute"));
    assert_eq!(s.get_permission_pattern("bash.nope", "{}"), "bash.nope");
    let list: Value = serde_json::from_str(&s.list_tools()).unwrap();
    let keys: Vec<&String> = list[0].as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    // Qualified names find the tool too.
    let r: Value = serde_json::from_str(&s.execute("bash.execute", r#"{"command":"echo q"}"#)).unwrap();
    assert!(r["result"].as_str().unwrap().contains("\"q\\n\""), "{r}");
}

fn tempdir(name: &str) -> TempDir {
    TempDir::new(name)
}

#[test]
fn permission_pattern_follows_the_configured_shell() {
    let s = server();
    let args = r#"{"command":"echo hi &>/dev/null rm -rf x"}"#;
    // /bin/sh (the default) runs `echo hi &` then `>/dev/null rm -rf x`.
    assert_eq!(s.get_permission_pattern("bash.execute", args), "bash.execute:{unknown}");
    s.configure(r#"{"shell": "/bin/bash"}"#).unwrap();
    assert_eq!(s.get_permission_pattern("bash.execute", args), "bash.execute:echo *");
    s.configure(r#"{"shell": "/bin/sh"}"#).unwrap();
    assert_eq!(s.get_permission_pattern("bash.execute", args), "bash.execute:{unknown}");
}
