//! What a command's process inherits from its init that the command can
//! try to change on the init itself, from inside its PID namespace, as the
//! same user: the resource limits (`prlimit`, which the kernel allows
//! whatever the capabilities), the OOM score adjustment and the core dump
//! filter (files of `/proc/1`, writable where they belong to the command's
//! user, as when the host runs as root), and the scheduling (nice value,
//! policy, utilization clamps, CPU affinity, I/O priority), which the
//! kernel refuses to a process with fewer capabilities than its target (as
//! the init keeps its own). Signals, `ptrace` and the rest of `/proc/1`
//! are closed to it: the init ignores every signal sent from inside its
//! namespace and is not dumpable.
//!
//! An init that serves one command after another reads them all before
//! its first command and after each one: a change would reach the next
//! command, and most cannot be undone without a capability in the host's
//! user namespace (a lowered hard limit, a raised OOM score), so an init
//! whose values changed is not reused.

use rustix::process::Resource;
use rustix::thread::CpuSet;

/// The kernel's resource limits, all `RLIMIT_NLIMITS` of them.
const LIMITS: [Resource; 16] = [
    Resource::Cpu,
    Resource::Fsize,
    Resource::Data,
    Resource::Stack,
    Resource::Core,
    Resource::Rss,
    Resource::Nproc,
    Resource::Nofile,
    Resource::Memlock,
    Resource::As,
    Resource::Locks,
    Resource::Sigpending,
    Resource::Msgqueue,
    Resource::Nice,
    Resource::Rtprio,
    Resource::Rttime,
];

/// The kernel's `struct sched_attr` (its first version, with the
/// utilization clamps).
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}

/// `IOPRIO_WHO_PROCESS`: `ioprio_get` of one process.
const IOPRIO_WHO_PROCESS: libc::c_int = 1;

/// One reading of the values, compared whole.
#[derive(PartialEq, Eq, Debug)]
pub(super) struct Inherited {
    /// Soft and hard, `None` for no limit.
    limits: Vec<(Option<u64>, Option<u64>)>,
    sched: SchedAttr,
    /// The affinity mask, room for 1024 CPUs.
    affinity: CpuSet,
    ioprio: i64,
    /// `/proc/self/oom_score_adj` and `/proc/self/coredump_filter`.
    proc_files: Vec<Vec<u8>>,
}

impl Inherited {
    /// The calling process's values, or `None` if one cannot be read (the
    /// init is then not reused).
    pub(super) fn read() -> Option<Inherited> {
        let limits = LIMITS
            .iter()
            .map(|&resource| {
                let limit = rustix::process::getrlimit(resource);
                (limit.current, limit.maximum)
            })
            .collect();
        let mut sched = SchedAttr::default();
        // SAFETY: sched_getattr of this process into a struct we own, of
        // the size given.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_sched_getattr,
                0,
                &mut sched as *mut SchedAttr,
                std::mem::size_of::<SchedAttr>() as libc::c_uint,
                0,
            )
        };
        if rc != 0 {
            return None;
        }
        let affinity = rustix::thread::sched_getaffinity(None).ok()?;
        // SAFETY: ioprio_get of this process, plain integers.
        let ioprio = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0) };
        if ioprio < 0 {
            return None;
        }
        let proc_files = ["/proc/self/oom_score_adj", "/proc/self/coredump_filter"]
            .iter()
            .map(|path| std::fs::read(path).ok())
            .collect::<Option<Vec<_>>>()?;
        Some(Inherited {
            limits,
            sched,
            affinity,
            ioprio: ioprio as i64,
            proc_files,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use rustix::process::Rlimit;

    fn core_limit() -> Rlimit {
        rustix::process::getrlimit(Resource::Core)
    }

    fn set_core_limit(limit: Rlimit) {
        rustix::process::setrlimit(Resource::Core, limit).expect("setting RLIMIT_CORE");
    }

    #[test]
    fn two_readings_are_equal_until_a_limit_changes() {
        let (first, second) = (Inherited::read(), Inherited::read());
        assert!(first.is_some());
        assert_eq!(first, second);
        // The soft core dump limit (harmless to the other tests of this
        // process), moved within the hard one and put back.
        let old = core_limit();
        // No limit (None) is the highest.
        let other = if old.current == Some(0) {
            Some(old.maximum.map_or(4096, |max| max.min(4096)))
        } else {
            Some(0)
        };
        if other == old.current {
            eprintln!("SKIP: the core dump limit is 0 and cannot be raised here");
            return;
        }
        set_core_limit(Rlimit {
            current: other,
            maximum: old.maximum,
        });
        let changed = Inherited::read();
        set_core_limit(old);
        assert!(changed.is_some());
        assert_ne!(first, changed);
        assert_eq!(first, Inherited::read());
    }
}
