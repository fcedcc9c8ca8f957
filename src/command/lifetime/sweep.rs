//! Killing the processes of a run that left its process group, found by the run's marker.

use rustix::process::Signal;

use crate::process::spawn::signal;

/// Kills every process (outside our own) whose environment carries
/// `marker`: what a command started but moved out of its process group (or
/// a session's terminal session) with `setsid`. Returns how many were killed.
pub(crate) fn sweep_escapees(marker: &[u8]) -> usize {
    let me = std::process::id() as libc::pid_t;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut killed = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<libc::pid_t>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|var| var == marker) {
            // A pid that carried this run's marker a moment ago.
            signal(pid, Signal::KILL);
            killed += 1;
        }
    }
    if killed > 0 {
        tracing::debug!(killed, "killed processes that had left the command's process group");
    }
    killed
}
