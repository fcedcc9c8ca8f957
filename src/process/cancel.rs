//! A cancel token that any thread can trigger.
//!
//! The token owns an eventfd so that a call blocked in `poll` wakes up the
//! moment it is cancelled, instead of noticing on its next timer tick.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Cancels a running call from another thread.
///
/// Clones share one state: cancelling any clone cancels them all. A token is
/// one-shot; once cancelled it stays cancelled.
///
/// ```
/// use bash_mcp::CancelToken;
/// let token = CancelToken::new();
/// let other = token.clone();
/// std::thread::spawn(move || other.cancel()).join().unwrap();
/// assert!(token.is_cancelled());
/// ```
#[derive(Clone, Debug)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    cancelled: AtomicBool,
    // None only when the kernel refused an eventfd; callers then poll on a short timer.
    wake: Option<OwnedFd>,
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        use rustix::event::EventfdFlags;
        let wake = rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).ok();
        Self {
            inner: Arc::new(Inner {
                cancelled: AtomicBool::new(false),
                wake,
            }),
        }
    }

    /// Cancels every call using this token; safe from any thread, idempotent.
    pub fn cancel(&self) {
        if self.inner.cancelled.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(fd) = &self.inner.wake {
            let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
        }
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// The fd that becomes readable once cancelled, for `poll`.
    pub(crate) fn wake_fd(&self) -> Option<RawFd> {
        self.inner.wake.as_ref().map(AsRawFd::as_raw_fd)
    }
}

impl Default for CancelToken {
    fn default() -> Self {
        Self::new()
    }
}
