//! The `execute` tool's outcome: typed, and rendered as the JSON result.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// The shell exited; shell convention (128+N when killed by signal N).
    Exited(i32),
    /// The time limit expired and the process group was killed.
    TimedOut,
    /// The call was cancelled and the process group was killed.
    Cancelled,
    /// The shell exited but its exit status is unknown: the host process
    /// ignores SIGCHLD (`SIG_IGN` or `SA_NOCLDWAIT`), so the kernel discarded
    /// it. The output is complete.
    ExitStatusLost,
}

/// The captured output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// stdout and stderr interleaved as written.
    Merged(String),
    /// stdout and stderr apart.
    Separate {
        /// Standard output.
        stdout: String,
        /// Standard error.
        stderr: String,
    },
}

impl Output {
    /// All the text, stdout before stderr when separate.
    pub fn text(&self) -> String {
        match self {
            Output::Merged(text) => text.clone(),
            Output::Separate { stdout, stderr } => format!("{stdout}{stderr}"),
        }
    }

    /// The same output with each text passed through `f` (e.g. cleaned of
    /// terminal sequences).
    pub(crate) fn map(self, f: impl Fn(&str) -> String) -> Output {
        match self {
            Output::Merged(text) => Output::Merged(f(&text)),
            Output::Separate { stdout, stderr } => Output::Separate {
                stdout: f(&stdout),
                stderr: f(&stderr),
            },
        }
    }
}

/// What running a command produced.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecOutcome {
    /// How it ended.
    pub status: Status,
    /// The output, truncated in the middle if over the limit.
    pub output: Output,
    /// From spawn to the shell's exit (or kill).
    pub duration: Duration,
    /// Whether some output was left out (a marker line says how much).
    pub truncated: bool,
    /// Bytes the command wrote in total (before truncation).
    pub output_bytes: u64,
    /// The directory it ran in.
    pub working_dir: PathBuf,
    /// The time limit that was in force.
    pub timeout: Duration,
    /// The sandbox the command ran in, and what it refused (None: unsandboxed).
    pub sandbox: Option<SandboxReport>,
    /// When the output (or stdout, when separate) was cut: the id its whole
    /// text is kept under, for `output_read`.
    pub output_id: Option<String>,
    /// The same for stderr, when separate.
    pub stderr_output_id: Option<String>,
}

/// The sandbox a command ran in and the denials read from its output.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SandboxReport {
    /// `bwrap` or `landlock`.
    pub backend: &'static str,
    /// Writes and connections the sandbox refused (see docs/sandbox.md,
    /// "Denials").
    pub denied: Vec<crate::sandbox::Denial>,
    /// How they were found: `seccomp notification`, or the fallback
    /// `error text (heuristic)`.
    pub denials_from: &'static str,
    /// How the sandbox held, besides what it refused (see
    /// docs/sandbox.md, "Denials").
    pub notes: Vec<crate::sandbox::Note>,
}

impl SandboxReport {
    fn to_value(&self) -> Value {
        let mut value = json!({
            "backend": self.backend,
            "denied": self.denied.iter().map(crate::sandbox::Denial::to_value).collect::<Vec<_>>(),
            "denials_from": self.denials_from,
        });
        if !self.notes.is_empty() {
            value["notes"] = self.notes.iter().map(crate::sandbox::Note::to_value).collect();
        }
        value
    }
}

impl ExecOutcome {
    /// The exit code, when the shell exited on its own.
    pub fn exit_code(&self) -> Option<i32> {
        match self.status {
            Status::Exited(code) => Some(code),
            _ => None,
        }
    }

    /// Whether the command exited with status 0.
    pub fn success(&self) -> bool {
        self.status == Status::Exited(0)
    }

