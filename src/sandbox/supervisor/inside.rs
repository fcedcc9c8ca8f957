//! The supervisor process: `bash-mcp __sandbox-supervise`, run by bwrap
//! inside the sandbox's namespaces with the control socket as fd 3.
//!
//! It holds the namespaces (user, mount, PID, network, IPC, UTS) so that a
//! command costs a `clone` instead of a whole bwrap. For each request it
//! clones a per-command init in a PID and mount namespace of its own, which
//! mounts that namespace's `/proc` and forks the command as the leader of
//! its process group, with no capabilities, every signal at its default,
//! the requested environment and working directory, and only fds 0-2. The
//! init reports the command's exit status on the command's socket, then
//! exits, and the kernel kills everything left in its namespace: escaped
//! `setsid` and double-forked children die with their call. It kills on
//! request, and everything when the host's end of the socket closes (the
//! call was abandoned or the host died).
//!
//! Commands cannot reach the channel: every fd above 2 closes at their
//! `exec`, the supervisor and the inits are not dumpable (no `ptrace`, no
//! `/proc/<pid>/fd`), and the supervisor is outside each command's PID
//! namespace. They cannot get capabilities back either: their bounding
//! set is empty and the namespace's user-namespace limit is 0.
//!
//! The supervisor is single-threaded, so code after `clone` is safe; it
//! still allocates nothing there: everything a child needs is prepared
//! before.

use std::ffi::{CStr, CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::wire::{self, Body};

/// The first argument that makes the binary act as the supervisor.
pub const SUPERVISE_ARG: &str = "__sandbox-supervise";

/// The control socket's fd in the supervisor.
pub const CONTROL_FD: RawFd = 3;

/// How long the supervisor waits for a request body the host announced.
const BODY_TIMEOUT_SECS: libc::time_t = 10;

/// `/proc` entries a fresh procfs gets read-only, as bubblewrap's own
/// `--proc` does: the sysctls, the SysRq trigger, IRQ and bus settings.
const PROC_COVERS: [&CStr; 4] = [c"/proc/sys", c"/proc/sysrq-trigger", c"/proc/irq", c"/proc/bus"];

/// Runs the supervisor: returns only on failure to set up, with a message
/// for stderr; exits 0 when the host closes the control socket.
pub fn supervise_main(_args: &[OsString]) -> String {
    match setup() {
        Ok(sigfd) => serve(&sigfd),
        Err(e) => format!("bash-mcp sandbox supervisor: {e}"),
    }
}

fn errno() -> io::Error {
    io::Error::last_os_error()
}

fn setup() -> Result<OwnedFd, String> {
    // SAFETY: prctl with constant arguments: not dumpable, so a command
    // cannot ptrace the supervisor or open its /proc entries.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        return Err(format!("PR_SET_DUMPABLE: {}", errno()));
    }
    limit_user_namespaces()?;
    // SAFETY: signal-set manipulation on local sets; SIGCHLD is blocked so
    // that the signalfd (inherited by every init) receives it.
    let sigfd = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK)
    };
    if sigfd < 0 {
        return Err(format!("signalfd: {}", errno()));
    }
    // SAFETY: signalfd returned a fresh fd that we now own.
    let sigfd = unsafe { OwnedFd::from_raw_fd(sigfd) };
    wire::send_with_fds(CONTROL_FD, &[wire::READY], &[]).map_err(|e| format!("control socket: {e}"))?;
    Ok(sigfd)
}

/// Sets this user namespace's limit of nested user namespaces to 0, so no
/// command can create one (where it would hold capabilities again). bwrap
/// mounts `/proc/sys` read-only, so this writes through a procfs of our
/// own, in a mount namespace of our own, and unmounts it again.
fn limit_user_namespaces() -> Result<(), String> {
    // SAFETY: plain syscalls with constant, NUL-terminated arguments.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return Err(format!("unshare(CLONE_NEWNS): {}", errno()));
        }
        if libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
        {
            return Err(format!("mounting /proc: {}", errno()));
        }
    }
    let written = std::fs::write("/proc/sys/user/max_user_namespaces", "0");
    // SAFETY: unmounts the procfs mounted above.
    unsafe { libc::umount2(c"/proc".as_ptr(), libc::MNT_DETACH) };
    written.map_err(|e| format!("setting user.max_user_namespaces to 0: {e}"))
}

fn serve(sigfd: &OwnedFd) -> String {
    let mut buf = [0u8; 16];
    loop {
        let mut fds = [
            pollfd(CONTROL_FD, libc::POLLIN),
            pollfd(sigfd.as_raw_fd(), libc::POLLIN),
        ];
        // SAFETY: fds is a valid array of pollfd.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if fds[1].revents != 0 {
            drain_signals(sigfd.as_raw_fd());
            // SAFETY: reaps our exited children (the inits); never blocks.
            while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        }
        if fds[0].revents == 0 {
            continue;
        }
        match wire::recv_with_fds(CONTROL_FD, &mut buf) {
            Ok((0, _)) => std::process::exit(0),
            Ok((_, fds)) if buf[0] == wire::COMMAND && fds.len() == wire::MAX_FDS => {
                let [sock, stdin, stdout, stderr]: [OwnedFd; 4] = fds.try_into().expect("four fds");
                start(sock, [stdin, stdout, stderr], sigfd.as_raw_fd());
            }
            Ok(_) => {} // a malformed message: its fds close here
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) => return format!("bash-mcp sandbox supervisor: control socket: {e}"),
        }
    }
}

fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd { fd, events, revents: 0 }
}

fn drain_signals(sigfd: RawFd) {
    let mut info = [0u8; 128]; // one signalfd_siginfo
    // SAFETY: reads into a buffer of the size of signalfd_siginfo; the fd
    // is non-blocking, so this stops when no signal is pending.
    while unsafe { libc::read(sigfd, info.as_mut_ptr().cast(), info.len()) } > 0 {}
}

/// Reads the request and clones the command's init; every failure is
/// reported on the command's socket.
fn start(sock: OwnedFd, stdio: [OwnedFd; 3], sigfd: RawFd) {
    let body = match read_body(&sock) {
        Ok(body) => body,
        Err(e) => {
            let _ = wire::send_message(sock.as_raw_fd(), wire::FAILED, e.raw_os_error().unwrap_or(libc::EINVAL));
            return;
        }
    };
    let argv = pointers(&body.argv);
    let envp = pointers(&body.envp);
    let command = Command {
        program: &body.program,
        argv: &argv,
        envp: &envp,
        cwd: &body.cwd,
        stdio: [stdio[0].as_raw_fd(), stdio[1].as_raw_fd(), stdio[2].as_raw_fd()],
        sock: sock.as_raw_fd(),
        sigfd,
    };
    // SAFETY: a fork-like clone (no shared memory, no new stack) of this
    // single-threaded process into new PID and mount namespaces; the child
    // runs `init`, which never returns.
    let pid = unsafe { raw_fork(libc::CLONE_NEWPID | libc::CLONE_NEWNS) };
    if pid == 0 {
        init(&command);
    }
    if pid < 0 {
        let _ = wire::send_message(
            sock.as_raw_fd(),
            wire::FAILED,
            errno().raw_os_error().unwrap_or(libc::EIO),
        );
    }
    // Our copies of the command's fds close here: only the init holds them.
}

fn read_body(sock: &OwnedFd) -> io::Result<Body> {
    let timeout = libc::timeval {
        tv_sec: BODY_TIMEOUT_SECS,
        tv_usec: 0,
    };
    // SAFETY: setsockopt with a valid timeval of the size given.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    let mut len = [0u8; 4];
    if !wire::read_exact(sock.as_raw_fd(), &mut len)? {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > wire::MAX_BODY {
        return Err(io::Error::from_raw_os_error(libc::E2BIG));
    }
    let mut data = vec![0u8; len];
    if !wire::read_exact(sock.as_raw_fd(), &mut data)? && len > 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Body::decode(&data)
}

fn pointers(strings: &[CString]) -> Vec<*const libc::c_char> {
    let mut p: Vec<*const libc::c_char> = strings.iter().map(|s| s.as_ptr()).collect();
    p.push(std::ptr::null());
    p
}

/// Everything the init and the command need, prepared before the clone.
struct Command<'a> {
    program: &'a CStr,
    argv: &'a [*const libc::c_char],
    envp: &'a [*const libc::c_char],
    cwd: &'a CStr,
    stdio: [RawFd; 3],
    sock: RawFd,
    sigfd: RawFd,
}

