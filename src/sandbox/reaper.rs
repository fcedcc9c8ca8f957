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
use std::os::fd::{AsFd, OwnedFd};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::process::{Pid, Signal, WaitOptions};

use super::landlock::{self, HELPER_FAILED, HelperSpec};
use super::limits::CommandCgroup;
use super::process_calls::{self, SignalSet, close_inherited, exit_now};
use super::wire;

/// The helper's end of its control socket with the host.
pub const CONTROL_FD: libc::c_int = 3;

/// Runs `command` as a child that restricts itself per `spec` and gets
/// `env` added to its environment, reaps orphans while it runs, and ends
/// as described in the module docs. Returns only if the fork fails.
pub fn run_as_keeper(spec: &HelperSpec, env: &[CString], command: &[CString]) -> String {
    // Every signal is blocked, so none the host or the command sends the
    // group ends the helper early (only SIGKILL and SIGSTOP could, and from
    // ABI 6 the command cannot send any); the host's signals come as
    // messages on the control socket.
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    let old = process_calls::set_mask(&SignalSet::all());
    let keeper = rustix::process::getpid().as_raw_nonzero().get();
    let cgroup = spec.max_processes.and_then(CommandCgroup::create);
    let Some(control) = process_calls::take_inherited(CONTROL_FD) else {
        return "bash-mcp sandbox: the helper has no control socket (fd 3)".into();
    };
    // The helper runs nothing else: one thread, which fork checks.
    let pid = match process_calls::fork() {
        Err(e) => return format!("bash-mcp sandbox: fork: {e}"),
        Ok(None) => {
            // The command must not speak for the helper.
            drop(control);
            bound(spec, cgroup.as_ref());
            child(spec, env, command, &old, keeper);
        }
        Ok(Some(pid)) => pid,
    };
    // The listener's socket is the child's to use and close.
    close_inherited(landlock::LISTENER_FD);
    keep(pid, &control, cgroup.as_ref())
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
fn child(spec: &HelperSpec, env: &[CString], command: &[CString], mask: &SignalSet, keeper: libc::pid_t) -> ! {
    if let Err(e) = landlock::restrict(spec, Some(keeper)) {
        let _ = writeln!(
            std::io::stderr(),
            "bash-mcp sandbox: could not restrict the command: {e}"
        );
        exit_now(HELPER_FAILED);
    }
    // The mask the host gave us, then the command.
    process_calls::set_mask(mask);
    let err = process_calls::exec(command, env);
    let _ = writeln!(
        std::io::stderr(),
        "bash-mcp sandbox: could not start {}: {err}",
        command[0].to_string_lossy()
    );
    exit_now(127)
}

/// The keeper's loop until the shell `pid` has exited: reaps orphans,
/// passes the host's signals on, and ends everything when the host goes.
/// Reports the shell's status on the control socket, then exits as it did.
fn keep(pid: libc::pid_t, control: &OwnedFd, cgroup: Option<&CommandCgroup>) -> ! {
    // SIGCHLD is blocked, so it queues there.
    let sigfd = process_calls::signalfd(&SignalSet::of(&[libc::SIGCHLD])).ok();
    // Without a signalfd, look for the shell every 10 ms instead.
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 10_000_000,
    };
    loop {
        let (control_ready, child_ready) = {
            let mut fds = [PollFd::new(control, PollFlags::IN), PollFd::new(control, PollFlags::IN)];
            let count = match &sigfd {
                Some(fd) => {
                    fds[1] = PollFd::new(fd, PollFlags::IN);
                    2
                }
                None => 1,
            };
            let _ = rustix::event::poll(&mut fds[..count], sigfd.is_none().then_some(&tick));
            (!fds[0].revents().is_empty(), count == 1 || !fds[1].revents().is_empty())
        };
        if child_ready {
            drain(sigfd.as_ref());
            if let Some(status) = reap_until(pid) {
                kill_descendants();
                if let Some(cgroup) = cgroup {
                    cgroup.remove();
                }
                let _ = wire::send_message(control.as_fd(), wire::EXITED, status);
                exit_like(status);
            }
        }
        if control_ready {
            match wire::read_message(control.as_fd()) {
                Ok(Some((wire::KILL, libc::SIGKILL))) => kill_children(),
                Ok(Some((wire::KILL, signal))) if signal != libc::SIGSTOP => {
                    // The whole group, as the host would without a helper
                    // (the helper blocks the signal; it is in the group too).
                    if let Some(signal) = Signal::from_named_raw(signal) {
                        let _ = rustix::process::kill_current_process_group(signal);
                    }
                }
                Ok(Some(_)) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // The host is gone or gave up on the call: nothing may stay.
                Ok(None) | Err(_) => {
                    kill_descendants();
                    if let Some(cgroup) = cgroup {
                        cgroup.remove();
                    }
                    // Everything the helper kept is gone.
                    exit_now(0);
                }
            }
        }
    }
}

fn drain(sigfd: Option<&OwnedFd>) {
    let Some(sigfd) = sigfd else { return };
    let mut info = [0u8; 128]; // one signalfd_siginfo
    // The fd is non-blocking, so this stops when no signal is pending.
    while rustix::io::read(sigfd, &mut info).is_ok_and(|n| n > 0) {}
}

/// Reaps every exited child without waiting; the shell's wait status once
/// it is among them.
fn reap_until(pid: libc::pid_t) -> Option<i32> {
    loop {
        match rustix::process::waitpid(None, WaitOptions::NOHANG) {
            Ok(Some((reaped, status))) if reaped.as_raw_nonzero().get() == pid => return Some(status.as_raw()),
            Ok(Some(_)) => {}
            _ => return None,
        }
    }
}

/// SIGKILL to every current child (the shell, and the orphans that reached
/// us); their own children reach us as they die.
fn kill_children() {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")) {
        // Each pid is our own unreaped child, so it cannot be recycled.
        for pid in text.split_whitespace().filter_map(|p| Pid::from_raw(p.parse().ok()?)) {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
    }
}

/// Kills every remaining child, round after round (a killed child's own
/// children become ours), until none is left.
fn kill_descendants() {
    loop {
        kill_children();
        match rustix::process::waitpid(None, WaitOptions::empty()) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return, // ECHILD: nothing left
        }
    }
}

/// Ends this process as the command ended: its exit code, or its signal
/// (without a core file of the helper's own).
fn exit_like(status: i32) -> ! {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        // No core file, the default action for the signal, then the
        // signal itself, unblocked; exit if it did not end us.
        let none = rustix::process::Rlimit {
            current: Some(0),
            maximum: Some(0),
        };
        let _ = rustix::process::setrlimit(rustix::process::Resource::Core, none);
        process_calls::die_by(signal)
    }
    exit_now(libc::WEXITSTATUS(status))
}
