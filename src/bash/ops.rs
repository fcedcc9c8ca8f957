//! Operator tools: `audit_read`, `status`, `check_env`, `which`, `list_binaries`,
//! `classify`, `revoke_grants`.
//!
//! Registered on every `BashServer`, shown only when the `tools`
//! configuration switches them on.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{ExecRequest, Shared, Status};
use crate::audit::AuditQuery;
use crate::command::jobs::JobManager;
use crate::config::resolve_program;
use crate::error::{ErrorCode, ToolError};
use crate::session::tools::LazyManager;
use crate::tool::{CallOptions, Tool, ToolDefinition, ToolResponse};
use crate::tool_args::{must_be, refuse_unknown};

/// Built-in definitions, by tool name.
pub(super) const DEFINITIONS: &[(&str, &str)] = &[
    ("audit_read", include_str!("../../data/tools/bash/audit_read.json")),
    ("status", include_str!("../../data/tools/bash/status.json")),
    ("check_env", include_str!("../../data/tools/bash/check_env.json")),
    ("which", include_str!("../../data/tools/bash/which.json")),
    (
        "list_binaries",
        include_str!("../../data/tools/bash/list_binaries.json"),
    ),
    ("classify", include_str!("../../data/tools/bash/classify.json")),
    (
        "revoke_grants",
        include_str!("../../data/tools/bash/revoke_grants.json"),
    ),
];

/// Programs `list_binaries` checks by default.
pub const DEFAULT_BINARIES: &[&str] = &[
    "git",
    "gh",
    "make",
    "cmake",
    "ninja",
    "gcc",
    "g++",
    "clang",
    "cc",
    "ld",
    "rustc",
    "cargo",
    "go",
    "python3",
    "python",
    "pip3",
    "pip",
    "uv",
    "node",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "deno",
    "bun",
    "java",
    "javac",
    "mvn",
    "gradle",
    "ruby",
    "gem",
    "perl",
    "php",
    "docker",
    "podman",
    "kubectl",
    "terraform",
    "curl",
    "wget",
    "jq",
    "rg",
    "fd",
    "fzf",
    "tmux",
    "ssh",
    "rsync",
    "sqlite3",
    "psql",
    "tar",
    "zip",
    "unzip",
];

/// Time limit of one version probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Which operator tool an [`OpsTool`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    AuditRead,
    Status,
    CheckEnv,
    Which,
    ListBinaries,
    Classify,
    RevokeGrants,
}

impl Kind {
    pub(super) fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "audit_read" => Self::AuditRead,
            "status" => Self::Status,
            "check_env" => Self::CheckEnv,
            "which" => Self::Which,
            "list_binaries" => Self::ListBinaries,
            "classify" => Self::Classify,
            "revoke_grants" => Self::RevokeGrants,
            _ => return None,
        })
    }
}

/// One operator tool.
pub(super) struct OpsTool {
    pub definition: ToolDefinition,
    pub kind: Kind,
    pub shared: Arc<Shared>,
    /// For the counts `status` reports.
    pub jobs: Arc<JobManager>,
    pub sessions: Arc<LazyManager>,
}

impl Tool for OpsTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn enabled(&self) -> bool {
        self.shared.config().tools.contains(&self.definition.name)
    }

    fn call(&self, args: &Map<String, Value>, _options: CallOptions<'_>) -> ToolResponse {
        let result = refuse_unknown(&self.definition.name, &self.definition.argument_names(), args).and_then(|()| {
            match self.kind {
                Kind::AuditRead => audit_read(&self.shared, args),
                Kind::Status => Ok(self.status()),
                Kind::CheckEnv => Ok(check_env(&self.shared)),
                Kind::Which => which(&self.shared, args),
                Kind::ListBinaries => list_binaries(&self.shared, args),
                Kind::Classify => classify(args),
                Kind::RevokeGrants => revoke_grants(&self.shared, args),
            }
        });
        match result {
            Ok(value) => ToolResponse::document(value),
            Err(error) => ToolResponse::error(&error),
        }
    }
}

fn invalid(message: String, hint: &str) -> ToolError {
    ToolError::new(ErrorCode::InvalidArguments, message, hint)
}

fn optional_uint(args: &Map<String, Value>, key: &str, min: u64, max: u64) -> Result<Option<u64>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().filter(|n| (min..=max).contains(n)).map(Some).ok_or_else(|| {
            invalid(
                format!("`{key}` must be an integer from {min} to {max}, got {v}"),
                "omit it for the default",
            )
        }),
    }
}

