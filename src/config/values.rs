//! Checks of single configuration values (seconds, bounded integers, lists of
//! strings, the shell), with the `invalid_config` errors that name their key.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::error::{ErrorCode, ToolError};

/// An `invalid_config` error.
pub(super) fn config_error(message: impl Into<String>, hint: impl Into<String>) -> ToolError {
    ToolError::new(ErrorCode::InvalidConfig, message, hint)
}

/// Parses a positive number of seconds (integer or fraction), at most one day.
pub(super) fn positive_seconds(key: &str, value: &Value) -> Result<Duration, ToolError> {
    let secs = value.as_f64().filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0);
    secs.map(Duration::from_secs_f64).ok_or_else(|| {
        config_error(
            format!("`{key}` must be a number of seconds above 0 and at most 86400, got {value}"),
            format!("set `{key}` to a positive number such as 30"),
        )
    })
}

/// An integer from `min` to `max`.
pub(super) fn bounded_int(key: &str, value: &Value, min: u64, max: u64) -> Result<u64, ToolError> {
    value.as_u64().filter(|v| (min..=max).contains(v)).ok_or_else(|| {
        config_error(
            format!("`{key}` must be an integer from {min} to {max}, got {value}"),
            format!("set `{key}` to an integer in that range"),
        )
    })
}

/// The `shell` key: a path, or a name found on `PATH`, of an executable file.
pub(super) fn shell_path(value: &Value) -> Result<PathBuf, ToolError> {
    let Some(text) = value.as_str().filter(|s| !s.is_empty() && !s.contains('\0')) else {
        return Err(config_error(
            format!("`shell` must be a non-empty path string, got {value}"),
            "use an absolute path such as \"/bin/bash\", or a name found on PATH",
        ));
    };
    let path = resolve_program(text).ok_or_else(|| {
        config_error(
            format!("`shell` {text:?} is not an executable file (nor found on PATH)"),
            "install that shell or give the absolute path of one that exists",
        )
    })?;
    Ok(path)
}

/// Resolves a program name the way `execvp` would: paths with a slash as they
/// are, bare names through `PATH`. Returns `None` when nothing executable is found.
pub fn resolve_program(name: &str) -> Option<PathBuf> {
    let is_exec = |p: &std::path::Path| p.is_file() && rustix::fs::access(p, rustix::fs::Access::EXEC_OK).is_ok();
    if name.contains('/') {
        let path = PathBuf::from(name);
        return is_exec(&path).then_some(path);
    }
    let search = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&search)
        .map(|dir| dir.join(name))
        .find(|candidate| is_exec(candidate))
}

/// A list of non-empty strings without NUL.
pub(super) fn string_list(key: &str, value: &Value) -> Result<Vec<String>, ToolError> {
    let items = value.as_array().ok_or_else(|| {
        config_error(
            format!("`{key}` must be a list of strings, got {value}"),
            "use a JSON array of strings",
        )
    })?;
    items
        .iter()
        .map(|item| {
            item.as_str()
                .filter(|s| !s.is_empty() && !s.contains('\0'))
                .map(str::to_owned)
                .ok_or_else(|| {
                    config_error(
                        format!("`{key}` entries must be non-empty strings, got {item}"),
                        "use a JSON array of strings",
                    )
                })
        })
        .collect()
}

/// `true` or `false`.
pub(super) fn boolean(key: &str, value: &Value) -> Result<bool, ToolError> {
    value
        .as_bool()
        .ok_or_else(|| config_error(format!("`{key}` must be true or false"), "use a JSON boolean"))
}
