//! What a host asks a `BashServer` directly, outside the tool protocol: its state, and runs of one command.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use super::{BashServer, ExecOutcome, ExecRequest};
use crate::audit::AuditLog;
use crate::config::Config;
use crate::error::ToolError;
use crate::roots;
use crate::session::SessionManager;
use crate::tool::CallOptions;

impl BashServer {
    /// The session manager (created on first use); an error while sessions
    /// are disabled in the configuration.
    pub fn sessions(&self) -> Result<&SessionManager, ToolError> {
        self.sessions.get()
    }

    /// The default working directory.
    pub fn working_dir(&self) -> PathBuf {
        self.shared.working_dir()
    }

    /// The audit log, when configured.
    pub fn audit_log(&self) -> Option<Arc<AuditLog>> {
        self.shared.audit()
    }

    /// The default time limit.
    pub fn timeout(&self) -> Duration {
        self.config().timeout
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        self.shared
            .config
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Problems found in per-project `.bash-mcp.toml` files (ignored, fail-soft).
    pub fn project_file_warnings(&self) -> Vec<String> {
        roots::project_file_warnings()
    }

    /// (running, waiting) command counts.
    pub fn concurrency(&self) -> (usize, usize) {
        self.shared.limiter.counts()
    }

    /// Runs one command and waits for it.
    ///
    /// A timeout or cancel is an outcome
    /// ([`Status::TimedOut`](super::Status::TimedOut),
    /// [`Status::Cancelled`](super::Status::Cancelled)) with the partial output;
    /// `Err` means the command could not start (bad request or spawn failure).
    pub fn run(&self, request: &ExecRequest) -> Result<ExecOutcome, ToolError> {
        self.shared.run(request, CallOptions::default())
    }

    /// [`BashServer::run`] with a cancel token and/or a live output callback.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bash_mcp::{BashServer, CallOptions, CancelToken, ExecRequest, Status};
    /// let server = BashServer::new(".", None, Duration::from_secs(30))?;
    /// let token = CancelToken::new();
    /// let canceller = token.clone();
    /// std::thread::spawn(move || {
    ///     std::thread::sleep(std::time::Duration::from_millis(200));
    ///     canceller.cancel();
    /// });
    /// let mut seen = Vec::new();
    /// let mut on_output = |chunk: &[u8], _stream| seen.extend_from_slice(chunk);
    /// let options = CallOptions { cancel: Some(&token), on_output: Some(&mut on_output), ..Default::default() };
    /// let outcome = server.run_with(&ExecRequest::new("echo started; sleep 10"), options)?;
    /// assert_eq!(outcome.status, Status::Cancelled);
    /// assert_eq!(seen, b"started\n");
    /// # Ok::<(), bash_mcp::ToolError>(())
    /// ```
    pub fn run_with(&self, request: &ExecRequest, options: CallOptions<'_>) -> Result<ExecOutcome, ToolError> {
        self.shared.run(request, options)
    }
}
