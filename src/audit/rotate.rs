//! Rotation: the live file moved to backup 1 when full, the backups shifted,
//! the oldest dropped, and large ones compressed.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::AuditLog;
use super::lock::Flock;
use super::write::{Writer, same_file};

impl AuditLog {
    /// Rotates, under the exclusive lock, when the live file is still the one
    /// `writer` has open and still full, then reopens the live file.
    pub(super) fn rotate_if_full(&self, writer: &mut Writer) {
        let _exclusive = Flock::new(writer.lock.as_ref(), libc::LOCK_EX);
        // Another process may have rotated while this one waited.
        let live = std::fs::metadata(&self.settings.path).ok();
        let still_ours = match (&live, writer.file.as_ref().and_then(|f| f.metadata().ok())) {
            (Some(live), Some(open)) => same_file(live, &open),
            _ => false,
        };
        if still_ours && live.is_some_and(|m| m.len() >= self.settings.max_bytes) {
            writer.file = None;
            self.rotate();
        }
        self.reopen_if_moved(&mut writer.file);
    }

    /// Path of backup `index` (1-based), compressed or not, if it exists.
    pub fn backup_path(&self, index: usize) -> Option<PathBuf> {
        [
            numbered(&self.settings.path, index, true),
            numbered(&self.settings.path, index, false),
        ]
        .into_iter()
        .find(|p| p.exists())
    }

    /// Shifts the backups and moves the live file to backup 1 (under the
    /// exclusive lock; the caller reopens).
    fn rotate(&self) {
        let path = &self.settings.path;
        let result = (|| -> std::io::Result<()> {
            let n = self.settings.backups;
            if n == 0 {
                std::fs::remove_file(path)?;
                return Ok(());
            }
            for gz in [false, true] {
                remove_if_exists(&numbered(path, n, gz))?;
            }
            for i in (1..n).rev() {
                for gz in [false, true] {
                    let from = numbered(path, i, gz);
                    if from.exists() {
                        std::fs::rename(&from, numbered(path, i + 1, gz))?;
                    }
                }
            }
            let first = numbered(path, 1, false);
            std::fs::rename(path, &first)?;
            if let Some(min) = self.settings.gzip_min_bytes
                && std::fs::metadata(&first).map(|m| m.len() >= min).unwrap_or(false)
            {
                gzip_file(&first, &numbered(path, 1, true))?;
                std::fs::remove_file(&first)?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            tracing::error!(path = %path.display(), error = %e, "audit log rotation failed");
        }
    }
}

/// `<path>.<index>`, with `.gz` when `gz`.
fn numbered(path: &Path, index: usize, gz: bool) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{index}"));
    if gz {
        name.push(".gz");
    }
    PathBuf::from(name)
}

/// Removes `path`; one already gone is no error.
fn remove_if_exists(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Writes `from` gzip-compressed to `to`.
fn gzip_file(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut input = File::open(from)?;
    let output = File::create(to)?;
    let mut encoder = flate2::write::GzEncoder::new(output, flate2::Compression::default());
    std::io::copy(&mut input, &mut encoder)?;
    encoder.finish()?.sync_all()
}
