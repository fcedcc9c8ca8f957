//! A first-come, first-served limit on commands running at once.
//!
//! Calls beyond the limit wait in line and are never dropped. A waiting call
//! can still be cancelled, and a call cancelled before its turn never runs. The
//! limit can change while calls run: raising it lets waiting calls start at once.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crate::process::cancel::CancelToken;

/// Counts running calls and queues the rest in arrival order.
#[derive(Debug)]
pub(crate) struct Limiter {
    state: Mutex<State>,
    changed: Condvar,
    max: AtomicUsize,
}

#[derive(Debug, Default)]
struct State {
    active: usize,
    next_ticket: u64,
    queue: VecDeque<u64>,
}

/// A running slot; released on drop.
pub(crate) struct Permit<'a> {
    limiter: &'a Limiter,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.limiter.release();
    }
}

impl Permit<'_> {
    /// The same slot, held by a value that owns its limiter: for a command
    /// that goes on after the call that started it has returned.
    /// `limiter` must be the limiter the slot was taken from.
    pub fn keep(self, limiter: &Arc<Limiter>) -> KeptPermit {
        assert!(
            std::ptr::eq(self.limiter, Arc::as_ptr(limiter)),
            "a slot is kept by the limiter it came from"
        );
        std::mem::forget(self);
        KeptPermit {
            limiter: limiter.clone(),
        }
    }
}

/// A running slot that owns its limiter; released on drop.
pub(crate) struct KeptPermit {
    limiter: Arc<Limiter>,
}

impl Drop for KeptPermit {
    fn drop(&mut self) {
        self.limiter.release();
    }
}

/// How often a queued call re-checks its cancel token.
const CANCEL_CHECK: Duration = Duration::from_millis(20);

impl Limiter {
    /// A limiter that lets `max` calls run at once (at least one).
    pub fn new(max: usize) -> Self {
        Limiter {
            state: Mutex::default(),
            changed: Condvar::new(),
            max: AtomicUsize::new(max.max(1)),
        }
    }

    /// Changes the limit; waiting calls re-check it at once.
    pub fn set_max(&self, max: usize) {
        // Taking the lock orders the store before any waiter's next check.
        let state = self.lock();
        self.max.store(max.max(1), Ordering::SeqCst);
        drop(state);
        self.changed.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a panic elsewhere; the counters stay valid.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a slot under the current limit; `None` if cancelled before
    /// or while waiting (the cancel is checked before a slot is taken).
    pub fn acquire(&self, cancel: Option<&CancelToken>) -> Option<Permit<'_>> {
        let mut state = self.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.queue.push_back(ticket);
        loop {
            if cancel.is_some_and(CancelToken::is_cancelled) {
                state.queue.retain(|t| *t != ticket);
                drop(state);
                self.changed.notify_all();
                return None;
            }
            let max = self.max.load(Ordering::SeqCst);
            if state.active < max && state.queue.front() == Some(&ticket) {
                state.queue.pop_front();
                state.active += 1;
                let waiting = !state.queue.is_empty();
                drop(state);
                // The next in line may fit too.
                if waiting {
                    self.changed.notify_all();
                }
                return Some(Permit { limiter: self });
            }
            state = match cancel {
                Some(_) => {
                    self.changed
                        .wait_timeout(state, CANCEL_CHECK)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                None => self.changed.wait(state).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }

    /// Gives a slot back.
    fn release(&self) {
        let mut state = self.lock();
        state.active -= 1;
        // Every waiting call has its ticket in the queue: none, no wake-up.
        let waiting = !state.queue.is_empty();
        drop(state);
        if waiting {
            self.changed.notify_all();
        }
    }

    /// (running, waiting) counts.
    pub fn counts(&self) -> (usize, usize) {
        let state = self.lock();
        (state.active, state.queue.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn never_more_than_max_and_none_dropped() {
        let limiter = Arc::new(Limiter::new(3));
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let (l, r, p, d) = (limiter.clone(), running.clone(), peak.clone(), done.clone());
                std::thread::spawn(move || {
                    let _permit = l.acquire(None).unwrap();
                    let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                    p.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(5));
                    r.fetch_sub(1, Ordering::SeqCst);
                    d.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(done.load(Ordering::SeqCst), 16);
        assert!(peak.load(Ordering::SeqCst) <= 3);
        assert_eq!(limiter.counts(), (0, 0));
    }

    #[test]
    fn a_kept_slot_stays_taken_until_it_is_dropped() {
        let limiter = Arc::new(Limiter::new(1));
        let kept = limiter.acquire(None).unwrap().keep(&limiter);
        assert_eq!(limiter.counts(), (1, 0));
        drop(kept);
        assert_eq!(limiter.counts(), (0, 0));
        assert!(limiter.acquire(None).is_some());
    }

    #[test]
    fn cancelled_waiter_leaves_the_queue() {
        let limiter = Limiter::new(1);
        let held = limiter.acquire(None).unwrap();
        let token = CancelToken::new();
        token.cancel();
        assert!(limiter.acquire(Some(&token)).is_none());
        assert_eq!(limiter.counts(), (1, 0));
        drop(held);
    }

    #[test]
    fn a_cancelled_call_takes_no_free_slot() {
        let limiter = Limiter::new(4);
        let token = CancelToken::new();
        token.cancel();
        assert!(limiter.acquire(Some(&token)).is_none());
        assert_eq!(limiter.counts(), (0, 0));
    }

    #[test]
    fn raising_the_limit_starts_waiting_calls() {
        let limiter = Arc::new(Limiter::new(1));
        let held = limiter.acquire(None).unwrap();
        let waiter = {
            let l = limiter.clone();
            std::thread::spawn(move || l.acquire(None).map(|_| ()).is_some())
        };
        while limiter.counts() != (1, 1) {
            std::thread::sleep(Duration::from_millis(1));
        }
        limiter.set_max(2);
        // The waiter gets its slot while the first is still held.
        assert!(waiter.join().unwrap());
        assert_eq!(limiter.counts(), (1, 0));
        drop(held);
        assert_eq!(limiter.counts(), (0, 0));
    }
}
