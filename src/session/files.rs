//! Private files of a session: the rc and command files, and fish history.

use std::ffi::CString;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::{internal, shell};
use crate::error::ToolError;

pub(super) fn write_private(path: &Path, text: &str) -> Result<(), ToolError> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()).map(|_| f))
        .map_err(|e| internal(format!("could not write {}: {e}", path.display())))?;
    let _ = file.flush();
    Ok(())
}

pub(super) fn append_fish_history(target: Option<&Path>, command: &str) -> Result<(), ToolError> {
    use std::io::Write;
    let Some(path) = target else { return Ok(()) };
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let when = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .and_then(|mut f| f.write_all(shell::fish_history_record(command, when).as_bytes()))
        .map_err(|e| internal(format!("could not append to fish history {}: {e}", path.display())))
}

/// Where private session directories go: /dev/shm (memory, so command text
/// never reaches a disk) when usable, else the temp dir.
pub(super) fn private_base() -> PathBuf {
    let shm = Path::new("/dev/shm");
    let usable = std::fs::metadata(shm).is_ok_and(|m| m.is_dir())
        && CString::new("/dev/shm").is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } == 0);
    if usable {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Removes a directory on drop unless forgotten.
pub(super) struct DirGuard(PathBuf);
impl Drop for DirGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
pub(super) fn scopeguard(dir: PathBuf) -> DirGuard {
    DirGuard(dir)
}
