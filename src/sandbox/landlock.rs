//! The Landlock + seccomp backend. A process can only restrict itself, and
//! `posix_spawn` runs no code between fork and exec, so the restriction is
//! applied by a small helper that is exec'd first: the `bash-mcp` binary
//! run as `bash-mcp __sandbox-exec <spec> -- <command...>` (its command
//! line and entry point are [`exec_helper`](super::exec_helper)). It
//! restricts itself as this file says, then execs the command, which
//! inherits every restriction.
//!
//! Crates: `landlock` (the Landlock maintainers' own crate: best-effort
//! down to ABI 1, with the TCP rules of ABI 4 and the scopes of ABI 6 when
//! the kernel has them) and `seccompiler` (Firecracker's pure-Rust BPF
//! compiler: no libseccomp C library to install).

use std::collections::BTreeMap;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};
use serde::{Deserialize, Serialize};

use super::wire;

/// Exit status of the helper when it could not restrict itself (nothing ran).
pub const HELPER_FAILED: i32 = 125;

/// What the helper applies, passed as JSON in its argv.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct HelperSpec {
    pub writable: Vec<PathBuf>,
    pub network: bool,
    /// Stay as the command's parent and subreaper, killing its orphans
    /// when it exits (commands that wait for their call; not sessions).
    #[serde(default)]
    pub subreaper: bool,
    /// Install the observing filter and send its listener on fd
    /// [`LISTENER_FD`] (or `listener_fd`) before exec (see
    /// [`notify`](super::notify)).
    #[serde(default)]
    pub observe: bool,
    /// The most processes the command may run, bounded as
    /// [`limits`](super::limits) says (`None`: no bound is set).
    #[serde(default)]
    pub max_processes: Option<u32>,
    /// The bound of a sandbox the server prepared (see
    /// [`own_bound`](super::own_bound)), applied in place of
    /// `max_processes`'s; the command does not run when it cannot be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<super::own_bound::InnerBound>,
    /// Directories granted everything beneath them, besides `writable`:
    /// the writable subdirectories of mediated directories (see
    /// [`guard`](super::guard)), whose own entries only the handler changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<PathBuf>,
    /// Regular files of mediated directories granted writing in place.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<PathBuf>,
    /// `false`: no Landlock ruleset and no seccomp filter of this backend's:
    /// inside a bubblewrap sandbox, the helper only installs the observing
    /// filter the handler of guarded directories needs.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub landlock: bool,
    /// The fd the listener goes out on, when not [`LISTENER_FD`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener_fd: Option<libc::c_int>,
    /// A network by name (with `network` false): the port of the command's
    /// proxy on the host's loopback, the only TCP port it may connect to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_port: Option<u16>,
}

/// The Landlock ABI a network by name needs: TCP rules (4) and the scope
/// that keeps a command off the host's abstract Unix sockets (6).
pub const BY_NAME_ABI: i32 = 6;

fn yes() -> bool {
    true
}

impl Default for HelperSpec {
    /// Nothing writable, no network, Landlock applied, nothing else.
    fn default() -> HelperSpec {
        HelperSpec {
            writable: Vec::new(),
            network: false,
            subreaper: false,
            observe: false,
            max_processes: None,
            bound: None,
            grants: Vec::new(),
            files: Vec::new(),
            landlock: true,
            listener_fd: None,
            proxy_port: None,
        }
    }
}

fn is_true(b: &bool) -> bool {
    *b
}

/// The helper's fd for the socket it sends its listener on (its control
/// socket with the host, when it keeps the command, is fd 3: see
/// [`reaper`](super::reaper)).
pub const LISTENER_FD: libc::c_int = 4;

/// The kernel's Landlock ABI version, or `None` when Landlock is off.
pub fn landlock_abi() -> Option<i32> {
    landlock_version().ok()
}

