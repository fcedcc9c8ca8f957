//! How many processes one sandboxed command may run (`sandbox.max_processes`),
//! and what on this machine bounds it:
//!
//! - under the supervisor (bubblewrap), each command's PID namespace has a
//!   `pid_max` of its own (Linux 6.14 and later): the kernel gives no pid,
//!   so no process or thread, past it, whoever runs the command;
//! - under Landlock, a `pids` cgroup of the command's own under the
//!   helper's, where the helper may create one (cgroup v1, or a delegated v2
//!   tree with the controller enabled): `pids.max`, per command;
//! - else under Landlock, `RLIMIT_NPROC`, which the kernel counts per user,
//!   not per command: it is set to the machine's thread count when the
//!   command starts plus the limit, so a command (with every process the
//!   user runs) stops there. Root is exempt from it.
//!
//! Commands in a bwrap of their own and session shells are bounded by the
//! helper run first inside their sandbox (see [`own_bound`](super::own_bound)).

use std::path::{Path, PathBuf};

/// The default `sandbox.max_processes`.
pub const DEFAULT_MAX_PROCESSES: u32 = 4096;
/// The smallest: the kernel's smallest `pid_max` is 301, and a command's
/// init takes pid 1.
pub const MIN_MAX_PROCESSES: u32 = 299;
/// The largest (the kernel's largest `pid_max`, less the init).
pub const MAX_MAX_PROCESSES: u32 = 4_194_302;

/// What bounds the processes of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// `pid_max` of the command's own PID namespace.
    PidNamespace,
    /// `pids.max` of a cgroup of the command's own.
    Cgroup,
    /// `RLIMIT_NPROC`, counted per user.
    UserRlimit,
    /// `RLIMIT_NPROC`, counted per user in the sandbox's own user
    /// namespace: the sandbox's processes alone.
    NamespaceRlimit,
}

impl Bound {
    /// How `status` and results name it.
    pub fn name(self) -> &'static str {
        match self {
            Bound::PidNamespace => "pid_max of the command's PID namespace",
            Bound::Cgroup => "pids.max of the command's cgroup",
            Bound::UserRlimit => "RLIMIT_NPROC of the user (shared by the user's processes)",
            Bound::NamespaceRlimit => "RLIMIT_NPROC in the sandbox's own user namespace",
        }
    }
}

/// Whether this kernel gives each PID namespace a `pid_max` of its own
/// (Linux 6.14 and later).
pub fn pid_max_per_namespace() -> bool {
    kernel_version().is_some_and(|v| v >= (6, 14))
}

/// The running kernel's major and minor version, read once: it cannot
/// change while this process runs, and every sandboxed call asks.
pub(crate) fn kernel_version() -> Option<(u32, u32)> {
    static VERSION: std::sync::OnceLock<Option<(u32, u32)>> = std::sync::OnceLock::new();
    *VERSION.get_or_init(|| {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
        let mut parts = release.trim().split(['.', '-']);
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    })
}

/// What bounds a Landlock command here, or why nothing does.
pub fn landlock_bound() -> Result<Bound, &'static str> {
    if pids_cgroup().is_some() {
        return Ok(Bound::Cgroup);
    }
    if !is_root() {
        return Ok(Bound::UserRlimit);
    }
    Err("no pids cgroup may be created here, and root is exempt from RLIMIT_NPROC")
}

/// The directory of this process's cgroup in the `pids` hierarchy, when a
/// child cgroup with `pids.max` can be made in it: cgroup v1's `pids`
/// hierarchy, or a v2 one whose `cgroup.subtree_control` enables `pids`;
/// writable by us either way.
pub fn pids_cgroup() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (dir, v2) = own.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let v2 = controllers.is_empty();
        if !v2 && !controllers.split(',').any(|c| c == "pids") {
            return None;
        }
        let (root, point) = mounts.lines().find_map(|m| mount_of(m, v2))?;
        let rest = Path::new(path).strip_prefix(&root).ok()?;
        Some((point.join(rest), v2))
    })?;
    let usable = if v2 {
        std::fs::read_to_string(dir.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "pids"))
    } else {
        true
    };
    let writable = rustix::fs::access(&dir, rustix::fs::Access::WRITE_OK).is_ok();
    (usable && writable).then_some(dir)
}

/// `(root, mount point)` of a `mountinfo` line that mounts the `pids`
/// hierarchy (v1) or the unified one (`v2`).
fn mount_of(line: &str, v2: bool) -> Option<(PathBuf, PathBuf)> {
    let (before, after) = line.split_once(" - ")?;
    let mut fields = before.split_whitespace().skip(3);
    let (root, point) = (fields.next()?, fields.next()?);
    let mut after = after.split_whitespace();
    let fstype = after.next()?;
    let options = after.nth(1).unwrap_or_default();
    let matches = match v2 {
        true => fstype == "cgroup2",
        false => fstype == "cgroup" && options.split(',').any(|o| o == "pids"),
    };
    matches.then(|| (PathBuf::from(root), PathBuf::from(point)))
}

