//! Waiting on a session's command and building its result from the session's state.

use std::os::fd::AsFd;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

use super::{INPUT_CHECK, Phase, RunResult, RunState, Session, SessionManager, State, pty};

/// What a wait does when the command reads a secret the agent was already
/// told about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OnToldSecret {
    /// Returns, as for any other input (`session_run`, `session_write`,
    /// `session_interrupt`).
    Return,
    /// Waits for a person to answer it (`session_wait`): the wait ends when
    /// the command ends, when it waits for input again after the prompt was
    /// answered, or at the timeout.
    AwaitAnswer,
}

impl SessionManager {
    pub(super) fn await_command(
        &self,
        session: &Session,
        timeout: Duration,
        raw: bool,
        whole: bool,
        on_secret: OnToldSecret,
    ) -> RunResult {
        let deadline = Instant::now() + timeout;
        // Looking at the kernel's view scans /proc: only once a wait has passed
        // without the command ending, so quick commands never pay for it.
        let mut next_input_check = Instant::now() + INPUT_CHECK;
        let mut state = session.lock();
        loop {
            if !state.in_progress() {
                return snapshot(session, &mut state, raw, whole, false);
            }
            let now = Instant::now();
            if now >= next_input_check && state.started_reading() {
                let awaits_answer = on_secret == OnToldSecret::AwaitAnswer && state.secret_told;
                if awaits_answer && !on_secret_prompt(session) {
                    // Answered (or gone): the next input wait is news again.
                    state.secret_told = false;
                }
                let still_told = awaits_answer && state.secret_told;
                if !still_told && waiting_for_input(session) {
                    // The reader may hold the final marker: look again once it is idle.
                    drop(state);
                    state = session.lock();
                    if state.in_progress() {
                        return snapshot(session, &mut state, raw, whole, false);
                    }
                    continue;
                }
            }
            if now >= next_input_check {
                next_input_check = now + INPUT_CHECK;
            }
            if now >= deadline {
                return snapshot(session, &mut state, raw, whole, true);
            }
            let step = deadline
                .saturating_duration_since(now)
                .min(next_input_check.saturating_duration_since(now));
            state = session
                .changed
                .wait_timeout(state, step)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// Whether a foreground process still reads the terminal with echo off in
/// line mode: the secret prompt is there, whatever else is printed meanwhile.
fn on_secret_prompt(session: &Session) -> bool {
    pty::hides_input(session.master.as_fd()) && pty::foreground_reading(session.master.as_fd(), session.tty)
}

pub(super) fn snapshot(session: &Session, state: &mut State, raw: bool, whole: bool, timed_out: bool) -> RunResult {
    let running = state.phase == Phase::Running;
    // The first result of a command (`whole`) is its output so far as head
    // and tail; later results are what the ring holds since the last one.
    let mut output_id = None;
    let (text, lost, truncated_whole) = if whole {
        if !state.in_progress() {
            // Before rendering: the marker line names where the whole output is kept.
            output_id = state.output.finish_keeping().and_then(|kept| kept.output_id);
        }
        (state.output.render(), 0, state.output.is_truncated())
    } else {
        let (bytes, lost) = state.ring.since(state.delivered);
        (String::from_utf8_lossy(&bytes).into_owned(), lost, false)
    };
    let mut output = if raw { text } else { crate::process::term::clean(&text) };
    if lost > 0 {
        output.insert_str(
            0,
            &format!("[... {lost} bytes of earlier output were dropped from the session's buffer ...]\n"),
        );
    }
    state.delivered = state.ring.end();
    state.last_activity = Instant::now();
    let duration = if running {
        state.cmd_started.elapsed()
    } else {
        state.cmd_duration
    };
    let run_state = run_state(state);
    let waiting = state.in_progress() && state.started_reading() && waiting_for_input(session);
    let secret_prompt = waiting && pty::hides_input(session.master.as_fd());
    if secret_prompt {
        state.secret_told = true;
    }
    RunResult {
        session_id: session.id.clone(),
        session_name: session.handle.clone(),
        watchers: session.view().watchers(),
        person_typed: std::mem::take(&mut state.person_typed),
        secret_prompt,
        state: run_state,
        output,
        truncated: truncated_whole || lost > 0,
        output_bytes: state.output.total(),
        cwd: Some(state.cwd.clone()),
        duration,
        timed_out,
        waiting_for_input: waiting,
        cursor: state.ring.end(),
        output_id,
    }
}

/// What a result reports of the session's phase.
fn run_state(state: &State) -> RunState {
    match state.phase {
        Phase::Running => RunState::Running,
        Phase::Exited(code) => RunState::ShellExited(code),
        Phase::Closed => RunState::Closed,
        Phase::Starting | Phase::Idle => match state.last_exit {
            Some(code) => RunState::Finished(code),
            None => RunState::Idle,
        },
    }
}

/// Whether the foreground process waits on the terminal and nothing the
/// shell wrote is still unread or unapplied (so a finished command whose end
/// marker is in flight is not mistaken for one waiting for input).
pub(super) fn waiting_for_input(session: &Session) -> bool {
    use std::sync::atomic::Ordering;
    if !pty::foreground_reading(session.master.as_fd(), session.tty) {
        return false;
    }
    let mut fds = [rustix::event::PollFd::new(
        &session.master,
        rustix::event::PollFlags::IN,
    )];
    // A zero timeout only looks.
    let now = rustix::event::Timespec { tv_sec: 0, tv_nsec: 0 };
    let pending = rustix::event::poll(&mut fds, Some(&now)).is_ok_and(|n| n > 0)
        && fds[0].revents().contains(rustix::event::PollFlags::IN);
    !pending && !session.in_flight.load(Ordering::SeqCst)
}
