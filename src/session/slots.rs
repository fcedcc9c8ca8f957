//! Keeping sessions under `max_sessions`, and closing those idle past their time to live.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use super::{Inner, Phase, Session};
use crate::error::{ErrorCode, ToolError};

impl Inner {
    pub(super) fn evict_idle(&self) {
        let ttl = self.config.lock().unwrap_or_else(PoisonError::into_inner).0.idle_ttl;
        let Some(ttl) = ttl else { return };
        let expired: Vec<Arc<Session>> = {
            let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            let ids: Vec<String> = sessions
                .iter()
                .filter(|(_, s)| {
                    let st = s.lock();
                    st.phase != Phase::Running && st.last_activity.elapsed() >= ttl
                })
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| sessions.remove(id)).collect()
        };
        for s in expired {
            tracing::debug!(session = %s.id, "closing idle session");
            s.terminate();
        }
    }
}

/// A place under `max_sessions` held for a session being started: taken
/// under the sessions lock, and released (on failure) or turned into the
/// session (on success) under it too, so concurrent starts cannot exceed the
/// limit.
pub(super) struct Slot<'a> {
    inner: &'a Inner,
    held: bool,
}

impl<'a> Slot<'a> {
    pub(super) fn reserve(inner: &'a Inner, max: usize) -> Result<Self, ToolError> {
        use std::sync::atomic::Ordering;
        let sessions = inner.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let open = sessions
            .values()
            .filter(|s| !matches!(s.lock().phase, Phase::Exited(_) | Phase::Closed))
            .count();
        let starting = inner.starting.load(Ordering::SeqCst);
        if open + starting >= max {
            let also = if starting > 0 {
                format!(" and {starting} being started")
            } else {
                String::new()
            };
            return Err(ToolError::new(
                ErrorCode::TooManySessions,
                format!("{open} sessions are open{also}; the limit is {max}"),
                "close a session you no longer need with session_close (session_list shows them), or raise sessions.max_sessions",
            ));
        }
        inner.starting.fetch_add(1, Ordering::SeqCst);
        Ok(Self { inner, held: true })
    }

    pub(super) fn fill(&mut self, id: String, session: Arc<Session>) {
        let mut sessions = self.inner.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.insert(id, session);
        self.inner.starting.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        self.held = false;
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if self.held {
            let _sessions = self.inner.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            self.inner.starting.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

pub(super) fn sweep(inner: std::sync::Weak<Inner>) {
    loop {
        let Some(inner) = inner.upgrade() else { return };
        let ttl = inner.config.lock().unwrap_or_else(PoisonError::into_inner).0.idle_ttl;
        let tick = ttl.map_or(Duration::from_secs(3600), |t| {
            (t / 4).clamp(Duration::from_millis(50), Duration::from_secs(5))
        });
        let stop = inner.sweeper_stop.lock().unwrap_or_else(PoisonError::into_inner);
        if *stop {
            return;
        }
        let (stop, _) = inner
            .sweeper_wake
            .wait_timeout(stop, tick)
            .unwrap_or_else(PoisonError::into_inner);
        if *stop {
            return;
        }
        drop(stop);
        inner.evict_idle();
    }
}
