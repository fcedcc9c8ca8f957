//! The reader thread: drains a session's terminal, parses the markers and applies them to its state.

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Instant;

use super::{Phase, Session, ShellKind, State, marker};

/// Drains the master, parses markers, updates the state; ends when the shell
/// exits or the session is closed.
pub(super) fn read_loop(session: &Session, nonce: &str) {
    let mut parser = marker::Parser::new(nonce);
    let pidfd = crate::process::spawn::pidfd_open(session.pid);
    let mut buf = vec![0u8; 64 * 1024];
    let mut events = Vec::new();
    let mut master_open = true;
    loop {
        // On the stack: this loop turns once per terminal read.
        let entry = |fd: RawFd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut fds = [
            entry(session.stop.as_raw_fd()),
            entry(if master_open { session.master.as_raw_fd() } else { -1 }),
            entry(pidfd.as_ref().map_or(-1, |fd| fd.as_raw_fd())),
        ];
        let count = if pidfd.is_some() { 3 } else { 2 };
        let wait = if pidfd.is_some() { -1 } else { 20 };
        // SAFETY: the first `count` entries of fds are valid pollfds.
        unsafe { libc::poll(fds.as_mut_ptr(), count, wait) };
        if fds[0].revents != 0 {
            return;
        }
        if fds[1].revents != 0 {
            session.in_flight.store(true, std::sync::atomic::Ordering::SeqCst);
            // One read per wake-up: the terminal holds at most 4 KiB for
            // its reader (N_TTY_BUF_SIZE) and refills it from a kernel worker
            // after each read, so a second read would only find it empty.
            // SAFETY: reads into a valid buffer.
            let n = unsafe { libc::read(session.master.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            // Whether the terminal is still open (EIO: no process holds the
            // slave any more).
            let open = n > 0 || (n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EAGAIN));
            let filled = n.max(0) as usize;
            if filled > 0 {
                events.clear();
                parser.feed(&buf[..filled], &mut events);
                apply(session, &mut events);
            }
            session.in_flight.store(false, std::sync::atomic::Ordering::SeqCst);
            if !open {
                master_open = false;
            }
        }
        let exited = match &pidfd {
            Some(_) => fds[2].revents != 0,
            None => crate::process::spawn::has_exited(session.pid),
        };
        if exited {
            record_exit(session, &mut parser, &mut buf, &mut events);
            return;
        }
    }
}

/// The shell has exited: reads what it wrote before, records the exit, and
/// waits for the session's close (the tree is killed and the shell reaped there).
fn record_exit(session: &Session, parser: &mut marker::Parser, buf: &mut [u8], events: &mut Vec<marker::Event>) {
    // Read what the shell wrote before exiting, then record the exit.
    loop {
        // SAFETY: reads into a valid buffer.
        let n = unsafe { libc::read(session.master.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        events.clear();
        parser.feed(&buf[..n as usize], events);
        apply(session, events);
    }
    let code = exit_status_peek(session.pid);
    let mut state = session.lock();
    if state.phase == Phase::Running {
        state.cmd_duration = state.cmd_started.elapsed();
    }
    state.phase = Phase::Exited(code);
    state.last_exit = Some(code);
    drop(state);
    session.changed.notify_all();
    session.view().close();
    // Wait for close (the tree is killed and the shell reaped there).
    let mut stop = [libc::pollfd {
        fd: session.stop.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(stop.as_mut_ptr(), 1, -1) };
}

/// The exit status of our exited, unreaped child, without reaping it.
fn exit_status_peek(pid: libc::pid_t) -> i32 {
    // SAFETY: waitid with WNOWAIT leaves the child unreaped.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        if libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) != 0 {
            return -1;
        }
        let status = info.si_status();
        if info.si_code == libc::CLD_EXITED {
            status
        } else {
            128 + status
        }
    }
}

fn apply(session: &Session, events: &mut Vec<marker::Event>) {
    let mut state = session.lock();
    let mut notify = false;
    for event in events.drain(..) {
        match event {
            marker::Event::Output(bytes) => take_output(session, &mut state, bytes),
            marker::Event::Start => {
                session.view().command_started();
                if state.phase == Phase::Running {
                    state.started = true;
                } else if state.phase == Phase::Idle && state.typed {
                    // The shell runs the typed line: report it as running.
                    let now = Instant::now();
                    state.phase = Phase::Running;
                    state.started = true;
                    state.cmd_started = now;
                    state.begin_output(session.output_limit, session.outputs.as_ref(), now);
                    notify = true;
                }
            }
            marker::Event::Exiting => {
                if state.phase == Phase::Running {
                    state.held = Some(Vec::new());
                }
            }
            marker::Event::End { status, cwd } => {
                session.view().prompt();
                command_ended(&mut state, status, &cwd);
                notify = true;
            }
        }
    }
    drop(state);
    if notify {
        session.changed.notify_all();
    }
}

/// Output between markers: shown to the view, kept for the command (once
/// started, or for a line typed at the prompt) without the agent's echo.
fn take_output(session: &Session, state: &mut State, bytes: Vec<u8>) {
    session.view().output(&bytes);
    let mut bytes = state.echo.filter(bytes);
    if bytes.is_empty() {
        return;
    }
    // At the prompt fish's line editor draws the typed line:
    // its output starts with the start marker.
    let typed = state.phase == Phase::Idle && state.typed && session.kind != ShellKind::Fish;
    if (state.phase == Phase::Running && state.started) || typed {
        if let Some(held) = state.held.as_mut() {
            held.extend_from_slice(&bytes);
            let Some(end) = held.iter().rposition(|b| *b == b'\n') else {
                return;
            };
            bytes = held.drain(..=end).collect();
        }
        state.output.push(&bytes);
        state.ring.push(&bytes);
        state.last_activity = Instant::now();
        // No notify: the waiters wait for a change of phase, and
        // waking them for every chunk of a chatty command cost
        // a context switch per terminal read.
    }
}

/// The shell's end marker: the prompt is back, with its status and directory.
fn command_ended(state: &mut State, status: i32, cwd: &[u8]) {
    state.held = None;
    state.echo.clear();
    state.cwd = PathBuf::from(std::ffi::OsStr::from_bytes(cwd));
    match state.phase {
        Phase::Starting => state.phase = Phase::Idle,
        Phase::Running if state.started => {
            state.phase = Phase::Idle;
            state.last_exit = if state.typed { None } else { Some(status) };
            state.typed = false;
            state.cmd_duration = state.cmd_started.elapsed();
            state.last_activity = Instant::now();
        }
        Phase::Idle => state.typed = false,
        _ => {}
    }
}
