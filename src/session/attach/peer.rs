//! Who is at the other end of an attach connection. Sessions are for
//! people: a command that runs in a sandbox (of this server or any other)
//! must never type into one, nor offer a fake session for a person to type
//! a password into. The kernel vouches for the peer, not the peer itself:
//!
//! - its user (`SO_PEERCRED`): only this user;
//! - its user namespace: bubblewrap runs every sandboxed command in a user
//!   namespace of its own, so a peer in another one than ours is refused;
//! - its seccomp filters (`Seccomp_filters` in `/proc/<pid>/status`): every
//!   sandboxed command, on either backend, runs under at least one filter
//!   more than the server that started it (the enforcing filter), and a
//!   process can never shed one; a peer under more filters than we are is
//!   refused.
//!
//! The process is pinned by a pidfd (`SO_PEERPIDFD`, Linux 6.5; before, one
//! opened from the pid), and its `/proc` entry is opened, then the pidfd
//! checked to be still running, so a reused pid cannot answer for it.
//! Whatever cannot be read is refused: a peer that cannot be told apart
//! from a sandboxed one is treated as one.

use std::fmt;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use rustix::fs::{Mode, OFlags};

/// `SO_PEERPIDFD` (asm-generic/socket.h, Linux 6.5).
const SO_PEERPIDFD: libc::c_int = 77;

/// Why a peer may not use an attach socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Another user.
    OtherUser { uid: u32, me: u32 },
    /// A process in another user namespace than ours (bubblewrap's
    /// sandboxes are).
    OtherUserNamespace { pid: i32 },
    /// A process under more seccomp filters than ours (every bash-mcp
    /// sandbox adds one).
    MoreSeccompFilters { pid: i32, theirs: u32, ours: u32 },
    /// Its credentials or `/proc` entry could not be read (it may have
    /// exited, or live in a PID namespace we cannot see).
    Unverifiable { pid: i32, why: String },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::OtherUser { uid, me } => write!(
                f,
                "uid {uid} may not attach to sessions of uid {me}; only the same user can"
            ),
            Refusal::OtherUserNamespace { pid } => write!(
                f,
                "process {pid} runs in another user namespace (inside a sandbox); sandboxed commands may not reach sessions, which are for people: run `bash-mcp attach` in your own terminal"
            ),
            Refusal::MoreSeccompFilters { pid, theirs, ours } => write!(
                f,
                "process {pid} runs under {theirs} seccomp filters, more than the {ours} of this one (inside a sandbox); sandboxed commands may not reach sessions, which are for people: run `bash-mcp attach` in your own terminal"
            ),
            Refusal::Unverifiable { pid, why } => write!(
                f,
                "could not tell whether process {pid} runs inside a sandbox ({why}), so it may not reach sessions; run `bash-mcp attach` in your own terminal"
            ),
        }
    }
}

/// Checks the process at the other end of `socket` (the client, for a
/// server; the server that listens, for a client).
pub fn check(socket: &impl AsRawFd) -> Result<(), Refusal> {
    let fd = socket.as_raw_fd();
    let cred = peer_cred(fd).map_err(|e| Refusal::Unverifiable {
        pid: 0,
        why: format!("SO_PEERCRED: {e}"),
    })?;
    let me = rustix::process::geteuid().as_raw();
    if cred.uid != me {
        return Err(Refusal::OtherUser { uid: cred.uid, me });
    }
    let pid = cred.pid;
    let unverifiable = |why: String| Refusal::Unverifiable { pid, why };
    if pid <= 0 {
        return Err(unverifiable("its pid is not visible from this PID namespace".into()));
    }
    let pidfd = peer_pidfd(fd)
        .or_else(|| crate::process::spawn::pidfd_open(pid))
        .ok_or_else(|| unverifiable("no pidfd for it".into()))?;
    let proc_dir = open_proc(pid).map_err(|e| unverifiable(format!("/proc/{pid}: {e}")))?;
    // The pidfd names the process that connected (or listened); while it
    // runs, its pid is not reused, so the /proc entry opened is its own.
    if exited(&pidfd) {
        return Err(unverifiable("it has exited".into()));
    }
    let theirs = read_link_at(&proc_dir, "ns/user").map_err(|e| unverifiable(format!("ns/user: {e}")))?;
    let ours = std::fs::read_link("/proc/self/ns/user").map_err(|e| unverifiable(format!("our ns/user: {e}")))?;
    if theirs != ours {
        return Err(Refusal::OtherUserNamespace { pid });
    }
    let theirs = seccomp_filters(&read_at(&proc_dir, "status").map_err(|e| unverifiable(format!("status: {e}")))?)
        .ok_or_else(|| unverifiable("its status names no seccomp mode".into()))?;
    let ours = seccomp_filters(&std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default())
        .ok_or_else(|| unverifiable("our status names no seccomp mode".into()))?;
    if theirs > ours {
        return Err(Refusal::MoreSeccompFilters { pid, theirs, ours });
    }
    Ok(())
}

