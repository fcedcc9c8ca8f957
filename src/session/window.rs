//! A terminal window on the person's screen that shows a session: a
//! terminal emulator running `bash-mcp attach <name>`.

use std::process::{Command, Stdio};

use serde_json::Value;

/// The variable naming the terminal command to use (its words, then
/// `bash-mcp attach <name>` appended), such as `xterm -e` or `kitty`.
pub const TERMINAL_ENV: &str = "BASH_MCP_TERMINAL";

/// What happened to a request for a window.
pub(crate) enum Window {
    /// Opened with this command.
    Opened(String),
    /// Not opened, for this reason.
    NotOpened(String),
}

/// The command that attaches to `name`: this binary when it is `bash-mcp`.
fn attach_command(name: &str) -> Vec<String> {
    let exe = std::env::current_exe()
        .ok()
        .filter(|p| p.file_name().is_some_and(|n| n == "bash-mcp"))
        .map_or_else(|| "bash-mcp".to_owned(), |p| p.display().to_string());
    vec![exe, "attach".into(), name.into()]
}

/// Opens a window showing session `name`, when a graphical session is present.
pub(crate) fn open(name: &str) -> Window {
    let graphical = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
    if !graphical {
        return Window::NotOpened(
            "there is no graphical session here ($DISPLAY and $WAYLAND_DISPLAY are unset), so no window can be opened"
                .into(),
        );
    }
    let mut words: Vec<String> = match std::env::var(TERMINAL_ENV) {
        Ok(command) if !command.trim().is_empty() => command.split_whitespace().map(str::to_owned).collect(),
        _ => vec!["x-terminal-emulator".into(), "-e".into()],
    };
    words.extend(attach_command(name));
    let shown = words.join(" ");
    let spawned = Command::new(&words[0])
        .args(&words[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        Ok(mut child) => {
            // Reaped when the window closes.
            let _ = std::thread::Builder::new()
                .name("bash-mcp-window".into())
                .spawn(move || child.wait());
            Window::Opened(shown)
        }
        Err(e) => Window::NotOpened(format!(
            "could not start the terminal ({shown}): {e}; set {TERMINAL_ENV} to a terminal command such as \"xterm -e\""
        )),
    }
}

/// Puts the outcome into a `session_start` result.
pub(crate) fn describe(doc: &mut Value, window: Window) {
    match window {
        Window::Opened(command) => {
            doc["visible"] = true.into();
            doc["window"] = command.into();
        }
        Window::NotOpened(reason) => {
            let attach = doc["attach"].as_str().unwrap_or("bash-mcp attach").to_owned();
            doc["visible"] = false.into();
            doc["visible_reason"] = format!(
                "{reason}. Tell the person they can watch and type in it by running `{attach}` in their own terminal."
            )
            .into();
        }
    }
}
