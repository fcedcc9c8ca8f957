//! A run's phases over its shared state: until the shell exits (with the time
//! limit, cancel and grace kill), feeding stdin, kill and reap, bounded drain.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use super::pipes::{Pipe, ReadBuffer, ReadResult, poll, pollfd, read_ready, read_some, write_without_sigpipe};
use super::{Ending, FALLBACK_TICK, OutputSink, OutputStream, RunLimits, SWEPT_DRAIN, sweep_escapees};
use crate::process::cancel::CancelToken;
use crate::process::capture::BoundedOutput;
use crate::process::spawn;

/// The descriptors a spawned command hands the run.
pub(super) struct Streams {
    pub(super) stdout: OwnedFd,
    pub(super) stderr: Option<OwnedFd>,
    pub(super) stdin: Option<OwnedFd>,
    pub(super) pidfd: Option<OwnedFd>,
}

/// Where a run's output goes: its captures, and the caller's sink.
pub(super) struct Output<'s> {
    pub(super) stdout: BoundedOutput,
    pub(super) stderr: Option<BoundedOutput>,
    pub(super) sink: Option<OutputSink<'s>>,
}

impl Output<'_> {
    /// Reads `stream` once from `fd` and delivers the bytes: into the
    /// capture's keeper in place when it has room (the bytes are not copied
    /// again on their way to the file), else through `buf`.
    fn read(&mut self, stream: OutputStream, fd: BorrowedFd<'_>, buf: &mut [u8]) -> ReadResult {
        let capture = match (stream, self.stderr.as_mut()) {
            (OutputStream::Stderr, Some(err)) => err,
            _ => &mut self.stdout,
        };
        let (result, data) = match capture.read_room() {
            Some(room) => match read_some(fd, room) {
                ReadResult::Data(n) => (ReadResult::Data(n), capture.push_in_place(n)),
                other => return other,
            },
            None => match read_some(fd, buf) {
                ReadResult::Data(n) => {
                    capture.push(&buf[..n]);
                    (ReadResult::Data(n), &buf[..n])
                }
                other => return other,
            },
        };
        if let Some(sink) = self.sink.as_mut() {
            sink(data, stream);
        }
        result
    }
}

/// Where one turn of phase 1 looks: the pipes first, then these slots of `fds`.
pub(super) struct PollSet {
    pub(super) fds: Vec<libc::pollfd>,
    pub(super) stdin_slot: Option<usize>,
    pub(super) pid_slot: Option<usize>,
}

/// A run's own state while no thread runs it: everything but what it
/// borrows (the group, the limits, stdin's bytes, the cancel token, the sink).
pub(super) struct Parked {
    pipes: Vec<Pipe>,
    stdin: Option<(OwnedFd, Vec<u8>)>,
    pidfd: Option<OwnedFd>,
    pidfd_to_open: bool,
    first_look: bool,
    buf: ReadBuffer,
    ending: Ending,
    grace_until: Option<Instant>,
    exited: bool,
    stdout: BoundedOutput,
    stderr: Option<BoundedOutput>,
    deadline: Instant,
}

impl Parked {
    /// The bytes still to write to the command's stdin (moved out: the
    /// resumed run borrows them from their new owner).
    pub(super) fn take_stdin_rest(&mut self) -> Vec<u8> {
        self.stdin
            .as_mut()
            .map(|(_, rest)| std::mem::take(rest))
            .unwrap_or_default()
    }
}

/// One run's state, shared by its phases.
pub(super) struct Run<'a, 's> {
    pub(super) group: &'a spawn::Group,
    pub(super) limits: &'a RunLimits,
    pub(super) cancel: Option<&'a CancelToken>,
    pub(super) deadline: Instant,
    pub(super) pipes: Vec<Pipe>,
    pub(super) stdin: Option<(OwnedFd, &'a [u8])>,
    pub(super) pidfd: Option<OwnedFd>,
    /// Whether a pidfd may still be opened (a local child, not yet tried).
    pub(super) pidfd_to_open: bool,
    pub(super) first_look: bool,
    pub(super) buf: ReadBuffer,
    pub(super) ending: Ending,
    pub(super) grace_until: Option<Instant>,
    pub(super) exited: bool,
    pub(super) output: Output<'s>,
}

impl<'a, 's> Run<'a, 's> {
    pub(super) fn new(
        group: &'a spawn::Group,
        streams: Streams,
        stdin_data: Option<&'a [u8]>,
        limits: &'a RunLimits,
        cancel: Option<&'a CancelToken>,
        sink: Option<OutputSink<'s>>,
        deadline: Instant,
    ) -> Self {
        let capture = || match &limits.keep {
            Some(store) => BoundedOutput::keeping(limits.output_limit, store.keeper()),
            None => BoundedOutput::new(limits.output_limit),
        };
        let stdout = capture();
        let stderr = streams.stderr.as_ref().map(|_| capture());
        let mut pipes: Vec<Pipe> = vec![Pipe {
            fd: streams.stdout,
            stream: OutputStream::Stdout,
            grown: false,
        }];
        if let Some(fd) = streams.stderr {
            pipes.push(Pipe {
                fd,
                stream: OutputStream::Stderr,
                grown: false,
            });
        }
        let pidfd_to_open = streams.pidfd.is_none() && matches!(group, spawn::Group::Local(_));
        Self {
            group,
            limits,
            cancel,
            deadline,
            pipes,
            stdin: streams.stdin.map(|fd| (fd, stdin_data.unwrap_or_default())),
            pidfd: streams.pidfd,
            pidfd_to_open,
            first_look: true,
            buf: ReadBuffer::take(),
            ending: Ending::Exited,
            grace_until: None,
            exited: false,
            output: Output { stdout, stderr, sink },
        }
    }

