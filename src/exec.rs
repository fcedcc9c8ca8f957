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

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use crate::cancel::CancelToken;
use crate::capture::BoundedOutput;
use crate::spawn::{self, SpawnSpec};

/// Which stream a chunk of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(C)]
pub enum OutputStream {
    /// Standard output (also used for merged output).
    Stdout = 1,
    /// Standard error (only with [`Streams::Separate`](crate::Streams::Separate)).
    Stderr = 2,
}

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

/// Receives output chunks as they arrive.
pub type OutputSink<'a> = &'a mut dyn FnMut(&[u8], OutputStream);

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

struct Pipe {
    fd: OwnedFd,
    stream: OutputStream,
    /// Whether the pipe has been grown past its default capacity.
    grown: bool,
}

const READ_CHUNK: usize = 256 * 1024;
/// How long pipes are drained after the processes holding them were swept.
const SWEPT_DRAIN: Duration = Duration::from_millis(200);
/// Poll interval when the kernel offers no pidfd.
const FALLBACK_TICK: Duration = Duration::from_millis(5);

/// Runs one command; see the module docs for the guarantees.
pub(crate) fn run(
    spec: &SpawnSpec<'_>,
    stdin_data: Option<&[u8]>,
    limits: &RunLimits,
    cancel: Option<&CancelToken>,
    sink: Option<OutputSink<'_>>,
) -> io::Result<RawOutcome> {
    let start = Instant::now();
    // The guard cleans up after a crashed host; it starts with the first command.
    crate::guard::ensure();
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
    run.until_exit();
    let (exit_at, status) = run.kill_and_reap();
    guard.armed = false;
    // Without a status the shell was reaped early and its group id may be gone:
    // find what it left by the run's marker instead.
    if run.ending != Ending::Exited
        && let Some(marker) = &limits.run_marker
    {
        sweep_escapees(marker);
    }
    run.drain(exit_at);
    Ok(RawOutcome {
        ending: run.ending,
        status,
        stdout: run.output.stdout,
        stderr: run.output.stderr,
        elapsed: exit_at - start,
    })
}

/// The descriptors a spawned command hands the run.
struct Streams {
    stdout: OwnedFd,
    stderr: Option<OwnedFd>,
    stdin: Option<OwnedFd>,
    pidfd: Option<OwnedFd>,
}

/// Where a run's output goes: its captures, and the caller's sink.
struct Output<'s> {
    stdout: BoundedOutput,
    stderr: Option<BoundedOutput>,
    sink: Option<OutputSink<'s>>,
}

impl Output<'_> {
    fn deliver(&mut self, stream: OutputStream, data: &[u8]) {
        match (stream, self.stderr.as_mut()) {
            (OutputStream::Stderr, Some(err)) => err.push(data),
            _ => self.stdout.push(data),
        }
        if let Some(sink) = self.sink.as_mut() {
            sink(data, stream);
        }
    }
}

/// Where one turn of phase 1 looks: the pipes first, then these slots of `fds`.
struct PollSet {
    fds: Vec<libc::pollfd>,
    stdin_slot: Option<usize>,
    pid_slot: Option<usize>,
}

