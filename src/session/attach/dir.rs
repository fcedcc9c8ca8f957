//! The private directory of attach sockets.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where servers put their attach sockets: `$XDG_RUNTIME_DIR/bash-mcp`, or
/// `<temp dir>/bash-mcp-<uid>` without a runtime directory.
pub fn socket_dir() -> PathBuf {
    crate::ids::attach_dir()
}

/// Creates the directory (mode 0700) if needed and checks that it is ours
/// and private: a real directory (not a link), owned by this user, that no
/// one else may enter. Anything else is refused, not repaired.
pub(crate) fn ensure_private(dir: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    check_private(dir)
}

/// Fails unless `dir` is a directory (not a link) of this user with no
/// access for group or others.
pub(crate) fn check_private(dir: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != me || meta.permissions().mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a private directory of this user (it must be a directory owned by uid {me} with mode 0700); remove it or fix its owner and mode",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// The attach sockets in the directory, oldest server first.
pub fn sockets() -> io::Result<Vec<PathBuf>> {
    let dir = socket_dir();
    check_private(&dir)?;
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&dir)?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sock"))
        .map(|e| {
            (
                e.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH),
                e.path(),
            )
        })
        .collect();
    found.sort();
    Ok(found.into_iter().map(|(_, p)| p).collect())
}
