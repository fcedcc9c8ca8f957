//! Spawning a command safely from inside a multithreaded host.
//!
//! Uses `posix_spawn` (glibc implements it with `clone(CLONE_VFORK)`: no
//! allocation or locking runs in the child before `exec`). Every argument is
//! prepared before the call. The child:
//! - leads a new process group (so one `killpg` reaches everything it starts),
//!   in a new session without a controlling terminal when it is sandboxed;
//! - has default signal dispositions and an empty signal mask, whatever the
//!   host ignores or blocks;
//! - holds only fds 0, 1 and 2 (`closefrom(3)`), even when the host leaks fds
//!   without `O_CLOEXEC`;
//! - starts in the requested working directory, set by the spawn itself.

use std::ffi::{CStr, CString};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};

use rustix::fs::OFlags;
use rustix::process::{Pid, Signal};

/// How the command's stdout and stderr reach us.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Streams {
    /// Both go into one pipe, interleaved as written (the default).
    #[default]
    Merged,
    /// Two pipes, captured separately.
    Separate,
}

/// A started process group, with our ends of its pipes.
#[derive(Debug)]
pub(crate) struct Child {
    pub group: Group,
    /// Readable once the shell exits. `None` from [`spawn`]: the run opens
    /// one only for a command that outlives its first look (most commands
    /// end before it, and opening one costs a file of its own).
    pub pidfd: Option<OwnedFd>,
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: Option<OwnedFd>,
}

/// How the host reaches a started command's process group.
#[derive(Debug)]
pub(crate) enum Group {
    /// Our own child, leader of its group.
    Local(libc::pid_t),
    /// A group started elsewhere (inside a sandbox's PID namespace, where
    /// our pids mean nothing) and reached through a channel.
    Remote(Box<dyn RemoteGroup>),
}

/// A process group another process started for us.
pub(crate) trait RemoteGroup: Send + std::fmt::Debug {
    /// Sends `signal` to the whole group (SIGKILL: to everything the
    /// command started, inside or outside its group).
    fn signal(&self, signal: libc::c_int);
    /// Whether the group's leader has exited.
    fn has_exited(&self) -> bool;
    /// Blocks until the leader has exited; its wait status in the shell's
    /// convention, or `None` when it was lost.
    fn wait_status(&self) -> Option<i32>;
}

impl Group {
    pub(crate) fn kill(&self, signal: libc::c_int) {
        match self {
            Group::Local(pid) => kill_group(*pid, signal),
            Group::Remote(remote) => remote.signal(signal),
        }
    }
    pub(crate) fn has_exited(&self) -> bool {
        match self {
            Group::Local(pid) => has_exited(*pid),
            Group::Remote(remote) => remote.has_exited(),
        }
    }
    pub(crate) fn reap_status(&self) -> Option<i32> {
        match self {
            Group::Local(pid) => reap_status(*pid),
            Group::Remote(remote) => remote.wait_status(),
        }
    }
    /// Our pid for the group's leader (0 for a remote group), for logs.
    pub(crate) fn pid(&self) -> libc::pid_t {
        match self {
            Group::Local(pid) => *pid,
            Group::Remote(_) => 0,
        }
    }
}

/// Starts commands somewhere other than this process (a sandbox's
/// supervisor).
pub(crate) trait Launch: Sync {
    fn launch(&self, spec: &SpawnSpec<'_>) -> io::Result<Child>;
}

/// What to start.
pub(crate) struct SpawnSpec<'a> {
    pub program: &'a CStr,
    pub argv: &'a [CString],
    /// Borrowed entries, so an environment built once can serve many spawns.
    pub envp: &'a [&'a CStr],
    pub cwd: &'a CStr,
    pub stdin_pipe: bool,
    pub streams: Streams,
    /// Where to start it: `None` here, else through the launcher.
    pub via: Option<&'a dyn Launch>,
    /// Fds the process gets as its fds 3, 4, ... (the sandbox helper's
    /// channels, bubblewrap's seccomp program).
    pub pass_fds: &'a [RawFd],
    /// Start it in a new session, with no controlling terminal (sandboxed
    /// commands: the host's terminal must be out of their reach), rather
    /// than in a new process group of the host's session.
    pub new_session: bool,
}

/// A pipe whose ends are both above the stdio range and close-on-exec.
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    Ok((above_stdio(r)?, above_stdio(w)?))
}

/// A host that closed its stdio can be handed fd 0..2 by `pipe2`; dup2 onto
/// the same number would then keep close-on-exec. Move such fds up.
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // `fd` is closed when it drops here.
    Ok(rustix::io::fcntl_dupfd_cloexec(&fd, 3)?)
}

pub(crate) fn set_nonblocking(fd: impl AsFd) {
    if let Ok(flags) = rustix::fs::fcntl_getfl(&fd) {
        let _ = rustix::fs::fcntl_setfl(&fd, flags | OFlags::NONBLOCK);
    }
}

