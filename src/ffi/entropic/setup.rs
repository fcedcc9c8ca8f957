//! What the plugin is made of at creation: its name, the server's
//! configuration and its own permission rules.
//!
//! The engine never calls `configure`, so everything comes from the
//! environment and the JSON file named by `BASH_MCP_PLUGIN_CONFIG`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::bash::BashServer;
use crate::config::Config;
use crate::error::{ErrorCode, ToolError};
use crate::permission::Dialect;
use crate::tool::McpServer;

use super::surface::Enforcement;

/// The plugin's server name unless configured otherwise.
pub const DEFAULT_PLUGIN_NAME: &str = "shell";
/// Environment variable naming the plugin's server (wins over the file's `name`).
pub const NAME_VAR: &str = "BASH_MCP_PLUGIN_NAME";
/// Environment variable naming a JSON configuration file.
pub const CONFIG_VAR: &str = "BASH_MCP_PLUGIN_CONFIG";
/// Built-in server names a shell may not take: their permission rules and
/// identities are written for other tools (`filesystem.*` would allow every
/// command). `bash` is allowed: it is the name the engine's rules and
/// identities use for a shell, and the engine refuses it loudly while its
/// own `bash` server is enabled.
pub const REFUSED_NAMES: &[&str] = &["filesystem", "git", "web", "diagnostics", "entropic"];
/// Default time limit of a command when the configuration sets none.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 30;
/// The engine cuts every tool result at this many bytes.
pub const HOST_RESULT_LIMIT: usize = 16_384;
/// Output kept per stream by default in plugin mode (head and tail halves).
///
/// Worst case, every kept byte is a control byte that JSON writes as
/// `\u00XX` (6 bytes), in both streams: 2 × 6 × (1024 + a 128-byte marker
/// line) = 13 824 bytes, leaving 2 560 bytes of the engine's 16 384 for the
/// rest of the document (keys, message, hint, working directory), so the
/// engine's cut never reaches our tail and truncation marker.
pub const PLUGIN_OUTPUT_LIMIT_BYTES: usize = 1024;

/// The name, server configuration and rules read at creation.
#[derive(Debug, Default)]
pub struct Setup {
    /// The server's name (the engine's tool prefix).
    pub name: String,
    /// Keys for the server's `configure`.
    pub server: Map<String, Value>,
    /// `permissions.allow` and `permissions.deny`, when the file has them.
    pub rules: Option<(Vec<String>, Vec<String>)>,
    /// A warning to log (a refused `BASH_MCP_PLUGIN_NAME`).
    pub warning: Option<String>,
}

/// The server name to use for `requested` (the variable's value, if set).
///
/// Returns the name and, when `requested` was refused, why.
pub fn plugin_name(requested: Option<&str>) -> (String, Option<String>) {
    match requested {
        None => (DEFAULT_PLUGIN_NAME.to_owned(), None),
        Some(name) => match name_problem(name) {
            None => (name.to_owned(), None),
            Some(problem) => (
                DEFAULT_PLUGIN_NAME.to_owned(),
                Some(format!("{NAME_VAR}={name:?} {problem}; using `{DEFAULT_PLUGIN_NAME}`")),
            ),
        },
    }
}

/// Why `name` cannot be the plugin's name, if it cannot.
fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("is empty".to_owned())
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Some("may contain only letters, digits, `_` and `-`".to_owned())
    } else if REFUSED_NAMES.contains(&name) {
        Some(format!(
            "is the name of a built-in server whose rules are not about a shell ({})",
            REFUSED_NAMES.join(", ")
        ))
    } else {
        None
    }
}

/// Reads the setup from the environment and the configuration file.
pub fn from_env() -> Result<Setup, ToolError> {
    let mut setup = match std::env::var_os(CONFIG_VAR) {
        Some(path) if !path.is_empty() => {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                config_error(
                    format!("cannot read {}: {e}", Path::new(&path).display()),
                    "point it at a readable JSON file, or unset it to use the defaults",
                )
            })?;
            parse_file(&text)?
        }
        _ => Setup {
            name: DEFAULT_PLUGIN_NAME.to_owned(),
            ..Setup::default()
        },
    };
    if let Ok(requested) = std::env::var(NAME_VAR) {
        let (name, warning) = plugin_name(Some(&requested));
        setup.name = name;
        setup.warning = warning;
    }
    Ok(setup)
}

/// Parses the configuration file: the plugin's `name` and `permissions`,
/// and the server's keys (those of `bash_mcp_server_configure`).
pub fn parse_file(text: &str) -> Result<Setup, ToolError> {
    let hint = "write one JSON object, e.g. {\"name\": \"bash\", \"timeout_seconds\": 60}";
    let value: Value = serde_json::from_str(text).map_err(|e| config_error(format!("not valid JSON: {e}"), hint))?;
    let Value::Object(mut map) = value else {
        return Err(config_error("the file must hold a JSON object", hint));
    };
    let name = match map.remove("name") {
        None => DEFAULT_PLUGIN_NAME.to_owned(),
        Some(Value::String(name)) => match name_problem(&name) {
            None => name,
            Some(problem) => {
                return Err(config_error(
                    format!("`name` {name:?} {problem}"),
                    "use e.g. \"bash\" or \"shell\"",
                ));
            }
        },
        Some(other) => return Err(config_error(format!("`name` must be a string, got {other}"), hint)),
    };
    let rules = map.remove("permissions").map(|v| parse_rules(&v)).transpose()?;
    Ok(Setup {
        name,
        server: map,
        rules,
        warning: None,
    })
}

