//! Reading what a notified call asked for from the process that made it:
//! strings and socket addresses from its memory, its working directory and
//! open directories from `/proc`. The target may die, or its pid be reused,
//! at any moment, so every read is confirmed afterwards with
//! `SECCOMP_IOCTL_NOTIF_ID_VALID` before it is believed.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

/// The longest path read (the kernel's own limit).
const PATH_MAX: usize = 4096;

/// One notified call: its process, and the listener to check it against.
pub struct Target<'a> {
    pub listener: &'a OwnedFd,
    pub id: u64,
    pub pid: u32,
}

impl Target<'_> {
    /// Whether the call is still waiting for its answer (so the process
    /// read is the one that made it).
    pub fn still_valid(&self) -> bool {
        super::listener::still_waiting(self.listener, self.id)
    }

    /// Reads `buf.len()` bytes at `addr` in the target; how many it got.
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        super::listener::read_memory(self.pid, addr, buf)
    }

    /// The NUL-terminated string at `addr`, read a page at a time so that
    /// an unmapped page after it does not fail the read.
    pub fn string(&self, addr: u64) -> Option<OsString> {
        if addr == 0 {
            return None;
        }
        let mut out = Vec::new();
        let mut at = addr;
        while out.len() < PATH_MAX {
            let to_page_end = 4096 - (at % 4096) as usize;
            let mut chunk = vec![0u8; to_page_end.min(PATH_MAX - out.len())];
            let got = self.read(at, &mut chunk);
            if got == 0 {
                return None;
            }
            if let Some(nul) = chunk[..got].iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..nul]);
                return Some(OsString::from_vec(out));
            }
            out.extend_from_slice(&chunk[..got]);
            at += got as u64;
        }
        None
    }

    /// Up to `len` bytes at `addr` (a socket address, a struct).
    pub fn bytes(&self, addr: u64, len: usize) -> Option<Vec<u8>> {
        if addr == 0 {
            return None;
        }
        let mut buf = vec![0u8; len];
        let got = self.read(addr, &mut buf);
        buf.truncate(got);
        (got > 0).then_some(buf)
    }

    /// The directory a relative path starts from: the working directory
    /// for `AT_FDCWD`, else the directory open as `dirfd` (as the target
    /// sees it, in its own mount namespace).
    pub fn base_dir(&self, dirfd: i32) -> Option<PathBuf> {
        let link = if dirfd == libc::AT_FDCWD {
            format!("/proc/{}/cwd", self.pid)
        } else {
            format!("/proc/{}/fd/{dirfd}", self.pid)
        };
        std::fs::read_link(link).ok()
    }

    /// Where a write at `path` (absolute, unresolved) lands, as the target
    /// sees its file system: see [`landing`], through the target's own root
    /// (`/proc/<pid>/root`, so in its mount namespace).
    pub fn landing(&self, path: &Path, follow_last: bool) -> PathBuf {
        landing(Path::new(&format!("/proc/{}/root", self.pid)), path, follow_last)
    }
}

/// Where a write at `path` (absolute, unresolved) lands in the file system
/// seen from `root`: every symlink on the way followed, the last
/// component's only when `follow_last`; `..` after a symlink counts from
/// where the link led, as the kernel does. What does not exist is taken as
/// written. A path that loops resolves as far as it got.
pub fn landing(root: &Path, path: &Path, follow_last: bool) -> PathBuf {
    let mut todo: Vec<OsString> = components(path);
    todo.reverse();
    let mut out = PathBuf::from("/");
    let mut links = 0;
    let mut exists = true;
    while let Some(name) = todo.pop() {
        if name == ".." {
            out.pop();
            continue;
        }
        let next = out.join(&name);
        let last = todo.is_empty();
        if exists && (!last || follow_last) && links < MAX_LINKS {
            let inside = root.join(next.strip_prefix("/").unwrap_or(&next));
            match std::fs::read_link(&inside) {
                Ok(target) => {
                    links += 1;
                    if target.is_absolute() {
                        out = PathBuf::from("/");
                    }
                    todo.extend(components(&target).into_iter().rev());
                    continue;
                }
                // Not a link: it exists (EINVAL) or it does not (then
                // nothing below it can be a link either).
                Err(e) => exists = e.raw_os_error() == Some(libc::EINVAL),
            }
        }
        out = next;
    }
    out
}

impl Target<'_> {
    /// Whether something in the target's network namespace has `port`
    /// bound on a local address: a TCP socket listening on it, or any UDP
    /// socket (from the target's `/proc/<pid>/net`, its own namespace's).
    pub fn bound_inside(&self, port: u16) -> bool {
        let hex = format!(":{port:04X}");
        ["tcp", "tcp6", "udp", "udp6"].iter().any(|table| {
            let Ok(text) = std::fs::read_to_string(format!("/proc/{}/net/{table}", self.pid)) else {
                return false;
            };
            text.lines().skip(1).any(|line| {
                let mut fields = line.split_whitespace().skip(1);
                let local = fields.next().unwrap_or_default();
                let state = fields.nth(1).unwrap_or_default();
                local.ends_with(&hex) && (table.starts_with("udp") || state == "0A")
            })
        })
    }
}

/// How many symlinks [`Target::landing`] follows (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// The names of `path`, `.` dropped, `..` kept.
fn components(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_owned()),
            Component::ParentDir => Some("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}