/// [`set_nonblocking`] for an end of a pipe made by [`pipe`], whose only
/// status flag is its access mode (which F_SETFL ignores): one call, not two.
fn set_pipe_nonblocking(fd: impl AsFd) {
    let _ = rustix::fs::fcntl_setfl(fd, OFlags::NONBLOCK);
}

/// A `posix_spawn*` return code as a result.
pub(crate) fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// One file action of a spawn, done in the child in the order added.
#[derive(Clone, Copy)]
pub(crate) enum FileAction<'a> {
    /// Opens `path` as `fd` with `flags`.
    Open {
        fd: RawFd,
        path: &'a CStr,
        flags: libc::c_int,
    },
    /// Makes `to` a copy of `from` (which must stay open until the spawn).
    Dup2 { from: RawFd, to: RawFd },
    /// Changes the working directory to the path.
    Chdir(&'a CStr),
    /// Closes every fd from this one up.
    CloseFrom(RawFd),
}

/// Owns a `posix_spawn_file_actions_t` and destroys it on drop.
pub(crate) struct FileActions(MaybeUninit<libc::posix_spawn_file_actions_t>);

impl FileActions {
    pub(crate) fn new() -> io::Result<Self> {
        let mut fa = MaybeUninit::uninit();
        // SAFETY: initializes the storage we pass.
        check(unsafe { libc::posix_spawn_file_actions_init(fa.as_mut_ptr()) })?;
        Ok(Self(fa))
    }

    /// Adds `action` after those added before.
    pub(crate) fn add(&mut self, action: FileAction<'_>) -> io::Result<()> {
        let fa = self.0.as_mut_ptr();
        // SAFETY: the actions were initialized in new() and are not yet
        // destroyed; glibc copies the paths, which are NUL-terminated and
        // live for the call; the fds are only recorded here.
        check(unsafe {
            match action {
                FileAction::Open { fd, path, flags } => {
                    libc::posix_spawn_file_actions_addopen(fa, fd, path.as_ptr(), flags, 0)
                }
                FileAction::Dup2 { from, to } => libc::posix_spawn_file_actions_adddup2(fa, from, to),
                FileAction::Chdir(path) => libc::posix_spawn_file_actions_addchdir_np(fa, path.as_ptr()),
                FileAction::CloseFrom(fd) => libc::posix_spawn_file_actions_addclosefrom_np(fa, fd),
            }
        })
    }
}

impl Drop for FileActions {
    fn drop(&mut self) {
        // SAFETY: a `FileActions` exists only after posix_spawn_file_actions_init
        // succeeded in new(), and is destroyed once, here.
        unsafe { libc::posix_spawn_file_actions_destroy(self.0.as_mut_ptr()) };
    }
}

/// Owns a `posix_spawnattr_t` and destroys it on drop.
pub(crate) struct Attrs(MaybeUninit<libc::posix_spawnattr_t>);

impl Attrs {
    /// Attributes that start the child with every signal at its default
    /// disposition and an empty signal mask, whatever the host ignores or
    /// blocks, plus `flags` (`POSIX_SPAWN_SETPGROUP`, which makes the child
    /// lead a group of its own, or `POSIX_SPAWN_SETSID`).
    pub(crate) fn with_clean_signals(flags: libc::c_int) -> io::Result<Self> {
        let mut at = MaybeUninit::uninit();
        // SAFETY: initializes the storage we pass; once that succeeded, the
        // attributes are set from sets filled before use, and owned (so
        // destroyed once) by the `Attrs` returned.
        unsafe {
            check(libc::posix_spawnattr_init(at.as_mut_ptr()))?;
            let mut attr = Self(at);
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            check(libc::posix_spawnattr_setsigdefault(attr.ptr(), &all))?;
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            check(libc::posix_spawnattr_setsigmask(attr.ptr(), &none))?;
            let flags = flags | libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETSIGMASK;
            check(libc::posix_spawnattr_setflags(attr.ptr(), flags as libc::c_short))?;
            // 0: the child's own pid is its group's id.
            check(libc::posix_spawnattr_setpgroup(attr.ptr(), 0))?;
            Ok(attr)
        }
    }

    fn ptr(&mut self) -> *mut libc::posix_spawnattr_t {
        self.0.as_mut_ptr()
    }
}

impl Drop for Attrs {
    fn drop(&mut self) {
        // SAFETY: an `Attrs` exists only after posix_spawnattr_init succeeded in
        // with_clean_signals(), and is destroyed once, here.
        unsafe { libc::posix_spawnattr_destroy(self.0.as_mut_ptr()) };
    }
}

static DEV_NULL: &CStr = c"/dev/null";

