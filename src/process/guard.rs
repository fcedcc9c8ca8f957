//! The guard: a small process that outlives the host and, once the host is
//! gone, kills what the library started for it.
//!
//! Commands run in their own process groups (and sessions in their own
//! terminal sessions), so nothing kills them when the host dies abruptly:
//! a SIGKILL, a crash, or an abort skips every destructor. The guard is
//! `/bin/sh` running a short script, started detached (its parent is the
//! init process or the nearest subreaper, in a session of its own, with
//! SIGHUP, SIGINT, SIGTERM and SIGQUIT ignored). It blocks reading a pipe
//! whose only write end the host holds, close-on-exec. When the host exits,
//! however it exits, the kernel closes that end; the guard's read ends,
//! and it SIGKILLs every process whose environment carries this host's
//! `BASH_MCP_RUN_ID` prefix (every command, background job and session shell
//! inherits one), several rounds so that children forked meanwhile go too,
//! then removes the host's session directories (they hold the last command
//! of each session), its attach socket, its output stores and its sandboxed
//! commands' temp dirs. Reading other users' /proc
//! entries fails harmlessly, so it can only reach this user's processes.
//!
//! The host writes nothing to the pipe: the guard costs no CPU while the host
//! lives, and one `sh` process per host process. It is started with the
//! first command and replaced if it dies (checked at most once a second).
//! Processes that clear their environment (`env -i`) lose the marker, and
//! with it the guard's protection.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Waits for end of input on fd 3, then kills what carries the marker `$1`,
/// removes the session directories whose paths start with `$2`, the host's
/// attach socket `$3` (its directory stays, as the server leaves it), its
/// output stores (paths starting with `$4`) and its sandboxed commands' temp
/// dirs (paths starting with `$6`). The work runs in a background subshell
/// so the guard is not the host's child; `$5` is the host's pid, for people
/// reading `ps`.
const SCRIPT: &str = r#"trap '' HUP INT TERM QUIT PIPE
(
  while read -r _; do :; done
  round=0
  while [ "$round" -lt 5 ]; do
    found=$(grep -laz -- "^$1" /proc/[0-9]*/environ 2>/dev/null)
    [ -n "$found" ] || break
    for file in $found; do
      pid=${file#/proc/}
      kill -KILL "${pid%/environ}" 2>/dev/null
    done
    round=$((round + 1))
  done
  case $2 in
    /?*/bash-mcp-session-?*-) rm -rf -- "$2"* ;;
  esac
  case $3 in
    /?*/bash-mcp*/[0-9]*-?*.sock) rm -f -- "$3" ;;
  esac
  case $4 in
    /?*/bash-mcp-output-?*-) rm -rf -- "$4"* ;;
  esac
  case $6 in
    /?*/bash-mcp-tmp-?*-) rm -rf -- "$6"* ;;
  esac
) <&3 3<&- &
"#;

/// How often a live guard is checked for having died.
const RECHECK: Duration = Duration::from_secs(1);

struct Guard {
    /// The write end of the guard's pipe; never written, closed only when
    /// the host exits.
    pipe: Option<OwnedFd>,
    checked: Option<Instant>,
    /// A failure to start was logged as a warning (later ones at debug level).
    warned: bool,
}

static GUARD: Mutex<Guard> = Mutex::new(Guard {
    pipe: None,
    checked: None,
    warned: false,
});

/// Makes sure this process has a live guard. Called by the layers that
/// start commands and session shells (`exec`, `session`) before each spawn;
/// failures are logged and retried later, never passed on (a command runs
/// whether or not a guard watches it).
pub(crate) fn ensure() {
    let mut guard = GUARD.lock().unwrap_or_else(PoisonError::into_inner);
    let now = Instant::now();
    if guard.checked.is_some_and(|at| now.duration_since(at) < RECHECK) {
        return;
    }
    guard.checked = Some(now);
    if guard.pipe.as_ref().is_some_and(reader_alive) {
        return;
    }
    match start() {
        Ok(pipe) => guard.pipe = Some(pipe),
        Err(e) => {
            guard.pipe = None;
            if std::mem::replace(&mut guard.warned, true) {
                tracing::debug!("could not start the guard that cleans up after a crashed host: {e}");
            } else {
                tracing::warn!("could not start the guard that cleans up after a crashed host: {e}");
            }
        }
    }
}

/// Whether the read end of the pipe is still open (the guard lives).
fn reader_alive(pipe: &OwnedFd) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(pipe, PollFlags::empty())];
    // A zero timeout only looks.
    let now = Timespec { tv_sec: 0, tv_nsec: 0 };
    let ready = rustix::event::poll(&mut fds, Some(&now));
    ready == Ok(0) || !fds[0].revents().contains(PollFlags::ERR)
}

fn start() -> std::io::Result<OwnedFd> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let argv = [
        c"sh".to_owned(),
        c"-c".to_owned(),
        CString::new(SCRIPT).expect("no NUL in the script"),
        c"bash-mcp-guard".to_owned(),
        CString::new(crate::process::ids::run_marker_prefix()).expect("no NUL in the marker"),
        CString::new(crate::process::ids::session_dir_prefix().into_os_string().into_vec())
            .map_err(|_| std::io::Error::other("the session directory's path contains NUL"))?,
        CString::new(crate::process::ids::attach_socket_path().into_os_string().into_vec())
            .map_err(|_| std::io::Error::other("the attach socket's path contains NUL"))?,
        CString::new(crate::process::ids::output_dir_prefix().into_os_string().into_vec())
            .map_err(|_| std::io::Error::other("the output store's path contains NUL"))?,
        CString::new(std::process::id().to_string()).expect("digits"),
        CString::new(crate::process::ids::sandbox_temp_prefix().into_os_string().into_vec())
            .map_err(|_| std::io::Error::other("the sandbox temp dir's path contains NUL"))?,
    ];
    let envp = [c"PATH=/usr/bin:/bin".to_owned(), c"LC_ALL=C".to_owned()];
    let pid = crate::process::spawn::spawn_helper(c"/bin/sh", &argv, &envp, &[read.as_raw_fd()])?;
    // The script only starts the guard in the background: reap it at once.
    crate::process::spawn::reap(pid);
    drop(read);
    Ok(write)
}
