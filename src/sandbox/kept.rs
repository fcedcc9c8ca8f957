//! The host's side of a command the Landlock helper keeps (see
//! [`reaper`](super::reaper)): the helper is started with a control socket
//! as its fd 3, and the command is reached only through it. Signals become
//! messages (the helper passes them on, or kills everything for SIGKILL),
//! the shell's exit status comes back on it, and closing it ends everything
//! the command started. The run's marker is handed to the helper in its
//! arguments rather than its environment, so that the guard, which kills
//! what carries the marker once the host has died, leaves the helper alive
//! to kill everything it keeps (`env -i` children included).

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex, PoisonError};

use super::exec_helper;
use super::wire;
use crate::process::spawn::{self, Child, Group, Launch, RemoteGroup, SpawnSpec};

/// What the host learned about the helper of one command.
#[derive(Debug, Default)]
pub struct KeptState {
    /// The signal that ended the helper before it reported the command's
    /// end (the command's processes were then killed by the host, as far
    /// as it can reach them).
    helper_killed: Mutex<Option<i32>>,
}

impl KeptState {
    /// The signal that killed the helper before the command ended, if one did.
    pub fn helper_killed(&self) -> Option<i32> {
        *self.helper_killed.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Starts one command through the Landlock helper as its keeper.
#[derive(Debug, Clone, Default)]
pub struct KeptLaunch {
    pub state: Arc<KeptState>,
}

impl Launch for KeptLaunch {
    fn launch(&self, spec: &SpawnSpec<'_>) -> io::Result<Child> {
        let (ours, theirs) = wire::socket_pair(libc::SOCK_STREAM)?;
        let marker = format!("{}=", crate::process::ids::RUN_MARKER_VAR);
        let (markers, envp): (Vec<&CStr>, Vec<&CStr>) = spec
            .envp
            .iter()
            .partition(|e| e.to_bytes().starts_with(marker.as_bytes()));
        let mut argv = spec.argv.to_vec();
        for entry in markers {
            argv = exec_helper::env_arg(&argv, entry);
        }
        let mut pass_fds = vec![theirs.as_raw_fd()];
        pass_fds.extend_from_slice(spec.pass_fds);
        let child = spawn::spawn(&SpawnSpec {
            argv: &argv,
            envp: &envp,
            pass_fds: &pass_fds,
            new_session: true,
            via: None,
            ..*spec
        })?;
        drop(theirs);
        let Group::Local(pid) = child.group else {
            unreachable!("a spawn without a launcher starts a local child");
        };
        // The control socket doubles as the "pidfd": readable once the
        // helper reports the shell's exit (or dies).
        let watch = rustix::io::fcntl_dupfd_cloexec(&ours, 3).ok();
        Ok(Child {
            group: Group::Remote(Box::new(Kept {
                sock: ours,
                pid,
                state: self.state.clone(),
            })),
            pidfd: watch,
            ..child
        })
    }
}

/// A command kept by a helper that is our own child, `pid`: the leader of
/// the command's process group, so its group id stays ours until we reap it.
#[derive(Debug)]
struct Kept {
    sock: OwnedFd,
    pid: libc::pid_t,
    state: Arc<KeptState>,
}

impl RemoteGroup for Kept {
    fn signal(&self, signal: libc::c_int) {
        if wire::send_message(self.sock.as_fd(), wire::KILL, signal).is_err() {
            // The helper is gone: reach what is left in its group directly.
            spawn::kill_group(self.pid, signal);
        }
    }

    fn has_exited(&self) -> bool {
        wire::readable(&self.sock)
    }

    fn wait_status(&self) -> Option<i32> {
        let reported = loop {
            match wire::read_message(self.sock.as_fd()) {
                Ok(Some((wire::EXITED, status))) => break Some(status),
                Ok(Some(_)) => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(None) | Err(_) => break None,
            }
        };
        if reported.is_none() {
            // The helper died without reporting: what it kept in its group
            // goes now (its pid is not reaped yet, so its group id is still
            // this command's).
            spawn::kill_group(self.pid, libc::SIGKILL);
        }
        let helper = spawn::reap_status(self.pid);
        match reported {
            Some(status) => Some(super::supervisor::shell_status(status)),
            None => {
                if let Some(code) = helper.filter(|&c| c > 128) {
                    *self.state.helper_killed.lock().unwrap_or_else(PoisonError::into_inner) = Some(code - 128);
                }
                helper
            }
        }
    }
}
