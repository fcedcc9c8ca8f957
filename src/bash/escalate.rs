//! `escalate` on `execute` and `session_start`: the model asks for exactly this much more
//! sandbox, and why. The question for the person, and the sandbox the call
//! runs in once they approve it, are computed here from the configured
//! sandbox; the operator's ceiling is checked first.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use super::BashServer;
use crate::approval::{ApprovalKind, ApprovalRequest, GrantItem, Widening};
use crate::error::{ErrorCode, ToolError};
use crate::sandbox::SandboxConfig;
use crate::sandbox::config::{Mode, Network};
use crate::sandbox::network::NetPolicy;
use crate::tool_args::ToolArgs;

/// What an `escalate` argument asks for.
struct Escalate {
    network: Vec<String>,
    writable_roots: Vec<String>,
    reason: String,
}

fn invalid(message: String, hint: &str) -> ToolError {
    ToolError::new(ErrorCode::InvalidArguments, message, hint)
}

const SHAPE: &str = "pass {\"network\": [\"github.com\"], \"writable_roots\": [\"/srv/cache\"], \"reason\": \"why\"}: both lists optional, the reason required";

impl Escalate {
    fn parse(value: &Value) -> Result<Escalate, ToolError> {
        let Value::Object(map) = value else {
            return Err(invalid(format!("`escalate` must be an object, got {value}"), SHAPE));
        };
        if let Some(other) = map
            .keys()
            .find(|k| !["network", "writable_roots", "reason"].contains(&k.as_str()))
        {
            return Err(invalid(format!("unknown key `escalate.{other}`"), SHAPE));
        }
        let list = |key: &str| -> Result<Vec<String>, ToolError> {
            match map.get(key) {
                None => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|v| {
                        v.as_str().filter(|s| !s.is_empty()).map(str::to_owned).ok_or_else(|| {
                            invalid(format!("`escalate.{key}` must hold non-empty strings, got {v}"), SHAPE)
                        })
                    })
                    .collect(),
                Some(other) => Err(invalid(format!("`escalate.{key}` must be a list, got {other}"), SHAPE)),
            }
        };
        let reason = match map.get("reason") {
            Some(Value::String(r)) if !r.trim().is_empty() => r.clone(),
            _ => {
                return Err(invalid(
                    "`escalate.reason` is required: say why the command needs more".into(),
                    SHAPE,
                ));
            }
        };
        let escalate = Escalate {
            network: list("network")?,
            writable_roots: list("writable_roots")?,
            reason,
        };
        if escalate.network.is_empty() && escalate.writable_roots.is_empty() {
            return Err(invalid("`escalate` asks for nothing".into(), SHAPE));
        }
        Ok(escalate)
    }
}

/// `path` resolved against `base`, with every symlink followed: the
/// directory that would really become writable. It must exist, and may not
/// be `/`.
fn real_dir(path: &str, base: &Path) -> Result<PathBuf, ToolError> {
    let joined = base.join(path);
    if joined.components().any(|c| c == Component::ParentDir) {
        return Err(invalid(
            format!("`escalate.writable_roots` entry {path:?} contains `..`"),
            "name the directory itself, as an absolute path",
        ));
    }
    let real = std::fs::canonicalize(&joined).map_err(|e| {
        invalid(
            format!("`escalate.writable_roots` entry {path:?} cannot be used: {e}"),
            "name an existing directory",
        )
    })?;
    if !real.is_dir() || real == Path::new("/") {
        return Err(invalid(
            format!("`escalate.writable_roots` entry {path:?} is not a directory other than /"),
            "name the directory the command must write in",
        ));
    }
    Ok(real)
}

