//! Reading back: the entries `audit_read` selects from the live file or a
//! backup, newest first.

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde_json::Value;

use super::AuditLog;
use super::timestamp::parse_instant;
use crate::dirfd::Dir;
use crate::error::{ErrorCode, ToolError};

/// What `audit_read` selects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditQuery {
    /// 0 (default) for the live file, N for backup N.
    pub backup_index: usize,
    /// Newest entries returned, at most (default 100).
    pub max_entries: Option<usize>,
    /// Only entries of this tool.
    pub tool: Option<String>,
    /// Only entries stamped at or after this instant: an RFC 3339 time with
    /// any fraction and `Z` or a `±hh:mm` offset (`2026-11-30T09:33:42.5+01:00`),
    /// or a date (`2026-11-30`, midnight UTC). Anything else is an
    /// `invalid_arguments` error.
    pub since: Option<String>,
    /// Only entries written by this server instance (their `instance` field).
    pub instance: Option<String>,
}

impl AuditQuery {
    /// Whether `entry` passes the tool, instance and `since` filters (`since`
    /// already parsed).
    fn selects(&self, entry: &Value, since: Option<(i64, u32)>) -> bool {
        if self.tool.as_deref().is_some_and(|t| entry["tool"] != t) {
            return false;
        }
        if self.instance.as_deref().is_some_and(|i| entry["instance"] != i) {
            return false;
        }
        if let Some(since) = since
            && entry["timestamp"]
                .as_str()
                .and_then(parse_instant)
                .is_none_or(|at| at < since)
        {
            return false;
        }
        true
    }
}

impl AuditLog {
    /// Reads entries, newest first, from the live file or a backup (plain or gzip).
    pub fn read(&self, query: &AuditQuery) -> Result<Vec<Value>, ToolError> {
        let since = query.since.as_deref().map(parse_since).transpose()?;
        let dir = self.dir();
        let name = self.file_of(&dir, query.backup_index)?;
        let path = dir.path().join(&name);
        let reader = open_entries(&dir, &name, &path)?;
        let max = query.max_entries.unwrap_or(100);
        let mut entries: Vec<Value> = Vec::new();
        for line in BufReader::new(reader).lines() {
            let line = line.map_err(|e| {
                ToolError::new(
                    ErrorCode::Internal,
                    format!("audit file {} is unreadable: {e}", path.display()),
                    "the file may be corrupt; read another backup",
                )
            })?;
            let Ok(entry) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if query.selects(&entry, since) {
                entries.push(entry);
            }
        }
        entries.reverse();
        entries.truncate(max);
        Ok(entries)
    }

    /// The name of the live file (`backup_index` 0) or of backup
    /// `backup_index`, which must exist.
    fn file_of(&self, dir: &Dir, backup_index: usize) -> Result<OsString, ToolError> {
        if backup_index == 0 {
            return Ok(self.live().to_owned());
        }
        self.backup_name(dir, backup_index).ok_or_else(|| {
            ToolError::new(
                ErrorCode::InvalidArguments,
                format!("audit backup {backup_index} does not exist"),
                format!(
                    "backups are numbered 1 to {} (1 is the most recent)",
                    self.settings.backups
                ),
            )
        })
    }
}

/// The `since` of a query as an instant; anything else is an
/// `invalid_arguments` error.
fn parse_since(text: &str) -> Result<(i64, u32), ToolError> {
    parse_instant(text).ok_or_else(|| {
        ToolError::new(
            ErrorCode::InvalidArguments,
            format!("`since` {text:?} is not an RFC 3339 time or a date"),
            "pass a time such as \"2026-11-30T08:33:42Z\" (any fraction; Z or an offset such as +01:00) or a date such as \"2026-11-30\" (midnight UTC)",
        )
    })
}

/// The lines of the audit file `name` (at `path`), decompressed when it is
/// a `.gz` backup.
fn open_entries(dir: &Dir, name: &OsStr, path: &Path) -> Result<Box<dyn Read>, ToolError> {
    let file = dir.open_read(name).map_err(|e| {
        ToolError::new(
            ErrorCode::Internal,
            format!("audit file {} cannot be read: {e}", path.display()),
            "check the file's permissions",
        )
    })?;
    Ok(if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    })
}
