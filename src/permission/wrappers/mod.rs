//! Stage 4: commands that run other commands (wrappers such as `env`, `sudo`,
//! `xargs`, `find -exec`) and shells given code, read from their tables.

pub(super) mod chdir;
pub(super) mod follow;
pub(super) mod options;
pub(super) mod shells;
pub(super) mod table;
pub(super) mod unwrap;