/// The Landlock ABI version, or the error the kernel gave: `ENOSYS` when
/// the kernel has no Landlock or a seccomp filter refuses the call,
/// `EOPNOTSUPP` when it is built in but not enabled at boot.
pub fn landlock_version() -> Result<i32, std::io::Error> {
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attr and size 0
    // only returns the ABI version; no fd is created.
    let v = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    if v > 0 {
        Ok(v as i32)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// No new privileges, no capabilities, Landlock, then seccomp (last: the
/// filter refuses calls the steps before it make). `keeper`: the helper
/// that keeps the command, which the command's filter keeps it from
/// signalling where Landlock cannot (see [`keeper_rules`]).
pub(super) fn restrict(spec: &HelperSpec, keeper: Option<libc::pid_t>) -> Result<(), String> {
    rustix::thread::set_no_new_privs(true).map_err(|e| format!("PR_SET_NO_NEW_PRIVS: {}", std::io::Error::from(e)))?;
    drop_capabilities()?;
    if !spec.landlock {
        // Inside bubblewrap: its mounts, namespaces and filter confine.
        return match spec.observe {
            true => observe(spec).map(drop),
            false => Ok(()),
        };
    }
    if spec.proxy_port.is_some() && landlock_abi().unwrap_or(0) < BY_NAME_ABI {
        return Err(format!(
            "a network by name needs Landlock ABI {BY_NAME_ABI} (Linux 6.12) or later, and this kernel has {}",
            landlock_abi().map_or("none".into(), |v| v.to_string())
        ));
    }
    landlock(spec)?;
    let observed = spec.observe && observe(spec)?;
    if spec.proxy_port.is_some() && !observed {
        // Its TCP sockets are made by the handler, bound to the loopback.
        return Err("a network by name needs the seccomp listener, which could not be installed".into());
    }
    seccomp(spec, observed, keeper)
}

/// Installs the observing filter and hands its listener to the library
/// (a message without one when it cannot be installed: the library then
/// falls back to the error text). Whether the filter is on.
fn observe(spec: &HelperSpec) -> Result<bool, String> {
    use super::notify::filter;
    // connect() too: Landlock does not govern connecting to a pathname
    // socket, and the handler refuses (and names) an attach socket's.
    let mut rules = [filter::WRITES, filter::CONNECT].concat();
    if !spec.network && spec.landlock {
        // No socket of a network family can exist, so there is no address
        // to learn at connect: the refused socket() is the denial.
        rules.extend_from_slice(filter::SOCKETS);
    } else if !spec.network {
        // In bubblewrap's network namespace: a connect names its address.
        rules.extend_from_slice(filter::CONNECTS);
    }
    if spec.proxy_port.is_some() && spec.landlock {
        // The host's network, open by name: the handler binds the
        // command's own servers on the loopback (see `notify::loopback`).
        rules.extend_from_slice(filter::BIND);
    }
    let listener_fd = spec.listener_fd.unwrap_or(LISTENER_FD);
    // The library's socket, which the command must not inherit: closed
    // when this returns.
    let library = super::process_calls::take_inherited(listener_fd);
    let send = |data: &[u8], fds: &[BorrowedFd<'_>]| match &library {
        Some(library) => wire::send_with_fds(library.as_fd(), data, fds),
        None => Err(std::io::Error::from_raw_os_error(libc::EBADF)),
    };
    match filter::install(&filter::program(&rules)) {
        // A filter whose listener never reached the library would fail its
        // calls with ENOSYS: then nothing runs.
        Ok(listener) => send(&[wire::LISTENER], &[listener.as_fd()])
            .map(|()| true)
            .map_err(|e| format!("could not hand the seccomp listener to the library: {e}")),
        Err(_) => {
            let _ = send(&[wire::NO_LISTENER], &[]);
            Ok(false)
        }
    }
}

/// Leaves the helper with no capability (see [`caps::drop_all`](super::caps::drop_all)).
fn drop_capabilities() -> Result<(), String> {
    match super::caps::drop_all() {
        Ok(()) => Ok(()),
        Err(errno) => Err(format!("capset: {}", std::io::Error::from_raw_os_error(errno))),
    }
}

/// Devices a command may open for writing wherever it runs.
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

fn landlock(spec: &HelperSpec) -> Result<(), String> {
    let abi = ABI::V6;
    let err = |e: landlock::RulesetError| e.to_string();
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .map_err(err)?;
    if !spec.network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(err)?;
    }
    let mut created = ruleset.create().map_err(err)?;
    // A network by name: connect to the proxy's port, bind nothing (the
    // command shares the host's network namespace: a port it bound would
    // be open to the host's other users, and beyond).
    if let Some(port) = spec.proxy_port {
        created = created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(err)?;
    }
    let read = AccessFs::from_read(abi);
    created = created
        .add_rule(PathBeneath::new(PathFd::new("/").map_err(|e| e.to_string())?, read))
        .map_err(err)?;
    for dev in WRITABLE_DEVICES {
        if let Ok(fd) = PathFd::new(dev) {
            created = created
                .add_rule(PathBeneath::new(fd, AccessFs::from_file(abi)))
                .map_err(err)?;
        }
    }
    for root in &spec.writable {
        let fd = PathFd::new(root).map_err(|e| format!("{}: {e}", root.display()))?;
        created = created
            .add_rule(PathBeneath::new(fd, AccessFs::from_all(abi)))
            .map_err(err)?;
    }
    // Opened without following a link, and only what is still the kind the
    // plan saw: a grant never lands where a link put in its place points.
    for dir in &spec.grants {
        if let Some(fd) = open_as(dir, libc::S_IFDIR) {
            created = created
                .add_rule(PathBeneath::new(fd, AccessFs::from_all(abi)))
                .map_err(err)?;
        }
    }
    for file in &spec.files {
        if let Some(fd) = open_as(file, libc::S_IFREG) {
            created = created
                .add_rule(PathBeneath::new(fd, AccessFs::from_file(abi)))
                .map_err(err)?;
        }
    }
    created.restrict_self().map_err(err)?;
    Ok(())
}

/// `fcntl` and `ioctl` requests that set who gets a file's `SIGIO` (from
/// the kernel's uapi headers; the `libc` crate lacks them).
const F_SETOWN_EX: i64 = 15;
const FIOSETOWN: i64 = 0x8901;
const SIOCSPGRP: i64 = 0x8902;

/// The rules that keep a command from signalling the helper that keeps it
/// (`keeper`), which would leave its orphans to outlive the call: every
/// call that names the helper's pid (or its process group, which is the
/// command's too), and pidfds of it. Without Landlock's signal scope
/// (`scoped`: ABI 6 and later, where the kernel itself keeps every signal
/// inside the sandbox), also the calls that could reach it without naming
/// it: `kill(0)` (the command's group), `kill(-1)` (every process of the
/// user), and setting a file's owner for `SIGIO` in ways the filter cannot
/// read (`F_SETOWN_EX`, `FIOSETOWN`, `SIOCSPGRP`).
fn keeper_rules(keeper: libc::pid_t, scoped: bool) -> Result<super::seccomp::Rules, String> {
    let err = |e: seccompiler::BackendError| e.to_string();
    let is = |arg: u8, value: i64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value as u32 as u64).map_err(err)
    };
    let rule = |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).map_err(err);
    let (pid, group) = (i64::from(keeper), -i64::from(keeper));
    let mut kill = vec![rule(vec![is(0, pid)?])?, rule(vec![is(0, group)?])?];
    let mut fcntl = vec![
        rule(vec![is(1, libc::F_SETOWN.into())?, is(2, pid)?])?,
        rule(vec![is(1, libc::F_SETOWN.into())?, is(2, group)?])?,
    ];
    let mut rules = super::seccomp::Rules::new();
    if !scoped {
        kill.push(rule(vec![is(0, 0)?])?);
        kill.push(rule(vec![is(0, -1)?])?);
        fcntl.push(rule(vec![is(1, F_SETOWN_EX)?])?);
        rules.insert(
            libc::SYS_ioctl,
            [FIOSETOWN, SIOCSPGRP]
                .iter()
                .map(|&o| rule(vec![is(1, o)?]))
                .collect::<Result<_, _>>()?,
        );
    }
    rules.insert(libc::SYS_kill, kill);
    rules.insert(libc::SYS_fcntl, fcntl);
    rules.insert(libc::SYS_tkill, vec![rule(vec![is(0, pid)?])?]);
    rules.insert(
        libc::SYS_tgkill,
        vec![rule(vec![is(0, pid)?])?, rule(vec![is(1, pid)?])?],
    );
    rules.insert(libc::SYS_rt_sigqueueinfo, vec![rule(vec![is(0, pid)?])?]);
    rules.insert(
        libc::SYS_rt_tgsigqueueinfo,
        vec![rule(vec![is(0, pid)?])?, rule(vec![is(1, pid)?])?],
    );
    rules.insert(libc::SYS_pidfd_open, vec![rule(vec![is(0, pid)?])?]);
    Ok(rules)
}

