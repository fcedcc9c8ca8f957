//! The Landlock helper as the command's keeper: it stays between the host
//! and the command, outside the command's sandbox, so the command's orphans
//! (double forks, `setsid`) become its children instead of init's, and no
//! command process can outlive its call.
//!
//! It forks first: only the child restricts itself (Landlock, seccomp) and
//! execs the command, so the helper is outside the command's Landlock
//! domain, which from ABI 6 keeps every signal of the command's from
//! reaching it (`LANDLOCK_SCOPE_SIGNAL`); below ABI 6 the command's seccomp
//! filter refuses the calls that could name the helper (see
//! [`landlock`]). The host reaches the command through the
//! helper's control socket (fd [`CONTROL_FD`]): it asks for signals there
//! and reads the shell's exit status there. When the shell exits, when the
//! host asks for SIGKILL, or when the host's end closes (the call was
//! abandoned, or the host died), the helper kills every process left, round
//! after round, before it reports or exits.
//!
//! Used for commands that wait for their call; a session shell is exec'd
//! directly (it outlives the call and owns its terminal).

use std::ffi::CString;
use std::io::Write;

use super::landlock::{self, HELPER_FAILED, HelperSpec};
use super::limits::CommandCgroup;
use super::supervisor::wire;

/// The helper's end of its control socket with the host.
pub const CONTROL_FD: libc::c_int = 3;

/// Runs `command` as a child that restricts itself per `spec` and gets
/// `env` added to its environment, reaps orphans while it runs, and ends
/// as described in the module docs. Returns only if the fork fails.
pub fn run_as_keeper(spec: &HelperSpec, env: &[CString], command: &[CString]) -> String {
    // SAFETY: prctl with constant arguments; signal-set manipulation on
    // local sets. Every signal is blocked, so none the host or the command
    // sends the group ends the helper early (only SIGKILL and SIGSTOP
    // could, and from ABI 6 the command cannot send any); the host's
    // signals come as messages on the control socket.
    let old = unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigprocmask(libc::SIG_SETMASK, &all, &mut old);
        old
    };
    // SAFETY: getpid cannot fail.
    let keeper = unsafe { libc::getpid() };
    let cgroup = spec.max_processes.and_then(CommandCgroup::create);
    // SAFETY: this process is single-threaded (the helper runs nothing
    // else), so the child may run any code before exec.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return format!("bash-mcp sandbox: fork: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        bound(spec, cgroup.as_ref());
        child(spec, env, command, &old, keeper);
    }
    // The listener's socket is the child's to use and close.
    // SAFETY: closes an fd of this process only (EBADF when there is none).
    unsafe { libc::close(landlock::LISTENER_FD) };
    keep(pid, cgroup.as_ref())
}

/// Bounds the command's processes (in the child, before it restricts
/// itself): into the cgroup made for it, else under the user's limit (not
/// for root, whom the kernel exempts from it).
fn bound(spec: &HelperSpec, cgroup: Option<&CommandCgroup>) {
    let Some(max) = spec.max_processes else { return };
    if cgroup.is_some_and(|c| c.join().is_ok()) {
        return;
    }
    if !super::limits::is_root() {
        super::limits::limit_user_processes(max);
    }
}

/// The command's side of the fork: no control socket, the restrictions,
/// the extra environment, the host's signal mask, then exec. Never returns.
fn child(spec: &HelperSpec, env: &[CString], command: &[CString], mask: &libc::sigset_t, keeper: libc::pid_t) -> ! {
    // SAFETY: closes the control socket in this process only: the command
    // must not speak for the helper.
    unsafe { libc::close(CONTROL_FD) };
    if let Err(e) = landlock::restrict(spec, Some(keeper)) {
        let _ = writeln!(
            std::io::stderr(),
            "bash-mcp sandbox: could not restrict the command: {e}"
        );
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(HELPER_FAILED) };
    }
    for entry in env {
        // SAFETY: putenv keeps the pointer; `env` lives until exec, which
        // replaces this process. Single-threaded: no concurrent reader.
        unsafe { libc::putenv(entry.as_ptr().cast_mut()) };
    }
    let mut argv: Vec<*const libc::c_char> = command.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    // SAFETY: restores the mask the host gave us, then execs the command
    // from a null-terminated array of live C strings.
    unsafe {
        libc::sigprocmask(libc::SIG_SETMASK, mask, std::ptr::null_mut());
        libc::execvp(argv[0], argv.as_ptr());
    }
    let err = std::io::Error::last_os_error();
    let _ = writeln!(
        std::io::stderr(),
        "bash-mcp sandbox: could not start {}: {err}",
        command[0].to_string_lossy()
    );
    // SAFETY: ends the child without running the parent's destructors.
    unsafe { libc::_exit(127) }
}

