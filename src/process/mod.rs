//! The low-level pieces of running a process, below the sandbox and the
//! command pipeline: the spawn itself, the cancel token a wait wakes on, the
//! bounded capture of its output and the streams it arrives on, the
//! cleaning of terminal output, the identifiers that mark what this host
//! started, and the guard that kills it when the host dies.

pub(crate) mod cancel;
pub(crate) mod capture;
pub(crate) mod guard;
pub(crate) mod ids;
pub(crate) mod spawn;
pub(crate) mod stream;
pub(crate) mod term;
