//! Identifiers, the bottom layer: random ids, the process tag, run markers,
//! and the names derived from them. Everything that names what this process
//! owns (run markers, session directories, job and session ids) comes from
//! here, so the layers that start processes and the guard that cleans up
//! after them agree without importing each other.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{ErrorCode, ToolError};

/// The variable every process of one run inherits, so that processes which
/// leave the run's process group can still be found (see `exec`).
pub(crate) const RUN_MARKER_VAR: &str = "BASH_MCP_RUN_ID";

/// 128 bits from `getrandom(2)`, as 32 hex digits.
pub(crate) fn random_hex() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    let mut filled = 0;
    while filled < bytes.len() {
        match rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(err) => return Err(err.into()),
        }
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A random 128-bit id as 32 hex digits (from the kernel's generator), with
/// a time-and-pid fallback for the moment before the entropy pool is ready.
/// For names that must be unique, not secret (audit entries, scratch files).
pub(crate) fn random_id() -> String {
    random_hex().unwrap_or_else(|_| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        format!("{:032x}", nanos ^ (u128::from(std::process::id()) << 64))
    })
}

/// 128 random bits as hex, or an error when the kernel has none to give:
/// for ids a caller may not guess (sessions, jobs).
pub(crate) fn secret_id() -> Result<String, ToolError> {
    random_hex().map_err(|e| {
        ToolError::new(
            ErrorCode::Internal,
            format!("getrandom failed: {e}"),
            "retry; if it persists, report it with the message",
        )
    })
}

/// 12 random hex digits, fixed for the life of this process: they name what
/// belongs to it (run markers, session directories).
pub(crate) fn process_tag() -> &'static str {
    static TAG: LazyLock<String> = LazyLock::new(|| random_id()[..12].to_owned());
    &TAG
}

/// `BASH_MCP_RUN_ID=<process tag>-`: the start of every marker this
/// process hands out.
pub(crate) fn run_marker_prefix() -> &'static str {
    static PREFIX: LazyLock<String> = LazyLock::new(|| format!("{RUN_MARKER_VAR}={}-", process_tag()));
    &PREFIX
}

/// `BASH_MCP_RUN_ID=<process tag>-<counter>`, unique per run (and per
/// session: a session's shell carries one too).
pub(crate) fn next_run_marker() -> Vec<u8> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{}{}", run_marker_prefix(), NEXT.fetch_add(1, Ordering::Relaxed)).into_bytes()
}

/// Where private session directories go: /dev/shm (memory, so command text
/// never reaches a disk) when usable, else the temp dir.
pub(crate) fn private_base() -> PathBuf {
    let shm = Path::new("/dev/shm");
    let writable = || {
        use rustix::fs::Access;
        rustix::fs::access(shm, Access::WRITE_OK | Access::EXEC_OK).is_ok()
    };
    if std::fs::metadata(shm).is_ok_and(|m| m.is_dir()) && writable() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// The start of the path of every session directory of this process
/// (`<base>/bash-mcp-session-<process tag>-`), so that the guard can remove
/// them when the host dies.
pub(crate) fn session_dir_prefix() -> PathBuf {
    private_base().join(format!("bash-mcp-session-{}-", process_tag()))
}

/// The start of the path of every output store directory of this process
/// (`<temp dir>/bash-mcp-output-<process tag>-`), so that the guard can
/// remove them when the host dies. On disk, not in `/dev/shm`: kept outputs
/// may be large.
pub(crate) fn output_dir_prefix() -> PathBuf {
    std::env::temp_dir().join(format!("bash-mcp-output-{}-", process_tag()))
}

/// The start of the path of every temp dir this process makes for
/// sandboxed commands (`<temp dir>/bash-mcp-tmp-<process tag>-`), so that
/// the guard can remove them when the host dies.
pub(crate) fn sandbox_temp_prefix() -> PathBuf {
    std::env::temp_dir().join(format!("bash-mcp-tmp-{}-", process_tag()))
}

/// Where servers offer their sessions to `bash-mcp attach`, decided from
/// the user id alone, never from the environment (an MCP client starts its
/// server with few variables, a person's terminal has many): the user's
/// runtime directory `/run/user/<uid>/bash-mcp` when `/run/user/<uid>` is a
/// directory of this user that no one else may enter (what logind makes),
/// else `/tmp/bash-mcp-<uid>`. `/tmp` itself, not `$TMPDIR`.
pub(crate) fn attach_dir() -> PathBuf {
    let [runtime, shared] = attach_dirs();
    match runtime.parent() {
        Some(parent) if private_to_us(parent) => runtime,
        _ => shared,
    }
}

/// Both places [`attach_dir`] may choose: servers started before and after
/// the user's runtime directory appeared use different ones, so `attach`
/// looks in both, and sandboxes hide both.
pub(crate) fn attach_dirs() -> [PathBuf; 2] {
    let uid = current_uid();
    [
        PathBuf::from(format!("/run/user/{uid}/bash-mcp")),
        PathBuf::from(format!("/tmp/bash-mcp-{uid}")),
    ]
}

fn current_uid() -> libc::uid_t {
    rustix::process::geteuid().as_raw()
}

/// A directory (not a link) owned by this user, with no access for group or others.
fn private_to_us(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir() && m.uid() == current_uid() && m.mode() & 0o077 == 0)
}

/// This process's attach socket: `<attach dir>/<pid>-<process tag>.sock`
/// (the tag keeps a reused pid from naming an old server's socket).
pub(crate) fn attach_socket_path() -> PathBuf {
    attach_dir().join(format!("{}-{}.sock", std::process::id(), process_tag()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_ids_are_32_hex_digits_and_differ() {
        let (a, b) = (random_id(), random_id());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn run_markers_share_the_process_prefix_and_differ() {
        let (a, b) = (next_run_marker(), next_run_marker());
        let prefix = run_marker_prefix().as_bytes();
        assert!(a.starts_with(prefix) && b.starts_with(prefix));
        assert_ne!(a, b);
        assert!(run_marker_prefix().starts_with("BASH_MCP_RUN_ID="));
        assert_eq!(process_tag().len(), 12);
    }

    #[test]
    fn the_attach_directory_comes_from_the_uid_not_the_environment() {
        let uid = current_uid();
        let [runtime, shared] = attach_dirs();
        assert_eq!(runtime, PathBuf::from(format!("/run/user/{uid}/bash-mcp")));
        assert_eq!(shared, PathBuf::from(format!("/tmp/bash-mcp-{uid}")));
        let chosen = attach_dir();
        assert_eq!(chosen == runtime, private_to_us(runtime.parent().unwrap()));
        assert!(chosen == runtime || chosen == shared);
        assert!(attach_socket_path().starts_with(&chosen));
    }

    #[test]
    fn session_directories_are_named_by_the_process_tag() {
        let prefix = session_dir_prefix();
        let name = prefix.file_name().unwrap().to_str().unwrap();
        assert_eq!(name, format!("bash-mcp-session-{}-", process_tag()));
    }
}