    /// The result document the JSON API returns (see the README's result schema).
    pub fn to_value(&self) -> Value {
        let mut doc = json!({
            "duration_ms": self.duration.as_millis() as u64,
            "truncated": self.truncated,
            "output_bytes": self.output_bytes,
            "working_dir": self.working_dir.to_string_lossy(),
            "timed_out": self.status == Status::TimedOut,
        });
        let map = doc.as_object_mut().expect("literal object");
        match &self.output {
            Output::Merged(text) => {
                map.insert("output".into(), text.as_str().into());
            }
            Output::Separate { stdout, stderr } => {
                map.insert("stdout".into(), stdout.as_str().into());
                map.insert("stderr".into(), stderr.as_str().into());
            }
        }
        if let Some(id) = &self.output_id {
            map.insert("output_id".into(), id.as_str().into());
        }
        if let Some(id) = &self.stderr_output_id {
            map.insert("stderr_output_id".into(), id.as_str().into());
        }
        if let Some(report) = &self.sandbox {
            map.insert("sandbox".into(), report.to_value());
            if !report.denied.is_empty() || !report.notes.is_empty() {
                map.insert("sandbox_message".into(), self.sandbox_message(report).into());
            }
        }
        let elapsed = format_secs(self.duration);
        match self.status {
            Status::Exited(code) => {
                map.insert("exit_code".into(), code.into());
            }
            Status::TimedOut => {
                let limit = format_secs(self.timeout);
                map.insert("error".into(), "timeout".into());
                map.insert(
                    "message".into(),
                    format!(
                        "Command exceeded the bash tool's {limit} s timeout (ran {elapsed} s) and was killed, together with every process it started (its whole process group). The output printed before the kill is included."
                    )
                    .into(),
                );
                map.insert(
                    "hint".into(),
                    "If the command needs longer, pass a larger timeout_seconds (up to the operator's ceiling); for servers and watchers, use a command that exits on its own.".into(),
                );
                map.insert("timeout_seconds".into(), seconds_value(self.timeout));
                map.insert("elapsed_ms".into(), (self.duration.as_millis() as u64).into());
            }
            Status::ExitStatusLost => {
                map.insert("error".into(), "exit_status_lost".into());
                map.insert(
                    "message".into(),
                    format!("Command finished after {elapsed} s, but its exit status is unknown: the host process ignores SIGCHLD (SIG_IGN or SA_NOCLDWAIT), so the kernel discarded the status. The output is complete.").into(),
                );
                map.insert(
                    "hint".into(),
                    "Do not ignore SIGCHLD in the process that embeds bash-mcp (restore SIG_DFL); until then, print the status yourself, e.g. `cmd; echo \"exit=$?\"`.".into(),
                );
            }
            Status::Cancelled => {
                map.insert("error".into(), "cancelled".into());
                map.insert(
                    "message".into(),
                    format!("Command was cancelled after {elapsed} s and killed, together with every process it started. The output printed before the cancel is included.").into(),
                );
                map.insert("hint".into(), "Run it again if it is still needed.".into());
                map.insert("elapsed_ms".into(), (self.duration.as_millis() as u64).into());
            }
        }
        doc
    }

    /// What the sandbox refused, worded by how the command ended: a command
    /// that succeeded is told so (the refusals did not stop it); one that
    /// failed or was stopped is told they may be why, and to ask the user
    /// before retrying, since the sandbox is the operator's decision.
    fn sandbox_message(&self, report: &SandboxReport) -> String {
        let mut message = if report.denied.is_empty() {
            String::new()
        } else {
            let refused = crate::sandbox::denial_summary(&report.denied);
            const ASK: &str = "Ask the user before retrying: the sandbox is the operator's decision.";
            match self.status {
                Status::Exited(0) => {
                    format!("The command succeeded; the sandbox refused {refused}, without failing it.")
                }
                Status::Exited(code) => {
                    format!(
                        "The command failed (exit code {code}); the sandbox refused {refused}, which may be why. {ASK}"
                    )
                }
                Status::TimedOut | Status::Cancelled | Status::ExitStatusLost => {
                    format!("The sandbox refused {refused} before the command ended. {ASK}")
                }
            }
        };
        // How the sandbox held: one sentence per note, after the refusals.
        for note in &report.notes {
            if !message.is_empty() {
                message.push(' ');
            }
            let sentence = note.sentence();
            let mut chars = sentence.chars();
            if let Some(first) = chars.next() {
                message.extend(first.to_uppercase());
                message.push_str(chars.as_str());
                message.push('.');
            }
        }
        message
    }

    /// [`ExecOutcome::to_value`] as a compact JSON string (an `error` key first).
    pub fn to_json(&self) -> String {
        crate::error::document_text(&self.to_value())
    }
}

/// Seconds rounded to a tenth, for a duration a person reads in a result
/// (`12.3`, not `12.345678901`).
pub(crate) fn tenths(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

/// Seconds as an integer when whole, else a number with a fraction.
fn seconds_value(d: Duration) -> Value {
    if d.subsec_nanos() == 0 {
        d.as_secs().into()
    } else {
        d.as_secs_f64().into()
    }
}

/// Seconds for people: whole seconds as integers, one decimal from a second
/// up, and up to milliseconds below a second (so a 5 ms limit is not "0.0 s").
fn format_secs(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        d.as_secs().to_string()
    } else if d >= Duration::from_secs(1) {
        format!("{:.1}", d.as_secs_f64())
    } else {
        let ms = format!("{:.3}", d.as_secs_f64());
        ms.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}
