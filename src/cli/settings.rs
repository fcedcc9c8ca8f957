//! The binary's configuration: a JSON or TOML file with the library's keys
//! plus the binary's own, then the command-line flags on top.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bash_mcp::Config;
use bash_mcp::audit::AuditSettings;
use bash_mcp::config::{CONFIG_KEYS, OPTIONAL_TOOLS};
use bash_mcp::mcp::TaskOptions;
use bash_mcp::sandbox::SandboxConfig;
use serde_json::{Map, Value};

use super::args::Common;

/// Default time limit of a command, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// Default ceiling a call may raise its own limit to, in seconds.
pub const DEFAULT_MAX_TIMEOUT_SECS: u64 = 600;
/// Seconds an `execute` call waits before a still-running command is handed
/// back as a background job: below the 60 s after which many MCP clients
/// abandon a call, with room for a slow reply.
pub const DEFAULT_YIELD_SECS: u64 = 45;
/// Keys the binary reads itself; every other key goes to the library.
/// (`tools` is shared: a list is read here, an object goes to the library.)
/// The tool that reads the whole of a cut output.
const OUTPUT_READ: &str = "output_read";

pub const BINARY_KEYS: &[&str] = &[
    "working_dir",
    "permissions",
    "refuse_catastrophic",
    "sandbox_overrides",
    "tasks",
];

/// Allow and deny rules in the host's pattern format.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Permissions {
    pub allow: Vec<String>,
    /// Rules whose match puts the command to the person (deny wins over
    /// ask, ask over allow).
    pub ask: Vec<String>,
    pub deny: Vec<String>,
}

/// Everything `serve` and `exec` need.
#[derive(Debug, Clone)]
pub struct Settings {
    pub config: Config,
    pub working_dir: PathBuf,
    /// Whether `execute` is exposed (a `tools` list without it hides it).
    pub expose_execute: bool,
    /// Whether a `tools` list names `output_read` (it comes anyway with
    /// `execute` and the session tools, whose results can carry an `output_id`).
    pub names_output_read: bool,
    /// `None` when the file has no `permissions` key.
    pub permissions: Option<Permissions>,
    pub refuse_catastrophic: bool,
    /// Permission rules naming the commands whose `execute` call may widen
    /// the sandbox with its `sandbox` argument; empty: no call may.
    pub sandbox_overrides: Vec<String>,
    pub log_level: String,
    /// Whether the audit settings are the built-in default (not from the file).
    pub audit_is_default: bool,
    /// MCP tasks (`tasks` key); `None` when `tasks.enabled` is false.
    pub tasks: Option<TaskOptions>,
    /// Whether `sandbox.network` is the binary's default (the file sets no
    /// network and does not replace the sandbox).
    pub network_is_default: bool,
    /// `--quiet`: no start-up line naming the sandbox.
    pub quiet: bool,
    /// How the default sandbox was fitted to this machine, if it was.
    pub sandbox_fitted: Option<String>,
}

impl Settings {
    /// The tools the MCP handler exposes, by local name: `execute` with its
    /// job tools, the optional tools switched on, the session tools while
    /// sessions are enabled, and `output_read` wherever a result can carry an
    /// `output_id` (while the output store is on).
    pub fn exposed_tools(&self) -> Vec<String> {
        let mut tools = Vec::new();
        if self.expose_execute {
            tools.push("execute".to_owned());
            tools.extend(bash_mcp::job_tool_names().map(str::to_owned));
        }
        let cuts_carry_ids = self.expose_execute || self.config.sessions.enabled || self.names_output_read;
        if cuts_carry_ids && self.config.output_store.enabled {
            tools.push(OUTPUT_READ.to_owned());
        }
        tools.extend(self.config.tools.iter().cloned());
        if self.config.sessions.enabled {
            tools.extend(bash_mcp::session_tool_names().map(str::to_owned));
        }
        tools
    }
}

/// Where the binary keeps its audit log unless configured otherwise:
/// `$XDG_DATA_HOME/bash-mcp/audit.jsonl`, else `~/.local/share/bash-mcp/audit.jsonl`.
pub fn default_audit_path() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| Path::new(d).is_absolute())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")))?;
    Some(data.join("bash-mcp").join("audit.jsonl"))
}