fn optional_string(args: &Map<String, Value>, key: &str) -> Result<Option<String>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(invalid(must_be(key, "a string", Some(v)), "omit it or pass a string")),
    }
}

/// Revokes the grant `grant_id`, or every grant: the call's audit entry
/// records what was revoked (`revoked`).
fn revoke_grants(shared: &Shared, args: &Map<String, Value>) -> Result<Value, ToolError> {
    let id = optional_string(args, "grant_id")?;
    let revoked = shared.approvals.revoke(id.as_deref());
    if revoked.is_empty()
        && let Some(id) = &id
    {
        let known: Vec<String> = shared.approvals.grants().into_iter().map(|g| g.id).collect();
        return Err(invalid(
            format!("no grant has the id {id:?}; nothing was revoked"),
            &if known.is_empty() {
                "there are no grants to revoke".to_owned()
            } else {
                format!(
                    "the grants in force: {} (status lists them under approvals.grants); omit `grant_id` to revoke them all",
                    known.join(", ")
                )
            },
        ));
    }
    tracing::info!(revoked = revoked.len(), "grants revoked");
    Ok(json!({"revoked": revoked, "grants": shared.approvals.grants()}))
}

fn classify(args: &Map<String, Value>) -> Result<Value, ToolError> {
    match args.get("command") {
        Some(Value::String(command)) => serde_json::to_value(crate::permission::classify(command))
            .map_err(|e| ToolError::new(ErrorCode::Internal, format!("classification not serializable: {e}"), "")),
        Some(v) => Err(invalid(
            must_be("command", "a string", Some(v)),
            "pass {\"command\": \"...\"}",
        )),
        None => Err(invalid(
            "the required argument `command` is missing".into(),
            "pass {\"command\": \"...\"}",
        )),
    }
}

fn audit_read(shared: &Shared, args: &Map<String, Value>) -> Result<Value, ToolError> {
    let Some(log) = shared.audit() else {
        return Err(ToolError::new(
            ErrorCode::InvalidConfig,
            "the audit log is off",
            "configure `audit` with a path to record tool calls",
        ));
    };
    let query = AuditQuery {
        backup_index: optional_uint(args, "backup_index", 0, 1000)?.unwrap_or(0) as usize,
        max_entries: optional_uint(args, "max_entries", 1, 10_000)?.map(|n| n as usize),
        tool: optional_string(args, "tool")?,
        since: optional_string(args, "since")?,
        instance: (!log.settings().read_all).then(|| shared.instance.clone()),
    };
    let entries = log.read(&query)?;
    Ok(json!({"count": entries.len(), "entries": entries}))
}

impl OpsTool {
    fn status(&self) -> Value {
        let mut doc = status(&self.shared);
        let (running, finished) = self.jobs.counts();
        doc["jobs"] = json!({"running": running, "finished_unread": finished});
        let config = self.shared.config();
        doc["sessions"] = json!({
            "enabled": config.sessions.enabled,
            "open": self.sessions.open_sessions(),
            "max": config.sessions.max_sessions,
        });
        doc
    }
}

fn status(shared: &Shared) -> Value {
    let config = shared.config();
    let (running, queued) = shared.limiter.counts();
    let audit = shared.audit().map(|log| {
        let settings = log.settings();
        let backups: Vec<String> = (1..=settings.backups)
            .filter_map(|i| log.backup_path(i))
            .map(|p| p.display().to_string())
            .collect();
        json!({
            "path": settings.path.display().to_string(),
            "size_bytes": log.size(),
            "max_bytes": settings.max_bytes,
            "backups_kept": settings.backups,
            "backups_present": backups,
            "gzip_min_bytes": settings.gzip_min_bytes,
            "read_all": settings.read_all,
        })
    });
    json!({
        "server": shared.name,
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_seconds": shared.started.elapsed().as_secs(),
        "working_dir": shared.working_dir().display().to_string(),
        "configuration": config.to_masked_value(),
        "concurrency": {"max": config.max_concurrent, "running": running, "queued": queued},
        "audit": audit,
        "calls": {"served": shared.counters.served(), "failed": shared.counters.failed()},
        "project_file_warnings": crate::roots::project_file_warnings(),
        "sandbox": crate::sandbox::status_value(&config.sandbox, &shared.working_dir(), false),
        "approvals": {
            "grants": shared.approvals.grants(),
            "host_approver": shared.approvals.has_approver(),
        },
        "output_store": {
            "dir": shared.outputs.path().map(|p| p.display().to_string()),
            "outputs": shared.outputs.ids().len(),
            "bytes": shared.outputs.bytes(),
        },
    })
}

