//! What a session refuses before typing (over-long commands and lines), and its errors.

use super::pty;
use crate::error::{ErrorCode, ToolError};

pub(super) fn internal(message: String) -> ToolError {
    ToolError::new(
        ErrorCode::Internal,
        message,
        "retry; if it persists, report it with the message",
    )
}

pub(super) fn spawn_failed(message: String) -> ToolError {
    ToolError::new(
        ErrorCode::SpawnFailed,
        message,
        "check the shell, the working directory and the host's limits, then retry",
    )
}

/// The longest command `session_run` accepts. It goes through a file, so
/// the kernel's argument limit does not apply, but the shell reads and
/// parses all of it before running any of it.
pub const MAX_COMMAND_BYTES: usize = 1 << 20;

pub(super) fn validate_command(command: &str) -> Result<(), ToolError> {
    crate::command::request::validate_command_text(command)?;
    if command.len() > MAX_COMMAND_BYTES {
        return Err(ToolError::new(
            ErrorCode::CommandTooLong,
            format!(
                "the command is {} bytes; a session command may be at most {MAX_COMMAND_BYTES} bytes (1 MiB), since the shell parses all of it before running it",
                command.len()
            ),
            "write large data to a file in parts (several session_run calls of cat >> file <<'EOF' ... EOF) or produce it with a program, then run or read that file",
        ));
    }
    Ok(())
}

/// In canonical mode the kernel keeps at most 4095 bytes of a line (up to a
/// newline, carriage return or end-of-file character) and drops the rest
/// without telling anyone: refuse such input instead of sending a cut line.
pub(super) fn check_line_lengths(bytes: &[u8]) -> Result<(), ToolError> {
    let longest = bytes
        .split(|b| matches!(b, b'\n' | b'\r' | 0x04))
        .enumerate()
        .max_by_key(|(_, line)| line.len());
    match longest {
        Some((index, line)) if line.len() > pty::MAX_CANON_LINE => Err(ToolError::new(
            ErrorCode::InvalidArguments,
            format!(
                "line {} of the input is {} bytes; the terminal is in line (canonical) mode, where the kernel keeps at most {} bytes of a line and silently drops the rest, so nothing was sent",
                index + 1,
                line.len(),
                pty::MAX_CANON_LINE
            ),
            "put long data in a file and have the program read it (write the file with session_run, e.g. a here-doc: cat > file <<'EOF'), or pass it on the command's stdin (cmd < file); or send lines shorter than 4096 bytes",
        )),
        _ => Ok(()),
    }
}

pub(super) fn closed(id: &str) -> ToolError {
    ToolError::new(
        ErrorCode::SessionNotFound,
        format!("session {id:?} was closed"),
        "start a new one with session_start",
    )
}

pub(super) fn shell_exited(code: i32) -> ToolError {
    ToolError::new(
        ErrorCode::SessionExited,
        format!("the session's shell has exited (status {code})"),
        "close it with session_close and start a new one with session_start",
    )
}
