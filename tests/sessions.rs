//! Persistent sessions: state, exit codes, markers, input, timeouts, limits
//! and process hygiene (every test checks /proc afterwards).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bash_mcp::session::{RunOptions, RunResult, RunState, SessionConfig, SessionManager, StartOptions};
use bash_mcp::{BashServer, ErrorCode, McpServer};
use common::*;
use serde_json::{Value, json};

fn start(m: &SessionManager, shell: &str, tag: &str) -> String {
    m.start(&StartOptions {
        shell: Some(shell.into()),
        env: vec![(TAG_VAR.into(), tag.into())],
        ..Default::default()
    })
    .unwrap()
}

fn run(m: &SessionManager, id: &str, command: &str) -> RunResult {
    m.run(id, command, &within(HANG_GUARD)).unwrap()
}

/// Options for a run that returns after `timeout` at the latest.
fn within(timeout: Duration) -> RunOptions {
    RunOptions {
        timeout: Some(timeout),
        ..Default::default()
    }
}

fn installed(shell: &str) -> bool {
    if bash_mcp::config::resolve_program(shell).is_some() {
        true
    } else {
        common::skip_missing(shell);
        false
    }
}

#[test]
fn state_persists_between_commands() {
    let tag = unique_tag("state");
    let m = session_manager();
    let id = start(&m, "bash", &tag);
    let r = run(&m, &id, "cd /tmp");
    assert_eq!(r.exit_code(), Some(0));
    assert_eq!(r.cwd.as_deref(), Some(std::path::Path::new("/tmp")));
    assert_eq!(run(&m, &id, "pwd").output, "/tmp\n");
    run(&m, &id, "export X=1; Y=local");
    assert_eq!(run(&m, &id, "echo $X $Y").output, "1 local\n");
    run(&m, &id, "greet() { echo \"hi $1\"; }\nalias ll='echo aliased'");
    assert_eq!(run(&m, &id, "greet you; ll").output, "hi you\naliased\n");
    // A virtualenv-style activate script changes PATH and VIRTUAL_ENV for later calls.
    let venv = std::env::temp_dir().join(format!("venv-{tag}"));
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::fs::write(
        venv.join("bin/activate"),
        format!(
            "export VIRTUAL_ENV={0}\nexport PATH=\"{0}/bin:$PATH\"\n",
            venv.display()
        ),
    )
    .unwrap();
    std::fs::write(venv.join("bin/venvtool"), "#!/bin/sh\necho from-venv\n").unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(venv.join("bin/venvtool"))
        .status()
        .unwrap();
    run(&m, &id, &format!("source {}/bin/activate", venv.display()));
    let r = run(&m, &id, "echo $VIRTUAL_ENV; venvtool");
    assert_eq!(r.output, format!("{}\nfrom-venv\n", venv.display()));
    m.close(&id).unwrap();
    std::fs::remove_dir_all(&venv).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn exit_codes_are_exact() {
    let tag = unique_tag("codes");
    let m = session_manager();
    let id = start(&m, "bash", &tag);
    assert_eq!(run(&m, &id, "false").exit_code(), Some(1));
    assert_eq!(run(&m, &id, "(exit 7)").exit_code(), Some(7));
    assert_eq!(run(&m, &id, "true").exit_code(), Some(0));
    assert_eq!(run(&m, &id, "sh -c 'kill -TERM $$'").exit_code(), Some(143));
    // set -e does not end the session.
    let r = run(&m, &id, "set -e\nfalse\necho after");
    assert_eq!(r.state, RunState::Finished(0), "{r:?}");
    assert_eq!(run(&m, &id, "echo alive").output, "alive\n");
    // `exit` ends the shell and says so.
    let r = run(&m, &id, "exit 4");
    assert_eq!(r.state, RunState::ShellExited(4));
    let err = m.run(&id, "true", &RunOptions::default()).unwrap_err();
    assert_eq!(err.code, ErrorCode::SessionExited);
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn set_e_and_syntax_errors_never_end_a_session_in_any_posix_shell() {
    for shell in ["bash", "zsh", "sh"] {
        if bash_mcp::config::resolve_program(shell).is_none() {
            common::skip_missing(shell);
            continue;
        }
        let tag = unique_tag("set-e");
        let m = session_manager();
        let id = start(&m, shell, &tag);
        let r = run(&m, &id, "set -e\nfalse\necho after");
        assert!(matches!(r.state, RunState::Finished(_)), "{shell}: {r:?}");
        assert_eq!(run(&m, &id, "false").exit_code(), Some(1), "{shell}");
        assert_eq!(run(&m, &id, "cd /tmp && echo alive").output, "alive\n", "{shell}");
        assert_eq!(run(&m, &id, "pwd").output, "/tmp\n", "{shell}: state persists");
        // An unbalanced quote runs nothing, and the session stays usable.
        let r = run(&m, &id, "echo first\necho 'unbalanced");
        assert!(r.exit_code().is_some_and(|c| c != 0), "{shell}: {r:?}");
        assert!(!r.output.contains("first\n"), "{shell}: part of it ran: {r:?}");
        assert_eq!(run(&m, &id, "echo ok").output, "ok\n", "{shell}");
        m.close(&id).unwrap();
        assert_no_survivors(&tag);
    }
}

#[test]
fn multiline_heredoc_and_syntax_errors() {
    let tag = unique_tag("multi");
    let m = session_manager();
    let id = start(&m, "bash", &tag);
    let r = run(
        &m,
        &id,
        "for i in 1 2; do\n  echo $i\ndone\ncat <<'EOF'\nliteral $HOME\nEOF",
    );
    assert_eq!(r.output, "1\n2\nliteral $HOME\n");
    let r = run(&m, &id, "echo first\necho 'unbalanced");
    assert_eq!(r.exit_code(), Some(2));
    assert!(r.output.contains("unexpected EOF"), "{:?}", r.output);
    assert!(
        !r.output.contains("first"),
        "nothing runs when the command does not parse: {:?}",
        r.output
    );
    assert_eq!(run(&m, &id, "echo usable").output, "usable\n");
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn line_numbers_are_the_commands_own() {
    for shell in ["bash", "zsh"] {
        if !installed(shell) {
            continue;
        }
        let tag = unique_tag("lineno");
        let m = session_manager();
        let id = start(&m, shell, &tag);
        assert_eq!(run(&m, &id, "echo $LINENO\necho $LINENO").output, "1\n2\n", "{shell}");
        m.close(&id).unwrap();
        assert_no_survivors(&tag);
    }
    // A syntax error names the line of the command where it is.
    let tag = unique_tag("lineno-error");
    let m = session_manager();
    let id = start(&m, "bash", &tag);
    let r = run(&m, &id, "echo 'unbalanced");
    assert!(r.output.contains("line 1: unexpected EOF"), "{:?}", r.output);
    let r = run(&m, &id, "true\necho \"unbalanced");
    assert!(r.output.contains("line 2: unexpected EOF"), "{:?}", r.output);
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn forged_markers_do_not_end_a_command() {
    let tag = unique_tag("forge");
    let m = session_manager();
    let id = start(&m, "bash", &tag);
    let guess = "0123456789abcdef0123456789abcdef";
    let cmd = format!(
        "printf '\\033]633;D;0;/\\007'; printf '\\033]633;D;{guess};0;/\\033]633;E;{guess}\\007'; printf '\\033]633;C;{guess}\\007'; sleep 0.3; echo after; exit_code_is() {{ return 5; }}; exit_code_is"
    );
    let r = run(&m, &id, &cmd);
    assert_eq!(r.exit_code(), Some(5), "{r:?}");
    assert!(r.output.ends_with("after\n"), "{:?}", r.output);
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn control_sequences_are_removed_unless_raw() {
    let tag = unique_tag("ansi");
    let m = session_manager();
    let id = start(&m, "bash", &tag);
    let cmd = "printf '\\033[31mred\\033[0m\\n'";
    assert_eq!(run(&m, &id, cmd).output, "red\n");
    let raw = m
        .run(
            &id,
            cmd,
            &RunOptions {
                raw: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(raw.output, "\x1b[31mred\x1b[0m\n");
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn read_waits_for_input_and_write_answers_it() {
    let tag = unique_tag("input");
    let m = session_manager();
    let id = start(&m, "bash", &tag);
    let r = m.run(&id, "read -r x; echo \"got $x\"", &within(HANG_GUARD)).unwrap();
    assert_eq!(r.state, RunState::Running);
    assert!(r.waiting_for_input, "{r:?}");
    let r = m.write(&id, "hello", &["Enter".into()], HANG_GUARD, false).unwrap();
    assert_eq!(r.state, RunState::Finished(0));
    assert_eq!(r.output, "got hello\n");
    // A program reading the terminal (not the shell) is seen too.
    let r = m.run(&id, "head -n1", &within(HANG_GUARD)).unwrap();
    assert!(r.waiting_for_input, "{r:?}");
    let r = m.write(&id, "line\n", &[], HANG_GUARD, false).unwrap();
    assert_eq!((r.state, r.output.as_str()), (RunState::Finished(0), "line\n"));
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn long_command_keeps_running_past_the_timeout() {
    let tag = unique_tag("long");
    let m = session_manager();
    let id = start(&m, "bash", &tag);
    let dir = TempDir::new("long");
    let go = dir.join("go");
    // Held until the test lets it go: it outlives the run's timeout.
    let command = format!("echo begin; {}; echo end", until_file_exists(&go));
    let r = m.run(&id, &command, &within(Duration::from_secs(2))).unwrap();
    assert_eq!(r.state, RunState::Running);
    assert!(r.timed_out);
    assert!(!r.waiting_for_input);
    assert_eq!(r.output, "begin\n");
    assert_eq!(m.read(&id, None, false).unwrap().output, "");
    let busy = m.run(&id, "true", &RunOptions::default()).unwrap_err();
    assert_eq!(busy.code, ErrorCode::SessionBusy);
    std::fs::write(&go, "").unwrap();
    let r = m.wait(&id, HANG_GUARD, false).unwrap();
    assert_eq!(r.state, RunState::Finished(0));
    assert_eq!(r.output, "end\n");
    // The cursor re-reads from an earlier point.
    let again = m.read(&id, Some(0), false).unwrap();
    assert_eq!(again.output, "begin\nend\n");
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn interrupt_stops_the_foreground_job() {
    let tag = unique_tag("intr");
    let m = session_manager();
    let id = start(&m, "bash", &tag);
    let r = m.run(&id, "sleep 100", &within(Duration::from_millis(200))).unwrap();
    assert_eq!(r.state, RunState::Running);
    let r = m.interrupt(&id, Duration::from_secs(5)).unwrap();
    assert_eq!(r.state, RunState::Finished(130), "{r:?}");
    assert_eq!(run(&m, &id, "echo ok").output, "ok\n");
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn close_kills_background_children() {
    let tag = unique_tag("close");
    let m = session_manager();
    let id = start(&m, "bash", &tag);
    run(
        &m,
        &id,
        "sleep 1000 & (sleep 1000 &) ; nohup sleep 1000 >/dev/null 2>&1 & setsid sleep 1000 &",
    );
    // The last one left the terminal's session: found by its run marker.
    assert!(wait_for_survivors(&tag, 5), "shell and sleeps are alive");
    let pid = m.shell_pid(&id).unwrap();
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
    assert!(!pid_exists(pid), "the shell is reaped");
    assert_eq!(m.close(&id).unwrap_err().code, ErrorCode::SessionNotFound);
}

#[test]
fn eight_sessions_in_parallel() {
    let tag = unique_tag("par");
    let m = Arc::new(session_manager());
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let m = m.clone();
            let tag = tag.clone();
            std::thread::spawn(move || {
                let id = start(&m, "bash", &tag);
                run(&m, &id, &format!("N={i}; cd /"));
                for _ in 0..5 {
                    let r = run(&m, &id, "echo $N $PWD");
                    assert_eq!(r.output, format!("{i} /\n"));
                }
                id
            })
        })
        .collect();
    let ids: Vec<String> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(m.list().len(), 8);
    // The limit (8) is reached: one more is a clear error.
    let err = m.start(&StartOptions::default()).unwrap_err();
    assert_eq!(err.code, ErrorCode::TooManySessions);
    assert!(err.hint.contains("session_close"), "{err}");
    for id in ids {
        m.close(&id).unwrap();
    }
    assert_no_survivors(&tag);
}

#[test]
fn idle_sessions_are_evicted() {
    let tag = unique_tag("ttl");
    let s = BashServer::new("/", None, Duration::from_secs(30)).unwrap();
    s.configure(r#"{"sessions": {"enabled": true}}"#).unwrap();
    let m = s.sessions().unwrap();
    let id = start(m, "bash", &tag);
    run(m, &id, "sleep 1000 &");
    // Only now, the session set up and idle, is its time to live made short:
    // nothing can evict it before (the next use of the sessions applies it).
    s.configure(r#"{"sessions": {"enabled": true, "idle_ttl_seconds": 0.05}}"#)
        .unwrap();
    let m = s.sessions().unwrap();
    let deadline = Instant::now() + HANG_GUARD;
    while !survivors(&tag).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_no_survivors(&tag);
    assert_eq!(
        m.run(&id, "true", &RunOptions::default()).unwrap_err().code,
        ErrorCode::SessionNotFound
    );
}

#[test]
fn dropping_the_manager_kills_everything() {
    let tag = unique_tag("drop");
    let m = session_manager();
    for _ in 0..3 {
        let id = start(&m, "bash", &tag);
        run(&m, &id, "sleep 1000 &");
    }
    let _running = start(&m, "bash", &tag);
    m.run(&_running, "sleep 1000", &within(Duration::from_millis(100)))
        .unwrap();
    assert!(wait_for_survivors(&tag, 8));
    drop(m);
    assert_no_survivors(&tag);
    assert_no_lasting_zombies();
}

#[test]
fn shell_runs_on_its_own_controlling_terminal() {
    let tag = unique_tag("tty");
    let m = session_manager();
    let id = start(&m, "bash", &tag);
    let r = run(&m, &id, "tty; ps -o sid=,tpgid=,pgid= -p $$");
    let lines: Vec<&str> = r.output.lines().collect();
    assert!(lines[0].starts_with("/dev/pts/"), "{:?}", r.output);
    let pid = m.shell_pid(&id).unwrap();
    let fields: Vec<i32> = lines[1].split_whitespace().map(|f| f.parse().unwrap()).collect();
    assert_eq!(fields[0], pid, "the shell leads its own session");
    assert!(fields[1] > 0, "the terminal has a foreground group");
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn other_shells_keep_state() {
    for shell in ["sh", "zsh", "fish"] {
        if !installed(shell) {
            continue;
        }
        let tag = unique_tag(shell);
        let m = session_manager();
        let id = start(&m, shell, &tag);
        let set = if shell == "fish" {
            "cd /tmp; set -gx X 1"
        } else {
            "cd /tmp; export X=1"
        };
        assert_eq!(run(&m, &id, set).exit_code(), Some(0), "{shell}");
        let r = run(&m, &id, "echo $X; pwd");
        assert_eq!(r.output, "1\n/tmp\n", "{shell}");
        assert_eq!(run(&m, &id, "false").exit_code(), Some(1), "{shell}");
        let r = run(&m, &id, "echo 'unbalanced");
        assert_ne!(r.exit_code(), Some(0), "{shell}: {r:?}");
        assert_eq!(run(&m, &id, "echo ok").output, "ok\n", "{shell}");
        let subshell = if shell == "fish" {
            "fish --no-config -c 'exit 7'"
        } else {
            "(exit 7)"
        };
        assert_eq!(run(&m, &id, subshell).exit_code(), Some(7), "{shell}");
        // `exit` ends the shell in every shell, and says so.
        let r = run(&m, &id, "echo bye; exit 4");
        assert_eq!(r.state, RunState::ShellExited(4), "{shell}: {r:?}");
        m.close(&id).unwrap();
        assert_no_survivors(&tag);
    }
}

#[test]
fn tools_appear_when_enabled_and_work_over_json() {
    let tag = unique_tag("json");
    let s = tagged(BashServer::new(std::env::temp_dir(), None, Duration::from_secs(30)).unwrap());
    let names = |s: &BashServer| -> Vec<String> {
        let list: Value = serde_json::from_str(&s.list_tools()).unwrap();
        list.as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(!names(&s).iter().any(|n| n.starts_with("session_")));
    // Off: not listed, and a call says how to turn sessions on.
    let r = call_tool(&s, "session_start", json!({}));
    assert_eq!(r["error"], "sessions_disabled", "{r}");
    assert!(r["hint"].as_str().unwrap().contains("enabled = true"), "{r}");
    s.configure(r#"{"sessions": {"enabled": true}}"#).unwrap();
    assert!(names(&s).contains(&"session_run".to_owned()));
    let r = call_tool(&s, "session_start", json!({"env": {TAG_VAR: tag}, "name": "work"}));
    let id = r["session_id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32);
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    let r = call_tool(
        &s,
        "session_run",
        json!({"session_id": id, "command": "cd / && echo hi"}),
    );
    assert_eq!(
        (
            r["status"].as_str(),
            r["exit_code"].as_i64(),
            r["output"].as_str(),
            r["cwd"].as_str()
        ),
        (Some("finished"), Some(0), Some("hi\n"), Some("/"))
    );
    let r = call_tool(&s, "session_list", json!({}));
    assert_eq!(r["sessions"][0]["name"], "work");
    assert_eq!(r["sessions"][0]["state"], "idle");
    let r = call_tool(&s, "session_run", json!({"session_id": "nope", "command": "true"}));
    assert_eq!(r["error"], "session_not_found");
    let r = call_tool(
        &s,
        "session_run",
        json!({"session_id": id, "command": "true", "bogus": 1}),
    );
    assert_eq!(r["error"], "unknown_argument");
    let r = call_tool(&s, "session_write", json!({"session_id": id, "keys": ["Nope"]}));
    assert_eq!(r["error"], "invalid_arguments");
    let r = call_tool(&s, "session_close", json!({"session_id": id}));
    assert_eq!(r["closed"], true);
    drop(s);
    assert_no_survivors(&tag);
}

#[test]
fn dropping_the_server_kills_sessions() {
    let tag = unique_tag("srvdrop");
    let s = tagged(BashServer::new(std::env::temp_dir(), None, Duration::from_secs(30)).unwrap());
    s.configure(r#"{"sessions": {"enabled": true, "max_sessions": 2}}"#)
        .unwrap();
    let r = call_tool(&s, "session_start", json!({"env": {TAG_VAR: tag}}));
    let id = r["session_id"].as_str().unwrap();
    call_tool(&s, "session_run", json!({"session_id": id, "command": "sleep 1000 &"}));
    assert!(wait_for_survivors(&tag, 1));
    drop(s);
    assert_no_survivors(&tag);
}

#[test]
fn builtin_read_waits_for_input_in_every_shell() {
    for (shell, command) in [
        ("zsh", "read -r x; echo \"got $x\""),
        ("sh", "read -r x; echo \"got $x\""),
        ("fish", "read x; echo \"got $x\""),
    ] {
        if !installed(shell) {
            continue;
        }
        let tag = unique_tag("builtin-read");
        let m = session_manager();
        let id = start(&m, shell, &tag);
        let options = within(HANG_GUARD);
        let r = m.run(&id, command, &options).unwrap();
        assert_eq!(r.state, RunState::Running, "{shell}");
        assert!(r.waiting_for_input, "{shell}: {r:?}");
        assert!(!r.timed_out, "{shell}: not seen before the timeout: {r:?}");
        let r = m.write(&id, "hello", &["Enter".into()], HANG_GUARD, false).unwrap();
        assert_eq!(r.state, RunState::Finished(0), "{shell}: {r:?}");
        assert!(r.output.contains("got hello"), "{shell}: {r:?}");
        m.close(&id).unwrap();
        assert_no_survivors(&tag);
    }
}

/// fish without XDG_RUNTIME_DIR would make `/tmp/fish.<user>` and leave it:
/// a session gives it its private directory, which goes with the session.
#[test]
fn a_fish_session_keeps_its_runtime_files_in_its_own_directory() {
    if !installed("fish") {
        return;
    }
    let tag = unique_tag("fish-runtime");
    let m = session_manager();
    let id = start(&m, "fish", &tag);
    let r = run(&m, &id, "echo $XDG_RUNTIME_DIR");
    let dir = std::path::PathBuf::from(r.output.trim());
    if std::env::var_os("XDG_RUNTIME_DIR").is_some() {
        assert_eq!(
            Some(dir.as_os_str()),
            std::env::var_os("XDG_RUNTIME_DIR").as_deref(),
            "the host's is kept"
        );
    } else {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("bash-mcp-session-"), "{r:?}");
        assert!(dir.is_dir(), "{}", dir.display());
        m.close(&id).unwrap();
        assert!(!dir.exists(), "{} outlived its session", dir.display());
    }
    assert_no_survivors(&tag);
}

/// A fish virtualenv activation as `python -m venv` writes it: the prompt
/// function restores `$status` with `echo "exit $old_status" | .`.
#[test]
fn fish_venv_prompt_does_not_end_the_session() {
    if !installed("fish") {
        return;
    }
    let tag = unique_tag("fish-venv");
    let venv = std::env::temp_dir().join(format!("venv-{tag}"));
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::fs::write(
        venv.join("bin/activate.fish"),
        format!(
            "set -gx VIRTUAL_ENV {}\n\
             functions -c fish_prompt _old_fish_prompt\n\
             function fish_prompt\n\
             \x20   set -l old_status $status\n\
             \x20   printf '%s' '(venv) '\n\
             \x20   echo \"exit $old_status\" | .\n\
             \x20   _old_fish_prompt\n\
             end\n",
            venv.display()
        ),
    )
    .unwrap();
    let m = session_manager();
    let id = start(&m, "fish", &tag);
    let r = run(&m, &id, &format!("source {}/bin/activate.fish", venv.display()));
    assert_eq!(r.state, RunState::Finished(0), "{r:?}");
    for _ in 0..3 {
        let r = run(&m, &id, "echo $VIRTUAL_ENV");
        assert_eq!(r.state, RunState::Finished(0), "{r:?}");
        assert_eq!(r.output, format!("{}\n", venv.display()));
    }
    assert_eq!(run(&m, &id, "false").exit_code(), Some(1));
    assert_eq!(run(&m, &id, "echo alive").output, "alive\n");
    m.close(&id).unwrap();
    std::fs::remove_dir_all(&venv).unwrap();
    assert_no_survivors(&tag);
}

/// fish refuses the first `exit` while background jobs run: the command
/// ends with a normal result and the session stays usable.
#[test]
fn fish_exit_refused_for_running_jobs_ends_the_command() {
    if !installed("fish") {
        return;
    }
    for command in ["sleep 100 &\nexit 3", "exit 3"] {
        let tag = unique_tag("fish-jobs");
        let m = session_manager();
        let id = start(&m, "fish", &tag);
        if command == "exit 3" {
            assert_eq!(run(&m, &id, "sleep 100 &").exit_code(), Some(0));
        }
        let r = run(&m, &id, command);
        // The status fish itself reports after the refusal: the argument of `exit`.
        assert_eq!(r.state, RunState::Finished(3), "{command:?}: {r:?}");
        assert!(
            r.output.starts_with("There are still jobs active") && r.output.ends_with("without terminating them.\n"),
            "{command:?}: the refusal is shown, and nothing after it: {r:?}"
        );
        assert_eq!(run(&m, &id, "echo still-here").output, "still-here\n", "{command:?}");
        // fish refuses again after another command, and exits on the second attempt in a row.
        assert_eq!(run(&m, &id, "exit 3").state, RunState::Finished(3), "{command:?}");
        let r = run(&m, &id, "exit 3");
        assert_eq!(r.state, RunState::ShellExited(3), "{command:?}: {r:?}");
        m.close(&id).unwrap();
        assert_no_survivors(&tag);
    }
}

/// The end marker of an sh session lives in PS1: a command that sets PS1
/// cannot take it away, even when it is interrupted.
#[test]
fn sh_commands_that_set_ps1_keep_results_clean() {
    if !installed("sh") {
        return;
    }
    let tag = unique_tag("sh-ps1");
    let venv = std::env::temp_dir().join(format!("venv-{tag}"));
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    // The part of a virtualenv's `activate` that matters here.
    std::fs::write(
        venv.join("bin/activate"),
        format!(
            "VIRTUAL_ENV={}\nexport VIRTUAL_ENV\nPS1=\"(venv) ${{PS1:-}}\"\nexport PS1\n",
            venv.display()
        ),
    )
    .unwrap();
    let m = session_manager();
    let id = start(&m, "sh", &tag);
    let r = run(&m, &id, &format!(". {}/bin/activate", venv.display()));
    assert_eq!(r.state, RunState::Finished(0), "{r:?}");
    let r = run(&m, &id, "echo $VIRTUAL_ENV");
    assert_eq!(r.output, format!("{}\n", venv.display()), "{r:?}");
    assert_eq!(run(&m, &id, "PS1='x> '").state, RunState::Finished(0));
    let r = run(&m, &id, "echo ok");
    assert_eq!((r.state, r.output.as_str()), (RunState::Finished(0), "ok\n"), "{r:?}");
    let r = m
        .run(&id, "PS1='y> '; sleep 100", &within(Duration::from_millis(300)))
        .unwrap();
    assert_eq!(r.state, RunState::Running);
    let r = m.interrupt(&id, Duration::from_secs(5)).unwrap();
    assert_eq!(r.state, RunState::Finished(130), "{r:?}");
    let r = run(&m, &id, "echo ok");
    assert_eq!((r.state, r.output.as_str()), (RunState::Finished(0), "ok\n"), "{r:?}");
    m.close(&id).unwrap();
    std::fs::remove_dir_all(&venv).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn concurrent_starts_respect_the_session_limit() {
    let tag = unique_tag("limit");
    let m = Arc::new(
        SessionManager::new(
            SessionConfig {
                enabled: true,
                max_sessions: 3,
                ..Default::default()
            },
            std::env::temp_dir(),
        )
        .unwrap(),
    );
    let barrier = Arc::new(std::sync::Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (m, tag, barrier) = (m.clone(), tag.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                m.start(&StartOptions {
                    env: vec![(TAG_VAR.into(), tag)],
                    ..Default::default()
                })
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let started: Vec<&String> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    for err in results.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(err.code, ErrorCode::TooManySessions, "{err}");
        assert!(err.message.contains("the limit is 3"), "{err}");
    }
    assert_eq!(started.len(), 3, "{results:?}");
    assert_eq!(m.list().len(), 3);
    // After closing one, one more starts; a start that fails gives its place back.
    m.close(started[0]).unwrap();
    let err = m
        .start(&StartOptions {
            shell: Some("/nonexistent/bash".into()),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ShellNotFound, "{err}");
    let options = StartOptions {
        env: vec![(TAG_VAR.into(), tag.clone())],
        ..Default::default()
    };
    let again = m.start(&options).unwrap();
    assert_eq!(run(&m, &again, "echo ok").output, "ok\n");
    assert_eq!(m.start(&options).unwrap_err().code, ErrorCode::TooManySessions);
    drop(m);
    assert_no_survivors(&tag);
}

#[test]
fn closing_a_session_ends_a_call_waiting_on_it() {
    let tag = unique_tag("close-wait");
    let m = Arc::new(session_manager());
    let id = start(&m, "bash", &tag);
    let waiter = {
        let (m, id) = (m.clone(), id.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            let r = m.run(&id, "echo begun; sleep 100", &within(Duration::from_secs(60)));
            (r, started.elapsed())
        })
    };
    // Wait until the command runs (its sleep is alive) and its first line has
    // been read from the terminal (a loaded machine may lag), then close.
    let deadline = Instant::now() + HANG_GUARD;
    let echoed = || m.read(&id, Some(0), false).is_ok_and(|r| r.output.contains("begun"));
    while !m.list().iter().any(|s| s.state == "running") || survivors(&tag).len() < 2 || !echoed() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    m.close(&id).unwrap();
    let (r, waited) = waiter.join().unwrap();
    let r = r.unwrap();
    assert_eq!(r.state, RunState::Closed, "{r:?}");
    assert_eq!(r.output, "begun\n");
    assert_eq!(r.exit_code(), None);
    assert!(waited < Duration::from_secs(30), "returned only after {waited:?}");
    let doc = r.to_value();
    assert_eq!(doc["status"], "closed");
    assert!(doc.get("exit_code").is_none(), "{doc}");
    assert!(doc["hint"].as_str().unwrap().contains("session_start"), "{doc}");
    assert_eq!(
        m.run(&id, "true", &RunOptions::default()).unwrap_err().code,
        ErrorCode::SessionNotFound
    );
    assert_no_survivors(&tag);
}

/// With no command running there is no exit status to report: a fresh
/// session is idle, and input typed at the prompt runs as the shell's own
/// line, whose output is returned without an exit code.
#[test]
fn idle_sessions_report_no_made_up_exit_codes() {
    for shell in ["bash", "zsh", "fish", "sh"] {
        if !installed(shell) {
            continue;
        }
        let tag = unique_tag("idle");
        let m = session_manager();
        let id = start(&m, shell, &tag);
        let r = m.wait(&id, Duration::from_millis(200), false).unwrap();
        assert_eq!((r.state, r.exit_code()), (RunState::Idle, None), "{shell}: {r:?}");
        let doc = r.to_value();
        assert_eq!(doc["status"], "idle", "{shell}");
        assert!(doc.get("exit_code").is_none(), "{shell}: {doc}");
        assert!(doc["hint"].as_str().unwrap().contains("session_run"), "{shell}: {doc}");
        assert_eq!(m.read(&id, None, false).unwrap().state, RunState::Idle, "{shell}");

        assert_eq!(run(&m, &id, "false").exit_code(), Some(1), "{shell}");
        // Input at the prompt: its output, and no exit code (not the previous one).
        let r = m.write(&id, "echo typed-at-prompt\n", &[], HANG_GUARD, false).unwrap();
        assert_eq!(r.state, RunState::Idle, "{shell}: {r:?}");
        assert_eq!(r.output, "typed-at-prompt\n", "{shell}: {r:?}");
        let r = m.wait(&id, Duration::from_millis(100), false).unwrap();
        assert_eq!((r.state, r.output.as_str()), (RunState::Idle, ""), "{shell}: {r:?}");
        // A program started that way is reported as running until it ends
        // (held until the test lets it go).
        let dir = TempDir::new("idle");
        let go = dir.join("go");
        let line = format!("{}; echo late\n", until_file_exists(&go));
        let r = m.write(&id, &line, &[], Duration::from_secs(2), false).unwrap();
        if shell != "sh" {
            // sh has no start hook for lines it reads itself.
            assert_eq!(r.state, RunState::Running, "{shell}: {r:?}");
        }
        std::fs::write(&go, "").unwrap();
        let r = m.wait(&id, Duration::from_secs(5), false).unwrap();
        assert_eq!(r.state, RunState::Idle, "{shell}: {r:?}");
        assert!(r.output.ends_with("late\n"), "{shell}: {r:?}");
        // session_run still works and reports its own exit code.
        let r = run(&m, &id, "echo ran; sh -c 'exit 3'");
        assert_eq!(
            (r.state, r.output.as_str()),
            (RunState::Finished(3), "ran\n"),
            "{shell}: {r:?}"
        );
        // Interrupting the prompt has no command to report on either.
        let r = m.interrupt(&id, Duration::from_millis(300)).unwrap();
        assert_eq!(r.state, RunState::Idle, "{shell}: {r:?}");
        assert_eq!(run(&m, &id, "echo ok").output, "ok\n", "{shell}");
        m.close(&id).unwrap();
        assert_no_survivors(&tag);
    }
}

/// `waiting_for_input` means blocked reading the session's terminal, not
/// any sleep on a read: a process blocked on a socket is not waiting for input.
#[test]
fn blocked_on_a_socket_is_not_waiting_for_input() {
    if !installed("python3") {
        return;
    }
    let tag = unique_tag("socket");
    let m = session_manager();
    let id = start(&m, "bash", &tag);
    let options = within(HANG_GUARD);
    // A TCP connection to itself; the kernel's wait channel for its recv is
    // the same as for a terminal read (wait_woken).
    let pair = "import os, select, socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(1); \
                c = socket.create_connection(s.getsockname()); a, _ = s.accept(); print(\"ready\", flush=True)";
    for (what, code) in [
        ("recv", "a.recv(1)"),
        ("read", "os.read(a.fileno(), 1)"),
        ("select", "select.select([a], [], [])"),
        (
            "epoll",
            "e = select.epoll(); e.register(a.fileno(), select.EPOLLIN); e.poll()",
        ),
    ] {
        let command = format!("python3 -c '{pair}; {code}'");
        let short = within(Duration::from_secs(1));
        let mut r = m.run(&id, &command, &short).unwrap();
        let mut output = r.output.clone();
        // Python may start slowly on a busy machine: wait for it to get there.
        let deadline = Instant::now() + Duration::from_secs(60);
        while output.is_empty() && r.state == RunState::Running && Instant::now() < deadline {
            assert!(!r.waiting_for_input, "{what}: {r:?}");
            r = m.wait(&id, Duration::from_secs(1), false).unwrap();
            output.push_str(&r.output);
        }
        assert_eq!(output, "ready\n", "{what}: {r:?}");
        // Now blocked on the socket: the wait runs out, nothing waits for input.
        let r = m.wait(&id, Duration::from_secs(2), false).unwrap();
        assert_eq!(r.state, RunState::Running, "{what}: {r:?}");
        assert!(r.timed_out, "{what}: returned before the timeout: {r:?}");
        assert!(!r.waiting_for_input, "{what}: {r:?}");
        let r = m.interrupt(&id, Duration::from_secs(5)).unwrap();
        assert!(matches!(r.state, RunState::Finished(_)), "{what}: {r:?}");
    }
    // Reading the terminal is waiting for input: the shell's `read`, and
    // programs reading it with read, select, poll or epoll.
    for (what, command) in [
        ("read builtin", "read -r x"),
        ("python read", "python3 -c 'import sys; sys.stdin.readline()'"),
        (
            "python select",
            "python3 -c 'import select, sys; select.select([sys.stdin], [], []); sys.stdin.readline()'",
        ),
        (
            "python epoll",
            "python3 -c 'import select, sys; e = select.epoll(); e.register(0, select.EPOLLIN); e.poll(); sys.stdin.readline()'",
        ),
    ] {
        let r = m.run(&id, command, &options).unwrap();
        assert_eq!(r.state, RunState::Running, "{what}: {r:?}");
        assert!(r.waiting_for_input, "{what}: {r:?}");
        let r = m.write(&id, "x\n", &[], HANG_GUARD, false).unwrap();
        assert_eq!(r.state, RunState::Finished(0), "{what}: {r:?}");
    }
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

/// In canonical (line) mode the kernel keeps at most 4095 bytes of a line
/// and drops the rest without a word: a longer line is refused, not cut.
#[test]
fn long_lines_for_a_line_mode_terminal_are_refused_not_cut() {
    let tag = unique_tag("longline");
    let m = session_manager();
    let id = start(&m, "bash", &tag);
    let options = within(HANG_GUARD);
    let r = m.run(&id, "read -r x; echo ${#x}", &options).unwrap();
    assert!(r.waiting_for_input, "{r:?}");
    let long = format!("{}\n", "a".repeat(6000));
    let err = m.write(&id, &long, &[], HANG_GUARD, false).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArguments, "{err}");
    assert!(
        err.message.contains("6000 bytes") && err.message.contains("4095"),
        "{err}"
    );
    assert!(err.hint.contains("file"), "{err}");
    // Nothing was sent: the program still waits, and a line within the limit works.
    let r = m.read(&id, None, false).unwrap();
    assert_eq!(r.state, RunState::Running);
    let r = m
        .write(&id, &"b".repeat(4095), &["Enter".into()], HANG_GUARD, false)
        .unwrap();
    assert_eq!((r.state, r.output.as_str()), (RunState::Finished(0), "4095\n"), "{r:?}");
    // A program that turned line mode off gets long lines whole.
    let r = m
        .run(&id, "stty -icanon min 1; head -c 6001 | wc -c; stty icanon", &options)
        .unwrap();
    assert!(r.waiting_for_input, "{r:?}");
    let r = m.write(&id, &long, &[], HANG_GUARD, false).unwrap();
    assert_eq!((r.state, r.output.as_str()), (RunState::Finished(0), "6001\n"), "{r:?}");
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn large_commands_timeouts_and_key_names_get_fitting_answers() {
    let tag = unique_tag("limits");
    let s = tagged(BashServer::new(std::env::temp_dir(), None, Duration::from_secs(30)).unwrap());
    s.configure(r#"{"sessions": {"enabled": true}}"#).unwrap();
    let r = call_tool(&s, "session_start", json!({"env": {TAG_VAR: tag}}));
    let id = r["session_id"].as_str().unwrap().to_owned();
    // A command beyond the kernel's 128 KiB argument limit runs: it goes through a file.
    let big = format!(": '{}'; echo done", "x".repeat(140 * 1024));
    let r = call_tool(&s, "session_run", json!({"session_id": id, "command": big}));
    assert_eq!(
        (r["status"].as_str(), r["output"].as_str()),
        (Some("finished"), Some("done\n")),
        "{r}"
    );
    let huge = format!(": '{}'", "x".repeat(bash_mcp::session::MAX_COMMAND_BYTES));
    let r = call_tool(&s, "session_run", json!({"session_id": id, "command": huge}));
    assert_eq!(r["error"], "command_too_long", "{r}");
    let message = r["message"].as_str().unwrap();
    assert!(message.contains("1048576") && !message.contains("argument"), "{r}");
    assert!(r["hint"].as_str().unwrap().contains("file"), "{r}");
    // A timeout of 0 is refused with a message that states the rule it broke.
    let r = call_tool(
        &s,
        "session_run",
        json!({"session_id": id, "command": "true", "timeout_seconds": 0}),
    );
    assert_eq!(r["error"], "invalid_timeout", "{r}");
    assert!(r["message"].as_str().unwrap().contains("greater than 0"), "{r}");
    let r = call_tool(&s, "session_wait", json!({"session_id": id, "timeout_seconds": -1}));
    assert!(r["message"].as_str().unwrap().contains("from 0 to 86400"), "{r}");
    // An unknown key's hint names every key, aliases included.
    let r = call_tool(&s, "session_write", json!({"session_id": id, "keys": ["Nope"]}));
    assert_eq!(r["error"], "invalid_arguments", "{r}");
    let hint = r["hint"].as_str().unwrap();
    for name in ["Enter", "Return", "Escape", "Esc", "Space", "Tab", "C-c"] {
        assert!(hint.contains(name), "{name} missing from {hint:?}");
    }
    call_tool(&s, "session_close", json!({"session_id": id}));
    drop(s);
    assert_no_survivors(&tag);
}

/// A command still running when its call returns shows the head and the
/// tail of its output so far, like a finished one.
#[test]
fn a_timed_out_run_shows_head_and_tail() {
    let tag = unique_tag("headtail");
    let m = session_manager();
    let id = start(&m, "bash", &tag);
    let r = m
        .run(
            &id,
            "echo FIRST-LINE; seq 1 30000; echo LAST-LINE; sleep 100",
            // Time for the output to pass the terminal on a loaded machine.
            &within(Duration::from_secs(10)),
        )
        .unwrap();
    assert_eq!(r.state, RunState::Running, "{r:?}");
    assert!(r.output.starts_with("FIRST-LINE\n"), "{}", &r.output[..200]);
    assert!(
        r.output.ends_with("LAST-LINE\n"),
        "{}",
        &r.output[r.output.len() - 200..]
    );
    assert!(r.output.contains("bytes omitted"), "the cut is marked");
    assert!(r.truncated);
    m.interrupt(&id, Duration::from_secs(5)).unwrap();
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn session_run_patterns_follow_the_session_shell() {
    let tag = unique_tag("dialect");
    let s = tagged(BashServer::new(std::env::temp_dir(), None, Duration::from_secs(30)).unwrap());
    s.configure(r#"{"sessions": {"enabled": true}}"#).unwrap();
    let pattern = |id: &str| {
        let args = json!({"session_id": id, "command": "[[ -f x ]] && ls"}).to_string();
        s.get_permission_pattern("bash.session_run", &args)
    };
    let r = call_tool(&s, "session_start", json!({"env": {TAG_VAR: tag}, "shell": "bash"}));
    let bash = r["session_id"].as_str().unwrap().to_owned();
    assert_eq!(pattern(&bash), "bash.session_run:ls *");
    // `[[` is not a keyword in a POSIX sh; an unknown session gets the default.
    let r = call_tool(&s, "session_start", json!({"env": {TAG_VAR: tag}, "shell": "sh"}));
    let sh = r["session_id"].as_str().unwrap().to_owned();
    assert_eq!(pattern(&sh), "bash.session_run:{unknown}");
    assert_eq!(pattern("nope"), "bash.session_run:{unknown}");
    drop(s);
    assert_no_survivors(&tag);
}
