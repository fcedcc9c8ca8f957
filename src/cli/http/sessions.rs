//! Handshake-era sessions (`Mcp-Session-Id`): one handler each, released
//! on DELETE or when idle.
//!
//! A session is what `initialize` negotiated plus its calls, tasks and GET
//! stream; the server's background jobs and shell sessions belong to the
//! server (one workspace), not to an MCP session. A session is idle while
//! no request of it is open and none of its calls runs; after
//! [`Sessions::idle`] of that it is dropped and its handler shut down.

use std::collections::HashMap;
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::endpoint::Endpoint;

/// One session.
pub struct Session {
    pub endpoint: Arc<Endpoint>,
    open: AtomicUsize,
    last_seen: Mutex<Instant>,
}

/// Counts a request of a session as open while it lives.
pub struct Active(Arc<Session>);

impl Drop for Active {
    fn drop(&mut self) {
        *self.0.last_seen.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Session {
    pub fn active(self: &Arc<Self>) -> Active {
        self.open.fetch_add(1, Ordering::SeqCst);
        Active(self.clone())
    }

    fn idle_since(&self) -> Option<Instant> {
        let busy = self.open.load(Ordering::SeqCst) > 0 || self.endpoint.waiting() > 0;
        (!busy).then(|| *self.last_seen.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The table of sessions.
pub struct Sessions {
    table: Mutex<HashMap<String, Arc<Session>>>,
    pub idle: Duration,
    pub max: usize,
}

impl Sessions {
    pub fn new(idle: Duration, max: usize) -> Self {
        Self {
            table: Mutex::new(HashMap::new()),
            idle,
            max,
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new session for `endpoint` and its id, or `None` when the table is full.
    pub fn open(&self, endpoint: Arc<Endpoint>) -> Result<(String, Arc<Session>), String> {
        let id = new_id()?;
        let session = Arc::new(Session {
            endpoint,
            open: AtomicUsize::new(0),
            last_seen: Mutex::new(Instant::now()),
        });
        let mut table = self.table();
        if table.len() >= self.max {
            return Err(format!(
                "{} MCP sessions are open, the most this server keeps; end one (DELETE) or wait for one to idle out",
                self.max
            ));
        }
        table.insert(id.clone(), session.clone());
        Ok((id, session))
    }

    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.table().get(id).cloned()
    }

    /// Removes a session; its handler is shut down by the caller.
    pub fn remove(&self, id: &str) -> Option<Arc<Session>> {
        self.table().remove(id)
    }

    /// Removes the sessions idle for longer than [`Sessions::idle`].
    pub fn take_idle(&self) -> Vec<(String, Arc<Session>)> {
        let now = Instant::now();
        let mut table = self.table();
        let idle: Vec<String> = table
            .iter()
            .filter(|(_, s)| s.idle_since().is_some_and(|t| now.duration_since(t) >= self.idle))
            .map(|(id, _)| id.clone())
            .collect();
        idle.into_iter()
            .filter_map(|id| table.remove(&id).map(|s| (id, s)))
            .collect()
    }

    /// Every session, removed.
    pub fn take_all(&self) -> Vec<Arc<Session>> {
        self.table().drain().map(|(_, s)| s).collect()
    }
}

/// A session id: 128 random bits, in hex (visible ASCII, as the
/// specification requires).
fn new_id() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("cannot read /dev/urandom for a session id: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
