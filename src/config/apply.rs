//! Applying a JSON configuration: the top-level keys read one by one into a
//! copy of the configuration, and the small `tools` and `jobs` objects.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use super::audit::audit_settings;
use super::env_policy::env_policy;
use super::output_store::output_store_config;
use super::session::session_config;
use super::values::{boolean, bounded_int, config_error, positive_seconds, shell_path, string_list};
use super::{Config, DEFAULT_JOBS_MAX_FINISHED, MAX_OUTPUT_LIMIT_BYTES, MIN_OUTPUT_LIMIT_BYTES, OPTIONAL_TOOLS};
use crate::error::ToolError;

/// Every key [`Config::apply_json`] accepts.
pub const CONFIG_KEYS: &[&str] = &[
    "timeout_seconds",
    "max_timeout_seconds",
    "shell",
    "output_limit_bytes",
    "kill_grace_ms",
    "drain_ms",
    "max_concurrent",
    "non_interactive",
    "env",
    "allowed_roots",
    "project_config",
    "audit",
    "tools",
    "sessions",
    "jobs",
    "output_store",
    "sandbox",
    "yield_seconds",
    "escalation_ceiling",
    "network_ask",
];

impl Config {
    /// Returns a copy of `self` with the keys of `json` applied.
    ///
    /// Every key is optional; unknown keys and invalid values are errors that
    /// name the key. `self` is never modified.
    pub fn apply_json(&self, json: &str) -> Result<Config, ToolError> {
        let value: Value = serde_json::from_str(json).map_err(|e| {
            config_error(
                format!("configuration is not valid JSON: {e}"),
                "pass one JSON object, e.g. {\"timeout_seconds\": 60}",
            )
        })?;
        let Value::Object(map) = value else {
            return Err(config_error(
                "configuration must be a JSON object",
                "pass one JSON object, e.g. {\"timeout_seconds\": 60}",
            ));
        };
        self.apply_map(&map)
    }

    /// Like [`Config::apply_json`], from an already parsed object.
    pub fn apply_map(&self, map: &Map<String, Value>) -> Result<Config, ToolError> {
        let mut next = self.clone();
        let mut max_timeout_given = false;
        for (key, value) in map {
            next.apply_key(key, value)?;
            max_timeout_given |= key == "max_timeout_seconds";
        }
        if !max_timeout_given && next.max_timeout < next.timeout {
            next.max_timeout = next.timeout;
        }
        if next.max_timeout < next.timeout {
            return Err(config_error(
                format!(
                    "`max_timeout_seconds` ({} s) is below `timeout_seconds` ({} s)",
                    next.max_timeout.as_secs_f64(),
                    next.timeout.as_secs_f64()
                ),
                "the ceiling must be at least the default time limit",
            ));
        }
        Ok(next)
    }

