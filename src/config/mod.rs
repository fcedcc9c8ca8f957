//! Server configuration: defaults, validation, and the environment profile.
//!
//! [`Config`] is the configuration in force. [`Config::apply_json`] takes the
//! documented JSON object (every key optional), validates every key, and
//! returns a new configuration; the caller swaps it in only on success, so a
//! failed `configure` leaves the previous configuration untouched.
//!
//! This file holds [`Config`] and its defaults. Beside it: `apply.rs` reads
//! the JSON object key by key, `values.rs` checks single values, `view.rs`
//! shows the configuration masked for `status`, `env_policy.rs` builds a
//! command's environment, `env.rs` caches it, and `audit.rs`,
//! `output_store.rs` and `session.rs` hold the sub-objects of their keys.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

mod apply;
mod audit;
mod env;
mod env_policy;
mod network_ask;
mod output_store;
mod session;
mod values;
mod view;
pub use apply::CONFIG_KEYS;
pub(crate) use env::EnvCache;
pub use env_policy::{EnvPolicy, Inherit, NON_INTERACTIVE_PROFILE, is_valid_env_name};
pub use network_ask::{DEFAULT_NETWORK_ASK_MAX_WAITING, DEFAULT_NETWORK_ASK_WAIT, NetworkAsk};
pub use output_store::{
    DEFAULT_OUTPUT_STORE_BYTES, DEFAULT_OUTPUT_STORE_COUNT, DEFAULT_OUTPUT_STORE_TAIL_BYTES, OutputStoreSettings,
};
pub use session::{HISTORY_ENV, HistoryMode, SESSION_CONFIG_KEYS, SessionConfig};
pub use values::resolve_program;

use crate::audit::AuditSettings;

/// Default output limit: 32 KiB (head 16 KiB + tail 16 KiB).
///
/// About 8 000 tokens: enough for a full test report or a compiler's last
/// errors, small enough that one call cannot flood a model's context window.
pub const DEFAULT_OUTPUT_LIMIT_BYTES: usize = 32 * 1024;
/// Smallest output limit accepted, so head and tail stay readable.
pub const MIN_OUTPUT_LIMIT_BYTES: usize = 256;
/// Largest output limit accepted (64 MiB), so host memory stays bounded.
pub const MAX_OUTPUT_LIMIT_BYTES: usize = 64 * 1024 * 1024;
/// Default bound on draining a pipe still held open after the shell exited.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(2);
/// Default number of commands running at once; more calls wait in line.
pub const DEFAULT_MAX_CONCURRENT: usize = 8;

/// The configuration in force for a server.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Time limit of a call that does not ask for one.
    pub timeout: Duration,
    /// Ceiling for a call's own `timeout_seconds`; larger requests are clamped
    /// to it. Never below `timeout`.
    pub max_timeout: Duration,
    /// The shell; commands run as `<shell> -c <command>`.
    pub shell: PathBuf,
    /// Bytes of output kept per stream (head and tail halves).
    pub output_limit_bytes: usize,
    /// Time between SIGTERM and SIGKILL on timeout or cancel; zero kills at once.
    pub kill_grace: Duration,
    /// How long output still in the pipe is drained after the shell exited.
    pub drain: Duration,
    /// Commands running at once; further calls queue.
    pub max_concurrent: usize,
    /// How the command environment is built.
    pub env: EnvPolicy,
    /// Whether [`NON_INTERACTIVE_PROFILE`] is applied.
    pub non_interactive: bool,
    /// When set, working directories must resolve inside one of these
    /// (already resolved) roots. `None`: any existing directory. In JSON
    /// configuration, relative entries resolve against the process's
    /// current directory (the `bash-mcp` binary resolves those of its
    /// configuration file against the file's folder first).
    pub allowed_roots: Option<Vec<PathBuf>>,
    /// Whether per-project `.bash-mcp.toml` files may extend or replace the
    /// roots (see the README's "Where commands may run"). With a sandbox
    /// configured they can only narrow them (see docs/sandbox.md).
    pub project_config: bool,
    /// The audit log, when on. A relative `audit.path` is made absolute
    /// against the process's current directory when configured.
    pub audit: Option<AuditSettings>,
    /// Optional tools switched on (names from [`OPTIONAL_TOOLS`]).
    pub tools: BTreeSet<String>,
    /// Persistent shell sessions (`sessions` key).
    pub sessions: SessionConfig,
    /// Finished background jobs kept for retrieval (`jobs.max_finished`).
    pub jobs_max_finished: usize,
    /// Where the whole output of a cut result is kept (`output_store` key).
    pub output_store: OutputStoreSettings,
    /// The OS sandbox every command runs in (`sandbox` key; off by default).
    pub sandbox: crate::sandbox::SandboxConfig,
    /// How long an `execute` call waits before it hands a still-running
    /// command back as a background job (`yield_seconds`; `None`: until
    /// the command ends). A call's own `yield_seconds` overrides it.
    pub yield_after: Option<Duration>,
    /// What an `escalate` argument may ask the person for at all
    /// (`escalation_ceiling`); an escalation beyond it is refused before
    /// anyone is asked.
    pub escalation_ceiling: EscalationCeiling,
    /// Whether a running command's connection that its network policy does
    /// not allow is put to the person (`network_ask`).
    pub network_ask: NetworkAsk,
}