/// Reads the file (if any) and applies the flags.
pub fn load(common: &Common) -> Result<Settings, String> {
    let mut config = Config::with_timeout(Duration::from_secs(DEFAULT_TIMEOUT_SECS));
    config.max_timeout = Duration::from_secs(DEFAULT_MAX_TIMEOUT_SECS);
    // The binary serves people directly: project files, the operator tools
    // and an audit log are on unless the file says otherwise.
    config.project_config = true;
    config.tools = OPTIONAL_TOOLS.iter().map(|t| (*t).to_owned()).collect();
    config.audit = default_audit_path().map(AuditSettings::new);
    // Many MCP clients abandon a tools/call after about 60 s whatever the
    // tool's time limit; a call still running after this long hands its
    // command back as a background job, in time for the client to hear.
    config.yield_after = Some(Duration::from_secs(DEFAULT_YIELD_SECS));
    config.sandbox = default_sandbox();
    let mut settings = Settings {
        config,
        working_dir: PathBuf::from("."),
        expose_execute: true,
        names_output_read: false,
        permissions: None,
        refuse_catastrophic: true,
        sandbox_overrides: Vec::new(),
        log_level: "warn".into(),
        audit_is_default: true,
        tasks: Some(TaskOptions::default()),
        network_is_default: true,
        quiet: common.quiet,
        sandbox_fitted: None,
    };
    if let Some(path) = &common.config {
        let mut map = read_file(path)?;
        if let Some(folder) = std::path::absolute(path).ok().as_deref().and_then(Path::parent) {
            relative_to_file(&mut map, folder);
        }
        apply(&mut settings, map).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(secs) = common.timeout {
        let mut flag = Map::new();
        flag.insert("timeout_seconds".into(), secs.into());
        settings.config = settings
            .config
            .apply_map(&flag)
            .map_err(|e| format!("--timeout: {}", e.message))?;
    }
    if let Some(dir) = &common.working_dir {
        settings.working_dir = dir.clone();
    }
    if let Some(level) = &common.log_level {
        settings.log_level = level.clone();
    }
    if common.no_sandbox {
        settings.config.sandbox.mode = bash_mcp::sandbox::Mode::Off;
    }
    if let Some(mode) = &common.network_ask {
        let flag = serde_json::json!({"network_ask": {"mode": mode}});
        settings.config = settings
            .config
            .apply_json(&flag.to_string())
            .map_err(|e| format!("--network-ask: {}", e.message))?;
    }
    if let Some(path) = &common.config {
        out_of_the_sandboxs_reach(path, &settings)?;
    }
    Ok(settings)
}

/// The sandbox the binary runs commands in unless its file or flags say
/// otherwise: `workspace-write` (the working directory and the temp dir
/// writable, the default protected paths kept) with the network open to
/// the package registries only, through the server's proxy. The library's
/// own default stays off: a host decides.
pub fn default_sandbox() -> SandboxConfig {
    let keys = serde_json::json!({"mode": "workspace-write", "network": {"allow": [DEFAULT_NETWORK]}});
    SandboxConfig::default()
        .apply(&keys, Path::new("/"))
        .expect("the default sandbox is a valid configuration")
}

/// The only hosts the default sandbox's commands reach.
pub const DEFAULT_NETWORK: &str = "@package-registries";

/// Refuses a configuration file that lies inside a writable root of the
/// sandbox it configures: a sandboxed command could rewrite it, and the
/// next start would trust what it wrote (a sandbox turned off).
fn out_of_the_sandboxs_reach(path: &Path, settings: &Settings) -> Result<(), String> {
    let sandbox = &settings.config.sandbox;
    if sandbox.mode != bash_mcp::sandbox::Mode::WorkspaceWrite {
        return Ok(());
    }
    let roots = sandbox.roots_for(&settings.working_dir);
    let file =
        std::fs::canonicalize(path).map_err(|e| format!("cannot resolve config file {}: {e}", path.display()))?;
    let roots: Vec<PathBuf> = roots.iter().filter_map(|r| std::fs::canonicalize(r).ok()).collect();
    // A protected place inside the roots is kept as it is (the default
    // `~/.config/bash-mcp` among them): a file there is out of reach. One
    // that is a root, or holds one, is not kept.
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let kept = sandbox
        .protected
        .iter()
        .filter_map(|entry| match entry.strip_prefix("~/") {
            Some(rest) => home.as_ref().map(|h| h.join(rest)),
            None => Some(PathBuf::from(entry)).filter(|p| p.is_absolute()),
        });
    if kept
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .filter(|p| !roots.iter().any(|root| root.starts_with(p)))
        .any(|p| file.starts_with(p))
    {
        return Ok(());
    }
    for root in roots {
        if file.starts_with(&root) {
            return Err(format!(
                "{}: this configuration file lies inside the sandbox's writable root {}, where a sandboxed command could rewrite it (and turn the sandbox off for the next start); move it outside every writable root, or choose other `sandbox.writable_roots` or another --working-dir",
                file.display(),
                root.display()
            ));
        }
    }
    Ok(())
}

/// Parses a configuration file: TOML when it ends in `.toml`, else JSON.
pub fn read_file(path: &Path) -> Result<Map<String, Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
    let is_toml = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let value: Value = if is_toml {
        let table: toml::Table =
            toml::from_str(&text).map_err(|e| format!("{} is not valid TOML: {e}", path.display()))?;
        serde_json::to_value(table).map_err(|e| format!("{}: {e}", path.display()))?
    } else {
        serde_json::from_str(&text).map_err(|e| {
            format!(
                "{} is not valid JSON: {e} (name the file *.toml to write TOML)",
                path.display()
            )
        })?
    };
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(format!("{} must hold one object (a table of keys)", path.display())),
    }
}

