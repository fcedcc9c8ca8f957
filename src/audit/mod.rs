//! The audit log: one JSON object per line for every tool call, rotated by
//! size, with secrets redacted.
//!
//! One mutex serializes this process's writers; a lock file (`<path>.lock`,
//! `flock`) orders them with other processes writing the same path, so lines
//! never interleave and a rotation loses none. Write errors are logged
//! through `tracing` and never fail the call being recorded.
//!
//! The log may lie where sandboxed commands can write (a writable root):
//! its folder is held open and every file in it is reached through it
//! (`Dir`, in `dirfd`), never through a link, and only when it is a regular file with
//! one name (or a character device such as `/dev/null`), so nothing a
//! command planted there redirects a line, a rotation or a read.
//!
//! This file holds the open log; the settings, redaction, writing, the lock
//! file, rotation, reading back and timestamps each have a file of their own.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use regex::Regex;

use crate::dirfd::Dir;
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
    /// The live file's name in its folder; backups and the lock file are named after it.
    name: OsString,
    /// The folder, held open; made again (by its path) when it was removed.
    dir: Mutex<Arc<Dir>>,
    writer: Mutex<Writer>,
}

impl AuditLog {
    /// Opens (creating folders and the file) for appending; an unwritable
    /// path or an invalid redaction pattern is an `invalid_config` error.
    pub fn open(settings: AuditSettings) -> Result<Self, ToolError> {
        let redactors = redact::compile(&settings.redact)?;
        let unusable = |e: std::io::Error| {
            ToolError::new(
                ErrorCode::InvalidConfig,
                format!(
                    "`audit.path` {} cannot be opened for writing: {e}",
                    settings.path.display()
                ),
                "choose a writable location, or set `audit` to null to turn the audit log off",
            )
        };
        let name = settings
            .path
            .file_name()
            .ok_or_else(|| unusable(std::io::Error::other("the path names no file")))?
            .to_owned();
        let dir = open_folder(&settings.path).map_err(unusable)?;
        let file = dir.open_append(&name, 0o666).map_err(unusable)?;
        let lock = lock::open_lock_file(&dir, &name);
        Ok(Self {
            settings,
            redactors,
            name,
            dir: Mutex::new(Arc::new(dir)),
            writer: Mutex::new(Writer { file: Some(file), lock }),
        })
    }

    /// The folder of the log, held open; opened again by its path when it
    /// was removed since.
    fn dir(&self) -> Arc<Dir> {
        let mut dir = self.dir.lock().unwrap_or_else(PoisonError::into_inner);
        if dir.is_removed()
            && let Ok(again) = open_folder(&self.settings.path)
        {
            *dir = Arc::new(again);
        }
        dir.clone()
    }

    /// The live file's name.
    fn live(&self) -> &OsStr {
        &self.name
    }

    /// The settings in force.
    pub fn settings(&self) -> &AuditSettings {
        &self.settings
    }
}

/// The folder of the log at `path`, made if missing.
fn open_folder(path: &Path) -> std::io::Result<Dir> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Dir::create_all(parent, 0o777)
}
