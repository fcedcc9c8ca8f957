//! History hygiene: commands a session runs stay out of the shell's history
//! file unless asked, for every shell installed. HOME points at a temp dir.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use bash_mcp::session::{HistoryMode, RunOptions, RunState, SessionConfig, SessionManager, StartOptions};
use bash_mcp::{BashServer, ErrorCode};
use common::*;

/// Tests here change BASH_MCP_HISTORY, which every manager reads: one at a time.
static ENV_LOCK: Mutex<()> = Mutex::new(());

fn manager(history: HistoryMode) -> SessionManager {
    SessionManager::new(
        SessionConfig {
            enabled: true,
            history,
            ..Default::default()
        },
        std::env::temp_dir(),
    )
    .unwrap()
}

fn history_file(shell: &str, home: &Path) -> PathBuf {
    match shell {
        "bash" => home.join(".bash_history"),
        "zsh" => home.join(".zsh_history"),
        "fish" => home.join(".local/share/fish/fish_history"),
        _ => home.join(".sh_history"),
    }
}

/// A session of `shell` in a new manager whose default is `history`, its
/// processes tagged and HOME a fresh temporary directory.
/// Returns (manager, session id, tag, home).
fn start_at_private_home(shell: &str, history: HistoryMode, name: &str) -> (SessionManager, String, String, PathBuf) {
    let tag = unique_tag(name);
    let home = std::env::temp_dir().join(format!("home-{tag}"));
    std::fs::create_dir_all(&home).unwrap();
    let m = manager(history);
    let id = m
        .start(&StartOptions {
            shell: Some(shell.into()),
            env: vec![
                (TAG_VAR.into(), tag.clone()),
                ("HOME".into(), home.display().to_string()),
            ],
            ..Default::default()
        })
        .unwrap();
    (m, id, tag, home)
}

/// Runs two commands (one multi-line) with `mode`, exits the shell, and
/// returns the history file's contents ("" when absent).
fn session_history(shell: &str, mode: HistoryMode, per_call: Option<HistoryMode>) -> (String, PathBuf) {
    let (m, id, tag, home) = start_at_private_home(shell, mode, &format!("hist-{shell}"));
    let options = RunOptions {
        timeout: Some(Duration::from_secs(30)),
        history: per_call,
        ..Default::default()
    };
    let r = m.run(&id, "echo marker-one", &options).unwrap();
    assert_eq!(r.output, "marker-one\n", "{shell}");
    let r = m.run(&id, "echo marker-two\necho line-two", &options).unwrap();
    assert_eq!(r.exit_code(), Some(0), "{shell}");
    // Exit the shell, so that it writes whatever it would write on exit.
    let suppress = RunOptions {
        history: Some(HistoryMode::Suppress),
        ..Default::default()
    };
    let r = m.run(&id, "exit", &suppress).unwrap();
    assert!(matches!(r.state, RunState::ShellExited(_)), "{shell}: {r:?}");
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
    let file = history_file(shell, &home);
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    std::fs::remove_dir_all(&home).unwrap();
    (text, file)
}

fn shells() -> Vec<&'static str> {
    ["bash", "zsh", "fish", "sh"]
        .into_iter()
        .filter(|s| {
            let ok = bash_mcp::config::resolve_program(s).is_some();
            if !ok {
                common::skip_missing(s);
            }
            ok
        })
        .collect()
}

#[test]
fn suppressed_commands_never_reach_the_history_file() {
    let _lock = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    for shell in shells() {
        let (text, file) = session_history(shell, HistoryMode::Suppress, None);
        assert!(!text.contains("marker"), "{shell}: {} has {text:?}", file.display());
        assert!(!text.contains("__bm"), "{shell}: {} has {text:?}", file.display());
    }
}

#[test]
fn kept_commands_are_written_once_without_the_runner_line() {
    let _lock = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    for shell in shells() {
        if shell == "sh" {
            continue;
        }
        for (mode, per_call) in [
            (HistoryMode::Keep, None),
            (HistoryMode::Suppress, Some(HistoryMode::Keep)),
        ] {
            let (text, file) = session_history(shell, mode, per_call);
            assert_eq!(
                text.matches("echo marker-one").count(),
                1,
                "{shell}: {} has {text:?}",
                file.display()
            );
            assert!(text.contains("echo marker-two"), "{shell}: {text:?}");
            assert!(!text.contains("__bm"), "{shell}: the runner line leaked: {text:?}");
            assert!(
                !text.contains("exit"),
                "{shell}: `exit` ran with history suppressed: {text:?}"
            );
        }
    }
}