    /// Stops the run where it stands, keeping what it needs to go on.
    pub(super) fn park(self) -> Parked {
        Parked {
            pipes: self.pipes,
            stdin: self.stdin.map(|(fd, rest)| (fd, rest.to_vec())),
            pidfd: self.pidfd,
            pidfd_to_open: self.pidfd_to_open,
            first_look: self.first_look,
            buf: self.buf,
            ending: self.ending,
            grace_until: self.grace_until,
            exited: self.exited,
            stdout: self.output.stdout,
            stderr: self.output.stderr,
            deadline: self.deadline,
        }
    }

    /// Goes on with a parked run, possibly on another thread, with the
    /// stdin bytes [`Parked::take_stdin_rest`] took out, under `cancel`
    /// and writing to `sink` from now on.
    pub(super) fn resume(
        group: &'a spawn::Group,
        parked: Parked,
        stdin_rest: &'a [u8],
        limits: &'a RunLimits,
        cancel: Option<&'a CancelToken>,
        sink: Option<OutputSink<'s>>,
    ) -> Self {
        Self {
            group,
            limits,
            cancel,
            deadline: parked.deadline,
            pipes: parked.pipes,
            stdin: parked.stdin.map(|(fd, _)| (fd, stdin_rest)),
            pidfd: parked.pidfd,
            pidfd_to_open: parked.pidfd_to_open,
            first_look: parked.first_look,
            buf: parked.buf,
            ending: parked.ending,
            grace_until: parked.grace_until,
            exited: parked.exited,
            output: Output {
                stdout: parked.stdout,
                stderr: parked.stderr,
                sink,
            },
        }
    }

    /// Phase 1: until the shell exits (or, after a timeout with grace, until
    /// the grace period ends or every writer has gone). With a `window`,
    /// returns `false` when it closes on a command still running as usual
    /// (not being stopped), so the run can be parked and resumed elsewhere.
    pub(super) fn until_exit(&mut self, window: Option<Instant>) -> bool {
        loop {
            let now = Instant::now();
            self.enforce_limits(now);
            if self.exited && (self.grace_until.is_none() || self.pipes.is_empty()) {
                return true;
            }
            if window.is_some_and(|w| now >= w) && self.ending == Ending::Exited && !self.exited {
                return false;
            }
            let mut set = self.poll_set();
            let mut wait = self.wait_for(now, set.pid_slot);
            if let Some(window) = window {
                wait = wait.min(window.saturating_duration_since(now));
            }
            poll(&mut set.fds, wait);
            // Output first, so nothing written before the exit is missed.
            let output = &mut self.output;
            let buf = &mut self.buf;
            read_ready(&mut self.pipes, &set.fds, &mut |stream, fd| {
                output.read(stream, fd, buf)
            });
            if let Some(slot) = set.stdin_slot
                && set.fds[slot].revents != 0
            {
                self.feed_stdin();
            }
            if !self.exited {
                self.exited = match set.pid_slot {
                    Some(slot) => set.fds[slot].revents != 0,
                    None => self.group.has_exited(),
                };
            }
        }
    }

    /// On a cancel or the deadline, kills the group (SIGTERM first when there
    /// is a grace period); when the grace period ends, SIGKILL.
    fn enforce_limits(&mut self, now: Instant) {
        if self.ending == Ending::Exited && !self.exited {
            let reason = if self.cancel.is_some_and(CancelToken::is_cancelled) {
                Some(Ending::Cancelled)
            } else if now >= self.deadline {
                Some(Ending::TimedOut)
            } else {
                None
            };
            if let Some(reason) = reason {
                self.ending = reason;
                if self.limits.kill_grace.is_zero() {
                    self.group.kill(libc::SIGKILL);
                } else {
                    self.group.kill(libc::SIGTERM);
                    self.grace_until = Some(now + self.limits.kill_grace);
                }
            }
        }
        if let Some(until) = self.grace_until
            && now >= until
        {
            self.group.kill(libc::SIGKILL);
            self.grace_until = None;
        }
    }

