//! Typing into a session: a command, input for the terminal, an interrupt; and
//! reading or waiting for what comes back.

use std::os::fd::AsFd;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

use super::keys::{KEY_NAMES, key_bytes};
use super::{
    HistoryMode, OnToldSecret, Phase, RunOptions, RunResult, Session, SessionManager, ShellKind, State,
    check_line_lengths, closed, echo, internal, pty, shell, shell_exited, snapshot, validate_command,
};
use crate::error::{ErrorCode, ToolError};

impl SessionManager {
    /// Runs `command` in the session's shell and waits for it up to the
    /// timeout; a command still running then keeps running (`RunState::Running`).
    pub fn run(&self, id: &str, command: &str, options: &RunOptions) -> Result<RunResult, ToolError> {
        let session = self.get(id)?;
        validate_command(command)?;
        let mode = history_mode(&session, options)?;
        let _busy = session.busy.lock().unwrap_or_else(PoisonError::into_inner);
        check_ready(&session.lock(), id)?;
        session
            .cmd_file
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(&shell::command_file(session.kind, command))
            .map_err(|e| internal(format!("could not write the session's command file: {e}")))?;
        let keep = mode == HistoryMode::Keep;
        if keep {
            let text = match session.kind {
                ShellKind::Fish => shell::fish_history_record(command, unix_now()),
                _ => command.to_owned(),
            };
            session
                .hist_file
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .replace_exactly(&text)
                .map_err(|e| internal(format!("could not write the session's history file: {e}")))?;
        }
        let line = shell::command_line(session.kind, keep);
        {
            let mut state = session.lock();
            let now = Instant::now();
            state.phase = Phase::Running;
            state.started = false;
            state.typed = false;
            state.cmd_started = now;
            state.begin_output(session.output_limit, session.outputs.as_ref(), now);
            state.delivered = state.ring.end();
            state.echo.clear();
            state.secret_told = false;
            session.view().command_typed(command);
        }
        pty::write_all(session.master.as_fd(), line.as_bytes())
            .map_err(|e| internal(format!("could not write to the session's terminal: {e}")))?;
        let wait = self.wait_limit(options.timeout);
        Ok(self.await_command(&session, wait, options.raw, true, OnToldSecret::Return))
    }

    fn wait_limit(&self, requested: Option<Duration>) -> Duration {
        let guard = self.inner.config.lock().unwrap_or_else(PoisonError::into_inner);
        guard.1.effective_timeout(requested.or(Some(guard.3)))
    }

    /// Waits up to `timeout` for the running command to finish (or to block
    /// on input) and returns the output since the last call.
    pub fn wait(&self, id: &str, timeout: Duration, raw: bool) -> Result<RunResult, ToolError> {
        let session = self.get(id)?;
        let timeout = self.wait_limit(Some(timeout));
        Ok(self.await_command(&session, timeout, raw, false, OnToldSecret::AwaitAnswer))
    }

    /// Output since `cursor` (default: since the last returned output), without waiting.
    pub fn read(&self, id: &str, cursor: Option<u64>, raw: bool) -> Result<RunResult, ToolError> {
        let session = self.get(id)?;
        let mut state = session.lock();
        if let Some(c) = cursor {
            state.delivered = c;
        }
        Ok(snapshot(&session, &mut state, raw, false, false))
    }

