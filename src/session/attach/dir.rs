//! The private directory of attach sockets.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where this process's server puts its attach socket: decided from the
/// user id alone, so that a server started by an MCP client (with few
/// environment variables) and `bash-mcp attach` in a person's terminal
/// agree: `/run/user/<uid>/bash-mcp` when `/run/user/<uid>` is the user's
/// private runtime directory, else `/tmp/bash-mcp-<uid>`.
pub fn socket_dir() -> PathBuf {
    crate::process::ids::attach_dir()
}

/// Every place a server of this user may have put its socket (a server
/// started before the runtime directory appeared used the other one).
pub fn socket_dirs() -> [PathBuf; 2] {
    crate::process::ids::attach_dirs()
}

/// Creates the directory (mode 0700) if it is missing; whether it is ours
/// and private is for the caller to check on the directory it opens.
pub(crate) fn make_private(dir: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Fails unless `dir` is a directory (not a link) of this user with no
/// access for group or others.
pub(crate) fn check_private(dir: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    let me = rustix::process::geteuid().as_raw();
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

/// The attach sockets of this user's servers, oldest server first. A
/// directory that is missing is skipped; one that is not private is
/// refused (the error says which and why) unless the other has sockets.
pub fn sockets() -> io::Result<Vec<PathBuf>> {
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    let mut refused = None;
    for dir in socket_dirs() {
        match sockets_in(&dir) {
            Ok(mut more) => found.append(&mut more),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => refused = Some(e),
        }
    }
    if let Some(e) = refused.filter(|_| found.is_empty()) {
        return Err(e);
    }
    found.sort();
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

fn sockets_in(dir: &Path) -> io::Result<Vec<(std::time::SystemTime, PathBuf)>> {
    check_private(dir)?;
    Ok(std::fs::read_dir(dir)?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sock"))
        .map(|e| {
            (
                e.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH),
                e.path(),
            )
        })
        .collect())
}
