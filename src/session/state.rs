//! The state of a session's shell and command: its phase, the output kept, and the ring of clean output.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::echo;
use crate::outputs::OutputStore;
use crate::process::capture::BoundedOutput;

/// A bounded ring of clean command output with absolute offsets.
pub(super) struct Ring {
    pub(super) data: std::collections::VecDeque<u8>,
    pub(super) start: u64,
    pub(super) cap: usize,
}

impl Ring {
    pub(super) fn end(&self) -> u64 {
        self.start + self.data.len() as u64
    }
    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.data.extend(bytes);
        while self.data.len() > self.cap {
            let drop = self.data.len() - self.cap;
            self.data.drain(..drop);
            self.start += drop as u64;
        }
    }
    /// Bytes from `from` to the end, and how many before were lost.
    pub(super) fn since(&self, from: u64) -> (Vec<u8>, u64) {
        let from = from.min(self.end());
        let lost = self.start.saturating_sub(from);
        let skip = from.saturating_sub(self.start) as usize;
        (self.data.iter().skip(skip).copied().collect(), lost)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Starting,
    Idle,
    Running,
    Exited(i32),
    /// Closed by `session_close`, idle eviction or the manager's drop.
    Closed,
}

pub(super) struct State {
    pub(super) phase: Phase,
    /// Whether the current command's start marker has been seen.
    pub(super) started: bool,
    pub(super) cwd: PathBuf,
    pub(super) cmd_started: Instant,
    pub(super) cmd_duration: Duration,
    /// The exit status of the last `session_run` command; `None` before the
    /// first one, and after input typed at the prompt (its status is not
    /// the shell's report on a command of ours).
    pub(super) last_exit: Option<i32>,
    /// Input was typed at the prompt with `session_write`: its output is
    /// collected until the shell's next end marker.
    pub(super) typed: bool,
    pub(super) output: BoundedOutput,
    pub(super) ring: Ring,
    pub(super) cmd_start_offset: u64,
    pub(super) delivered: u64,
    pub(super) last_activity: Instant,
    /// While fish decides whether to exit: the part of its last line not
    /// yet passed on (the end of its refusal is terminal redraw, dropped).
    pub(super) held: Option<Vec<u8>>,
    /// The terminal's echo of the agent's input, kept out of its results.
    pub(super) echo: echo::EchoFilter,
    /// A person typed into the terminal since the agent's last result.
    pub(super) person_typed: bool,
    /// A result told the agent that the command waits for a secret, and no
    /// look since has found that prompt answered: `session_wait` waits
    /// through it instead of returning at once.
    pub(super) secret_told: bool,
}

impl State {
    /// A shell starting in `cwd`, its buffers bounded by `output_limit`.
    pub(super) fn starting(cwd: PathBuf, output_limit: usize, now: Instant) -> Self {
        Self {
            phase: Phase::Starting,
            started: false,
            cwd,
            cmd_started: now,
            cmd_duration: Duration::ZERO,
            last_exit: None,
            typed: false,
            output: BoundedOutput::new(output_limit),
            ring: Ring {
                data: Default::default(),
                start: 0,
                cap: output_limit,
            },
            cmd_start_offset: 0,
            delivered: 0,
            last_activity: now,
            held: None,
            echo: Default::default(),
            person_typed: false,
            secret_told: false,
        }
    }

    /// A command runs, or a line typed at the prompt has not ended yet.
    pub(super) fn in_progress(&self) -> bool {
        self.phase == Phase::Running || (self.phase == Phase::Idle && self.typed)
    }

    /// Whether a process blocked on the terminal is one of the command's:
    /// the command has started, or the shell is reading a typed line.
    pub(super) fn started_reading(&self) -> bool {
        self.started || self.phase == Phase::Idle
    }

    /// Starts collecting a new command's output at the ring's end.
    pub(super) fn begin_output(&mut self, output_limit: usize, outputs: Option<&Arc<OutputStore>>, now: Instant) {
        self.output = match outputs {
            Some(store) => BoundedOutput::keeping(output_limit, store.keeper()),
            None => BoundedOutput::new(output_limit),
        };
        self.held = None;
        self.cmd_start_offset = self.ring.end();
        self.last_activity = now;
    }
}
