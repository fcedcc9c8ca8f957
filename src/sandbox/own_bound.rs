//! The process bound of a bwrap of its own: a command without the
//! supervisor (or when it cannot start) and a session shell. The helper run
//! first inside the sandbox applies it before it execs the command, counted
//! over the sandbox's processes alone:
//!
//! - a `pids` cgroup the server makes for the sandbox, where it may make
//!   one (see [`limits::pids_cgroup`]): the helper moves itself in through
//!   the cgroup's directory, passed as an fd (the sandbox sees the cgroup
//!   tree read-only), and the server removes the cgroup when the sandbox
//!   is gone;
//! - else `RLIMIT_NPROC`: bubblewrap gives the sandbox a user namespace of
//!   its own, and from Linux 5.14 the kernel counts the limit per user per
//!   user namespace, so only the sandbox's processes count (its init and
//!   the command's), not the user's others. Root is exempt from it.
//!
//! The sandbox's `/proc/sys` is writable to the command under bubblewrap,
//! so the PID namespace's own `pid_max` would be no bound here: the command
//! could raise it again.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::limits::{self, Bound};

/// What the helper applies inside the sandbox, in its spec.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct InnerBound {
    /// The most processes the command may run.
    pub max: u32,
    /// The fd of the sandbox's cgroup directory; `None`: `RLIMIT_NPROC`.
    pub cgroup_fd: Option<RawFd>,
}

/// What bounds a bwrap of its own here, or why nothing does.
/// `helper_found`: whether the helper that applies it can run inside.
pub fn bound(helper_found: bool) -> Result<Bound, &'static str> {
    if !helper_found {
        return Err(
            "the bash-mcp helper, which applies the bound inside the sandbox, was not found (install it, or set `sandbox.helper_path`)",
        );
    }
    if limits::pids_cgroup().is_some() {
        return Ok(Bound::Cgroup);
    }
    if limits::is_root() {
        return Err("no pids cgroup may be created here, and root is exempt from RLIMIT_NPROC");
    }
    if limits::kernel_version().is_none_or(|v| v < (5, 14)) {
        return Err(
            "no pids cgroup may be created here, and before Linux 5.14 RLIMIT_NPROC counts all of the user's processes, not the sandbox's",
        );
    }
    Ok(Bound::NamespaceRlimit)
}

/// The bound prepared on the host for one bwrap of its own.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub bound: Bound,
    /// The sandbox's cgroup ([`Bound::Cgroup`]), kept as long as it runs.
    pub cgroup: Option<std::sync::Arc<SandboxCgroup>>,
}

/// Prepares the bound of a sandbox whose command may run `max` processes:
/// `Ok(None)` where nothing can bound it here (status says why), an error
/// when the cgroup it needs cannot be made (the command must not run).
pub fn prepare(max: u32, helper_found: bool) -> std::io::Result<Option<Prepared>> {
    let Ok(bound) = bound(helper_found) else {
        return Ok(None);
    };
    let cgroup = match bound {
        Bound::Cgroup => Some(std::sync::Arc::new(SandboxCgroup::create(max)?)),
        _ => None,
    };
    Ok(Some(Prepared { bound, cgroup }))
}

/// A `pids` cgroup of one sandbox's own, made by the server under its own
/// cgroup and removed when dropped (once the sandbox has ended).
#[derive(Debug)]
pub struct SandboxCgroup {
    dir: PathBuf,
    fd: OwnedFd,
}

impl SandboxCgroup {
    /// A new cgroup that lets in at most `max` processes.
    pub fn create(max: u32) -> std::io::Result<SandboxCgroup> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let parent = limits::pids_cgroup()
            .ok_or_else(|| std::io::Error::other("no pids cgroup may be created here any more"))?;
        limits::sweep_gone(&parent, PREFIX);
        let dir = parent.join(format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir)?;
        let made = open_dir(&dir).and_then(|fd| {
            std::fs::write(dir.join("pids.max"), max.to_string())?;
            Ok(fd)
        });
        match made {
            Ok(fd) => Ok(SandboxCgroup { dir, fd }),
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                Err(e)
            }
        }
    }

    /// The fd of the cgroup's directory, which the helper joins it through.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// The name of a sandbox's cgroup, before `<server pid>-<n>`.
const PREFIX: &str = "bash-mcp-sandbox-";

fn open_dir(dir: &std::path::Path) -> std::io::Result<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    Ok(rustix::fs::open(
        dir,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

impl Drop for SandboxCgroup {
    /// Removes the cgroup. The sandbox has ended by now, but its last
    /// processes may still be on their way out: whatever is left in it is
    /// killed (nothing but the sandbox's processes can be in it), a few
    /// times, until it is empty.
    fn drop(&mut self) {
        for _ in 0..200 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
                Err(_) => {}
            }
            let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
            // Each pid is a member of this sandbox's cgroup.
            let members = procs
                .lines()
                .filter_map(|l| rustix::process::Pid::from_raw(l.trim().parse().ok()?));
            for pid in members {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        tracing::warn!("could not remove the sandbox's cgroup {}", self.dir.display());
    }
}

/// Applies `bound` in the helper, before it execs the command: joins the
/// sandbox's cgroup, or sets `RLIMIT_NPROC` to `max` plus the sandbox's
/// init, which the kernel counts in the sandbox's user namespace too.
pub fn apply(bound: &InnerBound) -> Result<(), String> {
    match bound.cgroup_fd {
        Some(dir) => join(dir).map_err(|e| format!("joining the sandbox's pids cgroup: {e}")),
        None => {
            let limit = Some(u64::from(bound.max) + 1);
            let rlimit = rustix::process::Rlimit {
                current: limit,
                maximum: limit,
            };
            rustix::process::setrlimit(rustix::process::Resource::Nproc, rlimit)
                .map_err(|e| format!("RLIMIT_NPROC: {}", std::io::Error::from(e)))
        }
    }
}

/// Moves this process into the cgroup whose directory is `dir` (an fd),
/// then closes that fd: the command must not hold it.
fn join(dir: RawFd) -> std::io::Result<()> {
    // Passed to this process for it alone; owning it closes it when done.
    let dir = super::process_calls::take_inherited(dir)
        .ok_or_else(|| std::io::Error::other(format!("the cgroup's directory fd {dir} is not open")))?;
    use rustix::fs::{Mode, OFlags};
    let procs = rustix::fs::openat(&dir, c"cgroup.procs", OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    match rustix::io::write(&procs, b"0")? {
        1 => Ok(()),
        _ => Err(std::io::ErrorKind::WriteZero.into()),
    }
}