/// Makes the file's relative paths — `allowed_roots` entries,
/// `audit.path` and the `sandbox` paths — relative to the file's `folder` instead of the process's
/// current directory. Values of the wrong type are left for validation.
fn relative_to_file(map: &mut Map<String, Value>, folder: &Path) {
    let anchor = |value: &mut Value| {
        if let Some(text) = value.as_str()
            && !text.is_empty()
            && !text.starts_with("~/")
            && Path::new(text).is_relative()
        {
            *value = folder.join(text).to_string_lossy().into_owned().into();
        }
    };
    if let Some(Value::Array(roots)) = map.get_mut("allowed_roots") {
        roots.iter_mut().for_each(anchor);
    }
    if let Some(path) = map.get_mut("audit").and_then(|a| a.get_mut("path")) {
        anchor(path);
    }
    if let Some(Value::Object(sandbox)) = map.get_mut("sandbox") {
        // `@workdir` names a place, not a path; other `@`/`$` entries are
        // left for the sandbox's validation to refuse by their name.
        if let Some(Value::Array(paths)) = sandbox.get_mut("writable_roots") {
            paths
                .iter_mut()
                .filter(|p| !p.as_str().is_some_and(|t| t.starts_with('@') || t.starts_with('$')))
                .for_each(anchor);
        }
        if let Some(Value::Array(paths)) = sandbox.get_mut("read_deny") {
            paths.iter_mut().for_each(anchor);
        }
        for key in ["bwrap_path", "helper_path"] {
            if let Some(path) = sandbox.get_mut(key) {
                anchor(path);
            }
        }
    }
}

