//! Rotation: the live file moved to backup 1 when full, the backups shifted,
//! the oldest dropped, and large ones compressed. Every name is reached
//! through the log's folder ([`Dir`]), never through a link.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::PathBuf;

use super::AuditLog;
use super::lock::Flock;
use super::write::Writer;
use crate::dirfd::{Dir, Kind};

impl AuditLog {
    /// Rotates, under the exclusive lock, when the live file is still the one
    /// `writer` has open and still full, then reopens the live file.
    pub(super) fn rotate_if_full(&self, writer: &mut Writer) {
        let _exclusive = Flock::new(writer.lock.as_ref(), rustix::fs::FlockOperation::LockExclusive);
        // Another process may have rotated while this one waited.
        let dir = self.dir();
        let still_ours = writer.file.as_ref().is_some_and(|open| self.is_live(&dir, open));
        let full = dir
            .stat(self.live())
            .is_ok_and(|live| live.len >= self.settings.max_bytes);
        if still_ours && full {
            writer.file = None;
            self.rotate(&dir);
        }
        self.reopen_if_moved(&mut writer.file);
    }

    /// Path of backup `index` (1-based), compressed or not, if it exists.
    pub fn backup_path(&self, index: usize) -> Option<PathBuf> {
        let dir = self.dir();
        self.backup_name(&dir, index).map(|name| dir.path().join(name))
    }

    /// The name of backup `index` in the folder, compressed or not, if it
    /// exists as a regular file.
    pub(super) fn backup_name(&self, dir: &Dir, index: usize) -> Option<OsString> {
        [numbered(self.live(), index, true), numbered(self.live(), index, false)]
            .into_iter()
            .find(|name| dir.stat(name).is_ok_and(|s| s.kind == Kind::Regular))
    }

    /// Shifts the backups and moves the live file to backup 1 (under the
    /// exclusive lock; the caller reopens).
    fn rotate(&self, dir: &Dir) {
        let live = self.live();
        let result = (|| -> io::Result<()> {
            let n = self.settings.backups;
            if n == 0 {
                dir.remove(live)?;
                return Ok(());
            }
            for gz in [false, true] {
                remove_if_exists(dir, &numbered(live, n, gz))?;
            }
            for i in (1..n).rev() {
                for gz in [false, true] {
                    let from = numbered(live, i, gz);
                    if dir.stat(&from).is_ok() {
                        dir.rename(&from, &numbered(live, i + 1, gz))?;
                    }
                }
            }
            let first = numbered(live, 1, false);
            dir.rename(live, &first)?;
            if let Some(min) = self.settings.gzip_min_bytes
                && dir.stat(&first).is_ok_and(|s| s.len >= min)
            {
                let gz = numbered(live, 1, true);
                remove_if_exists(dir, &gz)?;
                gzip_file(dir, &first, &gz)?;
                dir.remove(&first)?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            tracing::error!(path = %self.settings.path.display(), error = %e, "audit log rotation failed");
        }
    }
}

/// `<name>.<index>`, with `.gz` when `gz`.
fn numbered(name: &OsStr, index: usize, gz: bool) -> OsString {
    let mut numbered = name.to_owned();
    numbered.push(format!(".{index}"));
    if gz {
        numbered.push(".gz");
    }
    numbered
}

/// Removes `name`; one already gone is no error.
fn remove_if_exists(dir: &Dir, name: &OsStr) -> io::Result<()> {
    match dir.remove(name) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Writes `from` gzip-compressed to the new file `to`.
fn gzip_file(dir: &Dir, from: &OsStr, to: &OsStr) -> io::Result<()> {
    let mut input = dir.open_read(from)?;
    let output = dir.create_file(to, 0o666)?;
    let mut encoder = flate2::write::GzEncoder::new(output, flate2::Compression::default());
    io::copy(&mut input, &mut encoder)?;
    encoder.finish()?.sync_all()
}