/// `{"allow": [...], "deny": [...]}`: the strings of the engine's `permissions`.
fn parse_rules(value: &Value) -> Result<(Vec<String>, Vec<String>), ToolError> {
    let hint = "write {\"allow\": [\"bash.execute:git *\"], \"deny\": [\"bash.execute:rm *\"]}, the strings of the engine's `permissions`";
    let Value::Object(map) = value else {
        return Err(config_error("`permissions` must be an object", hint));
    };
    if let Some(key) = map.keys().find(|k| *k != "allow" && *k != "deny") {
        return Err(config_error(format!("`permissions` has an unknown key `{key}`"), hint));
    }
    let list = |key: &str| -> Result<Vec<String>, ToolError> {
        match map.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| config_error(format!("`permissions.{key}` holds {item}, not a string"), hint))
                })
                .collect(),
            Some(other) => Err(config_error(
                format!("`permissions.{key}` must be a list, got {other}"),
                hint,
            )),
        }
    };
    Ok((list("allow")?, list("deny")?))
}

/// Builds the server and the enforcement the setup describes.
pub fn build(setup: &Setup) -> Result<(BashServer, Option<Enforcement>), ToolError> {
    let mut config = Config::with_timeout(Duration::from_secs(DEFAULT_TIMEOUT_SECONDS));
    config.output_limit_bytes = PLUGIN_OUTPUT_LIMIT_BYTES;
    // No whole outputs kept unless the file turns the store on: then `output_read` is
    // listed with it, but the engine's identities name `<plugin>.execute` only.
    config.output_store.enabled = false;
    let server = BashServer::with_config(&setup.name, ".", None, config)?;
    if !setup.server.is_empty() {
        server
            .configure(&Value::Object(setup.server.clone()).to_string())
            .map_err(|e| ToolError::new(e.code, format!("{CONFIG_VAR}: {}", e.message), e.hint))?;
    }
    if server.config().sessions.enabled {
        return Err(config_error(
            "`sessions` cannot be enabled in the plugin: the engine matches its permission rules against the first argument in alphabetical order, which for session_write is the raw input, so its rules could not see the commands a session runs",
            "remove `sessions` from the plugin's file; use the bash-mcp binary or the C API for sessions",
        ));
    }
    let enforcement = match &setup.rules {
        None => None,
        Some((allow, deny)) => {
            let dialect = Dialect::for_shell(&server.config().shell);
            Some(
                Enforcement::new(allow, deny, dialect)
                    .map_err(|e| config_error(format!("`permissions`: {e}"), "fix or remove that entry"))?,
            )
        }
    };
    Ok((server, enforcement))
}

fn config_error(message: impl std::fmt::Display, hint: &str) -> ToolError {
    ToolError::new(ErrorCode::InvalidConfig, format!("{CONFIG_VAR}: {message}"), hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_names_are_validated() {
        assert_eq!(plugin_name(None), ("shell".to_owned(), None));
        assert_eq!(plugin_name(Some("sh_2-x")), ("sh_2-x".to_owned(), None));
        assert_eq!(plugin_name(Some("bash")), ("bash".to_owned(), None));
        for bad in ["", "git", "filesystem", "a.b", "a b", "é"] {
            let (name, warning) = plugin_name(Some(bad));
            assert_eq!(name, "shell", "{bad:?}");
            assert!(warning.unwrap().contains("using `shell`"), "{bad:?}");
        }
    }

    #[test]
    fn the_file_separates_plugin_and_server_keys() {
        let setup =
            parse_file(r#"{"name": "bash", "timeout_seconds": 5, "permissions": {"allow": ["bash.execute:git *"]}}"#)
                .unwrap();
        assert_eq!(setup.name, "bash");
        assert_eq!(setup.server.keys().collect::<Vec<_>>(), ["timeout_seconds"]);
        assert_eq!(setup.rules, Some((vec!["bash.execute:git *".to_owned()], vec![])));
        for bad in [
            r#"{"name": "git"}"#,
            r#"{"name": 3}"#,
            r#"{"permissions": {"allow": "x"}}"#,
            r#"{"permissions": {"ask": []}}"#,
            r#"[]"#,
        ] {
            let err = parse_file(bad).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidConfig, "{bad}");
            assert!(err.message.starts_with(CONFIG_VAR), "{bad}: {err}");
        }
    }

    #[test]
    fn plugin_defaults_fit_the_hosts_cut_in_the_worst_case() {
        let marker_line = 128;
        let worst = 2 * 6 * (PLUGIN_OUTPUT_LIMIT_BYTES + marker_line);
        assert!(worst + 2048 <= HOST_RESULT_LIMIT, "{worst}");
    }
}
