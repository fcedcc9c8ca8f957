//! The `audit` key: the audit log's settings read from its JSON object.

use std::path::PathBuf;

use serde_json::Value;

use super::values::{bounded_int, config_error, string_list};
use crate::audit::AuditSettings;
use crate::error::ToolError;

/// `null` (off) or the audit object; a relative `path` is made absolute
/// against the current directory.
pub(super) fn audit_settings(value: &Value) -> Result<Option<AuditSettings>, ToolError> {
    let hint = "use null (off) or {\"path\": \"/var/log/bash-mcp/audit.jsonl\", \"max_bytes\": 26214400, \"backups\": 5, \"gzip_min_bytes\": null, \"redact\": [\"REGEX\"]}";
    let map = match value {
        Value::Null => return Ok(None),
        Value::Object(map) => map,
        _ => {
            return Err(config_error(
                format!("`audit` must be null or an object, got {value}"),
                hint,
            ));
        }
    };
    let path = match map.get("path") {
        // Absolute now: the writer reopens the path after rotations, which
        // must not depend on the process's current directory at that time.
        Some(Value::String(p)) if !p.is_empty() && !p.contains('\0') => {
            std::path::absolute(p).unwrap_or_else(|_| PathBuf::from(p))
        }
        _ => return Err(config_error("`audit.path` must be a non-empty path string", hint)),
    };
    let mut settings = AuditSettings::new(path);
    for (key, value) in map {
        let full = format!("audit.{key}");
        match key.as_str() {
            "path" => {}
            "max_bytes" => settings.max_bytes = bounded_int(&full, value, 1024, u64::MAX)?,
            "backups" => settings.backups = bounded_int(&full, value, 0, 1000)? as usize,
            "gzip_min_bytes" => {
                settings.gzip_min_bytes = match value {
                    Value::Null => None,
                    _ => Some(bounded_int(&full, value, 0, u64::MAX)?),
                }
            }
            "redact" => settings.redact = string_list(&full, value)?,
            "read_all" => {
                settings.read_all = value
                    .as_bool()
                    .ok_or_else(|| config_error("`audit.read_all` must be true or false", "use a JSON boolean"))?
            }
            other => return Err(config_error(format!("unknown configuration key `audit.{other}`"), hint)),
        }
    }
    Ok(Some(settings))
}
