//! Watching and typing into a session's terminal from outside the agent's
//! tools: a host's own terminal view, or a person attached over the
//! server's socket. The agent learns of both from its next result.

use std::os::fd::AsFd;
use std::sync::{Arc, Weak};

use super::view::TerminalCallback;
use super::{Inner, Phase, Session, SessionManager, internal, pty};
use crate::error::{ErrorCode, ToolError};

/// A subscriber's place on a session's view; dropping it unsubscribes.
pub struct Subscription {
    session: Weak<Session>,
    id: Option<u64>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let (Some(session), Some(id)) = (self.session.upgrade(), self.id) {
            session.view().unsubscribe(id);
        }
    }
}

impl Inner {
    /// The id of the session that `key` names: its id, its human name
    /// (`falcon`), its title (`#2 falcon`) or number (`#2`, `2`).
    pub(crate) fn resolve(&self, key: &str) -> Result<String, ToolError> {
        let key = key.trim();
        let number = key.trim_start_matches('#').split_whitespace().next().unwrap_or("");
        let found = self
            .list()
            .into_iter()
            .find(|s| s.id == key || s.handle == key || s.title() == key || number.parse() == Ok(s.number));
        found.map(|s| s.id).ok_or_else(|| {
            let open: Vec<String> = self.list().iter().map(|s| s.title()).collect();
            ToolError::new(
                ErrorCode::SessionNotFound,
                format!("no open session is called {key:?}"),
                if open.is_empty() {
                    "no session is open; the agent starts one with session_start".to_owned()
                } else {
                    format!("open sessions: {}", open.join(", "))
                },
            )
        })
    }

    /// Calls `callback` with the session's terminal as a person sees it: a
    /// replay of recent output at once, then every new piece, then
    /// [`super::TerminalEvent::Closed`] when the session ends. The callback
    /// runs on the session's reader thread: it must return quickly and must
    /// not call into this manager. Results of the agent's calls say how many
    /// subscribers watch.
    pub(crate) fn subscribe(&self, id: &str, callback: TerminalCallback) -> Result<Subscription, ToolError> {
        let session = self.get(id)?;
        let sub = session.view().subscribe(callback);
        Ok(Subscription {
            session: Arc::downgrade(&session),
            id: sub,
        })
    }

    /// Types a person's keystrokes into the session's terminal, exactly as
    /// given (a secret typed here reaches the program and nothing else: it
    /// is neither logged nor shown to the agent). The agent's next result
    /// says a person typed.
    pub(crate) fn type_input(&self, id: &str, bytes: &[u8]) -> Result<(), ToolError> {
        let session = self.get(id)?;
        {
            let mut state = session.lock();
            match state.phase {
                Phase::Exited(_) | Phase::Closed => return Err(super::closed(id)),
                _ => state.person_typed = true,
            }
            state.last_activity = std::time::Instant::now();
        }
        pty::write_all(session.master.as_fd(), bytes)
            .map_err(|e| internal(format!("could not write to the session's terminal: {e}")))
    }

    /// Sets the terminal's window size (rows and columns, each at least 1);
    /// its foreground programs get SIGWINCH.
    pub(crate) fn resize(&self, id: &str, rows: u16, cols: u16) -> Result<(), ToolError> {
        if rows == 0 || cols == 0 {
            return Err(ToolError::new(
                ErrorCode::InvalidArguments,
                format!("a terminal of {rows} rows and {cols} columns cannot be drawn"),
                "pass at least one row and one column",
            ));
        }
        let session = self.get(id)?;
        pty::resize(session.master.as_fd(), rows, cols)
            .map_err(|e| internal(format!("could not resize the session's terminal: {e}")))
    }
}

impl SessionManager {
    /// The id of the session that `key` names: its id, its human name
    /// (`falcon`), its title (`#2 falcon`) or number (`#2`, `2`).
    pub fn resolve(&self, key: &str) -> Result<String, ToolError> {
        self.inner.resolve(key)
    }

    /// Calls `callback` with the session's terminal as a person sees it: a
    /// replay of recent output at once, then every new piece, then
    /// [`super::TerminalEvent::Closed`] when the session ends. The callback
    /// runs on the session's reader thread: it must return quickly and must
    /// not call into this manager. Results of the agent's calls say how many
    /// subscribers watch.
    pub fn subscribe(&self, id: &str, callback: TerminalCallback) -> Result<Subscription, ToolError> {
        self.inner.subscribe(id, callback)
    }

    /// Types a person's keystrokes into the session's terminal, exactly as
    /// given (a secret typed here reaches the program and nothing else: it
    /// is neither logged nor shown to the agent). The agent's next result
    /// says a person typed.
    pub fn type_input(&self, id: &str, bytes: &[u8]) -> Result<(), ToolError> {
        self.inner.type_input(id, bytes)
    }

    /// Sets the terminal's window size (rows and columns, each at least 1);
    /// its foreground programs get SIGWINCH.
    pub fn resize(&self, id: &str, rows: u16, cols: u16) -> Result<(), ToolError> {
        self.inner.resize(id, rows, cols)
    }

    /// Offers the sessions to `bash-mcp attach` on this server's socket in
    /// [`super::attach::socket_dir`] (once; later calls return its path).
    /// The socket is removed when the manager is dropped, or by the guard
    /// if the host dies.
    pub fn serve_attach(&self) -> std::io::Result<std::path::PathBuf> {
        let mut slot = self.attach.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(server) = slot.as_ref() {
            return Ok(server.path().to_path_buf());
        }
        let server = super::attach::AttachServer::start(Arc::downgrade(&self.inner))?;
        let path = server.path().to_path_buf();
        *slot = Some(server);
        Ok(path)
    }

    /// Stops offering the sessions to `bash-mcp attach` and removes the
    /// socket (those attached stay until their sessions close).
    pub(crate) fn stop_attach(&self) {
        drop(
            self.attach
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(),
        );
    }
}