fn check_env(shared: &Shared) -> Value {
    let config = shared.config();
    let env = command_env(shared);
    let path_var = env_value(&env, "PATH").unwrap_or_default();
    let path_entries: Vec<Value> = path_var
        .split(':')
        .filter(|p| !p.is_empty())
        .map(|p| json!({"dir": p, "exists": Path::new(p).is_dir()}))
        .collect();
    // Shells that name their version in a variable say it; for the others
    // (dash, busybox sh) ask the package manager about the resolved program.
    let package = std::fs::canonicalize(&config.shell)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c)))
        .unwrap_or_default();
    let probe = format!(
        "v=\"${{BASH_VERSION:-${{ZSH_VERSION:-${{KSH_VERSION:-}}}}}}\"; \
         if [ -z \"$v\" ] && [ -n '{package}' ] && command -v dpkg-query >/dev/null 2>&1; then \
         v=$(dpkg-query -W -f='${{Version}}' '{package}' 2>/dev/null) && v=\"{package} $v\"; fi; printf '%s' \"$v\""
    );
    let shell_version = shared
        .run(&ExecRequest::new(probe).timeout(PROBE_TIMEOUT), CallOptions::default())
        .ok()
        .filter(|o| o.success())
        .map(|o| o.output.text())
        .filter(|v| !v.is_empty());
    let uname = uname();
    json!({
        "os": os_release(),
        "kernel": uname.get("release"),
        "kernel_version": uname.get("version"),
        "architecture": uname.get("machine"),
        "shell": {
            "path": config.shell.display().to_string(),
            "resolved": std::fs::canonicalize(&config.shell).ok().map(|p| p.display().to_string()),
            "version": shell_version,
        },
        "path": path_entries,
        "user": user_name(),
        "uid": rustix::process::geteuid().as_raw(),
        "home": env_value(&env, "HOME"),
        "wsl": crate::roots::is_wsl(),
        "container_hints": container_hints(),
        "sandbox": crate::sandbox::status_value(&config.sandbox, &shared.working_dir(), true),
    })
}

fn which(shared: &Shared, args: &Map<String, Value>) -> Result<Value, ToolError> {
    let name = match args.get("name") {
        Some(Value::String(n)) if valid_program_name(n) => n.clone(),
        Some(v) => {
            return Err(invalid(
                format!("`name` must be a program name without '/' or NUL, got {v}"),
                "pass a bare name such as \"cargo\"",
            ));
        }
        None => {
            return Err(invalid(
                "the required argument `name` is missing".into(),
                "pass {\"name\": \"cargo\"}",
            ));
        }
    };
    Ok(probe(shared, &search_path(shared), &name))
}