/// `posix_spawn` of `program` with `argv` and `envp`; returns the child's pid.
pub(crate) fn posix_spawn<A: AsRef<CStr>, E: AsRef<CStr>>(
    program: &CStr,
    argv: &[A],
    envp: &[E],
    fa: &mut FileActions,
    attr: &mut Attrs,
) -> io::Result<libc::pid_t> {
    let (argv, envp) = (null_terminated(argv), null_terminated(envp));
    let mut pid: libc::pid_t = 0;
    // SAFETY: the pointer arrays end with a null pointer and borrow strings that
    // outlive the call; the actions and attributes are initialized.
    check(unsafe {
        libc::posix_spawn(
            &mut pid,
            program.as_ptr(),
            fa.0.as_ptr(),
            attr.ptr(),
            argv.as_ptr(),
            envp.as_ptr(),
        )
    })?;
    Ok(pid)
}

/// The pointer array `posix_spawn` takes: one per string, then a null pointer.
fn null_terminated<S: AsRef<CStr>>(strings: &[S]) -> Vec<*mut libc::c_char> {
    let mut pointers = Vec::with_capacity(strings.len() + 1);
    pointers.extend(strings.iter().map(|s| s.as_ref().as_ptr().cast_mut()));
    pointers.push(std::ptr::null_mut());
    pointers
}

/// Starts `argv` in a new session (so no terminal's signals reach it), with
/// `/dev/null` as stdin, stdout and stderr, `keep` as its fds 3, 4, ...,
/// and every other fd closed. For the library's own helpers, not for
/// commands.
pub(crate) fn spawn_helper(
    program: &CStr,
    argv: &[CString],
    envp: &[CString],
    keep: &[RawFd],
) -> io::Result<libc::pid_t> {
    let mut fa = FileActions::new()?;
    for (fd, flags) in [(0, libc::O_RDONLY), (1, libc::O_WRONLY), (2, libc::O_WRONLY)] {
        fa.add(FileAction::Open {
            fd,
            path: DEV_NULL,
            flags,
        })?;
    }
    let passed = pass_fds(&mut fa, keep)?;
    let mut attr = Attrs::with_clean_signals(libc::POSIX_SPAWN_SETSID as libc::c_int)?;
    let pid = posix_spawn(program, argv, envp, &mut fa, &mut attr);
    drop(passed);
    pid
}

/// Adds file actions that make `fds` the child's fds 3, 4, ... and close
/// every fd above them. The copies returned must stay open until the spawn.
pub(crate) fn pass_fds(fa: &mut FileActions, fds: &[RawFd]) -> io::Result<Vec<OwnedFd>> {
    let moved = clear_of_targets(fds)?;
    pass_on(fa, &moved)?;
    Ok(moved)
}

/// The lowest fd [`clear_of_targets`] moves fds to: above every target.
const PASSED_FDS_FROM: RawFd = 16;

/// Copies of `fds` numbered from [`PASSED_FDS_FROM`] up, so that dup2 onto
/// 3, 4, ... never lands on one still to be passed, nor onto its own
/// number (which would keep close-on-exec).
fn clear_of_targets(fds: &[RawFd]) -> io::Result<Vec<OwnedFd>> {
    fds.iter()
        .map(|&fd| {
            // SAFETY: duplicates an fd the caller holds open (F_DUPFD_CLOEXEC
            // takes no pointer); a non-negative result is a fresh fd that
            // nothing else owns.
            unsafe {
                let moved = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, PASSED_FDS_FROM);
                if moved < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(OwnedFd::from_raw_fd(moved))
            }
        })
        .collect()
}

/// File actions that make `moved` the child's fds 3, 4, ... and close every
/// fd above them.
fn pass_on(fa: &mut FileActions, moved: &[OwnedFd]) -> io::Result<()> {
    // Each fd stays open until the spawn.
    for (i, fd) in moved.iter().enumerate() {
        fa.add(FileAction::Dup2 {
            from: fd.as_raw_fd(),
            to: 3 + i as RawFd,
        })?;
    }
    fa.add(FileAction::CloseFrom(3 + moved.len() as RawFd))
}

