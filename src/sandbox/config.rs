//! The `sandbox` configuration key: what a sandbox allows, parsed and
//! validated with errors that name the key.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::network::NetPolicy;

/// How much of the file system a sandboxed command may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Mode {
    /// No sandbox: commands run with the host's rights.
    Off,
    /// Nothing is writable but a private temp dir and `/dev/null`-like devices.
    ReadOnly,
    /// The writable roots are writable, minus the protected paths.
    WorkspaceWrite,
}

impl Mode {
    /// The name used in configuration and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::ReadOnly => "read-only",
            Mode::WorkspaceWrite => "workspace-write",
        }
    }
}

/// What happens when a sandbox is configured but no backend works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnUnavailable {
    /// Every call fails with `sandbox_unavailable` (the default).
    Fail,
    /// Commands run unsandboxed; the probe's reason is logged once and shown
    /// in `status`.
    WarnAndRunUnsandboxed,
}

/// Which backend to use; `Auto` takes the first that the probe finds working.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackendChoice {
    /// bubblewrap, else Landlock + seccomp.
    Auto,
    /// Only bubblewrap.
    Bwrap,
    /// Only Landlock + seccomp.
    Landlock,
}

/// What network a sandboxed command has.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Network {
    /// No IP traffic (`false`); AF_UNIX stays.
    Off,
    /// Unrestricted (`true`).
    On,
    /// No route out but the server's proxy, which reaches only the hosts
    /// the policy allows (`{"allow": [...], "deny": [...]}`).
    Policy(NetPolicy),
}

impl Network {
    /// Whether the command shares the host's network (no namespace, no
    /// proxy).
    pub fn is_on(&self) -> bool {
        matches!(self, Network::On)
    }

    /// The policy, when the network is open by name.
    pub fn policy(&self) -> Option<&NetPolicy> {
        match self {
            Network::Policy(policy) => Some(policy),
            _ => None,
        }
    }

    /// The value as configuration JSON.
    pub fn to_value(&self) -> Value {
        match self {
            Network::Off => Value::Bool(false),
            Network::On => Value::Bool(true),
            Network::Policy(policy) => policy.to_value(),
        }
    }

    /// `false`, `true` or `{"allow": [...], "deny": [...]}`.
    fn parse(value: &Value) -> Result<Network, ConfigProblem> {
        let hint = "use true, false, or {\"allow\": [\"@package-registries\", \"*.example.com\"], \"deny\": [...]}";
        match value {
            Value::Bool(true) => Ok(Network::On),
            Value::Bool(false) => Ok(Network::Off),
            Value::Object(map) => {
                if let Some(other) = map.keys().find(|k| *k != "allow" && *k != "deny") {
                    return Err(problem(
                        format!("unknown key `sandbox.network.{other}`"),
                        "a network policy has `allow` and `deny`",
                    ));
                }
                let list = |key: &str| match map.get(key) {
                    None => Ok(Vec::new()),
                    Some(v) => strings(&format!("network.{key}"), v),
                };
                NetPolicy::new(&list("allow")?, &list("deny")?)
                    .map(Network::Policy)
                    .map_err(|message| problem(message, hint))
            }
            _ => Err(problem(
                format!("`sandbox.network` must be true, false or a policy object, got {value}"),
                hint,
            )),
        }
    }

    /// This network narrowed by a call's `network`; `Err` when the call
    /// asks for more.
    fn tightened(&self, asked: Network, value: &Value) -> Result<Network, ConfigProblem> {
        match (self, asked) {
            (_, Network::Off) => Ok(Network::Off),
            (Network::On, asked) => Ok(asked),
            (Network::Policy(_), Network::On) => Err(widening("network", value)),
            (Network::Policy(ours), Network::Policy(call)) => ours.narrowed_by(&call).map(Network::Policy).map_err(|entry| {
                problem(
                    format!("the call's `sandbox.network.allow` entry `{entry}` reaches further than the configured network policy allows"),
                    format!("a call may list only hosts the configured policy allows: {}", ours.allow().collect::<Vec<_>>().join(", ")),
                )
            }),
            (Network::Off, Network::Policy(call)) if call.allows_nothing() => Ok(Network::Off),
            (Network::Off, _) => Err(widening("network", value)),
        }
    }
}