fn apply(settings: &mut Settings, mut map: Map<String, Value>) -> Result<(), String> {
    if map.contains_key("audit") {
        settings.audit_is_default = false;
    }
    // The file's `sandbox` keys apply over the binary's default sandbox
    // (`null` replaces it with none).
    match map.get("sandbox") {
        Some(Value::Object(keys)) if !keys.contains_key("network") => {}
        Some(_) => settings.network_is_default = false,
        None => {}
    }
    if let Some(dir) = map.remove("working_dir") {
        let dir = dir
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or("`working_dir` must be a non-empty string")?;
        settings.working_dir = PathBuf::from(dir);
    }
    if let Some(tools @ Value::Array(_)) = map.get("tools") {
        // The list form names every tool exposed; the library's object form
        // ({"status": true}) switches optional tools and keeps `execute`.
        let list = string_list("tools", tools)?;
        if let Some(bad) = list
            .iter()
            .find(|t| *t != "execute" && *t != OUTPUT_READ && !OPTIONAL_TOOLS.contains(&t.as_str()))
        {
            return Err(format!(
                "`tools` names an unknown tool {bad:?}; tools: execute (with its job tools), {OUTPUT_READ}, {} (the session tools come with [sessions] enabled = true)",
                OPTIONAL_TOOLS.join(", ")
            ));
        }
        settings.expose_execute = list.iter().any(|t| t == "execute");
        settings.names_output_read = list.iter().any(|t| t == OUTPUT_READ);
        let switches: Map<String, Value> = OPTIONAL_TOOLS
            .iter()
            .map(|t| (t.to_string(), Value::from(list.iter().any(|l| l == t))))
            .collect();
        map.insert("tools".into(), Value::Object(switches));
    }
    if let Some(value) = map.remove("tasks") {
        settings.tasks = task_options(&value)?;
    }
    if let Some(value) = map.remove("refuse_catastrophic") {
        settings.refuse_catastrophic = value.as_bool().ok_or("`refuse_catastrophic` must be true or false")?;
    }
    if let Some(value) = map.remove("sandbox_overrides") {
        settings.sandbox_overrides = string_list("sandbox_overrides", &value)?;
    }
    if let Some(value) = map.remove("permissions") {
        let Value::Object(mut rules) = value else {
            return Err("`permissions` must be an object {\"allow\": [...], \"ask\": [...], \"deny\": [...]}".into());
        };
        let mut permissions = Permissions::default();
        if let Some(allow) = rules.remove("allow") {
            permissions.allow = string_list("permissions.allow", &allow)?;
        }
        if let Some(ask) = rules.remove("ask") {
            permissions.ask = string_list("permissions.ask", &ask)?;
        }
        if let Some(deny) = rules.remove("deny") {
            permissions.deny = string_list("permissions.deny", &deny)?;
        }
        if let Some(key) = rules.keys().next() {
            return Err(format!("unknown key `permissions.{key}`; expected allow, ask and deny"));
        }
        settings.permissions = Some(permissions);
    }
    if let Some(key) = map.keys().find(|k| !CONFIG_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "unknown configuration key `{key}`; known keys: {}, {}",
            CONFIG_KEYS.join(", "),
            BINARY_KEYS.join(", ")
        ));
    }
    settings.config = settings
        .config
        .apply_map(&map)
        .map_err(|e| format!("{} ({})", e.message, e.hint))?;
    Ok(())
}

/// The `tasks` object: `enabled`, `ttl_seconds` (a task's lifetime when its
/// client asks for none), `max_ttl_seconds` (the most granted) and
/// `poll_interval_ms`.
fn task_options(value: &Value) -> Result<Option<TaskOptions>, String> {
    let Value::Object(map) = value else {
        return Err("`tasks` must be an object such as {\"ttl_seconds\": 3600}".into());
    };
    let mut options = TaskOptions::default();
    let mut enabled = true;
    let seconds = |key: &str, value: &Value, max: f64| {
        value
            .as_f64()
            .filter(|s| s.is_finite() && *s > 0.0 && *s <= max)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| format!("`tasks.{key}` must be a number above 0 and at most {max}, got {value}"))
    };
    let mut max_given = false;
    for (key, value) in map {
        match key.as_str() {
            "enabled" => enabled = value.as_bool().ok_or("`tasks.enabled` must be true or false")?,
            "ttl_seconds" => options.default_ttl = seconds(key, value, 31_536_000.0)?,
            "max_ttl_seconds" => {
                options.max_ttl = seconds(key, value, 31_536_000.0)?;
                max_given = true;
            }
            "poll_interval_ms" => {
                options.poll_interval = Duration::from_secs_f64(seconds(key, value, 600_000.0)?.as_secs_f64() / 1000.0)
            }
            other => {
                return Err(format!(
                    "unknown key `tasks.{other}`; expected enabled, ttl_seconds, max_ttl_seconds, poll_interval_ms"
                ));
            }
        }
    }
    if !max_given && options.max_ttl < options.default_ttl {
        options.max_ttl = options.default_ttl;
    }
    if options.max_ttl < options.default_ttl {
        return Err(format!(
            "`tasks.max_ttl_seconds` ({} s) is below `tasks.ttl_seconds` ({} s)",
            options.max_ttl.as_secs_f64(),
            options.default_ttl.as_secs_f64()
        ));
    }
    Ok(enabled.then_some(options))
}