/// `fork` as a raw `clone` with `flags` (namespace flags) and SIGCHLD.
///
/// # Safety
/// The caller must be single-threaded or run only async-signal-safe code
/// in the child, as after `fork`.
unsafe fn raw_fork(flags: libc::c_int) -> libc::pid_t {
    // SAFETY: clone with a null stack behaves like fork (the child gets a
    // copy-on-write copy of our stack); the other arguments are unused.
    unsafe {
        libc::syscall(
            libc::SYS_clone,
            (flags | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        ) as libc::pid_t
    }
}

/// The command's init: PID 1 of its namespace. Never returns.
fn init(c: &Command<'_>) -> ! {
    // SAFETY: async-signal-safe syscalls only, on fds and strings prepared
    // before the clone.
    unsafe {
        // Die with the supervisor; its control socket is not ours to hold.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        libc::close(CONTROL_FD);
        if let Err(errno) = mount_proc() {
            fail(c.sock, errno);
        }
        let mut err_pipe = [0; 2];
        if libc::pipe2(err_pipe.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            fail(c.sock, last_errno());
        }
        let pid = raw_fork(0);
        if pid == 0 {
            exec_command(c, err_pipe[1]);
        }
        if pid < 0 {
            fail(c.sock, last_errno());
        }
        libc::close(err_pipe[1]);
        let mut code = [0u8; 4];
        let n = loop {
            let n = libc::read(err_pipe[0], code.as_mut_ptr().cast(), 4);
            if n >= 0 || last_errno() != libc::EINTR {
                break n;
            }
        };
        for fd in c.stdio {
            libc::close(fd);
        }
        if n == 4 {
            // exec failed: the command's process is exiting with 127
            fail(c.sock, i32::from_ne_bytes(code));
        }
        let _ = wire::send_message(c.sock, wire::STARTED, pid);
        watch(c, pid)
    }
}

fn last_errno() -> i32 {
    errno().raw_os_error().unwrap_or(libc::EIO)
}

fn fail(sock: RawFd, errno: i32) -> ! {
    let _ = wire::send_message(sock, wire::FAILED, errno);
    // SAFETY: ends the init; the kernel kills what is left in its namespace.
    unsafe { libc::_exit(0) }
}

/// A procfs for this PID namespace (the command sees its own processes,
/// and `/proc/$$` is its shell), with bubblewrap's read-only covers.
fn mount_proc() -> Result<(), i32> {
    // SAFETY: mount calls with NUL-terminated constant paths.
    unsafe {
        let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        if libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            flags,
            std::ptr::null(),
        ) != 0
        {
            return Err(last_errno());
        }
        for path in PROC_COVERS {
            if libc::mount(
                path.as_ptr(),
                path.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            ) != 0
            {
                if last_errno() == libc::ENOENT {
                    continue;
                }
                return Err(last_errno());
            }
            let ro = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | flags;
            if libc::mount(std::ptr::null(), path.as_ptr(), std::ptr::null(), ro, std::ptr::null()) != 0 {
                return Err(last_errno());
            }
        }
    }
    Ok(())
}

/// Until the command's shell exits: reap whatever is reparented to us,
/// pass kill requests on, kill everything if the host goes away.
fn watch(c: &Command<'_>, pid: libc::pid_t) -> ! {
    // SAFETY: async-signal-safe syscalls on our own fds and children.
    unsafe {
        loop {
            let mut fds = [pollfd(c.sock, libc::POLLIN), pollfd(c.sigfd, libc::POLLIN)];
            libc::poll(fds.as_mut_ptr(), 2, -1);
            if fds[1].revents != 0 {
                drain_signals(c.sigfd);
                loop {
                    let mut status = 0;
                    let reaped = libc::waitpid(-1, &mut status, libc::WNOHANG);
                    if reaped <= 0 {
                        break;
                    }
                    if reaped == pid {
                        let _ = wire::send_message(c.sock, wire::EXITED, status);
                        // Exiting kills everything left in the namespace.
                        libc::_exit(0);
                    }
                }
            }
            if fds[0].revents != 0 {
                match wire::read_message(c.sock) {
                    Ok(Some((wire::KILL, libc::SIGKILL))) => {
                        libc::kill(-1, libc::SIGKILL);
                    }
                    Ok(Some((wire::KILL, signal))) => {
                        libc::kill(-pid, signal);
                    }
                    Ok(Some(_)) => {}
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                    // The host is gone or gave up on the call.
                    Ok(None) | Err(_) => libc::_exit(0),
                }
            }
        }
    }
}

/// The command's process: its own group, clean signals, stdio, working
/// dir, no capabilities, no fds above 2, then exec. Never returns.
fn exec_command(c: &Command<'_>, err_fd: RawFd) -> ! {
    // SAFETY: async-signal-safe syscalls on values prepared before the
    // clone.
    unsafe {
        libc::setpgid(0, 0);
        // The raw call: glibc refuses to touch the two signals it keeps
        // for itself (32 and 33), which must start at their default too.
        #[repr(C)]
        struct KernelSigaction {
            handler: usize,
            flags: libc::c_ulong,
            restorer: usize,
            mask: u64,
        }
        let default = KernelSigaction {
            handler: libc::SIG_DFL,
            flags: 0,
            restorer: 0,
            mask: 0,
        };
        for signal in 1..=64 {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::syscall(libc::SYS_rt_sigaction, signal, &default, std::ptr::null::<u8>(), 8usize);
            }
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        for (target, fd) in c.stdio.iter().enumerate() {
            if libc::dup2(*fd, target as RawFd) < 0 {
                exec_failed(err_fd);
            }
        }
        if libc::chdir(c.cwd.as_ptr()) != 0 {
            exec_failed(err_fd);
        }
        if !crate::sandbox::caps::drop_all() || libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            exec_failed(err_fd);
        }
        // Every fd above 2 closes at exec (the error pipe stays open until then).
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) != 0 {
            exec_failed(err_fd);
        }
        libc::execve(c.program.as_ptr(), c.argv.as_ptr(), c.envp.as_ptr());
        exec_failed(err_fd)
    }
}

fn exec_failed(err_fd: RawFd) -> ! {
    let code = last_errno().to_ne_bytes();
    // SAFETY: writes four bytes from a local array, then ends the process.
    unsafe {
        libc::write(err_fd, code.as_ptr().cast(), 4);
        libc::_exit(127)
    }
}
