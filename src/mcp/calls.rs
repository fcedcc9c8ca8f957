//! Calls in flight: duplicate-id detection, cancellation, and the rule that
//! a cancelled call sends nothing more.
//!
//! Every message about a call (progress, the response) is emitted through
//! [`Call::emit_if_running`] / [`Call::finish`], which hold the call's phase
//! lock while emitting. A cancel takes the same lock to flip the phase, so
//! once `notifications/cancelled` has been handled, nothing more is sent for
//! that id; a cancel that arrives after the response finds the phase already
//! `Done` (or the id gone) and is ignored.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::jsonrpc::IdKey;
use crate::process::cancel::CancelToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    Cancelled,
    Done,
}

/// One call in flight.
pub(crate) struct Call {
    pub(crate) token: CancelToken,
    phase: Mutex<Phase>,
}

impl Call {
    fn new() -> Self {
        Self {
            token: CancelToken::new(),
            phase: Mutex::new(Phase::Running),
        }
    }

    fn phase(&self) -> MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the call is still running (not answered, not cancelled).
    pub(crate) fn is_running(&self) -> bool {
        *self.phase() == Phase::Running
    }

    /// Runs `emit` while the call is still running (used for progress).
    pub(crate) fn emit_if_running(&self, emit: impl FnOnce()) {
        let phase = self.phase();
        if *phase == Phase::Running {
            emit();
        }
    }

    /// Marks the call done and runs `emit` (the response) unless it was
    /// cancelled. Returns whether `emit` ran.
    fn finish(&self, emit: impl FnOnce()) -> bool {
        let mut phase = self.phase();
        if *phase != Phase::Running {
            return false;
        }
        *phase = Phase::Done;
        emit();
        true
    }

    /// Cancels a running call: no further message will be emitted for it.
    fn cancel(&self) {
        let mut phase = self.phase();
        if *phase == Phase::Running {
            *phase = Phase::Cancelled;
            drop(phase);
            self.token.cancel();
        }
    }
}

/// The calls in flight, by request id, and a count of live worker threads.
#[derive(Default)]
pub(crate) struct InFlight {
    calls: Mutex<HashMap<IdKey, Arc<Call>>>,
    workers: Mutex<usize>,
    idle: Condvar,
}

impl InFlight {
    fn calls(&self) -> MutexGuard<'_, HashMap<IdKey, Arc<Call>>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a call with this id is in flight.
    pub(crate) fn contains(&self, key: &IdKey) -> bool {
        self.calls().contains_key(key)
    }

    /// The call with this id, if in flight.
    pub(crate) fn get(&self, key: &IdKey) -> Option<Arc<Call>> {
        self.calls().get(key).cloned()
    }

    /// The number of calls in flight.
    pub(crate) fn len(&self) -> usize {
        self.calls().len()
    }

    /// Registers a new call; `None` if the id is already in flight.
    pub(crate) fn start(&self, key: IdKey) -> Option<Arc<Call>> {
        let mut calls = self.calls();
        if calls.contains_key(&key) {
            return None;
        }
        let call = Arc::new(Call::new());
        calls.insert(key, call.clone());
        Some(call)
    }

    /// Ends a call: removes it and emits its response unless it was
    /// cancelled. The id is free again before the response goes out, so a
    /// client may reuse it as soon as it has the response.
    pub(crate) fn finish(&self, key: &IdKey, call: &Arc<Call>, emit: impl FnOnce()) -> bool {
        call.finish(|| {
            self.forget(key, call);
            emit();
        })
    }

    /// Removes `call` under `key` (and nothing else that reused the id).
    pub(crate) fn forget(&self, key: &IdKey, call: &Arc<Call>) {
        let mut calls = self.calls();
        if calls.get(key).is_some_and(|c| Arc::ptr_eq(c, call)) {
            calls.remove(key);
        }
    }

    /// Cancels the call with this id; false when none is in flight (a late cancel).
    pub(crate) fn cancel(&self, key: &IdKey) -> bool {
        let call = self.calls().remove(key);
        match call {
            Some(call) => {
                call.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels every call in flight.
    pub(crate) fn cancel_all(&self) -> usize {
        let calls: Vec<Arc<Call>> = self.calls().drain().map(|(_, c)| c).collect();
        for call in &calls {
            call.cancel();
        }
        calls.len()
    }

    /// Counts a worker thread; the guard uncounts it when dropped (also on panic).
    pub(crate) fn worker(self: &Arc<Self>) -> WorkerGuard {
        *self.workers.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        WorkerGuard { inflight: self.clone() }
    }

    /// Waits until no worker runs, at most `limit` (forever when `None`).
    /// Returns whether all workers ended.
    pub(crate) fn wait_idle(&self, limit: Option<Duration>) -> bool {
        let workers = self.workers.lock().unwrap_or_else(PoisonError::into_inner);
        let busy = |workers: &mut usize| *workers > 0;
        let workers = match limit {
            None => self
                .idle
                .wait_while(workers, busy)
                .unwrap_or_else(PoisonError::into_inner),
            Some(limit) => {
                self.idle
                    .wait_timeout_while(workers, limit, busy)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
        };
        *workers == 0
    }
}

/// Keeps a worker counted while it lives.
pub(crate) struct WorkerGuard {
    inflight: Arc<InFlight>,
}

impl Drop for WorkerGuard {
    fn drop(&mut self) {
        let mut workers = self.inflight.workers.lock().unwrap_or_else(PoisonError::into_inner);
        *workers -= 1;
        if *workers == 0 {
            self.inflight.idle.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_ids_are_refused_until_finished() {
        let inflight = InFlight::default();
        let key = IdKey::Int(1);
        let call = inflight.start(key.clone()).unwrap();
        assert!(inflight.start(key.clone()).is_none());
        assert!(inflight.finish(&key, &call, || {}));
        assert!(inflight.start(key).is_some());
    }

    #[test]
    fn cancelled_call_emits_nothing() {
        let inflight = InFlight::default();
        let key = IdKey::Str("a".into());
        let call = inflight.start(key.clone()).unwrap();
        assert!(inflight.cancel(&key));
        assert!(call.token.is_cancelled());
        let mut emitted = false;
        call.emit_if_running(|| emitted = true);
        assert!(!inflight.finish(&key, &call, || emitted = true));
        assert!(!emitted);
        assert!(!inflight.cancel(&key), "a late cancel finds nothing");
    }

    #[test]
    fn late_cancel_is_ignored() {
        let inflight = InFlight::default();
        let key = IdKey::Int(7);
        let call = inflight.start(key.clone()).unwrap();
        assert!(inflight.finish(&key, &call, || {}));
        assert!(!inflight.cancel(&key));
        assert!(!call.token.is_cancelled());
    }

    #[test]
    fn reused_id_is_not_removed_by_the_old_call() {
        let inflight = InFlight::default();
        let key = IdKey::Int(3);
        let old = inflight.start(key.clone()).unwrap();
        inflight.cancel(&key);
        let new = inflight.start(key.clone()).unwrap();
        assert!(!inflight.finish(&key, &old, || {}));
        assert!(inflight.contains(&key));
        assert!(inflight.finish(&key, &new, || {}));
    }

    #[test]
    fn waits_for_workers() {
        let inflight = Arc::new(InFlight::default());
        let guard = inflight.worker();
        assert!(!inflight.wait_idle(Some(Duration::from_millis(20))));
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            drop(guard);
        });
        assert!(inflight.wait_idle(Some(Duration::from_secs(60))));
        t.join().unwrap();
    }
}