/// Starts `spec` as the leader of a new process group.
pub(crate) fn spawn(spec: &SpawnSpec<'_>) -> io::Result<Child> {
    if let Some(launcher) = spec.via {
        return launcher.launch(spec);
    }
    let stdin = if spec.stdin_pipe { Some(pipe()?) } else { None };
    let (out_r, out_w) = pipe()?;
    let err = match spec.streams {
        Streams::Separate => Some(pipe()?),
        Streams::Merged => None,
    };

    let mut fa = FileActions::new()?;
    fa.add(match &stdin {
        Some((r, _)) => FileAction::Dup2 {
            from: r.as_raw_fd(),
            to: 0,
        },
        None => FileAction::Open {
            fd: 0,
            path: DEV_NULL,
            flags: libc::O_RDONLY,
        },
    })?;
    fa.add(FileAction::Dup2 {
        from: out_w.as_raw_fd(),
        to: 1,
    })?;
    let err_w = err.as_ref().map_or(out_w.as_raw_fd(), |(_, w)| w.as_raw_fd());
    fa.add(FileAction::Dup2 { from: err_w, to: 2 })?;
    fa.add(FileAction::Chdir(spec.cwd))?;
    let passed = pass_fds(&mut fa, spec.pass_fds)?;
    // A new session makes the child the leader of a new group too.
    let mut attr = if spec.new_session {
        Attrs::with_clean_signals(libc::POSIX_SPAWN_SETSID as libc::c_int)?
    } else {
        Attrs::with_clean_signals(libc::POSIX_SPAWN_SETPGROUP)?
    };
    let pid = posix_spawn(spec.program, spec.argv, spec.envp, &mut fa, &mut attr)?;
    drop(passed);
    // The child holds the write ends now; ours must close so EOF can come.
    drop(out_w);
    let stdin = stdin.map(|(r, w)| {
        drop(r);
        set_pipe_nonblocking(&w);
        w
    });
    let stderr = err.map(|(r, w)| {
        drop(w);
        r
    });
    set_pipe_nonblocking(&out_r);
    if let Some(e) = &stderr {
        set_pipe_nonblocking(e);
    }
    Ok(Child {
        group: Group::Local(pid),
        pidfd: None,
        stdin,
        stdout: out_r,
        stderr,
    })
}

/// A pipe's capacity until it is grown (Linux: 16 pages).
pub(crate) const DEFAULT_PIPE_SIZE: usize = 64 * 1024;

/// A larger pipe means fewer wakeups for chatty commands (best effort). Done
/// only once a command has filled the default pipe: for the many commands
/// that print little, growing it would be a wasted syscall and allocation.
pub(crate) fn grow_pipe(fd: impl AsFd) {
    // A failure leaves the default size.
    let _ = rustix::pipe::fcntl_setpipe_size(fd, 1 << 20);
}

/// A pidfd for our unreaped child (None on kernels without pidfd_open).
pub(crate) fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    // `pid` is our unreaped child, so it cannot have been recycled.
    rustix::process::pidfd_open(Pid::from_raw(pid)?, rustix::process::PidfdFlags::empty()).ok()
}

/// Sends `signal` to the whole process group led by `pgid`.
pub(crate) fn kill_group(pgid: libc::pid_t, signal: libc::c_int) {
    // ESRCH (group already gone) is fine. Only named signals are sent.
    if let (Some(pgid), Some(signal)) = (Pid::from_raw(pgid), Signal::from_named_raw(signal)) {
        let _ = rustix::process::kill_process_group(pgid, signal);
    }
}

/// Whether the child has exited, without reaping it (so its pid and process
/// group id stay reserved until we kill the group). A child that is no longer
/// ours to wait for (ECHILD: a host ignoring SIGCHLD has the kernel reap it at
/// exit) has exited too.
pub(crate) fn has_exited(pid: libc::pid_t) -> bool {
    use rustix::process::{WaitId, WaitIdOptions};
    let Some(pid) = Pid::from_raw(pid) else {
        return false;
    };
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    match rustix::process::waitid(WaitId::Pid(pid), options) {
        Ok(found) => found.is_some(),
        Err(e) => e == rustix::io::Errno::CHILD,
    }
}

/// Sends `sig` to the one process `pid`; a pid of 0 or below (which would
/// reach a process group) sends nothing, and a process already gone is no error.
pub(crate) fn signal(pid: libc::pid_t, sig: rustix::process::Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

/// Reaps the child, blocking until it has exited; returns the shell-convention
/// exit code (128+N when killed by signal N), or -1 when it is unknown.
pub(crate) fn reap(pid: libc::pid_t) -> i32 {
    reap_status(pid).unwrap_or(-1)
}

/// Reaps the child, blocking until it has exited; `None` when the kernel has
/// already discarded it (a host that ignores SIGCHLD or sets SA_NOCLDWAIT has
/// its children reaped at exit, status and all).
pub(crate) fn reap_status(pid: libc::pid_t) -> Option<i32> {
    let pid = Pid::from_raw(pid)?;
    let status = loop {
        match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty()) {
            Ok(Some((reaped, status))) if reaped == pid => break status,
            Err(rustix::io::Errno::INTR) => continue,
            _ => return None,
        }
    };
    match (status.exit_status(), status.terminating_signal()) {
        (Some(code), _) => Some(code),
        (None, Some(signal)) => Some(128 + signal),
        _ => None,
    }
}

/// The kernel's limit for one argument string (`MAX_ARG_STRLEN` on Linux).
pub(crate) const MAX_ARG_LEN: usize = 32 * 4096 - 1;
