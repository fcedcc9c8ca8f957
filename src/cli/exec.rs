//! `bash-mcp exec`: one command through the same server, gate and result
//! document as `serve`, printed for a person (or as JSON with `--json`).

use std::io::Write;

use bash_mcp::mcp::GateDecision;
use bash_mcp::{CallOptions, CancelToken, McpServer, ToolArgs};
use serde_json::{Value, json};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::gate;
use super::settings::Settings;

/// Exit status for a timed-out command (as `timeout(1)`).
pub const EXIT_TIMEOUT: u8 = 124;
/// Exit status when the policy refused the command.
pub const EXIT_REFUSED: u8 = 126;
/// Exit status for a call that could not run (bad arguments, spawn failure).
pub const EXIT_FAILED: u8 = 125;
/// Exit status after an interrupt.
pub const EXIT_CANCELLED: u8 = 130;

/// Runs `command` and returns the process exit status.
pub fn run(settings: &Settings, command: &str, json_output: bool) -> Result<u8, String> {
    let settings = &one_off(settings);
    let mut signals =
        Signals::new([SIGTERM, SIGINT, SIGHUP]).map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let server = super::build_server(settings)?;
    let args = ToolArgs::from_value(json!({"command": command}));
    let decision = gate::build(settings, Some(server.clone()))?
        .map(|gate| gate.check("execute", &args).settle(&*server, "execute", &args));
    let sandbox = match &decision {
        Some(GateDecision::AllowInSandbox(sandbox)) => Some(sandbox),
        _ => None,
    };
    let (doc, result) = match decision.as_ref().and_then(GateDecision::refusal_document) {
        Some(doc) => {
            let text = doc.to_string();
            (doc, text)
        }
        None => {
            // The command leads its own process group, so a terminal's ^C
            // reaches only us: pass it on as a cancel.
            let token = CancelToken::new();
            let canceller = token.clone();
            let handle = signals.handle();
            let watcher = std::thread::spawn(move || {
                if signals.forever().next().is_some() {
                    canceller.cancel();
                }
            });
            let options = CallOptions {
                cancel: Some(&token),
                on_output: None,
                sandbox,
                principal: None,
                client: None,
            };
            let response = server.call_tool("execute", &args, options);
            handle.close();
            let _ = watcher.join();
            (response.to_value(), response.text())
        }
    };
    let status = exit_status(&doc);
    let mut stdout = std::io::stdout().lock();
    if json_output {
        let _ = writeln!(stdout, "{result}");
    } else {
        print_human(&doc, &mut stdout);
    }
    let _ = stdout.flush();
    Ok(status)
}

/// The settings for a one-off command: the default audit log is shared by
/// every server of this user (and read back by `audit_read`), so a command
/// run by hand is written to it only when the configuration names a log.
fn one_off(settings: &Settings) -> Settings {
    let mut settings = settings.clone();
    if settings.audit_is_default {
        settings.config.audit = None;
    }
    settings
}

fn exit_status(doc: &Value) -> u8 {
    if let Some(code) = doc.get("exit_code").and_then(Value::as_i64) {
        return code.clamp(0, 255) as u8;
    }
    match doc.get("error").and_then(Value::as_str) {
        Some("timeout") => EXIT_TIMEOUT,
        Some("cancelled") => EXIT_CANCELLED,
        Some("permission_denied") => EXIT_REFUSED,
        _ => EXIT_FAILED,
    }
}

/// The output as the command wrote it on stdout (stderr too when separate),
/// then, on stderr, a note for anything but a clean exit. Write errors (a
/// reader that went away) are ignored: the exit status is the command's.
fn print_human(doc: &Value, stdout: &mut impl Write) {
    let text = |key: &str| doc.get(key).and_then(Value::as_str).unwrap_or_default();
    let _ = stdout.write_all(text("output").as_bytes());
    let _ = stdout.write_all(text("stdout").as_bytes());
    let _ = stdout.flush();
    let _ = std::io::stderr().write_all(text("stderr").as_bytes());
    if let Some(error) = doc.get("error").and_then(Value::as_str) {
        super::note(&format!("[{error}] {}", text("message")));
        for key in ["hint", "pattern"] {
            if !text(key).is_empty() {
                super::note(&format!("{key}: {}", text(key)));
            }
        }
    } else if let Some(code) = doc.get("exit_code").and_then(Value::as_i64).filter(|c| *c != 0) {
        super::note(&format!("exit code {code}"));
    }
    if !text("sandbox_message").is_empty() {
        super::note(&format!("sandbox: {}", text("sandbox_message")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_mirrors_the_result() {
        assert_eq!(exit_status(&json!({"exit_code": 3})), 3);
        assert_eq!(exit_status(&json!({"exit_code": 300})), 255);
        assert_eq!(exit_status(&json!({"error": "timeout"})), EXIT_TIMEOUT);
        assert_eq!(exit_status(&json!({"error": "cancelled"})), EXIT_CANCELLED);
        assert_eq!(exit_status(&json!({"error": "permission_denied"})), EXIT_REFUSED);
        assert_eq!(exit_status(&json!({"error": "spawn_failed"})), EXIT_FAILED);
    }
}