/// Paths protected by default inside writable roots, relative to each root
/// (or to the home directory for `~/` entries). See docs/sandbox.md for why
/// each one is listed.
pub const DEFAULT_PROTECTED: &[&str] = &[
    ".git/hooks",
    ".git/config",
    ".gitmodules",
    ".bash-mcp.toml",
    ".envrc",
    ".vscode",
    ".idea",
    "~/.bashrc",
    "~/.bash_profile",
    "~/.profile",
    "~/.zshrc",
    "~/.zshenv",
    "~/.config/fish",
    "~/.ssh",
    "~/.gitconfig",
    "~/.config/git",
    "~/.config/bash-mcp",
];

/// The `sandbox` configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxConfig {
    pub mode: Mode,
    /// Writable in `workspace-write`; `None` means the server's working
    /// directory (set by its host or operator, never by a call). Commands
    /// also get a temp dir of their server's (see [`temp`](super::temp)).
    pub writable_roots: Option<Vec<PathBuf>>,
    /// With listed `writable_roots`, the server's working directory is
    /// writable too (the list named [`WORKING_DIR`]): roots added to the
    /// project instead of replacing it. Without a list it always is.
    pub writable_working_dir: bool,
    /// `false`: no IP traffic (AF_UNIX stays); `true`: unrestricted; a
    /// policy: only the hosts it allows, through the server's proxy.
    pub network: Network,
    /// Paths kept read-only even inside a writable root.
    pub protected: Vec<String>,
    /// Paths hidden from commands (an empty directory or file in their place).
    pub read_deny: Vec<PathBuf>,
    pub on_unavailable: OnUnavailable,
    pub backend: BackendChoice,
    /// `bwrap` to use instead of the one on PATH.
    pub bwrap_path: Option<PathBuf>,
    /// The `bash-mcp` binary that applies Landlock + seccomp before exec,
    /// instead of the one found next to the library or on PATH.
    pub helper_path: Option<PathBuf>,
    /// bubblewrap: `execute` calls (and jobs) run through a long-lived
    /// supervisor per configuration instead of a new bwrap per command.
    pub supervisor: bool,
    /// Learn denials from seccomp user notification (precise) where the
    /// backend can, instead of from the command's error text only.
    pub notify_denials: bool,
    /// The most processes (threads included) one command may run, where
    /// the machine lets the sandbox bound it (see
    /// [`limits`](super::limits)).
    pub max_processes: u32,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            mode: Mode::Off,
            writable_roots: None,
            writable_working_dir: false,
            network: Network::Off,
            protected: DEFAULT_PROTECTED.iter().map(|s| (*s).to_owned()).collect(),
            read_deny: Vec::new(),
            on_unavailable: OnUnavailable::Fail,
            backend: BackendChoice::Auto,
            bwrap_path: None,
            helper_path: None,
            supervisor: true,
            notify_denials: true,
            max_processes: super::limits::DEFAULT_MAX_PROCESSES,
        }
    }
}

/// The `writable_roots` entry that names the server's working directory
/// (whatever its host or operator set it to, now or later), so that a list
/// can add places to the project instead of replacing it.
pub const WORKING_DIR: &str = "@workdir";

/// Every key of the `sandbox` object.
pub const SANDBOX_KEYS: &[&str] = &[
    "mode",
    "writable_roots",
    "network",
    "protected",
    "read_deny",
    "on_unavailable",
    "backend",
    "bwrap_path",
    "helper_path",
    "supervisor",
    "notify_denials",
    "max_processes",
];

/// A configuration problem: what was wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    pub message: String,
    pub hint: String,
}

fn problem(message: impl Into<String>, hint: impl Into<String>) -> ConfigProblem {
    ConfigProblem {
        message: message.into(),
        hint: hint.into(),
    }
}

