//! The reader thread: drains a session's terminal, parses the markers and applies them to its state.

use std::os::fd::AsFd;

use rustix::event::{PollFd, PollFlags, Timespec};
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
        // On the stack: this loop turns once per terminal read. The stop
        // descriptor first, then the terminal while open, then the pidfd.
        let mut fds = [(); 3].map(|()| PollFd::new(&session.stop, PollFlags::IN));
        let mut count = 1;
        let mut slots = [None; 2];
        let wanted = [
            master_open.then(|| session.master.as_fd()),
            pidfd.as_ref().map(AsFd::as_fd),
        ];
        for (slot, fd) in slots.iter_mut().zip(wanted) {
            if let Some(fd) = fd {
                fds[count] = PollFd::from_borrowed_fd(fd, PollFlags::IN);
                *slot = Some(count);
                count += 1;
            }
        }
        let [master_slot, pid_slot] = slots;
        // Without a pidfd, whether the shell exited is looked at every 20 ms.
        let tick = Timespec {
            tv_sec: 0,
            tv_nsec: 20_000_000,
        };
        let _ = rustix::event::poll(&mut fds[..count], pidfd.is_none().then_some(&tick));
        let ready = |slot: Option<usize>| slot.is_some_and(|i| !fds[i].revents().is_empty());
        if ready(Some(0)) {
            return;
        }
        if ready(master_slot) {
            session.in_flight.store(true, std::sync::atomic::Ordering::SeqCst);
            // One read per wake-up: the terminal holds at most 4 KiB for
            // its reader (N_TTY_BUF_SIZE) and refills it from a kernel worker
            // after each read, so a second read would only find it empty.
            let n = rustix::io::read(&session.master, &mut buf);
            // Whether the terminal is still open (EIO: no process holds the
            // slave any more).
            let open = matches!(n, Ok(n) if n > 0) || n == Err(rustix::io::Errno::AGAIN);
            let filled = n.unwrap_or(0);
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
            Some(_) => ready(pid_slot),
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
        let n = match rustix::io::read(&session.master, &mut *buf) {
            Ok(n) if n > 0 => n,
            _ => break,
        };
        events.clear();
        parser.feed(&buf[..n], events);
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
    while let Err(rustix::io::Errno::INTR) = rustix::event::poll(&mut [PollFd::new(&session.stop, PollFlags::IN)], None)
    {
    }
}

/// The exit status of our exited, unreaped child, without reaping it.
fn exit_status_peek(pid: libc::pid_t) -> i32 {
    use rustix::process::{Pid, WaitId, WaitIdOptions};
    let Some(pid) = Pid::from_raw(pid) else {
        return -1;
    };
    // WNOWAIT leaves the child unreaped.
    match rustix::process::waitid(WaitId::Pid(pid), WaitIdOptions::EXITED | WaitIdOptions::NOWAIT) {
        Ok(Some(status)) => match status.exit_status() {
            Some(code) => code,
            None => 128 + status.terminating_signal().unwrap_or(0),
        },
        _ => -1,
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