/// `SO_BINDTOIFINDEX` (asm-generic/socket.h; not in `libc` everywhere).
const SO_BINDTOIFINDEX: i64 = 62;

/// The rules of a network by name: the handler binds each TCP socket to
/// the loopback device, which the command may not change
/// (`SO_BINDTODEVICE`, `SO_BINDTOIFINDEX`), and no TCP Fast Open
/// (`MSG_FASTOPEN` connects from `sendto`/`sendmsg`).
fn by_name_rules() -> Result<super::seccomp::Rules, String> {
    let err = |e: seccompiler::BackendError| e.to_string();
    let is = |arg: u8, value: i64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value as u32 as u64).map_err(err)
    };
    let fast_open = |arg: u8| {
        let bit = libc::MSG_FASTOPEN as u64;
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(bit), bit).map_err(err)
    };
    let rule = |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).map_err(err);
    let mut rules = super::seccomp::Rules::new();
    rules.insert(
        libc::SYS_setsockopt,
        vec![
            rule(vec![
                is(1, libc::SOL_SOCKET.into())?,
                is(2, libc::SO_BINDTODEVICE.into())?,
            ])?,
            rule(vec![is(1, libc::SOL_SOCKET.into())?, is(2, SO_BINDTOIFINDEX)?])?,
            // A port shared with a host service (same user, both with
            // SO_REUSEPORT) would let a connection to the command's own
            // server reach the host's.
            rule(vec![is(1, libc::SOL_SOCKET.into())?, is(2, libc::SO_REUSEPORT.into())?])?,
        ],
    );
    rules.insert(libc::SYS_sendto, vec![rule(vec![fast_open(3)?])?]);
    rules.insert(libc::SYS_sendmsg, vec![rule(vec![fast_open(2)?])?]);
    rules.insert(libc::SYS_sendmmsg, vec![rule(vec![fast_open(3)?])?]);
    Ok(rules)
}