    /// Applies one top-level key to `self`.
    fn apply_key(&mut self, key: &str, value: &Value) -> Result<(), ToolError> {
        match key {
            "timeout_seconds" => self.timeout = positive_seconds(key, value)?,
            "max_timeout_seconds" => self.max_timeout = positive_seconds(key, value)?,
            "shell" => self.shell = shell_path(value)?,
            "output_limit_bytes" => {
                self.output_limit_bytes =
                    bounded_int(key, value, MIN_OUTPUT_LIMIT_BYTES as u64, MAX_OUTPUT_LIMIT_BYTES as u64)? as usize
            }
            "kill_grace_ms" => self.kill_grace = Duration::from_millis(bounded_int(key, value, 0, 60_000)?),
            "drain_ms" => self.drain = Duration::from_millis(bounded_int(key, value, 0, 60_000)?),
            "max_concurrent" => self.max_concurrent = bounded_int(key, value, 1, 1024)? as usize,
            "non_interactive" => self.non_interactive = boolean(key, value)?,
            "env" => self.env = env_policy(&self.env, value)?,
            "allowed_roots" => self.allowed_roots = allowed_roots(key, value)?,
            "audit" => self.audit = audit_settings(value)?,
            "tools" => self.tools = tool_switches(&self.tools, value)?,
            "project_config" => self.project_config = boolean(key, value)?,
            "sessions" => self.sessions = session_config(&self.sessions, value)?,
            "jobs" => self.jobs_max_finished = jobs_config(value)?,
            "output_store" => self.output_store = output_store_config(&self.output_store, value)?,
            "yield_seconds" => {
                self.yield_after = match value {
                    Value::Null => None,
                    _ => Some(positive_seconds(key, value)?),
                }
            }
            "escalation_ceiling" => self.escalation_ceiling = escalation_ceiling(value)?,
            "network_ask" => self.network_ask = super::network_ask::network_ask(&self.network_ask, value)?,
            "sandbox" => {
                let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
                self.sandbox = self
                    .sandbox
                    .apply(value, &base)
                    .map_err(|p| config_error(p.message, p.hint))?
            }
            other => {
                return Err(config_error(
                    format!("unknown configuration key `{other}`"),
                    format!("known keys: {}", CONFIG_KEYS.join(", ")),
                ));
            }
        }
        Ok(())
    }
}

/// `allowed_roots`: `null` (anywhere), or directories that exist, resolved
/// against the current directory.
fn allowed_roots(key: &str, value: &Value) -> Result<Option<Vec<PathBuf>>, ToolError> {
    if value.is_null() {
        return Ok(None);
    }
    let roots = string_list(key, value)?;
    let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let roots = crate::roots::canonical_roots(&roots, &base).map_err(|problem| {
        config_error(
            format!("`allowed_roots`: {problem}"),
            "list existing directories (absolute paths), or null for no restriction",
        )
    })?;
    Ok(Some(roots))
}

/// The `jobs` object: how many finished jobs are kept.
fn jobs_config(value: &Value) -> Result<usize, ToolError> {
    let hint = "use {\"jobs\": {\"max_finished\": 32}}";
    let Value::Object(map) = value else {
        return Err(config_error(format!("`jobs` must be an object, got {value}"), hint));
    };
    let mut max = DEFAULT_JOBS_MAX_FINISHED;
    for (key, value) in map {
        match key.as_str() {
            "max_finished" => max = bounded_int("jobs.max_finished", value, 1, 10_000)? as usize,
            other => return Err(config_error(format!("unknown configuration key `jobs.{other}`"), hint)),
        }
    }
    Ok(max)
}

/// Merges a `tools` object (optional tool name to on or off) into `current`.
fn tool_switches(current: &BTreeSet<String>, value: &Value) -> Result<BTreeSet<String>, ToolError> {
    let hint = format!(
        "use an object such as {{\"status\": true}}; optional tools: {}",
        OPTIONAL_TOOLS.join(", ")
    );
    let Value::Object(map) = value else {
        return Err(config_error(
            format!("`tools` must be an object of tool name to true/false, got {value}"),
            hint,
        ));
    };
    let mut tools = current.clone();
    for (name, on) in map {
        if name == "output_read" {
            return Err(config_error(
                "`tools.output_read` is not a switch: `output_read` is offered exactly while the output store keeps the whole output of cut results",
                "remove it from `tools`; {\"output_store\": {\"enabled\": false}} stops keeping outputs, and then output_read is not offered",
            ));
        }
        if !OPTIONAL_TOOLS.contains(&name.as_str()) {
            return Err(config_error(format!("`tools.{name}` is not an optional tool"), hint));
        }
        match on.as_bool() {
            Some(true) => tools.insert(name.clone()),
            Some(false) => tools.remove(name),
            None => return Err(config_error(format!("`tools.{name}` must be true or false"), hint)),
        };
    }
    Ok(tools)
}