/// The keeper's loop until the shell `pid` has exited: reaps orphans,
/// passes the host's signals on, and ends everything when the host goes.
/// Reports the shell's status on the control socket, then exits as it did.
fn keep(pid: libc::pid_t, cgroup: Option<&CommandCgroup>) -> ! {
    // SAFETY: a signalfd for SIGCHLD, which is blocked (so it queues there).
    let sigfd = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK)
    };
    loop {
        let mut fds = [
            libc::pollfd {
                fd: CONTROL_FD,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: sigfd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Without a signalfd, look for the shell every 10 ms instead.
        let wait = if sigfd < 0 { 10 } else { -1 };
        // SAFETY: a valid array of two pollfds.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, wait) };
        if sigfd < 0 || fds[1].revents != 0 {
            drain(sigfd);
            if let Some(status) = reap_until(pid) {
                kill_descendants();
                if let Some(cgroup) = cgroup {
                    cgroup.remove();
                }
                let _ = wire::send_message(CONTROL_FD, wire::EXITED, status);
                exit_like(status);
            }
        }
        if fds[0].revents != 0 {
            match wire::read_message(CONTROL_FD) {
                Ok(Some((wire::KILL, libc::SIGKILL))) => kill_children(),
                Ok(Some((wire::KILL, signal))) if signal != libc::SIGSTOP => {
                    // The whole group, as the host would without a helper
                    // (the helper blocks the signal; it is in the group too).
                    // SAFETY: plain syscall on our own group.
                    unsafe { libc::kill(0, signal) };
                }
                Ok(Some(_)) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // The host is gone or gave up on the call: nothing may stay.
                Ok(None) | Err(_) => {
                    kill_descendants();
                    if let Some(cgroup) = cgroup {
                        cgroup.remove();
                    }
                    // SAFETY: ends the helper; everything it kept is gone.
                    unsafe { libc::_exit(0) };
                }
            }
        }
    }
}

fn drain(sigfd: libc::c_int) {
    if sigfd < 0 {
        return;
    }
    let mut info = [0u8; 128]; // one signalfd_siginfo
    // SAFETY: reads into a buffer of the size of signalfd_siginfo; the fd
    // is non-blocking, so this stops when no signal is pending.
    while unsafe { libc::read(sigfd, info.as_mut_ptr().cast(), info.len()) } > 0 {}
}

/// Reaps every exited child without waiting; the shell's wait status once
/// it is among them.
fn reap_until(pid: libc::pid_t) -> Option<i32> {
    loop {
        let mut status = 0;
        // SAFETY: reaps any exited child of ours; never blocks.
        let reaped = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if reaped == pid {
            return Some(status);
        }
        if reaped <= 0 {
            return None;
        }
    }
}

/// SIGKILL to every current child (the shell, and the orphans that reached
/// us); their own children reach us as they die.
fn kill_children() {
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")) {
        for pid in text.split_whitespace().filter_map(|p| p.parse::<libc::pid_t>().ok()) {
            // SAFETY: pid is our own unreaped child, so it cannot be recycled.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Kills every remaining child, round after round (a killed child's own
/// children become ours), until none is left.
fn kill_descendants() {
    loop {
        kill_children();
        // SAFETY: waits for any child of ours.
        let reaped = unsafe { libc::waitpid(-1, std::ptr::null_mut(), 0) };
        if reaped < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return; // ECHILD: nothing left
        }
    }
}

/// Ends this process as the command ended: its exit code, or its signal
/// (without a core file of the helper's own).
fn exit_like(status: i32) -> ! {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        // SAFETY: no core file, the default action for the signal, then
        // the signal itself, unblocked; _exit if it did not end us.
        unsafe {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal)
        }
    }
    // SAFETY: ends the helper with the command's exit code.
    unsafe { libc::_exit(libc::WEXITSTATUS(status)) }
}
