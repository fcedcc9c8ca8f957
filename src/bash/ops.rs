//! Operator tools: `audit_read`, `status`, `check_env`, `which`, `list_binaries`,
//! `classify`, `revoke_grants`.
//!
//! Registered on every `BashServer`, shown only when the `tools`
//! configuration switches them on.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{ExecRequest, Shared, Status};
use crate::audit::AuditQuery;
use crate::command::jobs::JobManager;
use crate::config::resolve_program;
use crate::error::{ErrorCode, ToolError};
use crate::session::tools::LazyManager;
use crate::tool::{CallOptions, Tool, ToolDefinition, ToolResponse};
use crate::tool_args::{must_be, read, refuse_unknown};

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
        let tool = self.definition.name.as_str();
        let accepted = self.definition.argument_names();
        let shared = &self.shared;
        let result = match self.kind {
            Kind::AuditRead => read(tool, &accepted, args, wrong_audit_argument).and_then(|a| audit_read(shared, a)),
            Kind::Status => refuse_unknown(tool, &accepted, args).map(|()| self.status()),
            Kind::CheckEnv => refuse_unknown(tool, &accepted, args).map(|()| check_env(shared)),
            Kind::Which => read(tool, &accepted, args, wrong_which_argument).and_then(|a| which(shared, a)),
            Kind::ListBinaries => {
                read(tool, &accepted, args, wrong_names_argument).and_then(|a| list_binaries(shared, a))
            }
            Kind::Classify => read(tool, &accepted, args, wrong_classify_argument).and_then(classify),
            Kind::RevokeGrants => {
                read(tool, &accepted, args, wrong_grant_id_argument).and_then(|a| revoke_grants(shared, a))
            }
        };
        match result {
            Ok(value) => ToolResponse::document(value),
            Err(error) => ToolResponse::error(&error),
        }
    }
}

/// `audit_read`'s arguments, in the order they are checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditReadArgs {
    backup_index: Option<u64>,
    max_entries: Option<u64>,
    tool: Option<String>,
    since: Option<String>,
}

/// `which`'s argument.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WhichArgs {
    name: String,
}

/// `list_binaries`'s argument: the names to check, else [`DEFAULT_BINARIES`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListBinariesArgs {
    names: Option<Vec<String>>,
}

/// `classify`'s argument.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassifyArgs {
    command: String,
}

/// `revoke_grants`'s argument: one grant, else all of them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RevokeGrantsArgs {
    grant_id: Option<String>,
}

/// The most names one `list_binaries` call checks.
const MAX_NAMES: usize = 200;

fn invalid(message: String, hint: &str) -> ToolError {
    ToolError::new(ErrorCode::InvalidArguments, message, hint)
}

fn missing(key: &str, example: &str) -> ToolError {
    invalid(
        format!("the required argument `{key}` is missing"),
        &format!("pass {{\"{key}\": {example}}}"),
    )
}

fn not_a_string(key: &str, got: Option<&Value>) -> ToolError {
    invalid(must_be(key, "a string", got), "omit it or pass a string")
}

/// `audit_read`'s counts: a whole number from `min` to `max`.
fn out_of_range(key: &str, got: &dyn std::fmt::Display, (min, max): (u64, u64)) -> ToolError {
    invalid(
        format!("`{key}` must be an integer from {min} to {max}, got {got}"),
        "omit it for the default",
    )
}

/// The range of each of `audit_read`'s counts.
fn count_range(key: &str) -> (u64, u64) {
    if key == "backup_index" { (0, 1000) } else { (1, 10_000) }
}

fn within(key: &str, value: Option<u64>) -> Result<Option<u64>, ToolError> {
    let range = count_range(key);
    match value {
        Some(n) if !(range.0..=range.1).contains(&n) => Err(out_of_range(key, &n, range)),
        other => Ok(other),
    }
}

fn wrong_audit_argument(key: &str, got: Option<&Value>) -> ToolError {
    match (key, got) {
        ("backup_index" | "max_entries", Some(v)) => out_of_range(key, v, count_range(key)),
        _ => not_a_string(key, got),
    }
}

fn bad_program_name(got: &Value) -> ToolError {
    invalid(
        format!("`name` must be a program name without '/' or NUL, got {got}"),
        "pass a bare name such as \"cargo\"",
    )
}