impl BashServer {
    /// The question the call's `escalate` argument asks, and the sandbox
    /// the call runs in if the person approves: `base` (the host's sandbox
    /// for the call, else the configured one) with exactly the asked hosts
    /// and directories added. `Ok(None)` without `escalate`; an error for a
    /// malformed one, one beyond the operator's `escalation_ceiling`, or a
    /// server that runs commands unsandboxed (nothing to widen).
    pub fn escalation(
        &self,
        tool_name: &str,
        args: &ToolArgs,
        base: Option<&SandboxConfig>,
    ) -> Result<Option<(ApprovalRequest, SandboxConfig)>, ToolError> {
        // Only `execute` and `session_start` take `escalate`; any other tool
        // refuses it as an unknown argument, without asking anyone.
        let session = match self.find_tool(tool_name).map(|t| t.definition().name.as_str()) {
            Some("execute") => false,
            Some("session_start") => true,
            _ => return Ok(None),
        };
        let Ok(object) = args.object() else { return Ok(None) };
        let Some(value) = object.get("escalate") else {
            return Ok(None);
        };
        let escalate = Escalate::parse(value)?;
        let config = self.shared.config();
        let sandbox = base.unwrap_or(&config.sandbox);
        if !sandbox.is_on() {
            return Err(invalid(
                "`escalate`: this server runs commands unsandboxed, so there is nothing to widen".into(),
                "drop `escalate` and run the command as it is",
            ));
        }
        let default_dir = self.shared.working_dir();
        let dir = match object.get("working_dir").and_then(Value::as_str) {
            Some(d) => default_dir.join(d),
            None => default_dir.clone(),
        };
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        let roots = escalate
            .writable_roots
            .iter()
            .map(|r| real_dir(r, &dir))
            .collect::<Result<Vec<_>, _>>()?;
        check_ceiling(&config.escalation_ceiling, &escalate.network, &roots)?;
        let mut wider = sandbox.clone();
        if !escalate.network.is_empty() {
            wider.network = widened_network(&sandbox.network, &escalate.network)?;
        }
        if !roots.is_empty() {
            let mut list = match sandbox.mode {
                // Read-only: nothing was writable; exactly the asked roots become so.
                Mode::ReadOnly => Vec::new(),
                // The configured roots, or by default the server's working
                // directory, never the call's (commands get their temp dir
                // besides the roots).
                _ => sandbox.roots_for(&default_dir),
            };
            list.extend(roots.iter().cloned());
            wider.writable_roots = Some(list);
            wider.writable_working_dir = false;
            if wider.mode == Mode::ReadOnly {
                wider.mode = Mode::WorkspaceWrite;
            }
        }
        let local = self
            .find_tool(tool_name)
            .map_or(tool_name, |t| t.definition().name.as_str());
        let qualified = format!("{}.{local}", self.name());
        // A session's question names its shell: every command run in it gets
        // what is approved, for the session's life.
        let command = if session {
            let shell = object.get("shell").and_then(Value::as_str).unwrap_or("bash");
            format!("{shell} (a shell session: every command run in it)")
        } else {
            object.get("command").and_then(Value::as_str).unwrap_or("").to_owned()
        };
        let mut grants: Vec<GrantItem> = escalate
            .network
            .iter()
            .map(|host| GrantItem::Host {
                tool: qualified.clone(),
                command: command.clone(),
                host: host.clone(),
            })
            .collect();
        grants.extend(roots.iter().map(|path| GrantItem::WritableRoot {
            tool: qualified.clone(),
            command: command.clone(),
            path: path.display().to_string(),
        }));
        let request = ApprovalRequest {
            kind: ApprovalKind::Escalation,
            tool: qualified,
            command,
            working_dir: dir.display().to_string(),
            env: string_map(object.get("env")),
            stdin: object.get("stdin").and_then(Value::as_str).map(str::to_owned),
            widens: Widening {
                network: escalate.network,
                writable_roots: roots.iter().map(|p| p.display().to_string()).collect(),
            },
            reason: Some(escalate.reason),
            why: if session {
                "the session asks for more than the configured sandbox allows, for its whole life".into()
            } else {
                "the call asks for more than the configured sandbox allows".into()
            },
            suggested_rule: None,
            grants,
        };
        Ok(Some((request, wider)))
    }
}

use crate::tool::McpServer as _;

/// The network with `hosts` allowed in addition: off becomes a policy of
/// exactly those hosts; a policy gains them (its deny list still applies
/// first); an open network stays open.
fn widened_network(network: &Network, hosts: &[String]) -> Result<Network, ToolError> {
    let (mut allow, deny): (Vec<String>, Vec<String>) = match network {
        Network::On => return Ok(Network::On),
        Network::Policy(policy) => {
            let value = policy.to_value();
            let strings = |key: &str| -> Vec<String> {
                value[key]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                    .unwrap_or_default()
            };
            (strings("allow"), strings("deny"))
        }
        _ => (Vec::new(), Vec::new()),
    };
    allow.extend(hosts.iter().cloned());
    NetPolicy::new(&allow, &deny).map(Network::Policy).map_err(|why| {
        invalid(
            format!("`escalate.network`: {why}"),
            "name hosts as `sandbox.network.allow` takes them: `github.com`, `*.example.com`, an address",
        )
    })
}

/// Refuses what lies beyond the operator's ceiling, naming it.
fn check_ceiling(
    ceiling: &crate::config::EscalationCeiling,
    network: &[String],
    roots: &[PathBuf],
) -> Result<(), ToolError> {
    let beyond = |what: String| {
        ToolError::new(
            ErrorCode::PermissionDenied,
            format!(
                "`escalate` asks for {what}, beyond what the operator lets any call ask for (`escalation_ceiling`); nobody was asked and nothing was run"
            ),
            "run the command within the configured sandbox, or ask the user to extend `escalation_ceiling`",
        )
    };
    if let (Some(allowed), false) = (&ceiling.network, network.is_empty()) {
        let ceiling = NetPolicy::new(allowed, &[]).map_err(|why| invalid(why, "fix `escalation_ceiling.network`"))?;
        let asked = NetPolicy::new(network, &[]).map_err(|why| {
            invalid(
                format!("`escalate.network`: {why}"),
                "name hosts as `sandbox.network.allow` takes them",
            )
        })?;
        if let Err(entry) = ceiling.narrowed_by(&asked) {
            return Err(beyond(format!("the network entry `{entry}`")));
        }
    }
    if let Some(allowed) = &ceiling.writable_roots {
        let allowed: Vec<PathBuf> = allowed
            .iter()
            .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone()))
            .collect();
        if let Some(root) = roots.iter().find(|r| !allowed.iter().any(|a| r.starts_with(a))) {
            return Err(beyond(format!("the writable directory `{}`", root.display())));
        }
    }
    Ok(())
}

/// An `env` argument as name → text.
fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|env: &Map<String, Value>| {
            env.iter()
                .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
                .collect()
        })
        .unwrap_or_default()
}