/// Removes the empty cgroups named `<prefix><pid>...` under `parent` whose
/// process is gone: a process that ends without running its destructors
/// (`std::process::exit`, a crash, a kill) leaves its cgroups behind.
pub(super) fn sweep_gone(parent: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // Signal 0 only checks that the process exists.
        let gone = rustix::process::Pid::from_raw(pid)
            .is_some_and(|pid| rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH));
        if gone {
            // Fails, and leaves it, while a process is still in it.
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// The name of a command's cgroup, before the helper's pid.
const COMMAND_PREFIX: &str = "bash-mcp-";

/// A `pids` cgroup of one command's own, made by the Landlock helper under
/// its own cgroup; removed once the command's processes are gone.
#[derive(Debug)]
pub struct CommandCgroup {
    dir: PathBuf,
}

impl CommandCgroup {
    /// A new cgroup that lets in at most `max` processes, or `None` where
    /// none can be made (see [`pids_cgroup`]).
    pub fn create(max: u32) -> Option<CommandCgroup> {
        let parent = pids_cgroup()?;
        // A helper killed before it removed its cgroup left it behind.
        sweep_gone(&parent, COMMAND_PREFIX);
        let dir = parent.join(format!("{COMMAND_PREFIX}{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let cgroup = CommandCgroup { dir };
        std::fs::write(cgroup.dir.join("pids.max"), max.to_string()).ok()?;
        Some(cgroup)
    }

    /// Moves the calling process into the cgroup (its children follow).
    pub fn join(&self) -> std::io::Result<()> {
        std::fs::write(self.dir.join("cgroup.procs"), "0")
    }

    /// Removes the cgroup (it must hold no process any more).
    pub fn remove(&self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Whether this process runs as root, whom the kernel exempts from
/// `RLIMIT_NPROC`.
pub fn is_root() -> bool {
    rustix::process::getuid().is_root()
}

/// Sets `RLIMIT_NPROC` of the calling process (counted over all of the
/// user's processes) to the machine's thread count now plus `max`: the
/// process and its children stop there.
pub fn limit_user_processes(max: u32) {
    let limit = threads_now().saturating_add(u64::from(max));
    let rlimit = rustix::process::Rlimit {
        current: Some(limit),
        maximum: Some(limit),
    };
    let _ = rustix::process::setrlimit(rustix::process::Resource::Nproc, rlimit);
}

/// The machine's thread count now (from `/proc/loadavg`), an upper bound
/// on the user's.
pub fn threads_now() -> u64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().nth(3)?.split_once('/')?.1.parse().ok())
        .unwrap_or(0)
}

/// Whether a command's output says a fork (or a thread's creation) failed
/// for want of processes: `EAGAIN` ("Resource temporarily unavailable") on
/// a line about forking, or a shell's "Cannot fork".
pub fn fork_failed(output: &str) -> bool {
    const THREADS: &[&str] = &[
        "unable to create new native thread",
        "failed to create new os thread",
        "thread creation failed: resource temporarily unavailable",
    ];
    output.lines().take(100_000).any(|line| {
        let line = line.to_ascii_lowercase();
        line.contains("cannot fork")
            || line.contains("can't fork")
            || (line.contains("fork") && line.contains("resource temporarily unavailable"))
            || THREADS.iter().any(|sign| line.contains(sign))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pids_v1_mount_and_the_unified_one_are_told_apart() {
        let v1 = "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids";
        let v2 = "30 23 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate";
        let cpu = "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu";
        assert_eq!(
            mount_of(v1, false),
            Some((PathBuf::from("/"), PathBuf::from("/sys/fs/cgroup/pids")))
        );
        assert_eq!(mount_of(v1, true), None);
        assert_eq!(mount_of(v2, true).unwrap().1, PathBuf::from("/sys/fs/cgroup"));
        assert_eq!(mount_of(cpu, false), None);
    }

    #[test]
    fn fork_failures_are_recognised_as_shells_print_them() {
        assert!(fork_failed("sh: 1: Cannot fork\n"));
        assert!(fork_failed("bash: fork: retry: Resource temporarily unavailable\n"));
        assert!(fork_failed("fork: [Errno 11] Resource temporarily unavailable\n"));
        assert!(!fork_failed(
            "BlockingIOError: [Errno 11] Resource temporarily unavailable\n"
        ));
        assert!(!fork_failed("cat: x: Resource temporarily unavailable\nok\n"));
    }
}
