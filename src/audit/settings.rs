//! The audit log's settings (configuration key `audit`) and their defaults.

use std::path::PathBuf;

use super::DEFAULT_REDACTIONS;

/// Default size at which the live file is rotated: 25 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 25 * 1024 * 1024;
/// Default number of rotated files kept.
pub const DEFAULT_BACKUPS: usize = 5;

/// Audit settings (configuration key `audit`).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditSettings {
    /// The live file; backups are `<path>.1` … `<path>.N` (`.gz` when compressed).
    pub path: PathBuf,
    /// Rotate when the live file reaches this size.
    pub max_bytes: u64,
    /// Rotated files kept (0: the live file is simply restarted).
    pub backups: usize,
    /// Compress rotated files of at least this size (`None`: never).
    pub gzip_min_bytes: Option<u64>,
    /// Regular expressions masked in recorded commands and in text quoting
    /// them (see [`DEFAULT_REDACTIONS`] for how a match is masked).
    pub redact: Vec<String>,
    /// Whether `audit_read` returns every entry of the file, also those other
    /// servers wrote (`audit.read_all`); by default each server reads back
    /// only its own.
    pub read_all: bool,
}

impl AuditSettings {
    /// Settings for `path` with every other value at its default.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            max_bytes: DEFAULT_MAX_BYTES,
            backups: DEFAULT_BACKUPS,
            gzip_min_bytes: None,
            redact: DEFAULT_REDACTIONS.iter().map(|s| (*s).to_owned()).collect(),
            read_all: false,
        }
    }
}