fn peer_cred(fd: RawFd) -> io::Result<libc::ucred> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, a local of that size.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred)
}

/// The peer's pidfd from the kernel (`None` before Linux 6.5).
fn peer_pidfd(fd: RawFd) -> Option<OwnedFd> {
    let mut pidfd: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `pidfd`, a local
    // int (rustix has no `SO_PEERPIDFD`); on success the kernel made a fresh
    // fd for us alone.
    unsafe {
        let rc = libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            SO_PEERPIDFD,
            (&mut pidfd as *mut libc::c_int).cast(),
            &mut len,
        );
        (rc == 0 && pidfd >= 0).then(|| OwnedFd::from_raw_fd(pidfd))
    }
}

fn open_proc(pid: i32) -> io::Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    Ok(rustix::fs::open(format!("/proc/{pid}"), flags, Mode::empty())?)
}

/// Whether the pidfd's process has exited (its pidfd polls readable).
fn exited(pidfd: &OwnedFd) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    // A zero timeout only looks.
    let now = Timespec { tv_sec: 0, tv_nsec: 0 };
    rustix::event::poll(&mut [PollFd::new(pidfd, PollFlags::IN)], Some(&now)) != Ok(0)
}

fn read_link_at(dir: &OwnedFd, name: &str) -> io::Result<std::path::PathBuf> {
    let target = rustix::fs::readlinkat(dir, name, Vec::new())?;
    Ok(std::path::PathBuf::from(
        String::from_utf8_lossy(target.as_bytes()).into_owned(),
    ))
}

fn read_at(dir: &OwnedFd, name: &str) -> io::Result<String> {
    let fd = rustix::fs::openat(dir, name, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    let mut file = std::fs::File::from(fd);
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(text)
}

/// The number of seccomp filters a `/proc/<pid>/status` reports
/// (`Seccomp_filters`, Linux 5.9; before, 1 for filter mode and 0 without).
fn seccomp_filters(status: &str) -> Option<u32> {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    field("Seccomp_filters:").or_else(|| field("Seccomp:").map(|mode| u32::from(mode == 2)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_read_from_status_old_and_new() {
        assert_eq!(seccomp_filters("Name:\tx\nSeccomp:\t2\nSeccomp_filters:\t3\n"), Some(3));
        assert_eq!(seccomp_filters("Seccomp:\t2\n"), Some(1));
        assert_eq!(seccomp_filters("Seccomp:\t0\n"), Some(0));
        assert_eq!(seccomp_filters("Name:\tx\n"), None);
    }

    #[test]
    fn a_peer_in_this_process_passes() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(check(&a), Ok(()));
        assert_eq!(check(&b), Ok(()));
    }

    #[test]
    fn refusals_say_what_to_do() {
        let text = Refusal::OtherUserNamespace { pid: 7 }.to_string();
        assert!(text.contains("process 7") && text.contains("bash-mcp attach"), "{text}");
    }
}
