//! Running one command to completion: spawn, capture, time limit, cancel,
//! group kill, bounded drain, reap.
//!
//! Completion follows the shell's exit (seen through a pidfd), not pipe EOF,
//! so a background child that keeps the pipe open cannot hang the call. The
//! pidfd is opened only once the command has outlived a first look of at
//! most [`FALLBACK_TICK`]: most commands end before it, their exit seen at
//! their pipe's end (`waitid` then tells whether the shell has gone). The
//! shell stays unreaped until its group has been killed, so the process group
//! id cannot be recycled in between and `killpg` never hits a stranger.

mod phases;
mod pipes;
mod sweep;

use std::io;
use std::time::{Duration, Instant};

use crate::process::cancel::CancelToken;
use crate::process::capture::BoundedOutput;
use crate::process::spawn::{self, SpawnSpec};
use crate::process::stream::{OutputSink, OutputStream};

use phases::{Parked, Run, Streams};
pub(crate) use sweep::sweep_escapees;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    Exited,
    /// The shell exited, but the kernel discarded its status (the host
    /// ignores SIGCHLD).
    StatusLost,
    TimedOut,
    Cancelled,
}

/// Everything a run needs besides the spawn itself.
#[derive(Clone)]
pub(crate) struct RunLimits {
    pub timeout: Duration,
    pub kill_grace: Duration,
    pub drain: Duration,
    pub output_limit: usize,
    /// The `NAME=value` entry every process of this run inherits; on a
    /// timeout, a cancel, or a pipe still held after the drain bound,
    /// processes outside the group that carry it are killed too.
    pub run_marker: Option<Vec<u8>>,
    /// Where the whole output goes once it outgrows `output_limit` (None:
    /// its middle is only counted).
    pub keep: Option<std::sync::Arc<crate::outputs::OutputStore>>,
}

/// What a run produced.
pub(crate) struct RawOutcome {
    pub ending: Ending,
    /// Shell convention: the exit status, or 128+N after signal N.
    pub status: i32,
    pub stdout: BoundedOutput,
    pub stderr: Option<BoundedOutput>,
    pub elapsed: Duration,
}

/// Kills and reaps the group if a run is abandoned halfway (an early return
/// or a panic in an output callback), so nothing is left behind.
struct GroupGuard<'a> {
    group: &'a spawn::Group,
    armed: bool,
}

impl Drop for GroupGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.group.kill(libc::SIGKILL);
            self.group.reap_status();
        }
    }
}

/// How long pipes are drained after the processes holding them were swept.
const SWEPT_DRAIN: Duration = Duration::from_millis(200);
/// Poll interval when the kernel offers no pidfd.
const FALLBACK_TICK: Duration = Duration::from_millis(5);

/// How a run with a window stood when it returned.
#[allow(clippy::large_enum_variant)] // returned once per run and unpacked at once, never stored
pub(crate) enum Finish {
    Ended(RawOutcome),
    /// Still running when the window closed: [`Detached::resume`] goes on
    /// with it, on any thread.
    Running(Detached),
}

/// Runs one command (see the module docs for the guarantees) on this
/// thread, to its end or until `window` passes: a command still running
/// then is handed back whole, so a call that ends within its window costs
/// no thread of its own.
pub(crate) fn run_within(
    spec: &SpawnSpec<'_>,
    stdin_data: Option<&[u8]>,
    limits: &RunLimits,
    cancel: Option<&CancelToken>,
    sink: Option<OutputSink<'_>>,
    window: Option<Instant>,
) -> io::Result<Finish> {
    let start = Instant::now();
    // The guard cleans up after a crashed host; it starts with the first command.
    crate::process::guard::ensure();
    let child = spawn::spawn(spec)?;
    let mut guard = GroupGuard {
        group: &child.group,
        armed: true,
    };
    let mut run = Run::new(
        &child.group,
        Streams {
            stdout: child.stdout,
            stderr: child.stderr,
            stdin: child.stdin,
            pidfd: child.pidfd,
        },
        stdin_data,
        limits,
        cancel,
        sink,
        start + limits.timeout,
    );
    if !run.until_exit(window) {
        let mut parked = run.park();
        guard.armed = false;
        drop(guard);
        let stdin_rest = parked.take_stdin_rest();
        return Ok(Finish::Running(Detached {
            group: child.group,
            limits: limits.clone(),
            stdin_rest,
            parked: Some(parked),
            start,
        }));
    }
    let outcome = finish(&mut run, limits, start);
    guard.armed = false;
    Ok(Finish::Ended(outcome))
}

/// After phase 1: kill and reap the group, sweep what escaped it when the
/// run did not end by itself, drain the pipes.
fn finish(run: &mut Run<'_, '_>, limits: &RunLimits, start: Instant) -> RawOutcome {
    let (exit_at, status) = run.kill_and_reap();
    // Without a status the shell was reaped early and its group id may be gone:
    // find what it left by the run's marker instead.
    if run.ending != Ending::Exited
        && let Some(marker) = &limits.run_marker
    {
        sweep_escapees(marker);
    }
    run.drain(exit_at);
    RawOutcome {
        ending: run.ending,
        status,
        stdout: std::mem::replace(&mut run.output.stdout, BoundedOutput::new(0)),
        stderr: run.output.stderr.take(),
        elapsed: exit_at - start,
    }
}

/// A command still running, handed back by [`run_within`]: it owns the
/// process group and everything the run had, and kills the group if it is
/// dropped without being resumed.
pub(crate) struct Detached {
    group: spawn::Group,
    limits: RunLimits,
    stdin_rest: Vec<u8>,
    /// `None` once resumed.
    parked: Option<Parked>,
    start: Instant,
}

impl Detached {
    /// Goes on with the run to its end (time limit, cancel and drain as
    /// before), under `cancel` and writing to `sink` from now on.
    pub(crate) fn resume(mut self, cancel: Option<&CancelToken>, sink: Option<OutputSink<'_>>) -> RawOutcome {
        let parked = self.parked.take().expect("a detached run is resumed once");
        let mut guard = GroupGuard {
            group: &self.group,
            armed: true,
        };
        let mut run = Run::resume(&self.group, parked, &self.stdin_rest, &self.limits, cancel, sink);
        run.until_exit(None);
        let outcome = finish(&mut run, &self.limits, self.start);
        guard.armed = false;
        outcome
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        if self.parked.is_some() {
            self.group.kill(libc::SIGKILL);
            self.group.reap_status();
        }
    }
}