fn wrong_which_argument(_key: &str, got: Option<&Value>) -> ToolError {
    match got {
        Some(v) => bad_program_name(v),
        None => missing("name", "\"cargo\""),
    }
}

fn bad_names_entry(got: &Value) -> ToolError {
    invalid(
        format!("`names` entries must be program names without '/' or NUL, got {got}"),
        "pass names such as [\"git\", \"cargo\"]",
    )
}

fn not_a_names_list(got: Option<&Value>) -> ToolError {
    invalid(
        must_be("names", &format!("a list of at most {MAX_NAMES} strings"), got),
        "omit it for the default list",
    )
}

/// A `names` that did not read as a list of strings: a list too long, or
/// the first entry that is not a string, or not a list at all.
fn wrong_names_argument(_key: &str, got: Option<&Value>) -> ToolError {
    match got {
        Some(Value::Array(items)) if items.len() <= MAX_NAMES => items
            .iter()
            .find(|v| !v.is_string())
            .map_or_else(|| not_a_names_list(got), bad_names_entry),
        _ => not_a_names_list(got),
    }
}

fn wrong_classify_argument(_key: &str, got: Option<&Value>) -> ToolError {
    match got {
        Some(_) => invalid(must_be("command", "a string", got), "pass {\"command\": \"...\"}"),
        None => missing("command", "\"...\""),
    }
}

fn wrong_grant_id_argument(key: &str, got: Option<&Value>) -> ToolError {
    not_a_string(key, got)
}

