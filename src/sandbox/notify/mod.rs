//! Precise denials from seccomp user notification, as an observer; and the
//! work in guarded directories ([`mediate`]).
//!
//! The process that starts a sandboxed command (the Landlock helper, a
//! supervisor's init) installs a filter that notifies the write-capable
//! path calls (opens only with write flags: the filter reads the flags
//! argument), and with network off the calls that reach an address; it
//! hands the listener to the library, whose handler thread reads what each
//! call names, records a denial when the sandbox's plan forbids it, and
//! lets the call go on (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`) into the layer
//! that enforces: Landlock, read-only mounts, the network namespace. What
//! it reads may change under it (the target's memory is its own), so a
//! call it passes on is decided by the kernel, never by what it read.
//!
//! A change in a guarded directory, which the kernel would refuse, the
//! handler refuses (a protected name) or makes itself, on its own copy of
//! the path, and the kernel never runs the call (see [`mediate`]).
//!
//! One more exception, decided by the filter and not by what the handler reads:
//! with the Landlock backend and network off, `socket()` of any family but
//! `AF_UNIX` notifies instead of failing in the errno filter (an errno
//! filter would win over the notification and hide it), and the handler
//! answers every such call with `EPERM`, as the errno filter did. Should
//! the handler be gone, the kernel answers `ENOSYS`: refused all the same.

pub mod calls;
pub mod filter;
pub mod judge;
pub mod listener;
pub mod loopback;
pub mod mediate;
pub mod observer;
pub mod target;

pub use judge::Judge;
pub use observer::{Guard, Observation, Policy};