/// `escalation_ceiling`: `{"network": [...], "writable_roots": [...]}`,
/// each list optional; `null` removes the ceiling.
fn escalation_ceiling(value: &Value) -> Result<super::EscalationCeiling, ToolError> {
    let hint = "use e.g. {\"network\": [\"*.github.com\"], \"writable_roots\": [\"/srv/cache\"]}";
    let map = match value {
        Value::Null => return Ok(super::EscalationCeiling::default()),
        Value::Object(map) => map,
        other => {
            return Err(config_error(
                format!("`escalation_ceiling` must be an object, got {other}"),
                hint,
            ));
        }
    };
    let list = |key: &str| -> Result<Option<Vec<String>>, ToolError> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_owned).ok_or_else(|| {
                        config_error(format!("`escalation_ceiling.{key}` must hold strings, got {v}"), hint)
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(config_error(
                format!("`escalation_ceiling.{key}` must be a list, got {other}"),
                hint,
            )),
        }
    };
    if let Some(other) = map.keys().find(|k| *k != "network" && *k != "writable_roots") {
        return Err(config_error(format!("unknown key `escalation_ceiling.{other}`"), hint));
    }
    let network = list("network")?;
    if let Some(entries) = &network {
        crate::sandbox::network::NetPolicy::new(entries, &[])
            .map_err(|why| config_error(format!("`escalation_ceiling.network`: {why}"), hint))?;
    }
    let writable_roots = list("writable_roots")?
        .map(|roots| {
            roots
                .into_iter()
                .map(|r| {
                    let path = PathBuf::from(&r);
                    if path.is_absolute() {
                        Ok(path)
                    } else {
                        Err(config_error(
                            format!("`escalation_ceiling.writable_roots` entry {r:?} is not an absolute path"),
                            hint,
                        ))
                    }
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    Ok(super::EscalationCeiling {
        network,
        writable_roots,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::error::ErrorCode;
    use std::time::Duration;

    fn base() -> Config {
        Config::with_timeout(Duration::from_secs(30))
    }

    #[test]
    fn unknown_key_is_named() {
        let err = base().apply_json(r#"{"timeout_seconds": 5, "bogus": 1}"#).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidConfig);
        assert!(err.message.contains("`bogus`"), "{err}");
    }

    #[test]
    fn invalid_value_names_key() {
        for (json, key) in [
            (r#"{"timeout_seconds": 0}"#, "timeout_seconds"),
            (r#"{"timeout_seconds": "5"}"#, "timeout_seconds"),
            (r#"{"max_concurrent": 0}"#, "max_concurrent"),
            (r#"{"output_limit_bytes": 10}"#, "output_limit_bytes"),
            (r#"{"drain_ms": -1}"#, "drain_ms"),
            (r#"{"shell": "/nonexistent/sh"}"#, "shell"),
            (r#"{"env": {"inherit": 3}}"#, "env.inherit"),
            (r#"{"env": {"set": {"A": 1}}}"#, "env.set.A"),
            (r#"{"sessions": {"max_sessions": 0}}"#, "sessions.max_sessions"),
            (r#"{"sessions": {"history": "maybe"}}"#, "sessions.history"),
            (r#"{"sessions": {"enabled": "yes"}}"#, "sessions.enabled"),
            (r#"{"sessions": {"idle_ttl_seconds": -1}}"#, "sessions.idle_ttl_seconds"),
            (r#"{"sessions": {"bogus": 1}}"#, "sessions.bogus"),
            (r#"{"jobs": {"max_finished": 0}}"#, "jobs.max_finished"),
        ] {
            let err = base().apply_json(json).unwrap_err();
            assert!(err.message.contains(key), "{json}: {err}");
        }
    }

    #[test]
    fn ceiling_follows_a_raised_default() {
        let cfg = base().apply_json(r#"{"timeout_seconds": 60}"#).unwrap();
        assert_eq!(cfg.max_timeout, Duration::from_secs(60));
        let err = base()
            .apply_json(r#"{"timeout_seconds": 60, "max_timeout_seconds": 10}"#)
            .unwrap_err();
        assert!(err.message.contains("max_timeout_seconds"));
    }
}