/// Revokes the grant `grant_id`, or every grant: the call's audit entry
/// records what was revoked (`revoked`).
fn revoke_grants(shared: &Shared, args: RevokeGrantsArgs) -> Result<Value, ToolError> {
    let id = args.grant_id;
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

fn classify(args: ClassifyArgs) -> Result<Value, ToolError> {
    serde_json::to_value(crate::permission::classify(&args.command))
        .map_err(|e| ToolError::new(ErrorCode::Internal, format!("classification not serializable: {e}"), ""))
}

fn audit_read(shared: &Shared, args: AuditReadArgs) -> Result<Value, ToolError> {
    let Some(log) = shared.audit() else {
        return Err(ToolError::new(
            ErrorCode::InvalidConfig,
            "the audit log is off",
            "configure `audit` with a path to record tool calls",
        ));
    };
    let query = AuditQuery {
        backup_index: within("backup_index", args.backup_index)?.unwrap_or(0) as usize,
        max_entries: within("max_entries", args.max_entries)?.map(|n| n as usize),
        tool: args.tool,
        since: args.since,
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

fn which(shared: &Shared, args: WhichArgs) -> Result<Value, ToolError> {
    if !valid_program_name(&args.name) {
        return Err(bad_program_name(&Value::String(args.name)));
    }
    Ok(probe(shared, &search_path(shared), &args.name))
}

fn list_binaries(shared: &Shared, args: ListBinariesArgs) -> Result<Value, ToolError> {
    let names = match args.names {
        None => DEFAULT_BINARIES.iter().map(|s| (*s).to_owned()).collect(),
        Some(names) if names.len() > MAX_NAMES => {
            return Err(not_a_names_list(Some(&Value::from(names))));
        }
        Some(names) => names,
    };
    if let Some(bad) = names.iter().find(|n| !valid_program_name(n)) {
        return Err(bad_names_entry(&Value::String(bad.clone())));
    }
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
    use serde_json::{Value, json};

    use super::*;
    use crate::tool_args::fields_of;

    /// The property names of a built-in definition, in the order listed.
    fn listed(tool: &str) -> Vec<String> {
        let (_, text) = DEFINITIONS.iter().find(|(name, _)| *name == tool).unwrap();
        let definition: Value = serde_json::from_str(text).unwrap();
        definition["inputSchema"]["properties"]
            .as_object()
            .map_or_else(Vec::new, |p| p.keys().cloned().collect())
    }

    #[test]
    fn each_tool_reads_exactly_the_arguments_its_definition_lists() {
        let mut read = [
            ("audit_read", fields_of::<AuditReadArgs>()),
            ("which", fields_of::<WhichArgs>()),
            ("list_binaries", fields_of::<ListBinariesArgs>()),
            ("classify", fields_of::<ClassifyArgs>()),
            ("revoke_grants", fields_of::<RevokeGrantsArgs>()),
        ];
        for (tool, fields) in &mut read {
            let mut fields = fields.to_vec();
            fields.sort_unstable();
            let mut listed = listed(tool);
            listed.sort_unstable();
            assert_eq!(fields, listed, "{tool}");
        }
    }

    /// The message `read` gives for `args` of the tool `tool`.
    fn refusal<T: serde::de::DeserializeOwned>(
        tool: &str,
        args: Value,
        wrong: fn(&str, Option<&Value>) -> ToolError,
    ) -> (ErrorCode, String, String) {
        let accepted = listed(tool);
        let accepted: Vec<&str> = accepted.iter().map(String::as_str).collect();
        let Err(e) = read::<T>(tool, &accepted, args.as_object().unwrap(), wrong) else {
            panic!("{tool} read {args}");
        };
        (e.code, e.message, e.hint)
    }

    #[test]
    fn an_argument_of_the_wrong_type_or_missing_is_named_with_what_to_pass() {
        let (code, message, hint) = refusal::<WhichArgs>("which", json!({}), wrong_which_argument);
        assert_eq!(code, ErrorCode::InvalidArguments);
        assert_eq!(message, "the required argument `name` is missing");
        assert_eq!(hint, "pass {\"name\": \"cargo\"}");
        let (_, message, _) = refusal::<WhichArgs>("which", json!({"name": 3}), wrong_which_argument);
        assert_eq!(message, "`name` must be a program name without '/' or NUL, got 3");
        let (_, message, hint) = refusal::<ClassifyArgs>("classify", json!({}), wrong_classify_argument);
        assert_eq!(message, "the required argument `command` is missing");
        assert_eq!(hint, "pass {\"command\": \"...\"}");
        let (_, message, _) = refusal::<ClassifyArgs>("classify", json!({"command": ["ls"]}), wrong_classify_argument);
        assert_eq!(message, "`command` must be a string, got an array");
        let (_, message, hint) =
            refusal::<RevokeGrantsArgs>("revoke_grants", json!({"grant_id": 7}), wrong_grant_id_argument);
        assert_eq!(message, "`grant_id` must be a string, got a number");
        assert_eq!(hint, "omit it or pass a string");
    }

    #[test]
    fn audit_counts_out_of_their_range_or_not_whole_say_the_range() {
        let (_, message, hint) =
            refusal::<AuditReadArgs>("audit_read", json!({"max_entries": -1}), wrong_audit_argument);
        assert_eq!(message, "`max_entries` must be an integer from 1 to 10000, got -1");
        assert_eq!(hint, "omit it for the default");
        let (_, message, _) =
            refusal::<AuditReadArgs>("audit_read", json!({"backup_index": "1"}), wrong_audit_argument);
        assert_eq!(message, "`backup_index` must be an integer from 0 to 1000, got \"1\"");
        let (_, message, _) = refusal::<AuditReadArgs>("audit_read", json!({"since": 5}), wrong_audit_argument);
        assert_eq!(message, "`since` must be a string, got a number");
        assert_eq!(
            within("max_entries", Some(0)).unwrap_err().message,
            "`max_entries` must be an integer from 1 to 10000, got 0"
        );
        assert_eq!(
            within("backup_index", Some(1001)).unwrap_err().message,
            "`backup_index` must be an integer from 0 to 1000, got 1001"
        );
        assert_eq!(within("backup_index", Some(0)).unwrap(), Some(0));
        assert_eq!(within("max_entries", None).unwrap(), None);
    }

    #[test]
    fn a_names_list_names_its_first_bad_entry_or_says_what_a_list_is() {
        let (_, message, hint) =
            refusal::<ListBinariesArgs>("list_binaries", json!({"names": ["git", 5]}), wrong_names_argument);
        assert_eq!(
            message,
            "`names` entries must be program names without '/' or NUL, got 5"
        );
        assert_eq!(hint, "pass names such as [\"git\", \"cargo\"]");
        let (_, message, hint) =
            refusal::<ListBinariesArgs>("list_binaries", json!({"names": "git"}), wrong_names_argument);
        assert_eq!(message, "`names` must be a list of at most 200 strings, got a string");
        assert_eq!(hint, "omit it for the default list");
        let many = vec![json!(1); MAX_NAMES + 1];
        let (_, message, _) =
            refusal::<ListBinariesArgs>("list_binaries", json!({"names": many}), wrong_names_argument);
        assert_eq!(message, "`names` must be a list of at most 200 strings, got an array");
    }

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
