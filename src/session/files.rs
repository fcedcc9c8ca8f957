//! Private files of a session: the rc and command files, and fish history.

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

/// The file the typed line sources, kept open and rewritten per command.
///
/// Truncating a memory-backed file frees its page and the next write
/// allocates a new one, which costs more than the rest of starting a
/// command: a shorter command is instead padded with newlines (blank lines
/// the shell skips) up to the previous length, unless that would mean
/// writing much more than the command itself.
pub(super) struct CommandFile {
    file: std::fs::File,
    len: usize,
}

/// Largest padding written instead of truncating the file.
const MAX_PADDING: usize = 4096;

impl CommandFile {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?;
        Ok(Self { file, len: 0 })
    }

    /// Makes `text` the whole content of the file, as the shell reads it.
    ///
    /// `len` is kept an upper bound of the file's length even when a write
    /// fails part-way, so no bytes of an earlier command can survive past
    /// the end of a later one.
    pub fn replace(&mut self, text: &str) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let old = self.len;
        self.len = old.max(text.len());
        if old <= text.len() {
            self.file.write_all_at(text.as_bytes(), 0)
        } else if old - text.len() <= MAX_PADDING {
            let mut padded = Vec::with_capacity(old);
            padded.extend_from_slice(text.as_bytes());
            padded.resize(old, b'\n');
            self.file.write_all_at(&padded, 0)
        } else {
            self.file.write_all_at(text.as_bytes(), 0)?;
            self.file.set_len(text.len() as u64)?;
            self.len = text.len();
            Ok(())
        }
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

#[cfg(test)]
mod tests {
    use super::{CommandFile, MAX_PADDING, scopeguard};

    fn content(dir: &std::path::Path) -> String {
        std::fs::read_to_string(dir.join("c")).unwrap()
    }

    #[test]
    fn command_file_holds_the_latest_command_only() {
        let dir = std::env::temp_dir().join(format!("bash-mcp-cmdfile-{}", crate::ids::random_id()));
        std::fs::create_dir_all(&dir).unwrap();
        let _cleanup = scopeguard(dir.clone());
        let mut file = CommandFile::create(&dir.join("c")).unwrap();
        file.replace("{\necho a long first command\n}\n").unwrap();
        assert_eq!(content(&dir), "{\necho a long first command\n}\n");
        // Shorter: padded with blank lines, never a leftover of the old text.
        file.replace("{\ntrue\n}\n").unwrap();
        let text = content(&dir);
        assert_eq!(text.len(), "{\necho a long first command\n}\n".len());
        assert_eq!(text.trim_end_matches('\n'), "{\ntrue\n}");
        // Longer again: exact.
        file.replace("{\necho an even longer command than before\n}\n").unwrap();
        assert_eq!(content(&dir), "{\necho an even longer command than before\n}\n");
        // Much shorter: truncated rather than padded.
        let big = format!("{{\n: {}\n}}\n", "x".repeat(MAX_PADDING * 2));
        file.replace(&big).unwrap();
        file.replace("{\ntrue\n}\n").unwrap();
        assert_eq!(content(&dir), "{\ntrue\n}\n");
    }
}
