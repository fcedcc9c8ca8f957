//! One command's way through the library, in order: the `execute` request,
//! its turn under the concurrency limit, its lifetime (spawn, capture, time
//! limit, cancel, group kill, drain, reap), its outcome, and the background
//! job it becomes when it runs in the background or outlives its window.

pub(crate) mod jobs;
pub(crate) mod lifetime;
pub(crate) mod limiter;
pub(crate) mod outcome;
pub(crate) mod request;
pub(crate) mod yielding;