/// `path` opened `O_PATH` without following a link, if it is of type
/// `kind` (`S_IFDIR`, or `S_IFREG` with one link).
fn open_as(path: &std::path::Path, kind: libc::mode_t) -> Option<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(path, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    let ok = st.st_mode & libc::S_IFMT == kind && (kind != libc::S_IFREG || st.st_nlink == 1);
    ok.then_some(fd)
}

const CLONE_NAMESPACES: &[u64] = &[
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
];

/// Calls this backend refuses besides the shared ones: changing mounts or
/// namespaces, tracing or writing other processes, loading kernel code, and
/// SysV IPC and POSIX message queues: without an IPC namespace of its own,
/// a command would share them with the host's processes (attach another
/// program's shared memory by its id) and leave them behind after its call.
const DENIED_SYSCALLS: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_bpf,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_userfaultfd,
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semtimedop,
    libc::SYS_semctl,
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_mq_open,
    libc::SYS_mq_unlink,
];

/// The enforcing filter: the rules both backends share (see
/// [`seccomp`](super::seccomp)) and this backend's own. With `observed`,
/// `socket()` is left to the observing filter, whose handler refuses it (an
/// errno here would win over the notification and hide it).
fn seccomp(spec: &HelperSpec, observed: bool, keeper: Option<libc::pid_t>) -> Result<(), String> {
    let err = |e: seccompiler::BackendError| e.to_string();
    let mut rules = super::seccomp::common_rules()?;
    if let Some(keeper) = keeper {
        for (nr, more) in keeper_rules(keeper, landlock_abi().unwrap_or(0) >= 6)? {
            rules.entry(nr).or_default().extend(more);
        }
    }
    rules.extend(DENIED_SYSCALLS.iter().map(|&n| (n, Vec::new())));
    let clone_rules = CLONE_NAMESPACES
        .iter()
        .map(|&flag| {
            SeccompRule::new(vec![
                SeccompCondition::new(0, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(flag), flag).map_err(err)?,
            ])
            .map_err(err)
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, clone_rules);
    if !spec.network && !observed {
        let not_unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc::AF_UNIX as u64);
        rules.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(vec![not_unix.map_err(err)?]).map_err(err)?],
        );
    }
    if spec.proxy_port.is_some() {
        for (nr, more) in by_name_rules()? {
            rules.entry(nr).or_default().extend(more);
        }
    }
    let program = super::seccomp::compile(rules)?;
    seccompiler::apply_filter(&program).map_err(|e| e.to_string())?;
    // clone3 passes its flags in memory a filter cannot read: ENOSYS makes
    // libc fall back to clone, whose flags the filter above checks.
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        std::env::consts::ARCH
            .try_into()
            .map_err(|e: seccompiler::BackendError| e.to_string())?,
    )
    .map_err(err)?;
    let program: BpfProgram = clone3.try_into().map_err(err)?;
    seccompiler::apply_filter(&program).map_err(|e| e.to_string())
}
