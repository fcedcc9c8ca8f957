//! Private files of a session: the rc files, and the command and history
//! files the shell reads.
//!
//! The session's private directory is writable by its shell (and, when it
//! lies in the temp dir, by any sandboxed command that may write there), so
//! the server reaches every file in it through the directory's descriptor
//! ([`Dir`]): created exclusively, never through a link. The command and
//! history files are made before the shell starts and kept open; what the
//! server writes goes into the file it made, whatever the shell does to
//! the names meanwhile.

use std::ffi::OsStr;
use std::io::Write;

use super::internal;
use crate::dirfd::Dir;
use crate::error::ToolError;

/// Writes the new file `name` in `dir` (mode 0600) with `text`.
pub(super) fn write_new(dir: &Dir, name: &str, text: &str) -> Result<(), ToolError> {
    dir.create_file(OsStr::new(name), 0o600)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| internal(format!("could not write the session's start-up file: {e}")))
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

/// The name of the command file in the session's directory.
pub(super) const COMMAND_FILE: &str = "c";
/// The name of the history file: the text a kept command adds to the
/// shell's history, which the shell itself appends to its history file.
pub(super) const HISTORY_FILE: &str = "h";

/// Largest padding written instead of truncating the file.
const MAX_PADDING: usize = 4096;

impl CommandFile {
    /// Creates the new file `name` in `dir` (mode 0600).
    pub fn create(dir: &Dir, name: &str) -> std::io::Result<Self> {
        let file = dir.create_file(OsStr::new(name), 0o600)?;
        Ok(Self { file, len: 0 })
    }

    /// Makes `text` the whole content of the file, exactly (no padding).
    pub fn replace_exactly(&mut self, text: &str) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.len = self.len.max(text.len());
        self.file.write_all_at(text.as_bytes(), 0)?;
        self.file.set_len(text.len() as u64)?;
        self.len = text.len();
        Ok(())
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

/// Removes a session's directory on drop unless forgotten.
pub(super) struct DirGuard<'a>(&'a Dir);
impl Drop for DirGuard<'_> {
    fn drop(&mut self) {
        let _ = self.0.remove_all();
    }
}
pub(super) fn scopeguard(dir: &Dir) -> DirGuard<'_> {
    DirGuard(dir)
}

#[cfg(test)]
mod tests {
    use super::{COMMAND_FILE, CommandFile, MAX_PADDING, scopeguard};
    use crate::dirfd::Dir;

    fn content(dir: &std::path::Path) -> String {
        std::fs::read_to_string(dir.join(COMMAND_FILE)).unwrap()
    }

    #[test]
    fn command_file_holds_the_latest_command_only() {
        let name = format!("bash-mcp-cmdfile-{}", crate::process::ids::random_id());
        let files = Dir::create_private(&std::env::temp_dir(), name.as_ref()).unwrap();
        let _cleanup = scopeguard(&files);
        let dir = files.path();
        let mut file = CommandFile::create(&files, COMMAND_FILE).unwrap();
        file.replace("{\necho a long first command\n}\n").unwrap();
        assert_eq!(content(dir), "{\necho a long first command\n}\n");
        // Shorter: padded with blank lines, never a leftover of the old text.
        file.replace("{\ntrue\n}\n").unwrap();
        let text = content(dir);
        assert_eq!(text.len(), "{\necho a long first command\n}\n".len());
        assert_eq!(text.trim_end_matches('\n'), "{\ntrue\n}");
        // Longer again: exact.
        file.replace("{\necho an even longer command than before\n}\n").unwrap();
        assert_eq!(content(dir), "{\necho an even longer command than before\n}\n");
        // Much shorter: truncated rather than padded.
        let big = format!("{{\n: {}\n}}\n", "x".repeat(MAX_PADDING * 2));
        file.replace(&big).unwrap();
        file.replace("{\ntrue\n}\n").unwrap();
        assert_eq!(content(dir), "{\ntrue\n}\n");
        file.replace_exactly("short").unwrap();
        assert_eq!(content(dir), "short");
    }

    #[test]
    fn a_name_the_shell_replaced_does_not_redirect_what_the_server_writes() {
        let name = format!("bash-mcp-histfile-{}", crate::process::ids::random_id());
        let files = Dir::create_private(&std::env::temp_dir(), name.as_ref()).unwrap();
        let _cleanup = scopeguard(&files);
        let target = files.path().with_extension("target");
        std::fs::write(&target, "untouched").unwrap();
        let mut history = CommandFile::create(&files, super::HISTORY_FILE).unwrap();
        // The shell (a command in the session) points the name elsewhere.
        std::fs::remove_file(files.path().join(super::HISTORY_FILE)).unwrap();
        std::os::unix::fs::symlink(&target, files.path().join(super::HISTORY_FILE)).unwrap();
        history.replace_exactly("echo kept").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
        std::fs::remove_file(target).unwrap();
    }
}