#[test]
fn histfile_in_env_conflicts_with_suppression() {
    let _lock = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let m = manager(HistoryMode::Suppress);
    let err = m
        .start(&StartOptions {
            env: vec![("HISTFILE".into(), "/tmp/somewhere".into())],
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::HistoryConflict);
    assert!(err.message.contains("HISTFILE"), "{err}");
    assert!(m.list().is_empty());
}

#[test]
fn histfile_in_env_is_the_target_when_keeping() {
    let _lock = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let tag = unique_tag("histfile");
    let file = std::env::temp_dir().join(format!("histfile-{tag}"));
    let m = manager(HistoryMode::Keep);
    let id = m
        .start(&StartOptions {
            env: vec![
                (TAG_VAR.into(), tag.clone()),
                ("HISTFILE".into(), file.display().to_string()),
            ],
            ..Default::default()
        })
        .unwrap();
    m.run(&id, "echo kept-here", &RunOptions::default()).unwrap();
    m.run(
        &id,
        "echo not-kept",
        &RunOptions {
            history: Some(HistoryMode::Suppress),
            ..Default::default()
        },
    )
    .unwrap();
    m.close(&id).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text, "echo kept-here\n");
    std::fs::remove_file(&file).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn environment_override_is_validated() {
    let _lock = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: tests that read this variable hold ENV_LOCK.
    unsafe { std::env::set_var("BASH_MCP_HISTORY", "sometimes") };
    let err = SessionManager::new(SessionConfig::default(), "/").err().unwrap();
    assert_eq!(err.code, ErrorCode::InvalidConfig);
    assert!(err.message.contains("BASH_MCP_HISTORY"), "{err}");
    let err = BashServer::new("/", None, Duration::from_secs(5)).err().unwrap();
    assert_eq!(err.code, ErrorCode::InvalidConfig);
    // SAFETY: tests that read this variable hold ENV_LOCK.
    unsafe { std::env::set_var("BASH_MCP_HISTORY", "keep") };
    let m = SessionManager::new(SessionConfig::default(), "/").unwrap();
    assert_eq!(m.config().history, HistoryMode::Keep);
    // SAFETY: tests that read this variable hold ENV_LOCK.
    unsafe { std::env::remove_var("BASH_MCP_HISTORY") };
    let m = SessionManager::new(SessionConfig::default(), "/").unwrap();
    assert_eq!(m.config().history, HistoryMode::Suppress);
}

#[test]
fn configuration_key_sets_the_default() {
    let _lock = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let s = BashServer::new("/", None, Duration::from_secs(5)).unwrap();
    use bash_mcp::McpServer;
    s.configure(r#"{"sessions": {"enabled": true, "history": "keep"}}"#)
        .unwrap();
    assert_eq!(s.sessions().unwrap().config().history, HistoryMode::Keep);
    let err = s.configure(r#"{"sessions": {"history": "off"}}"#).unwrap_err();
    assert!(err.message.contains("sessions.history"), "{err}");
}

/// sh keeps no history file: with "keep" as the default its commands run
/// (nothing is recorded, as sh itself would not), and only an explicit
/// per-call "keep" is refused.
#[test]
fn sh_runs_under_a_keep_default_and_refuses_an_explicit_keep() {
    let _lock = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if bash_mcp::config::resolve_program("sh").is_none() {
        common::skip_missing("sh");
        return;
    }
    let (m, id, tag, home) = start_at_private_home("sh", HistoryMode::Keep, "hist-sh");
    let r = m.run(&id, "echo marker-sh", &RunOptions::default()).unwrap();
    assert_eq!((r.state, r.output.as_str()), (RunState::Finished(0), "marker-sh\n"));
    let keep = RunOptions {
        history: Some(HistoryMode::Keep),
        ..Default::default()
    };
    let err = m.run(&id, "echo marker-kept", &keep).unwrap_err();
    assert_eq!(err.code, ErrorCode::HistoryUnsupported, "{err}");
    assert!(err.message.contains("sh"), "{err}");
    let r = m.run(&id, "echo still-usable", &RunOptions::default()).unwrap();
    assert_eq!(r.output, "still-usable\n");
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
    let files: Vec<_> = std::fs::read_dir(&home)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(files.is_empty(), "nothing is written to HOME: {files:?}");
    std::fs::remove_dir_all(&home).unwrap();
}

/// Raw input typed at the prompt with `session_write` is recorded by the
/// shell in memory like any typed line; a later kept command must write only
/// itself to the history file, never what was typed before it.
#[test]
fn keeping_a_command_does_not_write_earlier_raw_input() {
    let _lock = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    for shell in ["bash", "zsh"] {
        if bash_mcp::config::resolve_program(shell).is_none() {
            common::skip_missing(shell);
            continue;
        }
        for default in [HistoryMode::Suppress, HistoryMode::Keep] {
            let (m, id, tag, home) = start_at_private_home(shell, default, &format!("hist-raw-{shell}"));
            m.write(&id, "echo RAWSECRET\n", &[], Duration::from_secs(30), false)
                .unwrap();
            let keep = RunOptions {
                timeout: Some(Duration::from_secs(30)),
                history: Some(HistoryMode::Keep),
                ..Default::default()
            };
            let r = m.run(&id, "echo kept-command", &keep).unwrap();
            assert_eq!(r.output, "kept-command\n", "{shell}");
            m.write(&id, "echo RAWSECRET2\n", &[], Duration::from_secs(30), false)
                .unwrap();
            let r = m.run(&id, "echo kept-again", &keep).unwrap();
            assert_eq!(r.output, "kept-again\n", "{shell}");
            m.close(&id).unwrap();
            assert_no_survivors(&tag);
            let file = history_file(shell, &home);
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            std::fs::remove_dir_all(&home).unwrap();
            assert!(!text.contains("RAWSECRET"), "{shell} ({default:?}): {text:?}");
            assert_eq!(
                text.lines().collect::<Vec<_>>(),
                ["echo kept-command", "echo kept-again"],
                "{shell} ({default:?})"
            );
        }
    }
}