fn list_binaries(shared: &Shared, args: &Map<String, Value>) -> Result<Value, ToolError> {
    let names: Vec<String> = match args.get("names") {
        None | Some(Value::Null) => DEFAULT_BINARIES.iter().map(|s| (*s).to_owned()).collect(),
        Some(Value::Array(items)) if items.len() <= 200 => items
            .iter()
            .map(|v| match v {
                Value::String(n) if valid_program_name(n) => Ok(n.clone()),
                other => Err(invalid(
                    format!("`names` entries must be program names without '/' or NUL, got {other}"),
                    "pass names such as [\"git\", \"cargo\"]",
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(v) => {
            return Err(invalid(
                must_be("names", "a list of at most 200 strings", Some(v)),
                "omit it for the default list",
            ));
        }
    };
    let path = search_path(shared);
    // Probes run in parallel, each inside the server's concurrency limit.
    let results: Vec<Value> = std::thread::scope(|scope| {
        let handles: Vec<_> = names
            .iter()
            .map(|name| scope.spawn(|| probe(shared, &path, name)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(Value::Null)).collect()
    });
    let found = results.iter().filter(|r| r["found"] == true).count();
    Ok(json!({"checked": results.len(), "found": found, "binaries": results}))
}

fn valid_program_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 255 && !name.contains(['/', '\0'])
}

/// The PATH a command sees, for resolving programs as it would.
fn search_path(shared: &Shared) -> String {
    env_value(&command_env(shared), "PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".to_owned())
}

/// Resolves `name` on `path` and probes its version.
fn probe(shared: &Shared, path: &str, name: &str) -> Value {
    let Some(found) = std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|candidate| resolve_program(&candidate.to_string_lossy()).is_some())
    else {
        return json!({"name": name, "found": false});
    };
    json!({
        "name": name,
        "found": true,
        "path": found.display().to_string(),
        "resolved": std::fs::canonicalize(&found).ok().map(|p| p.display().to_string()),
        "version": version_of(shared, &found, name),
    })
}

/// First non-empty line of the program's version output, from a short probe.
fn version_of(shared: &Shared, program: &Path, name: &str) -> Option<String> {
    // Programs whose version is not behind `--version`.
    let flag = match name {
        "go" => "version",
        "java" | "javac" => "-version",
        "ssh" | "tmux" => "-V",
        "kubectl" => "version --client",
        "unzip" => "-v",
        "zip" => "-v",
        _ => "--version",
    };
    let command = format!(
        "exec {} {flag} 2>&1 </dev/null",
        shell_quote(&program.to_string_lossy())
    );
    let outcome = shared
        .run(
            &ExecRequest::new(command).timeout(PROBE_TIMEOUT),
            CallOptions::default(),
        )
        .ok()?;
    // A failing probe printed an error or a usage text, not a version.
    if outcome.status != Status::Exited(0) {
        return None;
    }
    first_version_line(&outcome.output.text())
}

/// The first non-empty line of a version text, terminal colours removed;
/// `None` when it reads as an error or a usage text.
fn first_version_line(text: &str) -> Option<String> {
    static ANSI: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]").expect("valid regex"));
    let line = text
        .lines()
        .map(|l| ANSI.replace_all(l, ""))
        .map(|l| l.trim().to_owned())
        .find(|l| !l.is_empty())?;
    let lower = line.to_ascii_lowercase();
    if [
        "usage",
        "error",
        "caution",
        "unknown option",
        "invalid option",
        "illegal option",
    ]
    .iter()
    .any(|w| lower.starts_with(w))
    {
        return None;
    }
    Some(line.chars().take(200).collect())
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn command_env(shared: &Shared) -> Vec<String> {
    shared
        .config()
        .build_env(&[])
        .into_iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect()
}

fn env_value(env: &[String], name: &str) -> Option<String> {
    env.iter()
        .find_map(|e| e.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')))
        .map(str::to_owned)
}

fn os_release() -> Option<String> {
    let text = std::fs::read_to_string("/etc/os-release").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_owned())
}

fn uname() -> Map<String, Value> {
    let u = rustix::system::uname();
    let mut map = Map::new();
    let text = |field: &std::ffi::CStr| Value::from(field.to_string_lossy().into_owned());
    map.insert("release".into(), text(u.release()));
    map.insert("version".into(), text(u.version()));
    map.insert("machine".into(), text(u.machine()));
    map
}

fn user_name() -> Option<String> {
    // SAFETY: getpwuid_r writes into our buffers only.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 4096];
        let mut result = std::ptr::null_mut();
        let rc = libc::getpwuid_r(libc::geteuid(), &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result);
        if rc != 0 || result.is_null() {
            return None;
        }
        Some(std::ffi::CStr::from_ptr(pwd.pw_name).to_string_lossy().into_owned())
    }
}

fn container_hints() -> Vec<String> {
    let mut hints = Vec::new();
    for (file, hint) in [
        ("/.dockerenv", "docker (/.dockerenv)"),
        ("/run/.containerenv", "podman (/run/.containerenv)"),
    ] {
        if Path::new(file).exists() {
            hints.push(hint.to_owned());
        }
    }
    if let Ok(kind) = std::env::var("container") {
        hints.push(format!("container={kind} (environment)"));
    }
    if let Ok(cgroup) = std::fs::read_to_string("/proc/1/cgroup") {
        for marker in ["docker", "kubepods", "lxc", "containerd", "libpod"] {
            if cgroup.contains(marker) {
                hints.push(format!("{marker} (cgroup of pid 1)"));
            }
        }
    }
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        hints.push("kubernetes (KUBERNETES_SERVICE_HOST)".to_owned());
    }
    hints
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_lines_are_cleaned_and_errors_dropped() {
        use super::first_version_line as v;
        assert_eq!(v("\n  git version 2.47.3\nmore").as_deref(), Some("git version 2.47.3"));
        assert_eq!(
            v("\x1b[1mApache Maven 3.8.7\x1b[m\n").as_deref(),
            Some("Apache Maven 3.8.7")
        );
        assert_eq!(v("Error: unknown flag: --version\n"), None);
        assert_eq!(v("usage: tmux [-2CDlNuVv]\n"), None);
        assert_eq!(v("caution: not a zip file\n"), None);
        assert_eq!(v(""), None);
    }
}
