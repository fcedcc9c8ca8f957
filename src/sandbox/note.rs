//! What a result says about how the sandbox held, besides what it refused
//! (see [`denial`](super::denial)): the model reads these to know when an
//! exit status or a success is not what it seems.

use serde_json::{Value, json};

/// One fact about the sandbox a command ran in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The Landlock helper that keeps the command died before the command
    /// ended, by `signal` (from outside: the command itself cannot reach
    /// it): the exit status is the helper's, the command's process group
    /// was killed, and processes that had left it may still run.
    HelperKilled { signal: i32 },
    /// A fork failed because the command reached its process limit.
    ProcessLimit { max: u32, bound_by: &'static str },
}

impl Note {
    pub fn to_value(&self) -> Value {
        match self {
            Note::HelperKilled { signal } => json!({"note": "helper_killed", "signal": signal_name(*signal)}),
            Note::ProcessLimit { max, bound_by } => {
                json!({"note": "process_limit", "max_processes": max, "bound_by": bound_by})
            }
        }
    }

    /// A sentence for the model: what happened and what it means.
    pub fn sentence(&self) -> String {
        match self {
            Note::HelperKilled { signal } => format!(
                "the sandbox's helper process was killed ({}) from outside before the command ended: the exit status is the helper's, not the command's; the command's process group was killed, but processes it moved out of the group (setsid) may still be running",
                signal_name(*signal)
            ),
            Note::ProcessLimit { max, bound_by } => format!(
                "the command reached the sandbox's limit of {max} processes ({bound_by}), so a fork failed; run fewer at once, or ask the user to raise `sandbox.max_processes`"
            ),
        }
    }
}

/// `SIGKILL` for 9, and so on (`signal N` for the rest).
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSYS => "SIGSYS",
        other => return format!("signal {other}"),
    };
    name.to_owned()
}