    /// Sends text and named keys to the terminal, then waits up to `wait`
    /// like [`SessionManager::wait`]. The input is sent exactly as given.
    ///
    /// With no command running, the shell reads the input as a line of its
    /// own: the result has that line's output with [`RunState::Idle`](super::RunState::Idle) (no
    /// exit status). While the terminal is in line (canonical) mode, input
    /// with a line longer than 4095 bytes is refused (`InvalidArguments`),
    /// since the kernel would drop the rest of it.
    pub fn write(
        &self,
        id: &str,
        text: &str,
        keys: &[String],
        wait: Duration,
        raw: bool,
    ) -> Result<RunResult, ToolError> {
        let session = self.get(id)?;
        let bytes = input_bytes(text, keys)?;
        if pty::canonical(session.master.as_fd()) {
            check_line_lengths(&bytes)?;
        }
        {
            let mut state = session.lock();
            match state.phase {
                Phase::Exited(code) => return Err(shell_exited(code)),
                Phase::Closed => return Err(closed(id)),
                Phase::Idle => {
                    // No command runs: the shell itself reads this input as a
                    // line of its own. Collect what it prints until its next
                    // end marker; there is no exit status to report.
                    state.typed = true;
                    state.last_exit = None;
                    state.begin_output(session.output_limit, session.outputs.as_ref(), Instant::now());
                    state.delivered = state.ring.end();
                }
                Phase::Starting | Phase::Running => {}
            }
            if pty::echoes(session.master.as_fd())
                && let Some(echo) = echo::expected(&bytes)
            {
                state.echo.expect(&echo);
            }
        }
        pty::write_all(session.master.as_fd(), &bytes)
            .map_err(|e| internal(format!("could not write to the session's terminal: {e}")))?;
        let wait = self.wait_limit(Some(wait.max(Duration::from_millis(1))));
        // Give the program a moment to consume the input before looking at its state.
        std::thread::sleep(Duration::from_millis(20).min(wait));
        Ok(self.await_command(
            &session,
            wait.saturating_sub(Duration::from_millis(20)),
            raw,
            false,
            OnToldSecret::Return,
        ))
    }

    /// Sends SIGINT to the terminal's foreground process group, and waits up
    /// to `wait` for the prompt. At an idle prompt nothing is sent, and the
    /// result is [`RunState::Idle`](super::RunState::Idle).
    pub fn interrupt(&self, id: &str, wait: Duration) -> Result<RunResult, ToolError> {
        let session = self.get(id)?;
        let at_prompt = {
            // At the prompt there is no command to report on afterwards.
            let mut state = session.lock();
            if state.phase == Phase::Idle {
                state.last_exit = None;
            }
            state.phase == Phase::Idle && !state.typed
        };
        // Nothing runs at an idle prompt, and a shell interrupted there may
        // drop the next line it reads (zsh does): leave it alone.
        if !at_prompt && let Some(pgrp) = pty::foreground_group(session.master.as_fd()) {
            crate::process::spawn::kill_group(pgrp, libc::SIGINT);
        }
        let wait = self.wait_limit(Some(wait.max(Duration::from_millis(1))));
        Ok(self.await_command(&session, wait, false, false, OnToldSecret::Return))
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The history mode of one command. sh keeps no history file: a default of
/// "keep" records nothing there (as the shell itself would), but an explicit
/// request is refused.
fn history_mode(session: &Session, options: &RunOptions) -> Result<HistoryMode, ToolError> {
    Ok(match options.history {
        Some(HistoryMode::Keep) if !session.kind.has_history() => {
            return Err(ToolError::new(
                ErrorCode::HistoryUnsupported,
                "this session's shell (sh) keeps no history file, so `history: \"keep\"` cannot be honoured",
                "leave out `history` (or pass \"suppress\"), or run the command in a bash, zsh or fish session",
            ));
        }
        Some(mode) => mode,
        None if session.kind.has_history() => session.history,
        None => HistoryMode::Suppress,
    })
}

/// Refuses a command while another runs, or once the shell has gone.
fn check_ready(state: &State, id: &str) -> Result<(), ToolError> {
    match state.phase {
        Phase::Running => Err(ToolError::new(
            ErrorCode::SessionBusy,
            "a command is still running in this session",
            "use session_wait to wait for it, session_write to answer it, or session_interrupt to stop it; or start another session",
        )),
        Phase::Exited(code) => Err(shell_exited(code)),
        Phase::Closed => Err(closed(id)),
        _ => Ok(()),
    }
}

/// The bytes of `text` followed by those of the named `keys`.
fn input_bytes(text: &str, keys: &[String]) -> Result<Vec<u8>, ToolError> {
    let mut bytes = text.as_bytes().to_vec();
    for key in keys {
        bytes.extend_from_slice(
            key_bytes(key)
                .ok_or_else(|| {
                    ToolError::new(
                        ErrorCode::InvalidArguments,
                        format!("unknown key name {key:?}"),
                        format!(
                            "use one of: {} (also Return for Enter, Esc for Escape), or C-<letter> / Ctrl-<letter> such as C-c",
                            KEY_NAMES.join(", ")
                        ),
                    )
                })?
                .as_slice(),
        );
    }
    Ok(bytes)
}