/// One run's state, shared by its phases.
struct Run<'a, 's> {
    group: &'a spawn::Group,
    limits: &'a RunLimits,
    cancel: Option<&'a CancelToken>,
    deadline: Instant,
    pipes: Vec<Pipe>,
    stdin: Option<(OwnedFd, &'a [u8])>,
    pidfd: Option<OwnedFd>,
    /// Whether a pidfd may still be opened (a local child, not yet tried).
    pidfd_to_open: bool,
    first_look: bool,
    buf: ReadBuffer,
    ending: Ending,
    grace_until: Option<Instant>,
    exited: bool,
    output: Output<'s>,
}

impl<'a, 's> Run<'a, 's> {
    fn new(
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

    /// Phase 1: until the shell exits (or, after a timeout with grace, until
    /// the grace period ends or every writer has gone).
    fn until_exit(&mut self) {
        loop {
            let now = Instant::now();
            self.enforce_limits(now);
            if self.exited && (self.grace_until.is_none() || self.pipes.is_empty()) {
                break;
            }
            let mut set = self.poll_set();
            poll(&mut set.fds, self.wait_for(now, set.pid_slot));
            // Output first, so nothing written before the exit is missed.
            let output = &mut self.output;
            read_ready(&mut self.pipes, &set.fds, &mut self.buf, &mut |stream, data| {
                output.deliver(stream, data)
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
    fn kill_and_reap(&mut self) -> (Instant, i32) {
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
    fn drain(&mut self, exit_at: Instant) {
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
            read_ready(&mut self.pipes, &fds, &mut self.buf, &mut |stream, data| {
                output.deliver(stream, data)
            });
        }
    }
}

/// The read buffer, kept per thread between runs: a fresh 256 KiB buffer on
/// every call would cost an mmap, page faults and an munmap each time.
struct ReadBuffer(Vec<u8>);

thread_local! {
    static SPARE_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

impl ReadBuffer {
    /// This thread's spare buffer, or a new one (e.g. for a run started from
    /// inside another run's output callback).
    fn take() -> Self {
        let mut buf = SPARE_BUFFER.with(|spare| spare.take());
        buf.resize(READ_CHUNK, 0);
        Self(buf)
    }
}

impl Drop for ReadBuffer {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.0);
        let _ = SPARE_BUFFER.try_with(|spare| spare.set(buf));
    }
}

impl std::ops::Deref for ReadBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl std::ops::DerefMut for ReadBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

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
            // SAFETY: plain syscall on a pid that carried this run's marker a moment ago.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed += 1;
        }
    }
    if killed > 0 {
        tracing::debug!(killed, "killed processes that had left the command's process group");
    }
    killed
}

/// Reads once from each pipe `poll` reported ready (`fds` starts with one
/// entry per pipe, in order), hands data to `deliver`, and drops pipes at EOF.
fn read_ready(
    pipes: &mut Vec<Pipe>,
    fds: &[libc::pollfd],
    buf: &mut [u8],
    deliver: &mut impl FnMut(OutputStream, &[u8]),
) {
    let mut index = 0;
    pipes.retain_mut(|pipe| {
        let ready = fds[index].revents != 0;
        index += 1;
        if !ready {
            return true;
        }
        match read_some(pipe.fd.as_raw_fd(), buf) {
            ReadResult::Data(n) => {
                if n >= spawn::DEFAULT_PIPE_SIZE && !pipe.grown {
                    spawn::grow_pipe(pipe.fd.as_raw_fd());
                    pipe.grown = true;
                }
                deliver(pipe.stream, &buf[..n]);
                true
            }
            ReadResult::Eof => false,
            ReadResult::WouldBlock => true,
        }
    });
}

fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd { fd, events, revents: 0 }
}

fn poll(fds: &mut [libc::pollfd], wait: Duration) {
    // Round up so a sub-millisecond remainder does not spin.
    let ms = if wait == Duration::MAX {
        -1
    } else {
        wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int
    };
    // SAFETY: fds is a valid slice of pollfd.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if rc < 0 {
        // EINTR: the caller loops and re-polls.
        for fd in fds.iter_mut() {
            fd.revents = 0;
        }
    }
}

enum ReadResult {
    Data(usize),
    Eof,
    WouldBlock,
}

fn read_some(fd: RawFd, buf: &mut [u8]) -> ReadResult {
    loop {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            return ReadResult::Data(n as usize);
        }
        if n == 0 {
            return ReadResult::Eof;
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN) => return ReadResult::WouldBlock,
            _ => return ReadResult::Eof,
        }
    }
}

/// Writes to a pipe without letting a vanished reader raise SIGPIPE in the
/// host: the signal is blocked for this thread around the write, and a
/// SIGPIPE raised by it is consumed before the mask is restored.
fn write_without_sigpipe(fd: RawFd, data: &[u8]) -> io::Result<usize> {
    // SAFETY: signal-set manipulation on local sets; write from a valid slice.
    unsafe {
        let mut pipe_set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe_set);
        libc::sigaddset(&mut pipe_set, libc::SIGPIPE);
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe_set, &mut old);
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut pending);
        let was_pending = libc::sigismember(&pending, libc::SIGPIPE) == 1;

        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let result = if n >= 0 {
            Ok(n as usize)
        } else {
            Err(io::Error::last_os_error())
        };

        if matches!(&result, Err(e) if e.raw_os_error() == Some(libc::EPIPE)) && !was_pending {
            let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            libc::sigtimedwait(&pipe_set, std::ptr::null_mut(), &zero);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        result
    }
}
