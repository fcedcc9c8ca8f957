//! The Landlock helper as a subreaper: it stays between the host and the
//! command, so the command's orphans (double forks, `setsid`) become its
//! children instead of init's, and when the command's shell exits it kills
//! and reaps every one of them before exiting with the shell's status.
//!
//! Used for commands that wait for their call; a session shell is exec'd
//! directly (it outlives the call and owns its terminal).

use std::ffi::CString;
use std::io::Write;

/// Runs `command` as a child, reaps orphans while it runs, kills what is
/// left when it exits, then ends this process the way the shell ended
/// (same exit code, or the same signal). Returns only if the fork fails.
pub fn run_as_subreaper(command: &[CString]) -> String {
    let mut argv: Vec<*const libc::c_char> = command.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    // SAFETY: prctl with constant arguments; signal-set manipulation on
    // local sets. Signals the host sends the whole group (a timeout's
    // SIGTERM) are for the command: the helper blocks them, reports how
    // the command ended, and dies only by SIGKILL.
    let old = unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigprocmask(libc::SIG_SETMASK, &all, &mut old);
        old
    };
    // SAFETY: this process is single-threaded (the helper runs nothing
    // else), so the child may run any code before exec.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return format!("bash-mcp sandbox: fork: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: restores the mask the host gave us, then execs the
        // command from a null-terminated array of live C strings.
        unsafe {
            libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            libc::execvp(argv[0], argv.as_ptr());
        }
        let err = std::io::Error::last_os_error();
        let _ = writeln!(
            std::io::stderr(),
            "bash-mcp sandbox: could not start {}: {err}",
            command[0].to_string_lossy()
        );
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(super::landlock::HELPER_FAILED) };
    }
    let status = wait_for(pid);
    kill_descendants();
    exit_like(status)
}

/// Waits for `pid`, reaping the orphans that reach us meanwhile.
fn wait_for(pid: libc::pid_t) -> i32 {
    loop {
        let mut status = 0;
        // SAFETY: waits for any child of ours.
        let reaped = unsafe { libc::waitpid(-1, &mut status, 0) };
        if reaped == pid {
            return status;
        }
        if reaped < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 0;
        }
    }
}

/// Kills every remaining child, round after round (a killed child's own
/// children become ours), until none is left.
fn kill_descendants() {
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    let children = format!("/proc/{me}/task/{me}/children");
    loop {
        if let Ok(text) = std::fs::read_to_string(&children) {
            for pid in text.split_whitespace().filter_map(|p| p.parse::<libc::pid_t>().ok()) {
                // SAFETY: pid is our own unreaped child, so it cannot be recycled.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
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