impl SandboxConfig {
    /// Whether commands run sandboxed.
    pub fn is_on(&self) -> bool {
        self.mode != Mode::Off
    }

    /// A copy with the keys of `value` applied (`null` turns the sandbox off).
    /// Relative paths resolve against `base`.
    pub fn apply(&self, value: &Value, base: &Path) -> Result<SandboxConfig, ConfigProblem> {
        let map = match value {
            Value::Null => return Ok(SandboxConfig::default()),
            Value::Object(map) => map,
            _ => {
                return Err(problem(
                    format!("`sandbox` must be an object or null, got {value}"),
                    "use e.g. {\"mode\": \"workspace-write\", \"network\": false}",
                ));
            }
        };
        let mut next = self.clone();
        for (key, value) in map {
            next.apply_key(key, value, base)?;
        }
        Ok(next)
    }

    fn apply_key(&mut self, key: &str, value: &Value, base: &Path) -> Result<(), ConfigProblem> {
        match key {
            "mode" => self.mode = parse_mode(value)?,
            "writable_roots" => {
                (self.writable_roots, self.writable_working_dir) = match value {
                    Value::Null => (None, false),
                    _ => {
                        let (roots, working_dir) = roots(key, value, base)?;
                        (Some(roots), working_dir)
                    }
                }
            }
            "network" => self.network = Network::parse(value)?,
            "protected" => self.protected = strings(key, value)?,
            "read_deny" => self.read_deny = absolute_paths(key, value, base)?,
            "on_unavailable" => {
                self.on_unavailable = match value.as_str() {
                    Some("fail") => OnUnavailable::Fail,
                    Some("warn-and-run-unsandboxed") => OnUnavailable::WarnAndRunUnsandboxed,
                    _ => {
                        return Err(problem(
                            format!(
                                "`sandbox.on_unavailable` must be \"fail\" or \"warn-and-run-unsandboxed\", got {value}"
                            ),
                            "use \"fail\" (never run a command unsandboxed) unless you accept unsandboxed runs",
                        ));
                    }
                }
            }
            "backend" => {
                self.backend = match value.as_str() {
                    Some("auto") => BackendChoice::Auto,
                    Some("bwrap") => BackendChoice::Bwrap,
                    Some("landlock") => BackendChoice::Landlock,
                    _ => {
                        return Err(problem(
                            format!("`sandbox.backend` must be \"auto\", \"bwrap\" or \"landlock\", got {value}"),
                            "use \"auto\" to take the first backend that works",
                        ));
                    }
                }
            }
            "bwrap_path" => self.bwrap_path = optional_path(key, value, base)?,
            "helper_path" => self.helper_path = optional_path(key, value, base)?,
            "supervisor" => self.supervisor = boolean(key, value)?,
            "notify_denials" => self.notify_denials = boolean(key, value)?,
            "max_processes" => {
                use super::limits::{MAX_MAX_PROCESSES, MIN_MAX_PROCESSES};
                self.max_processes = value
                    .as_u64()
                    .filter(|n| (u64::from(MIN_MAX_PROCESSES)..=u64::from(MAX_MAX_PROCESSES)).contains(n))
                    .map(|n| n as u32)
                    .ok_or_else(|| {
                        problem(
                            format!(
                                "`sandbox.max_processes` must be a whole number from {MIN_MAX_PROCESSES} to {MAX_MAX_PROCESSES}, got {value}"
                            ),
                            format!(
                                "the kernel's smallest pid_max makes {MIN_MAX_PROCESSES} the least; the default is {}",
                                super::limits::DEFAULT_MAX_PROCESSES
                            ),
                        )
                    })?
            }
            other => {
                return Err(problem(
                    format!("unknown configuration key `sandbox.{other}`"),
                    format!("known keys: {}", SANDBOX_KEYS.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// The configuration as JSON for `status`.
    pub fn to_value(&self) -> Value {
        let paths = |p: &[PathBuf]| p.iter().map(|p| p.display().to_string()).collect::<Vec<_>>();
        serde_json::json!({
            "mode": self.mode.as_str(),
            "writable_roots": self.writable_roots.as_deref().map(|roots| {
                let mut list = paths(roots);
                if self.writable_working_dir {
                    list.insert(0, WORKING_DIR.to_owned());
                }
                list
            }),
            "network": self.network.to_value(),
            "protected": self.protected,
            "read_deny": paths(&self.read_deny),
            "on_unavailable": match self.on_unavailable {
                OnUnavailable::Fail => "fail",
                OnUnavailable::WarnAndRunUnsandboxed => "warn-and-run-unsandboxed",
            },
            "backend": match self.backend {
                BackendChoice::Auto => "auto",
                BackendChoice::Bwrap => "bwrap",
                BackendChoice::Landlock => "landlock",
            },
            "bwrap_path": self.bwrap_path.as_ref().map(|p| p.display().to_string()),
            "helper_path": self.helper_path.as_ref().map(|p| p.display().to_string()),
            "supervisor": self.supervisor,
            "notify_denials": self.notify_denials,
            "max_processes": self.max_processes,
        })
    }

    /// A copy tightened by a call's own `sandbox` object: the mode can only
    /// go up (`read-only` is tighter than `workspace-write`), roots only
    /// shrink to ones inside the configured roots (by default, inside the
    /// server's `working_dir`), network only turns off. Relative roots
    /// resolve against `base`, the call's working directory.
    pub fn tighten(
        &self,
        call: &Map<String, Value>,
        base: &Path,
        working_dir: &Path,
    ) -> Result<SandboxConfig, ConfigProblem> {
        let mut next = self.clone();
        for (key, value) in call {
            match key.as_str() {
                "mode" => {
                    let mode = parse_mode(value)?;
                    if self.is_on() && (mode == Mode::Off || mode > self.mode) {
                        return Err(widening("mode", value));
                    }
                    next.mode = mode;
                }
                "network" => next.network = self.network.tightened(Network::parse(value)?, value)?,
                "writable_roots" => {
                    let (roots, names_working_dir) = roots(key, value, base)?;
                    if names_working_dir && !self.allows_root(working_dir, working_dir) {
                        return Err(widening("writable_roots", &Value::from(WORKING_DIR)));
                    }
                    if let Some(outside) = roots.iter().find(|r| !self.allows_root(r, working_dir)) {
                        return Err(widening("writable_roots", &Value::from(outside.display().to_string())));
                    }
                    next.writable_roots = Some(roots);
                    next.writable_working_dir = names_working_dir;
                }
                other => {
                    return Err(problem(
                        format!("`sandbox.{other}` cannot be set per call"),
                        "a call may set `mode`, `network` and `writable_roots`, and only to tighten",
                    ));
                }
            }
        }
        // Without a sandbox, network and roots restrict nothing: refuse rather than
        // run the command with less confinement than the call asked for.
        let asks_confinement = call.get("network") == Some(&Value::Bool(false)) || call.contains_key("writable_roots");
        if !next.is_on() && asks_confinement {
            return Err(problem(
                "the server runs commands without a sandbox, so `sandbox.network` or `sandbox.writable_roots` alone would confine nothing",
                "add `\"mode\": \"workspace-write\"` (or `\"read-only\"`) to the call's `sandbox` to run it in one",
            ));
        }
        Ok(next)
    }

    /// A copy with a call's `sandbox` keys applied whichever way they go:
    /// the sandbox a host that decided to widen this call runs it in. The
    /// library never calls it on its own; the binary does for commands its
    /// `sandbox_overrides` rules name, and hosts may.
    pub fn widened(&self, call: &Map<String, Value>, base: &Path) -> Result<SandboxConfig, ConfigProblem> {
        let mut next = self.clone();
        for (key, value) in call {
            match key.as_str() {
                "mode" => next.mode = parse_mode(value)?,
                "network" => next.network = Network::parse(value)?,
                "writable_roots" => {
                    let (roots, names_working_dir) = roots(key, value, base)?;
                    next.writable_roots = Some(roots);
                    next.writable_working_dir = names_working_dir;
                }
                other => {
                    return Err(problem(
                        format!("`sandbox.{other}` cannot be set per call"),
                        "a call may set `mode`, `network` and `writable_roots`",
                    ));
                }
            }
        }
        Ok(next)
    }

    /// Whether `root` lies inside the roots this configuration makes
    /// writable for a server in `working_dir` (the temp dir commands get is
    /// their own, not the host's, and not a root to name).
    fn allows_root(&self, root: &Path, working_dir: &Path) -> bool {
        self.roots_for(working_dir).iter().any(|r| root.starts_with(r))
    }

    /// The writable roots (as configured, not yet resolved) of a server
    /// whose working directory is `working_dir`: the listed ones, and the
    /// working directory when the list names it or there is no list.
    pub fn roots_for(&self, working_dir: &Path) -> Vec<PathBuf> {
        match &self.writable_roots {
            None => vec![working_dir.to_path_buf()],
            Some(roots) => {
                let mut all = Vec::with_capacity(roots.len() + 1);
                if self.writable_working_dir {
                    all.push(working_dir.to_path_buf());
                }
                all.extend(roots.iter().cloned());
                all
            }
        }
    }
}

fn widening(key: &str, value: &Value) -> ConfigProblem {
    problem(
        format!("the call's `sandbox.{key}` ({value}) would widen the configured sandbox"),
        "a call can only tighten the sandbox; widening is the host's decision (the binary's `sandbox_overrides` rules, or the host's own sandbox for the call in the Rust and C APIs)",
    )
}

fn parse_mode(value: &Value) -> Result<Mode, ConfigProblem> {
    match value.as_str() {
        Some("off") => Ok(Mode::Off),
        Some("read-only") => Ok(Mode::ReadOnly),
        Some("workspace-write") => Ok(Mode::WorkspaceWrite),
        _ => Err(problem(
            format!("`sandbox.mode` must be \"off\", \"read-only\" or \"workspace-write\", got {value}"),
            "use \"workspace-write\" to let commands write only under the writable roots",
        )),
    }
}

fn boolean(key: &str, value: &Value) -> Result<bool, ConfigProblem> {
    value.as_bool().ok_or_else(|| {
        problem(
            format!("`sandbox.{key}` must be true or false, got {value}"),
            "use a JSON boolean",
        )
    })
}

fn strings(key: &str, value: &Value) -> Result<Vec<String>, ConfigProblem> {
    let hint = "use a list of path strings";
    let Value::Array(items) = value else {
        return Err(problem(format!("`sandbox.{key}` must be a list, got {value}"), hint));
    };
    items
        .iter()
        .map(|item| match item.as_str() {
            Some(s) if !s.is_empty() && !s.contains('\0') => Ok(s.to_owned()),
            _ => Err(problem(
                format!("`sandbox.{key}` entries must be non-empty strings without NUL, got {item}"),
                hint,
            )),
        })
        .collect()
}

fn absolute_paths(key: &str, value: &Value, base: &Path) -> Result<Vec<PathBuf>, ConfigProblem> {
    Ok(strings(key, value)?
        .into_iter()
        .map(|s| expand_home(&s).unwrap_or_else(|| base.join(s)))
        .collect())
}

/// `writable_roots`: the paths, and whether [`WORKING_DIR`] is among them.
fn roots(key: &str, value: &Value, base: &Path) -> Result<(Vec<PathBuf>, bool), ConfigProblem> {
    let mut names_working_dir = false;
    let mut paths = Vec::new();
    for entry in strings(key, value)? {
        if entry == WORKING_DIR {
            names_working_dir = true;
        } else if entry.starts_with('@') || entry.starts_with('$') {
            return Err(problem(
                format!("`sandbox.{key}` entry {entry:?} is not a place this server knows"),
                format!(
                    "write {WORKING_DIR:?} for the server's working directory (the server's temp dir is always writable); a directory whose name starts with {:?} is written \"./{entry}\"",
                    &entry[..1]
                ),
            ));
        } else {
            paths.push(expand_home(&entry).unwrap_or_else(|| base.join(entry)));
        }
    }
    Ok((paths, names_working_dir))
}

fn optional_path(key: &str, value: &Value, base: &Path) -> Result<Option<PathBuf>, ConfigProblem> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) if !s.is_empty() && !s.contains('\0') => Ok(Some(base.join(s))),
        _ => Err(problem(
            format!("`sandbox.{key}` must be a path string or null, got {value}"),
            "give the absolute path of the program",
        )),
    }
}

/// `~/x` against `$HOME`; an absolute path as is; `None` for a relative one.
pub(crate) fn expand_home(path: &str) -> Option<PathBuf> {
    if let Some(rest) = path.strip_prefix("~/") {
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
        return Some(Path::new(&home).join(rest));
    }
    Path::new(path).is_absolute().then(|| PathBuf::from(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(value: Value) -> Result<SandboxConfig, ConfigProblem> {
        SandboxConfig::default().apply(&value, Path::new("/base"))
    }

    #[test]
    fn the_working_dir_entry_adds_roots_to_the_working_dir() {
        let c = apply(json!({"mode": "workspace-write", "writable_roots": ["@workdir", "/cache"]})).unwrap();
        assert_eq!(
            c.roots_for(Path::new("/srv/p")),
            vec![PathBuf::from("/srv/p"), PathBuf::from("/cache")]
        );
        assert_eq!(c.to_value()["writable_roots"], json!(["@workdir", "/cache"]));
        // A list without it keeps meaning exactly the list; no list, the working dir.
        let c = apply(json!({"mode": "workspace-write", "writable_roots": ["/cache"]})).unwrap();
        assert_eq!(c.roots_for(Path::new("/srv/p")), vec![PathBuf::from("/cache")]);
        let c = apply(json!({"mode": "workspace-write"})).unwrap();
        assert_eq!(c.roots_for(Path::new("/srv/p")), vec![PathBuf::from("/srv/p")]);
        // `./@workdir` is a directory of that name.
        let c = apply(json!({"mode": "workspace-write", "writable_roots": ["./@workdir"]})).unwrap();
        assert!(!c.writable_working_dir);
        assert_eq!(c.writable_roots, Some(vec![PathBuf::from("/base/./@workdir")]));
    }

    #[test]
    fn a_call_may_name_the_working_dir_only_where_it_is_writable() {
        let c = apply(json!({"mode": "workspace-write", "writable_roots": ["@workdir", "/cache"]})).unwrap();
        let call = json!({"writable_roots": ["@workdir"]});
        let t = c
            .tighten(call.as_object().unwrap(), Path::new("/x"), Path::new("/srv/p"))
            .unwrap();
        assert_eq!(t.roots_for(Path::new("/srv/p")), vec![PathBuf::from("/srv/p")]);
        let c = apply(json!({"mode": "workspace-write", "writable_roots": ["/cache"]})).unwrap();
        let e = c
            .tighten(call.as_object().unwrap(), Path::new("/x"), Path::new("/srv/p"))
            .unwrap_err();
        assert!(e.message.contains("@workdir") && e.message.contains("widen"), "{e:?}");
    }

    #[test]
    fn an_unknown_place_name_is_refused_naming_the_one_that_works() {
        for entry in ["$CWD", "@tmp", "$HOME/.cargo"] {
            let e = apply(json!({"mode": "workspace-write", "writable_roots": [entry]})).unwrap_err();
            assert!(e.message.contains(entry), "{e:?}");
            assert!(e.hint.contains("\"@workdir\""), "{e:?}");
        }
    }

    #[test]
    fn defaults_are_off_fail_and_no_network() {
        let c = SandboxConfig::default();
        assert!(!c.is_on());
        assert_eq!(c.on_unavailable, OnUnavailable::Fail);
        assert_eq!(c.network, Network::Off);
        assert!(c.protected.iter().any(|p| p == ".git/hooks"));
    }

    #[test]
    fn keys_apply_and_relative_paths_resolve_against_base() {
        let c = apply(
            json!({"mode": "workspace-write", "writable_roots": ["w", "/abs"], "network": true,
                             "on_unavailable": "warn-and-run-unsandboxed", "backend": "landlock"}),
        )
        .unwrap();
        assert_eq!(c.mode, Mode::WorkspaceWrite);
        assert_eq!(
            c.writable_roots,
            Some(vec![PathBuf::from("/base/w"), PathBuf::from("/abs")])
        );
        assert_eq!(c.network, Network::On);
        assert_eq!(c.on_unavailable, OnUnavailable::WarnAndRunUnsandboxed);
        assert_eq!(c.backend, BackendChoice::Landlock);
    }

    #[test]
    fn errors_name_the_key_and_the_choices() {
        let e = apply(json!({"mode": "strict"})).unwrap_err();
        assert!(
            e.message.contains("sandbox.mode") && e.message.contains("workspace-write"),
            "{e:?}"
        );
        let e = apply(json!({"nework": false})).unwrap_err();
        assert!(
            e.message.contains("sandbox.nework") && e.hint.contains("network"),
            "{e:?}"
        );
        let e = apply(json!({"protected": [""]})).unwrap_err();
        assert!(e.message.contains("sandbox.protected"), "{e:?}");
        let e = apply(json!("on")).unwrap_err();
        assert!(e.message.contains("object or null"), "{e:?}");
    }

    #[test]
    fn a_call_can_tighten_but_never_widen() {
        let base = Path::new("/base");
        let c = apply(json!({"mode": "workspace-write", "writable_roots": ["/base"]})).unwrap();
        let t = c
            .tighten(json!({"mode": "read-only"}).as_object().unwrap(), base, base)
            .unwrap();
        assert_eq!(t.mode, Mode::ReadOnly);
        let t = c
            .tighten(
                json!({"writable_roots": ["/base/sub"]}).as_object().unwrap(),
                base,
                base,
            )
            .unwrap();
        assert_eq!(t.writable_roots, Some(vec![PathBuf::from("/base/sub")]));
        for widen in [
            json!({"mode": "off"}),
            json!({"network": true}),
            json!({"writable_roots": ["/etc"]}),
        ] {
            let e = c.tighten(widen.as_object().unwrap(), base, base).unwrap_err();
            assert!(e.message.contains("widen"), "{e:?}");
        }
        let off = apply(json!(null)).unwrap();
        for alone in [json!({"network": false}), json!({"writable_roots": ["/base"]})] {
            let e = off.tighten(alone.as_object().unwrap(), base, base).unwrap_err();
            assert!(e.message.contains("without a sandbox"), "{alone}: {e:?}");
        }
        let t = off
            .tighten(
                json!({"mode": "read-only", "network": false}).as_object().unwrap(),
                base,
                base,
            )
            .unwrap();
        assert_eq!((t.mode, t.network), (Mode::ReadOnly, Network::Off));
        let ro = apply(json!({"mode": "read-only"})).unwrap();
        let e = ro
            .tighten(json!({"mode": "workspace-write"}).as_object().unwrap(), base, base)
            .unwrap_err();
        assert!(e.message.contains("widen"), "{e:?}");
    }

    #[test]
    fn network_takes_a_policy_and_a_call_only_narrows_it() {
        let base = Path::new("/base");
        let c = apply(json!({"mode": "workspace-write", "network": {"allow": ["@package-registries", "*.example.com"], "deny": ["bad.example.com"]}})).unwrap();
        let Network::Policy(policy) = &c.network else {
            panic!("{:?}", c.network)
        };
        assert_eq!(
            policy.to_value(),
            json!({"allow": ["@package-registries", "*.example.com"], "deny": ["bad.example.com"]})
        );
        assert_eq!(c.to_value()["network"], policy.to_value());
        let t = c
            .tighten(
                json!({"network": {"allow": ["pypi.org"]}}).as_object().unwrap(),
                base,
                base,
            )
            .unwrap();
        assert_eq!(
            t.network.to_value(),
            json!({"allow": ["pypi.org"], "deny": ["bad.example.com"]})
        );
        assert_eq!(
            c.tighten(json!({"network": false}).as_object().unwrap(), base, base)
                .unwrap()
                .network,
            Network::Off
        );
        let e = c
            .tighten(
                json!({"network": {"allow": ["github.com"]}}).as_object().unwrap(),
                base,
                base,
            )
            .unwrap_err();
        assert!(
            e.message.contains("`github.com`") && e.hint.contains("@package-registries"),
            "{e:?}"
        );
        assert!(
            c.tighten(json!({"network": true}).as_object().unwrap(), base, base)
                .unwrap_err()
                .message
                .contains("widen")
        );
        let off = apply(json!({"mode": "workspace-write"})).unwrap();
        assert!(
            off.tighten(
                json!({"network": {"allow": ["pypi.org"]}}).as_object().unwrap(),
                base,
                base
            )
            .is_err()
        );
        assert_eq!(
            off.tighten(json!({"network": {"allow": []}}).as_object().unwrap(), base, base)
                .unwrap()
                .network,
            Network::Off
        );
        let on = apply(json!({"mode": "workspace-write", "network": true})).unwrap();
        assert!(
            on.tighten(json!({"network": {"allow": ["*"]}}).as_object().unwrap(), base, base)
                .is_ok()
        );
        for (bad, says) in [
            (json!({"network": {"allow": ["@nope"]}}), "not a built-in list"),
            (json!({"network": {"alow": []}}), "sandbox.network.alow"),
            (json!({"network": "pypi.org"}), "true, false or a policy object"),
            (json!({"network": {"allow": "pypi.org"}}), "sandbox.network.allow"),
        ] {
            let e = apply(bad.clone()).unwrap_err();
            assert!(e.message.contains(says), "{bad}: {e:?}");
        }
    }

    #[test]
    fn with_default_roots_a_call_in_another_dir_cannot_name_it_writable() {
        let c = apply(json!({"mode": "workspace-write"})).unwrap();
        let server_dir = Path::new("/srv/project");
        let call = json!({"writable_roots": ["/etc"]});
        let e = c
            .tighten(call.as_object().unwrap(), Path::new("/etc"), server_dir)
            .unwrap_err();
        assert!(e.message.contains("widen") && e.message.contains("/etc"), "{e:?}");
        let call = json!({"writable_roots": ["sub"]});
        let t = c
            .tighten(call.as_object().unwrap(), Path::new("/srv/project"), server_dir)
            .unwrap();
        assert_eq!(t.writable_roots, Some(vec![PathBuf::from("/srv/project/sub")]));
    }

    #[test]
    fn a_host_can_widen_and_the_same_call_then_tightens_nothing() {
        let base = Path::new("/base");
        let c = apply(json!({"mode": "workspace-write", "writable_roots": ["/base"]})).unwrap();
        for call in [
            json!({"mode": "off"}),
            json!({"network": true}),
            json!({"writable_roots": ["/base", "/srv/cache"]}),
            json!({"mode": "off", "network": true}),
        ] {
            let call = call.as_object().unwrap();
            assert!(c.tighten(call, base, base).is_err(), "{call:?} widens");
            let wide = c.widened(call, base).unwrap();
            // The binary hands the widened sandbox to the tool, which applies
            // the call's own `sandbox` argument to it again.
            assert_eq!(wide.tighten(call, base, base).unwrap(), wide, "{call:?}");
        }
        let wide = c.widened(json!({"mode": "off"}).as_object().unwrap(), base).unwrap();
        assert_eq!(wide.mode, Mode::Off);
        let e = c
            .widened(json!({"protected": []}).as_object().unwrap(), base)
            .unwrap_err();
        assert!(e.message.contains("sandbox.protected"), "{e:?}");
    }
}
