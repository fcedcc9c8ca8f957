//! # bash-mcp
//!
//! A shell tool an AI model can trust. A host embeds a [`BashServer`]; the
//! model asks it to run commands; it runs them with `/bin/sh -c`, returns a
//! structured result, and leaves nothing behind:
//!
//! - completion follows the shell's exit, never pipe EOF, so a background
//!   child holding the pipe cannot hang a call;
//! - a timeout, a cancel, or the end of the command kills the whole process
//!   group; the shell is always reaped;
//! - if the host process dies abruptly (SIGKILL, a crash), a guard process
//!   started with the first command kills what the library started for it;
//! - output is kept whole or truncated in the middle with a marker that says
//!   how many bytes were left out, with host memory bounded;
//! - bad input gets a typed [`ToolError`] (`{"error", "message", "hint"}` on
//!   the JSON path), never a panic.
//!
//! The object model ([`McpServer`], [`Tool`]) mirrors the host's
//! MCPServerBase: `list_tools`, `execute` returning the
//! `{"result": "...", "directives": []}` envelope, `get_permission_pattern`,
//! `configure`, `set_working_dir`.
//!
//! ```
//! use std::time::Duration;
//! use bash_mcp::{BashServer, ExecRequest, Status};
//!
//! let server = BashServer::new(".", None, Duration::from_secs(30))?;
//! let outcome = server.run(&ExecRequest::new("sleep 5").timeout(Duration::from_millis(200)))?;
//! assert_eq!(outcome.status, Status::TimedOut);
//! # Ok::<(), bash_mcp::ToolError>(())
//! ```

pub mod approval;
pub mod audit;
mod bash;
mod command;
pub mod config;
pub mod content;
mod dirfd;
mod error;
pub mod ffi;
pub mod mcp;
mod outputs;
pub mod permission;
mod process;
pub mod roots;
pub mod sandbox;
pub mod session;
mod tool;
mod tool_args;

pub use bash::{
    BashServer, DEFAULT_BINARIES, DEFAULT_SERVER_NAME, EXECUTE_ARGUMENTS, EXECUTE_DEFINITION, ExecOutcome, ExecRequest,
    Output, SandboxCall, SandboxReport, Status, YieldAfter,
};
pub use config::Config;
pub use error::{ErrorCode, ToolError, document_text};
pub use process::cancel::CancelToken;
pub use process::capture::BoundedOutput;
pub use process::spawn::Streams;
pub use process::stream::{OutputSink, OutputStream};
pub use tool::{
    CallClient, CallOptions, McpServer, TaskJob, Tool, ToolDefinition, ToolOutput, ToolRegistry, ToolResponse,
};
pub use tool_args::ToolArgs;

/// Names of the background-job tools, registered beside `execute`.
pub fn job_tool_names() -> impl Iterator<Item = &'static str> {
    command::jobs::JOB_TOOLS.iter().map(|(name, _)| *name)
}

/// Names of the session tools, shown while `sessions.enabled` is true.
pub fn session_tool_names() -> impl Iterator<Item = &'static str> {
    session::tools::SESSION_TOOLS.iter().map(|(name, _)| *name)
}

/// The library version (from Cargo.toml).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The Rust code blocks of the README and of docs/*.md, compiled and run as
/// doctests so that the documentation cannot drift from the API
/// (tests/docs.rs checks the other blocks, and that every file with Rust
/// blocks is listed here).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
#[doc = include_str!("../docs/execute.md")]
#[doc = include_str!("../docs/permissions.md")]
pub struct DocumentationExamples;
