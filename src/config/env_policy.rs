//! The command environment: which host variables a command inherits, the
//! non-interactive profile, `set` and `remove`, built into `NAME=value`
//! entries; and the `env` key that configures it.

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use serde_json::Value;

use super::Config;
use super::values::{config_error, string_list};
use crate::error::ToolError;

/// Variables set for every command when `non_interactive` is on (the default),
/// so that pagers, editors and credential prompts never block a command that
/// has no terminal.
pub const NON_INTERACTIVE_PROFILE: &[(&str, &str)] = &[
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("SYSTEMD_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_EDITOR", "true"),
    ("EDITOR", "true"),
    ("VISUAL", "true"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("PIP_NO_INPUT", "1"),
    ("NPM_CONFIG_YES", "true"),
    ("TERM", "dumb"),
    ("NO_COLOR", "1"),
];

/// Which variables of the host's environment a command inherits.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inherit {
    /// Every variable of the host process.
    All,
    /// None: the command sees only what the profile and `set` give it.
    None,
    /// Only variables whose names match one of these fnmatch patterns.
    Matching(Vec<String>),
}

/// How the command's environment is built from the host's.
///
/// Order: inherited variables, then the non-interactive profile, then `set`,
/// then `remove`, then the call's own `env` overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPolicy {
    /// Which host variables pass through.
    pub inherit: Inherit,
    /// Variables set for every command.
    pub set: Vec<(String, String)>,
    /// fnmatch patterns of names removed after `set`.
    pub remove: Vec<String>,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        Self {
            inherit: Inherit::All,
            set: Vec::new(),
            remove: Vec::new(),
        }
    }
}

impl Config {
    /// Builds the environment for one command, `NAME=value` entries.
    ///
    /// `overrides` are the call's own variables, applied last.
    pub fn build_env(&self, overrides: &[(String, String)]) -> Vec<CString> {
        let host = match self.env.inherit {
            Inherit::None => Vec::new(),
            Inherit::All | Inherit::Matching(_) => std::env::vars_os().collect(),
        };
        self.env_from(host, overrides)
    }

    /// [`Config::build_env`] from `host`, the host's variables.
    pub(super) fn env_from(&self, host: Vec<(OsString, OsString)>, overrides: &[(String, String)]) -> Vec<CString> {
        let mut vars: Vec<(OsString, OsString)> = match &self.env.inherit {
            Inherit::All => host,
            Inherit::None => Vec::new(),
            Inherit::Matching(patterns) => host
                .into_iter()
                .filter(|(name, _)| patterns.iter().any(|p| fnmatch(p, name)))
                .collect(),
        };
        let mut put = |name: &str, value: &str| {
            let name = OsStr::new(name);
            match vars.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = value.into(),
                None => vars.push((name.into(), value.into())),
            }
        };
        if self.non_interactive {
            for (name, value) in NON_INTERACTIVE_PROFILE {
                put(name, value);
            }
        }
        for (name, value) in &self.env.set {
            put(name, value);
        }
        vars.retain(|(name, _)| !self.env.remove.iter().any(|p| fnmatch(p, name)));
        for (name, value) in overrides {
            let name_os = OsStr::new(name);
            match vars.iter_mut().find(|(n, _)| n == name_os) {
                Some(slot) => slot.1 = value.into(),
                None => vars.push((name.into(), value.into())),
            }
        }
        vars.into_iter()
            .filter_map(|(name, value)| {
                let mut entry = name.into_vec();
                entry.push(b'=');
                entry.extend_from_slice(value.as_bytes());
                CString::new(entry).ok()
            })
            .collect()
    }
}

/// True when `name` is a valid environment variable name for a command.
pub fn is_valid_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('=') && !name.contains('\0')
}

/// POSIX `fnmatch(pattern, name, 0)` (the permission layer's); a pattern or
/// name with NUL never matches.
fn fnmatch(pattern: &str, name: &OsStr) -> bool {
    crate::permission::fnmatch_bytes(pattern, name.as_bytes())
}

/// Merges an `env` object into `current`: the sub-keys given replace theirs, the
/// others keep their value (like every other key), so setting one variable never
/// re-opens an `inherit` restriction.
pub(super) fn env_policy(current: &EnvPolicy, value: &Value) -> Result<EnvPolicy, ToolError> {
    let Value::Object(map) = value else {
        return Err(config_error(format!("`env` must be an object, got {value}"), ENV_HINT));
    };
    let mut policy = current.clone();
    for (key, value) in map {
        match key.as_str() {
            "inherit" => policy.inherit = inherit(value)?,
            "set" => policy.set = set_vars(value)?,
            "remove" => policy.remove = string_list("env.remove", value)?,
            other => {
                return Err(config_error(
                    format!("unknown configuration key `env.{other}`"),
                    ENV_HINT,
                ));
            }
        }
    }
    Ok(policy)
}

/// The hint of every `env` error.
const ENV_HINT: &str = "use {\"inherit\": \"all\" | \"none\" | [\"PATTERN\", ...], \"set\": {\"NAME\": \"value\"}, \"remove\": [\"PATTERN\"]}";

/// `env.inherit`: `"all"`, `"none"` or a list of name patterns.
fn inherit(value: &Value) -> Result<Inherit, ToolError> {
    match value {
        Value::String(s) if s == "all" => Ok(Inherit::All),
        Value::String(s) if s == "none" => Ok(Inherit::None),
        Value::Array(_) => Ok(Inherit::Matching(string_list("env.inherit", value)?)),
        _ => Err(config_error(
            format!("`env.inherit` must be \"all\", \"none\" or a list of name patterns, got {value}"),
            ENV_HINT,
        )),
    }
}

/// `env.set`: an object of variable names to string values.
fn set_vars(value: &Value) -> Result<Vec<(String, String)>, ToolError> {
    let Value::Object(vars) = value else {
        return Err(config_error(
            format!("`env.set` must be an object of strings, got {value}"),
            ENV_HINT,
        ));
    };
    vars.iter()
        .map(|(name, v)| match v.as_str() {
            Some(s) if is_valid_env_name(name) && !s.contains('\0') => Ok((name.clone(), s.to_owned())),
            _ => Err(config_error(
                format!("`env.set.{name}` must be a string without NUL under a valid variable name"),
                ENV_HINT,
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn env_is_built_in_documented_order() {
        let cfg = Config::with_timeout(Duration::from_secs(30))
            .apply_json(
                r#"{"env": {"inherit": "none", "set": {"A": "1", "PAGER": "less", "DROP_ME": "x"}, "remove": ["DROP_*"]}}"#,
            )
            .unwrap();
        let env = cfg.build_env(&[("A".into(), "2".into())]);
        let env: Vec<String> = env.iter().map(|c| c.to_str().unwrap().to_owned()).collect();
        assert!(env.contains(&"A=2".to_owned()), "{env:?}");
        assert!(env.contains(&"PAGER=less".to_owned()), "{env:?}");
        assert!(env.contains(&"GIT_TERMINAL_PROMPT=0".to_owned()), "{env:?}");
        assert!(!env.iter().any(|e| e.starts_with("DROP_ME=")), "{env:?}");
        assert!(!env.iter().any(|e| e.starts_with("HOME=")), "inherit none: {env:?}");
    }
}
