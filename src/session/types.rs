//! The session API's types: configuration, options and results.

use std::path::PathBuf;
use std::time::Duration;

use super::ShellKind;
use crate::config::HistoryMode;

/// What to start.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// `bash` (default), `zsh`, `fish`, `sh`/`dash`, or a path to one of them.
    pub shell: Option<String>,
    /// Initial directory (default: the manager's working directory).
    pub working_dir: Option<PathBuf>,
    /// Variables set for the shell, after the server's environment.
    pub env: Vec<(String, String)>,
    /// A label shown by `session_list`.
    pub name: Option<String>,
    /// Open a terminal window that shows the session to a person.
    pub visible: bool,
    /// The sandbox the session lives in instead of the configured one: a
    /// host's own for this session, or the wider one the person approved
    /// for its `escalate`. `None`: the configured sandbox.
    pub sandbox: Option<crate::sandbox::SandboxConfig>,
}

/// How to run one command.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// How long to wait before returning `running` (the command keeps running).
    pub timeout: Option<Duration>,
    /// Overrides the session's history mode for this command.
    pub history: Option<HistoryMode>,
    /// Keep terminal control sequences in the output.
    pub raw: bool,
}

/// Where a command stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// Finished with this exit status (128+N after signal N).
    Finished(i32),
    /// No command of ours runs and there is no result to report: the
    /// session is fresh, or the call sent input to the shell's prompt (the
    /// shell ran it as a line of its own, without an exit status for us).
    Idle,
    /// Still running; wait, read, write or interrupt.
    Running,
    /// The shell itself exited (e.g. `exit`) with this status; the session is over.
    ShellExited(i32),
    /// The session was closed (`session_close`, idle eviction, or the
    /// manager dropped) while the call waited; its processes were killed.
    Closed,
}

/// A result of `session_run`, `session_wait`, `session_read` or `session_write`.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The session.
    pub session_id: String,
    /// The session's human name (`falcon`), what `bash-mcp attach` takes.
    pub session_name: String,
    /// How many views (people attached, a host's terminal) watch the terminal.
    pub watchers: usize,
    /// A person typed into the terminal since the agent's last result.
    pub person_typed: bool,
    /// The command waits for input that the terminal does not echo: a
    /// password or passphrase prompt. Only a person should answer it.
    pub secret_prompt: bool,
    /// Finished, running, or shell exited.
    pub state: RunState,
    /// Clean output (or raw, on request).
    pub output: String,
    /// Whether output was left out (head+tail cut, or ring overrun).
    pub truncated: bool,
    /// Output bytes of this command so far.
    pub output_bytes: u64,
    /// The shell's directory after the command (when known).
    pub cwd: Option<PathBuf>,
    /// Time since the command started.
    pub duration: Duration,
    /// Whether this call returned because its wait ran out.
    pub timed_out: bool,
    /// The foreground process is blocked reading the terminal.
    pub waiting_for_input: bool,
    /// Offset after the returned output; pass to `session_read` to continue.
    pub cursor: u64,
    /// When a finished command's output was cut: the id its whole output
    /// (as the terminal wrote it) is kept under, for `output_read`.
    pub output_id: Option<String>,
}

impl RunResult {
    /// The exit status, once finished.
    pub fn exit_code(&self) -> Option<i32> {
        match self.state {
            RunState::Finished(code) | RunState::ShellExited(code) => Some(code),
            RunState::Running | RunState::Closed | RunState::Idle => None,
        }
    }

    /// The JSON document tools return.
    pub fn to_value(&self) -> serde_json::Value {
        let mut doc = serde_json::json!({
            "session_id": self.session_id,
            "status": match self.state {
                RunState::Finished(_) => "finished",
                RunState::Running => "running",
                RunState::ShellExited(_) => "shell_exited",
                RunState::Closed => "closed",
                RunState::Idle => "idle",
            },
            "output": self.output,
            "truncated": self.truncated,
            "output_bytes": self.output_bytes,
            "duration_ms": self.duration.as_millis() as u64,
            "timed_out": self.timed_out,
            "waiting_for_input": self.waiting_for_input,
            "cursor": self.cursor,
        });
        if let Some(code) = self.exit_code() {
            doc["exit_code"] = code.into();
        }
        if let Some(cwd) = &self.cwd {
            doc["cwd"] = cwd.display().to_string().into();
        }
        if let Some(id) = &self.output_id {
            doc["output_id"] = id.as_str().into();
        }
        if self.watchers > 0 {
            doc["people_watching"] = self.watchers.into();
        }
        if self.person_typed {
            doc["person_typed"] = true.into();
        }
        if self.secret_prompt {
            doc["secret_prompt"] = true.into();
        }
        match self.state {
            RunState::Running if self.secret_prompt => {
                doc["hint"] = self.secret_hint().into();
            }
            RunState::Running if self.waiting_for_input => {
                doc["hint"] = "The command is waiting for input on the terminal: send it with session_write (text and/or keys), or stop it with session_interrupt.".into();
            }
            RunState::Running => {
                doc["hint"] = "The command is still running (it was not killed). Use session_wait for more output and the exit status, session_read to peek, session_interrupt to stop it.".into();
            }
            RunState::ShellExited(_) => {
                doc["hint"] = "The shell exited, so this session is over; start a new one with session_start.".into();
            }
            RunState::Closed => {
                doc["hint"] = "The session was closed while this call waited (session_close, idle eviction or server shutdown); the command and every process of the session were killed. Start a new session with session_start.".into();
            }
            RunState::Idle => {
                doc["hint"] = "No command is running in this session and there is no exit status to report (input sent at the shell's prompt runs as a line of the shell's own; its output is shown, its status is not). Use session_run to run a command and get its exit code.".into();
            }
            RunState::Finished(_) => {}
        }
        if self.person_typed {
            let hint = doc["hint"].as_str().map(|h| format!(" {h}")).unwrap_or_default();
            doc["hint"] = format!(
                "A person typed into this terminal since your last look: read the output again before you act.{hint}"
            )
            .into();
        }
        doc
    }

    fn secret_hint(&self) -> String {
        let who = if self.watchers > 0 {
            "A person is watching this terminal: ask them to type it there"
        } else {
            "Ask the person to run this in their own terminal and type it there"
        };
        format!(
            "The command is waiting for a secret (a password or passphrase: the terminal does not echo what is typed). Do not ask for the secret and never send it with session_write. {who}: `bash-mcp attach {}`. Then call session_wait for the result.",
            self.session_name
        )
    }
}

/// One line of `session_list`.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    /// The session id.
    pub id: String,
    /// The label given at start.
    pub name: Option<String>,
    /// The human name (`falcon`), what `bash-mcp attach` takes.
    pub handle: String,
    /// The session's number on this server (`#2`).
    pub number: u32,
    /// How many views watch its terminal.
    pub watchers: usize,
    /// Which shell.
    pub shell: ShellKind,
    /// The shell's process id.
    pub pid: i32,
    /// The shell's directory.
    pub cwd: PathBuf,
    /// `idle`, `running` or `exited`.
    pub state: &'static str,
    /// Time since the last call or command activity.
    pub idle: Duration,
}

impl SessionInfo {
    /// `#2 falcon`.
    pub fn title(&self) -> String {
        format!("#{} {}", self.number, self.handle)
    }
}
