//! `BashServer`: the `bash` server and its one-shot `execute` tool.

mod audit_calls;
mod connect_ask;
mod escalate;
mod execute;
mod host;
mod lifecycle;
mod ops;
mod output_read;
mod run;
mod sandbox_argument;
mod tool_calls;
pub use ops::DEFAULT_BINARIES;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

pub use crate::command::outcome::{ExecOutcome, Output, SandboxReport, Status};
pub use crate::command::request::{EXECUTE_ARGUMENTS, ExecRequest, SandboxCall, YieldAfter};

use crate::audit::AuditLog;
use crate::command::jobs::JobManager;
use crate::command::limiter::Limiter;
use crate::config::{Config, EnvCache};
use crate::error::ToolError;
use crate::roots;
use crate::session::tools::LazyManager;
use crate::tool::ToolRegistry;

/// The built-in definition of the `execute` tool (used when the data dir has none).
pub const EXECUTE_DEFINITION: &str = include_str!("../../data/tools/bash/execute.json");

/// The default server name.
pub const DEFAULT_SERVER_NAME: &str = "bash";

/// A server whose tool `execute` runs shell commands (with background jobs,
/// and optional session and operator tools).
///
/// `BashServer` is `Send + Sync`: share it (e.g. in an `Arc`) and call it from
/// many threads; up to `max_concurrent` commands run at once and the rest
/// wait in line.
///
/// ```
/// use std::time::Duration;
/// use bash_mcp::{BashServer, ExecRequest, McpServer};
/// let server = BashServer::new(".", None, Duration::from_secs(30))?;
/// let outcome = server.run(&ExecRequest::new("echo hello; exit 3"))?;
/// assert_eq!(outcome.exit_code(), Some(3));
/// assert_eq!(outcome.output.text(), "hello\n");
///
/// // The JSON path a host uses: an envelope whose `result` is a JSON document.
/// let envelope = server.execute("execute", r#"{"command": "echo hi"}"#);
/// let envelope: serde_json::Value = serde_json::from_str(&envelope).unwrap();
/// let result: serde_json::Value = serde_json::from_str(envelope["result"].as_str().unwrap()).unwrap();
/// assert_eq!(result["output"], "hi\n");
/// assert_eq!(result["exit_code"], 0);
/// # Ok::<(), bash_mcp::ToolError>(())
/// ```
pub struct BashServer {
    shared: Arc<Shared>,
    /// `execute`, the job tools, and the optional operator and session tools
    /// (shown while the configuration enables them).
    tools: ToolRegistry,
    sessions: Arc<LazyManager>,
    jobs: Arc<JobManager>,
}

struct Shared {
    /// Itself, for what must reach the server without keeping it alive (a
    /// command's proxy asking the person about a connection).
    me: std::sync::Weak<Shared>,
    name: String,
    /// This server's id in the audit log: `audit_read` returns only the
    /// entries it wrote unless `audit.read_all` is on.
    instance: String,
    config: RwLock<Arc<Config>>,
    working_dir: RwLock<PathBuf>,
    limiter: Arc<Limiter>,
    audit: RwLock<Option<Arc<AuditLog>>>,
    started: Instant,
    counters: Counters,
    /// Long-lived sandboxes, one per sandbox configuration in use; stopped
    /// with the server.
    supervisors: crate::sandbox::Supervisors,
    /// The temp dir of its sandboxed commands, removed with the server
    /// (after its supervisors, which have it mounted).
    sandbox_temp: Arc<crate::sandbox::ServerTemp>,
    /// Whole outputs of cut results, for `output_read`; removed with the server.
    outputs: Arc<crate::outputs::OutputStore>,
    /// The commands' environment, rebuilt only when it would differ.
    env_cache: EnvCache,
    /// The rules naming the commands whose call the host lets widen the
    /// sandbox, as it announced them (see `BashServer::announce_sandbox_overrides`).
    sandbox_overrides: RwLock<Vec<String>>,
    /// What the person granted or denied, and the host's approver.
    approvals: crate::approval::Approvals,
    /// The count of connections waiting for the person, across the
    /// server's commands (made again when `network_ask.max_waiting` changes).
    ask_slots: std::sync::Mutex<Option<Arc<crate::sandbox::network::ask::WaitSlots>>>,
}

/// Tool calls served and failed since start.
#[derive(Default)]
struct Counters {
    served: AtomicU64,
    failed: AtomicU64,
}

impl Counters {
    fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }
    fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }
}

/// The longest default time limit a server takes (a day); longer ones are
/// clamped to it.
pub(crate) const MAX_DEFAULT_TIMEOUT: Duration = Duration::from_secs(86_400);

impl Shared {
    fn config(&self) -> Arc<Config> {
        self.config.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn working_dir(&self) -> PathBuf {
        self.working_dir.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn sandbox_overrides(&self) -> Vec<String> {
        self.sandbox_overrides
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn audit(&self) -> Option<Arc<AuditLog>> {
        self.audit.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn confined_dir(&self, dir: &Path, base: Option<&Path>, config: &Config) -> Result<PathBuf, ToolError> {
        roots::confined_dir(dir, base, config.allowed_roots.as_deref(), config.project_trust())
    }
}
