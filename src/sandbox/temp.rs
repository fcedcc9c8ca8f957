//! The temp dir a sandboxed command sees: never the host's shared `/tmp`,
//! where a command could write every sibling directory (other projects,
//! other programs' sockets, the server's own output store).
//!
//! In `workspace-write` it is its server's own directory, made on first use
//! and kept between calls (a file written in one call can be read in the
//! next), removed with the server; bubblewrap mounts it at `/tmp`. In
//! `read-only` mode it is the command's own: bubblewrap mounts an empty
//! tmpfs at `/tmp` for each command, and the Landlock backend, which has no
//! mount namespace, gets a directory made for the command and removed when
//! it ends. Either way `TMPDIR` names it. The guard removes what a host
//! that died left behind (every such directory starts with
//! `ids::sandbox_temp_prefix`).

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// Where a command's temp dir is, as its backend provides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Temp {
    /// bubblewrap: this host directory is mounted at `/tmp`.
    AtTmp(PathBuf),
    /// bubblewrap: an empty tmpfs of the command's own at `/tmp`.
    Fresh,
    /// Landlock: this host directory is writable and is `TMPDIR`; the
    /// host's `/tmp` stays read-only.
    Granted(PathBuf),
}

impl Temp {
    /// The temp dir as the command sees it (its `TMPDIR`).
    pub fn seen_at(&self) -> &Path {
        match self {
            Temp::AtTmp(_) | Temp::Fresh => Path::new("/tmp"),
            Temp::Granted(dir) => dir,
        }
    }
}

/// A server's temp dir for its sandboxed commands, made on first use and
/// removed when dropped.
#[derive(Debug, Default)]
pub struct ServerTemp {
    dir: Mutex<Option<PathBuf>>,
}

impl ServerTemp {
    pub fn new() -> Self {
        Self::default()
    }

    /// The directory, made now if this is its first use.
    pub fn dir(&self) -> io::Result<PathBuf> {
        let mut dir = self.dir.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(dir) = dir.as_ref() {
            return Ok(dir.clone());
        }
        let made = make_private_dir()?;
        *dir = Some(made.clone());
        Ok(made)
    }

    /// The directory if it has been made (for tests and `status`).
    pub fn made(&self) -> Option<PathBuf> {
        self.dir.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Drop for ServerTemp {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.get_mut().unwrap_or_else(PoisonError::into_inner).take() {
            remove(&dir);
        }
    }
}

/// A temp dir of one command's own, removed when dropped.
#[derive(Debug)]
pub struct CommandTemp(PathBuf);

impl CommandTemp {
    pub fn new() -> io::Result<Self> {
        make_private_dir().map(CommandTemp)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for CommandTemp {
    fn drop(&mut self) {
        remove(&self.0);
    }
}

/// A fresh directory only this user can enter: created, never reused (a
/// name that exists already is an error, so nothing planted is taken over),
/// and canonical, as the backends' rules need.
fn make_private_dir() -> io::Result<PathBuf> {
    let mut path = crate::process::ids::sandbox_temp_prefix().into_os_string();
    path.push(crate::process::ids::random_id());
    let path = PathBuf::from(path);
    std::fs::DirBuilder::new().mode(0o700).create(&path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("could not create the sandbox's temp dir {}: {e}", path.display()),
        )
    })?;
    path.canonicalize()
}

/// Removes a temp dir and everything a command left in it. The removal
/// does not follow symbolic links a command planted there.
fn remove(dir: &Path) {
    if let Err(e) = std::fs::remove_dir_all(dir)
        && e.kind() != io::ErrorKind::NotFound
    {
        tracing::warn!("could not remove the sandbox's temp dir {}: {e}", dir.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_server_temp_dir_is_private_made_once_and_removed_on_drop() {
        let temp = ServerTemp::new();
        assert!(temp.made().is_none());
        let dir = temp.dir().unwrap();
        assert_eq!(temp.dir().unwrap(), dir);
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{dir:?}");
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::os::unix::fs::symlink("/", dir.join("sub/root")).unwrap();
        drop(temp);
        assert!(!dir.exists());
    }

    #[test]
    fn a_command_temp_dir_goes_with_its_command() {
        let temp = CommandTemp::new().unwrap();
        let path = temp.path().to_path_buf();
        assert!(path.starts_with(std::env::temp_dir().canonicalize().unwrap()));
        std::fs::write(path.join("f"), "x").unwrap();
        drop(temp);
        assert!(!path.exists());
    }
}