    /// The descriptors one turn of phase 1 polls; opens the pidfd once the
    /// command has outlived its first look.
    fn poll_set(&mut self) -> PollSet {
        let mut fds: Vec<libc::pollfd> = self
            .pipes
            .iter()
            .map(|p| pollfd(p.fd.as_raw_fd(), libc::POLLIN))
            .collect();
        let stdin_slot = self.stdin.as_ref().map(|(fd, _)| {
            fds.push(pollfd(fd.as_raw_fd(), libc::POLLOUT));
            fds.len() - 1
        });
        if !self.exited && self.pidfd_to_open && !self.first_look {
            self.pidfd_to_open = false;
            self.pidfd = spawn::pidfd_open(self.group.pid());
        }
        self.first_look = false;
        let pid_slot = self.pidfd.as_ref().filter(|_| !self.exited).map(|fd| {
            fds.push(pollfd(fd.as_raw_fd(), libc::POLLIN));
            fds.len() - 1
        });
        if self.ending == Ending::Exited
            && let Some(fd) = self.cancel.and_then(CancelToken::wake_fd)
        {
            fds.push(pollfd(fd, libc::POLLIN));
        }
        PollSet {
            fds,
            stdin_slot,
            pid_slot,
        }
    }

    /// How long one turn of phase 1 may wait in `poll`.
    fn wait_for(&self, now: Instant, pid_slot: Option<usize>) -> Duration {
        let mut wait = if self.ending == Ending::Exited {
            self.deadline.saturating_duration_since(now)
        } else {
            Duration::MAX
        };
        if let Some(until) = self.grace_until {
            wait = wait.min(until.saturating_duration_since(now));
        }
        if pid_slot.is_none() && !self.exited {
            wait = wait.min(FALLBACK_TICK);
        }
        if self.cancel.is_some_and(|c| c.wake_fd().is_none()) {
            wait = wait.min(Duration::from_millis(50));
        }
        wait
    }

    /// Writes what the command's stdin takes now; closes it when all is written.
    fn feed_stdin(&mut self) {
        let (fd, rest) = self.stdin.as_mut().expect("stdin slot implies stdin");
        match write_without_sigpipe(fd.as_raw_fd(), rest) {
            Ok(n) => *rest = &rest[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => *rest = &[], // reader gone: the command does not want more
        }
        if rest.is_empty() {
            self.stdin = None; // closing gives the command its EOF
        }
    }

    /// The shell has exited but is not reaped: its group id is still ours.
    /// Kills whatever it left running, then reaps; returns when the shell
    /// was seen gone and its status.
    pub(super) fn kill_and_reap(&mut self) -> (Instant, i32) {
        self.stdin = None;
        let exit_at = Instant::now();
        self.group.kill(libc::SIGKILL);
        let status = match self.group.reap_status() {
            Some(status) => status,
            None => {
                tracing::warn!(
                    "the exit status of a command was lost: this process ignores SIGCHLD \
                     (SIG_IGN or SA_NOCLDWAIT), so the kernel reaped the shell itself"
                );
                if self.ending == Ending::Exited {
                    self.ending = Ending::StatusLost;
                }
                -1
            }
        };
        (exit_at, status)
    }

    /// Phase 2: drain what is still in the pipes, bounded in time: a process
    /// that left the group (setsid) may hold a write end forever.
    pub(super) fn drain(&mut self, exit_at: Instant) {
        let mut drain_deadline = exit_at + self.limits.drain;
        let mut swept = false;
        while !self.pipes.is_empty() {
            let now = Instant::now();
            if now >= drain_deadline {
                if !swept
                    && let Some(marker) = &self.limits.run_marker
                    && sweep_escapees(marker) > 0
                {
                    // The holders are gone, so their write ends close: read what
                    // they left, briefly.
                    swept = true;
                    drain_deadline = now + SWEPT_DRAIN;
                    continue;
                }
                tracing::debug!(
                    pid = self.group.pid(),
                    "drain bound reached; a process outside the group holds the output pipe"
                );
                break;
            }
            let mut fds: Vec<libc::pollfd> = self
                .pipes
                .iter()
                .map(|p| pollfd(p.fd.as_raw_fd(), libc::POLLIN))
                .collect();
            poll(&mut fds, drain_deadline - now);
            let output = &mut self.output;
            let buf = &mut self.buf;
            read_ready(&mut self.pipes, &fds, &mut |stream, fd| output.read(stream, fd, buf));
        }
    }
}
