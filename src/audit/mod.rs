//! The audit log: one JSON object per line for every tool call, rotated by
//! size, with secrets redacted.
//!
//! One mutex serializes this process's writers; a lock file (`<path>.lock`,
//! `flock`) orders them with other processes writing the same path, so lines
//! never interleave and a rotation loses none. Write errors are logged
//! through `tracing` and never fail the call being recorded.
//!
//! This file holds the open log; the settings, redaction, writing, the lock
//! file, rotation, reading back and timestamps each have a file of their own.

use std::sync::Mutex;

use regex::Regex;

use crate::error::{ErrorCode, ToolError};

mod lock;
mod read;
mod redact;
mod rotate;
mod settings;
pub(crate) mod timestamp;
mod write;

pub use read::AuditQuery;
pub use redact::DEFAULT_REDACTIONS;
pub use settings::{AuditSettings, DEFAULT_BACKUPS, DEFAULT_MAX_BYTES};
pub use timestamp::{parse_instant, rfc3339, rfc3339_now};

use write::Writer;

/// An open audit log.
#[derive(Debug)]
pub struct AuditLog {
    settings: AuditSettings,
    redactors: Vec<Regex>,
    writer: Mutex<Writer>,
}

impl AuditLog {
    /// Opens (creating folders and the file) for appending; an unwritable
    /// path or an invalid redaction pattern is an `invalid_config` error.
    pub fn open(settings: AuditSettings) -> Result<Self, ToolError> {
        let redactors = redact::compile(&settings.redact)?;
        let file = write::open_append(&settings.path).map_err(|e| {
            ToolError::new(
                ErrorCode::InvalidConfig,
                format!(
                    "`audit.path` {} cannot be opened for writing: {e}",
                    settings.path.display()
                ),
                "choose a writable location, or set `audit` to null to turn the audit log off",
            )
        })?;
        let lock = lock::open_lock_file(&settings.path);
        Ok(Self {
            settings,
            redactors,
            writer: Mutex::new(Writer { file: Some(file), lock }),
        })
    }

    /// The settings in force.
    pub fn settings(&self) -> &AuditSettings {
        &self.settings
    }
}