/// The operator's ceiling on escalations: `None` for a kind puts no
/// ceiling on it (anything may be asked); a list allows asking only for
/// what lies inside it (an empty list: nothing).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EscalationCeiling {
    /// Network entries (as `sandbox.network.allow` takes them) an escalation
    /// may ask for: each asked entry must lie inside one of them.
    pub network: Option<Vec<String>>,
    /// Directories an escalation may ask to write: each asked directory
    /// must be inside one of them.
    pub writable_roots: Option<Vec<PathBuf>>,
}

/// Tools a server registers but shows only when configuration turns them on.
pub const OPTIONAL_TOOLS: &[&str] = &[
    "audit_read",
    "status",
    "check_env",
    "which",
    "list_binaries",
    "classify",
    "revoke_grants",
];

/// Default number of finished background jobs kept until read.
pub const DEFAULT_JOBS_MAX_FINISHED: usize = 32;

impl Config {
    /// How far per-project files count: not at all, fully, or, with a
    /// sandbox configured, only to narrow the roots (a sandboxed command
    /// could have written them).
    pub(crate) fn project_trust(&self) -> crate::roots::ProjectTrust {
        use crate::roots::ProjectTrust;
        match (self.project_config, self.sandbox.is_on()) {
            (false, _) => ProjectTrust::Off,
            (true, false) => ProjectTrust::Full,
            (true, true) => ProjectTrust::NarrowOnly,
        }
    }

    /// The defaults, with the given default time limit.
    pub fn with_timeout(timeout: Duration) -> Self {
        Self {
            timeout,
            max_timeout: timeout,
            shell: PathBuf::from("/bin/sh"),
            output_limit_bytes: DEFAULT_OUTPUT_LIMIT_BYTES,
            kill_grace: Duration::ZERO,
            drain: DEFAULT_DRAIN,
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            env: EnvPolicy::default(),
            non_interactive: true,
            allowed_roots: None,
            project_config: false,
            audit: None,
            tools: BTreeSet::new(),
            sessions: SessionConfig::default(),
            jobs_max_finished: DEFAULT_JOBS_MAX_FINISHED,
            output_store: OutputStoreSettings::default(),
            sandbox: crate::sandbox::SandboxConfig::default(),
            yield_after: None,
            escalation_ceiling: EscalationCeiling::default(),
            network_ask: NetworkAsk::default(),
        }
    }

    /// The time limit for a call that asked for `requested` (clamped to the ceiling).
    pub fn effective_timeout(&self, requested: Option<Duration>) -> Duration {
        match requested {
            Some(t) => t.min(self.max_timeout.max(self.timeout)),
            None => self.timeout,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Config {
        Config::with_timeout(Duration::from_secs(30))
    }

    #[test]
    fn effective_timeout_clamps_to_ceiling() {
        let cfg = base().apply_json(r#"{"max_timeout_seconds": 100}"#).unwrap();
        assert_eq!(cfg.effective_timeout(None), Duration::from_secs(30));
        assert_eq!(
            cfg.effective_timeout(Some(Duration::from_secs(5))),
            Duration::from_secs(5)
        );
        assert_eq!(
            cfg.effective_timeout(Some(Duration::from_secs(500))),
            Duration::from_secs(100)
        );
    }
}