fn string_list(key: &str, value: &Value) -> Result<Vec<String>, String> {
    let list = value
        .as_array()
        .ok_or_else(|| format!("`{key}` must be a list of strings"))?;
    list.iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("`{key}` must be a list of strings, found {v}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder for these tests' files, removed when the test binary exits.
    fn folder() -> PathBuf {
        static REGISTERED: std::sync::Once = std::sync::Once::new();
        REGISTERED.call_once(|| {
            extern "C" fn remove_folder() {
                let _ = std::fs::remove_dir_all(folder_path());
            }
            // SAFETY: registers a plain function to run at exit.
            unsafe { libc::atexit(remove_folder) };
        });
        folder_path()
    }

    fn folder_path() -> PathBuf {
        std::env::temp_dir().join(format!("bash-mcp-settings-{}", std::process::id()))
    }

    fn file(name: &str, text: &str) -> PathBuf {
        let dir = folder();
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn with_file(path: PathBuf) -> Common {
        Common {
            config: Some(path),
            ..Common::default()
        }
    }

    #[test]
    fn a_config_file_inside_a_root_of_the_sandbox_it_configures_is_refused() {
        let sandboxed = serde_json::json!({"sandbox": {"mode": "workspace-write"}, "working_dir": folder()});
        let config = file("sandboxed.json", &sandboxed.to_string());
        let e = load(&with_file(config.clone())).unwrap_err();
        assert!(
            e.contains("lies inside the sandbox's writable root") && e.contains("sandboxed.json"),
            "{e}"
        );
        // Outside the roots, or with no root at all, it is fine.
        let elsewhere = Common {
            config: Some(config.clone()),
            working_dir: Some(PathBuf::from("/")),
            ..Common::default()
        };
        std::fs::write(
            &config,
            r#"{"sandbox": {"mode": "workspace-write", "writable_roots": ["/nonexistent-root"]}}"#,
        )
        .unwrap();
        assert!(load(&elsewhere).is_ok());
        // Inside a protected place of the root, it is kept from commands.
        let kept = serde_json::json!({"sandbox": {"mode": "workspace-write", "protected": [folder().join("kept")]}, "working_dir": folder()});
        std::fs::create_dir_all(folder().join("kept")).unwrap();
        let inside_kept = folder().join("kept/config.json");
        std::fs::write(&inside_kept, kept.to_string()).unwrap();
        assert!(load(&with_file(inside_kept.clone())).is_ok());
        // Not when the protected place is itself the root.
        let root_kept = serde_json::json!({"sandbox": {"mode": "workspace-write", "protected": [folder().join("kept")]}, "working_dir": folder().join("kept")});
        std::fs::write(&inside_kept, root_kept.to_string()).unwrap();
        assert!(load(&with_file(inside_kept)).is_err());
        let read_only = serde_json::json!({"sandbox": {"mode": "read-only"}, "working_dir": folder()});
        std::fs::write(&config, read_only.to_string()).unwrap();
        assert!(load(&with_file(config)).is_ok());
    }

    #[test]
    fn toml_and_json_give_the_same_settings() {
        let toml = file(
            "a.toml",
            "timeout_seconds = 7\nmax_concurrent = 2\nworking_dir = \"/usr\"\nrefuse_catastrophic = false\n[permissions]\nallow = [\"bash.execute:git status*\"]\ndeny = [\"bash.execute:rm *\"]\n[env]\nset = { A = \"1\" }\n",
        );
        let json = file(
            "a.json",
            r#"{"timeout_seconds": 7, "max_concurrent": 2, "working_dir": "/usr", "refuse_catastrophic": false,
                "permissions": {"allow": ["bash.execute:git status*"], "deny": ["bash.execute:rm *"]},
                "env": {"set": {"A": "1"}}}"#,
        );
        let a = load(&with_file(toml)).unwrap();
        let b = load(&with_file(json)).unwrap();
        assert_eq!(a.config, b.config);
        assert_eq!(a.config.timeout, Duration::from_secs(7));
        assert_eq!(a.config.max_timeout, Duration::from_secs(DEFAULT_MAX_TIMEOUT_SECS));
        assert_eq!(a.config.max_concurrent, 2);
        assert_eq!(a.working_dir, PathBuf::from("/usr"));
        assert!(!a.refuse_catastrophic);
        assert_eq!(a.permissions, b.permissions);
        assert_eq!(a.permissions.unwrap().deny, vec!["bash.execute:rm *".to_string()]);
    }

    #[test]
    fn flags_override_the_file() {
        let path = file("b.json", r#"{"timeout_seconds": 7, "working_dir": "/etc"}"#);
        let common = Common {
            config: Some(path),
            timeout: Some(3.0),
            working_dir: Some("/usr".into()),
            log_level: Some("debug".into()),
            ..Common::default()
        };
        let s = load(&common).unwrap();
        assert_eq!(s.config.timeout, Duration::from_secs(3));
        assert_eq!(s.working_dir, PathBuf::from("/usr"));
        assert_eq!(s.log_level, "debug");
    }

    #[test]
    fn tools_as_a_list_or_as_switches() {
        let s = load(&with_file(file("t1.toml", "tools = [\"status\", \"which\"]\n"))).unwrap();
        assert_eq!(s.exposed_tools(), vec!["status".to_string(), "which".to_string()]);
        let jobs: Vec<String> = bash_mcp::job_tool_names().map(str::to_owned).collect();
        let with_reader = [
            vec!["execute".to_string()],
            jobs.clone(),
            vec!["output_read".to_string()],
        ]
        .concat();
        // A cut result names output_read: it comes with execute, named or not.
        let s = load(&with_file(file("t2.toml", "tools = [\"execute\"]\n"))).unwrap();
        assert_eq!(s.exposed_tools(), with_reader);
        let s = load(&with_file(file("t2b.toml", "tools = [\"execute\", \"output_read\"]\n"))).unwrap();
        assert_eq!(s.exposed_tools(), with_reader);
        // Without a store no result carries an output_id, so there is nothing to read.
        let s = load(&with_file(file(
            "t2c.toml",
            "tools = [\"execute\", \"output_read\"]\n[output_store]\nenabled = false\n",
        )))
        .unwrap();
        assert_eq!(s.exposed_tools(), [vec!["execute".to_string()], jobs.clone()].concat());
        let s = load(&with_file(file("t3.json", r#"{"tools": {"status": false}}"#))).unwrap();
        assert!(!s.exposed_tools().contains(&"status".to_string()));
        assert!(s.exposed_tools().contains(&"which".to_string()));
    }

    #[test]
    fn tasks_table() {
        let s = load(&Common::default()).unwrap();
        assert_eq!(s.tasks, Some(TaskOptions::default()));
        let s = load(&with_file(file(
            "tasks1.toml",
            "[tasks]\nttl_seconds = 7200\npoll_interval_ms = 250\n",
        )))
        .unwrap();
        let tasks = s.tasks.unwrap();
        assert_eq!(tasks.default_ttl, Duration::from_secs(7200));
        assert_eq!(tasks.max_ttl, bash_mcp::mcp::DEFAULT_MAX_TASK_TTL);
        assert_eq!(tasks.poll_interval, Duration::from_millis(250));
        // A default above the ceiling raises the ceiling, unless one is given.
        let s = load(&with_file(file("tasks2.json", r#"{"tasks": {"ttl_seconds": 200000}}"#))).unwrap();
        assert_eq!(s.tasks.unwrap().max_ttl, Duration::from_secs(200_000));
        let off = load(&with_file(file("tasks3.json", r#"{"tasks": {"enabled": false}}"#))).unwrap();
        assert_eq!(off.tasks, None);
        for (name, bad, key) in [
            ("tasks4.json", r#"{"tasks": {"ttl_seconds": 0}}"#, "tasks.ttl_seconds"),
            ("tasks5.json", r#"{"tasks": {"bogus": 1}}"#, "tasks.bogus"),
            (
                "tasks6.json",
                r#"{"tasks": {"ttl_seconds": 10, "max_ttl_seconds": 5}}"#,
                "tasks.max_ttl_seconds",
            ),
            ("tasks7.json", r#"{"tasks": 3}"#, "`tasks`"),
        ] {
            let err = load(&with_file(file(name, bad))).unwrap_err();
            assert!(err.contains(key), "{bad}: {err}");
        }
    }

    #[test]
    fn defaults() {
        let s = load(&Common::default()).unwrap();
        assert_eq!(s.config.timeout, Duration::from_secs(DEFAULT_TIMEOUT_SECS));
        // Below the 60 s after which many clients abandon a call.
        assert_eq!(s.config.yield_after, Some(Duration::from_secs(45)));
        let tools = s.exposed_tools();
        assert_eq!(tools[0], "execute");
        for t in OPTIONAL_TOOLS
            .iter()
            .copied()
            .chain(bash_mcp::job_tool_names())
            .chain([OUTPUT_READ])
        {
            assert!(tools.iter().any(|x| x == t), "{t} missing from {tools:?}");
        }
        assert!(
            !tools.iter().any(|x| x.starts_with("session_")),
            "sessions are off: {tools:?}"
        );
        assert!(s.config.project_config);
        assert!(s.refuse_catastrophic);
        assert!(s.permissions.is_none());
        // Commands are sandboxed: workspace-write, the registries only.
        assert_eq!(s.config.sandbox, default_sandbox());
        assert_eq!(s.config.sandbox.mode, bash_mcp::sandbox::Mode::WorkspaceWrite);
        assert_eq!(
            s.config.sandbox.network.to_value(),
            serde_json::json!({"allow": ["@package-registries"], "deny": []})
        );
        assert!(s.network_is_default);
    }

    #[test]
    fn the_files_sandbox_keys_apply_over_the_default_and_it_can_opt_out() {
        use bash_mcp::sandbox::Mode;
        let wider = load(&with_file(file(
            "sb1.toml",
            "[sandbox]\nwritable_roots = [\"@workdir\", \"/srv/cache\"]\n",
        )))
        .unwrap();
        assert_eq!(wider.config.sandbox.mode, Mode::WorkspaceWrite);
        assert_eq!(wider.config.sandbox.network, default_sandbox().network);
        assert!(wider.network_is_default);
        let no_net = load(&with_file(file("sb2.toml", "[sandbox]\nnetwork = false\n"))).unwrap();
        assert!(!no_net.network_is_default);
        assert_eq!(no_net.config.sandbox.network.to_value(), serde_json::json!(false));
        let off = load(&with_file(file("sb3.toml", "sandbox.mode = \"off\"\n"))).unwrap();
        assert_eq!(off.config.sandbox.mode, Mode::Off);
        let null = load(&with_file(file("sb4.json", r#"{"sandbox": null}"#))).unwrap();
        assert_eq!(null.config.sandbox.mode, Mode::Off);
        let flag = load(&Common {
            config: Some(file("sb5.toml", "[sandbox]\nmode = \"read-only\"\n")),
            no_sandbox: true,
            ..Common::default()
        })
        .unwrap();
        assert_eq!(flag.config.sandbox.mode, Mode::Off, "--no-sandbox wins over the file");
    }

    #[test]
    fn relative_paths_in_the_file_resolve_against_its_folder() {
        let folder = folder().join("rel");
        std::fs::create_dir_all(folder.join("project")).unwrap();
        let path = folder.join("bash-mcp.toml");
        std::fs::write(
            &path,
            "allowed_roots = [\"project\", \"/tmp\"]\n[audit]\npath = \"logs/audit.jsonl\"\n",
        )
        .unwrap();
        let s = load(&with_file(path)).unwrap();
        assert_eq!(
            s.config.allowed_roots,
            Some(vec![
                std::fs::canonicalize(folder.join("project")).unwrap(),
                std::fs::canonicalize("/tmp").unwrap()
            ])
        );
        assert_eq!(s.config.audit.unwrap().path, folder.join("logs/audit.jsonl"));
        std::fs::remove_dir_all(folder).unwrap();
    }

    #[test]
    fn errors_name_the_problem() {
        let e = load(&with_file(file("c.json", r#"{"timeout": 5}"#))).unwrap_err();
        assert!(
            e.contains("unknown configuration key `timeout`") && e.contains("refuse_catastrophic"),
            "{e}"
        );
        let e = load(&with_file(file("d.json", r#"{"tools": ["rm"]}"#))).unwrap_err();
        assert!(e.contains("unknown tool"), "{e}");
        let e = load(&with_file(file("d2.json", r#"{"tools": {"rm": true}}"#))).unwrap_err();
        assert!(e.contains("tools.rm"), "{e}");
        let e = load(&with_file(file("e.toml", "timeout_seconds = -1\n"))).unwrap_err();
        assert!(e.contains("timeout_seconds"), "{e}");
        let e = load(&with_file(file("f.json", "timeout_seconds = 1"))).unwrap_err();
        assert!(e.contains("not valid JSON") && e.contains(".toml"), "{e}");
        let e = load(&with_file(file("g.json", r#"{"permissions": {"allow": "x"}}"#))).unwrap_err();
        assert!(e.contains("permissions.allow"), "{e}");
        let e = load(&with_file(PathBuf::from("/nonexistent/bash-mcp.toml"))).unwrap_err();
        assert!(e.contains("cannot read"), "{e}");
    }
}
