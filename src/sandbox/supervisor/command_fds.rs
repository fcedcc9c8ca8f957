//! A command's fds on the host: its socket and pipes, whose far ends go to
//! the supervisor with the request. A supervisor keeps one set made for
//! its next command, made once the current one has started, while the
//! host only waits for it (not before: a body sent on the command's socket
//! would wait): a request then makes only what the spare set lacks (a
//! stdin or stderr pipe).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Mutex, PoisonError};

use super::{Remote, dev_null};
use crate::process::spawn::{self, Child, Group, SpawnSpec, Streams};
use crate::sandbox::wire;

/// The fds every command needs: its socket (the host's end, a duplicate of
/// it that watches for the exit, the supervisor's end), its stdout pipe
/// (the read end already non-blocking) and /dev/null for a stdin without
/// a pipe.
pub(super) struct Common {
    host_end: OwnedFd,
    watch: Option<OwnedFd>,
    their_end: OwnedFd,
    out_r: OwnedFd,
    out_w: OwnedFd,
    null: OwnedFd,
}

impl Common {
    fn new() -> io::Result<Common> {
        let (host_end, their_end) = wire::socket_pair(libc::SOCK_STREAM)?;
        // The command's socket doubles as its "pidfd": readable once it exits.
        let watch = rustix::io::fcntl_dupfd_cloexec(&host_end, 3).ok();
        let (out_r, out_w) = spawn::pipe()?;
        spawn::set_nonblocking(&out_r);
        Ok(Common {
            host_end,
            watch,
            their_end,
            out_r,
            out_w,
            null: dev_null()?,
        })
    }
}

/// A supervisor's spare set, for its next command.
#[derive(Default)]
pub(super) struct Spare(Mutex<Option<Common>>);

impl Spare {
    /// The spare set, or a new one when there is none (another command
    /// took it, or making it failed).
    fn take_or_make(&self) -> io::Result<Common> {
        match self.0.lock().unwrap_or_else(PoisonError::into_inner).take() {
            Some(common) => Ok(common),
            None => Common::new(),
        }
    }

    /// Makes the next command's set unless one waits already. Running out
    /// of fds here is no one's failure yet: the next command makes its own
    /// and reports it.
    pub fn refill(&self) {
        if self.0.lock().unwrap_or_else(PoisonError::into_inner).is_some() {
            return;
        }
        if let Ok(common) = Common::new() {
            let mut spare = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            if spare.is_none() {
                *spare = Some(common);
            }
        }
    }

    /// Whether a set waits, for tests.
    #[cfg(test)]
    pub fn is_full(&self) -> bool {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }
}

/// One command's fds: the common set with its stdin pipe (else it reads
/// /dev/null) and, unless merged, its stderr pipe.
pub(super) struct CommandFds {
    common: Common,
    stdin: Option<(OwnedFd, OwnedFd)>,
    err: Option<(OwnedFd, OwnedFd)>,
}

impl CommandFds {
    /// The fds `spec` needs, from `spare` where it has them.
    pub fn new(spec: &SpawnSpec<'_>, spare: &Spare) -> io::Result<CommandFds> {
        let common = spare.take_or_make()?;
        let stdin = if spec.stdin_pipe { Some(spawn::pipe()?) } else { None };
        let err = match spec.streams {
            Streams::Separate => Some(spawn::pipe()?),
            Streams::Merged => None,
        };
        Ok(CommandFds { common, stdin, err })
    }

    /// The far ends, in the order the request carries them: the command's
    /// socket, its stdin, stdout and stderr.
    pub fn far_ends(&self) -> [BorrowedFd<'_>; 4] {
        let stdin = self.stdin.as_ref().map_or(self.common.null.as_fd(), |(r, _)| r.as_fd());
        let err_w = self.err.as_ref().map_or(self.common.out_w.as_fd(), |(_, w)| w.as_fd());
        [self.common.their_end.as_fd(), stdin, self.common.out_w.as_fd(), err_w]
    }

    /// Closes the far ends, which only the supervisor holds now (so that
    /// end of file can come), and keeps the host's.
    pub fn sent(self) -> HostFds {
        let Common {
            host_end,
            watch,
            their_end,
            out_r,
            out_w,
            null,
        } = self.common;
        drop((their_end, out_w, null));
        HostFds {
            host_end,
            watch,
            out_r,
            stdin: self.stdin.map(|(r, w)| {
                drop(r);
                spawn::set_nonblocking(&w);
                w
            }),
            err_r: self.err.map(|(r, w)| {
                drop(w);
                spawn::set_nonblocking(&r);
                r
            }),
        }
    }
}

/// The host's ends of a command's fds, once the far ends went to the
/// supervisor.
pub(super) struct HostFds {
    host_end: OwnedFd,
    watch: Option<OwnedFd>,
    out_r: OwnedFd,
    stdin: Option<OwnedFd>,
    err_r: Option<OwnedFd>,
}

impl HostFds {
    /// The command's socket, on which the supervisor answers.
    pub fn socket(&self) -> &OwnedFd {
        &self.host_end
    }

    /// The started command, its socket as its group and "pidfd".
    pub fn into_child(self) -> Child {
        Child {
            group: Group::Remote(Box::new(Remote { sock: self.host_end })),
            pidfd: self.watch,
            stdin: self.stdin,
            stdout: self.out_r,
            stderr: self.err_r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn spec(stdin_pipe: bool, streams: Streams) -> SpawnSpec<'static> {
        SpawnSpec {
            program: c"/bin/true",
            argv: &[],
            envp: &[],
            cwd: c"/",
            stdin_pipe,
            streams,
            via: None,
            pass_fds: &[],
            new_session: true,
        }
    }

    /// The device number of what `fd` is open on, and whether it is a
    /// character device.
    fn device(fd: BorrowedFd<'_>) -> (u64, bool) {
        let stat = rustix::fs::fstat(fd).unwrap();
        (
            stat.st_rdev,
            rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::CharacterDevice,
        )
    }

    #[test]
    fn a_command_takes_the_spare_set_and_a_refill_makes_the_next_ones() {
        let spare = Spare::default();
        spare.refill();
        assert!(spare.is_full());
        let fds = CommandFds::new(&spec(false, Streams::Merged), &spare).unwrap();
        assert!(!spare.is_full(), "the command took the spare set");
        let [socket, stdin, stdout, stderr] = fds.far_ends();
        assert_eq!(device(stdin), device(dev_null().unwrap().as_fd()), "no pipe: /dev/null");
        assert_eq!(stdout.as_raw_fd(), stderr.as_raw_fd(), "merged");
        assert_ne!(socket.as_raw_fd(), stdout.as_raw_fd());
        spare.refill();
        assert!(spare.is_full());
        // Without a spare set, a command makes its own.
        let own = Spare::default();
        assert!(CommandFds::new(&spec(false, Streams::Merged), &own).is_ok());
    }

    #[test]
    fn a_command_with_stdin_and_separate_streams_gets_pipes_of_its_own() {
        let spare = Spare::default();
        let fds = CommandFds::new(&spec(true, Streams::Separate), &spare).unwrap();
        let [socket, stdin, stdout, stderr] = fds.far_ends();
        let raw = [socket, stdin, stdout, stderr].map(|fd| fd.as_raw_fd());
        assert!(
            raw.iter()
                .all(|fd| raw.iter().filter(|other| *other == fd).count() == 1),
            "{raw:?}"
        );
        assert!(!device(stdin).1, "a pipe, not /dev/null");
        let child = fds.sent().into_child();
        assert!(child.stdin.is_some() && child.stderr.is_some());
    }

    #[test]
    fn once_sent_the_far_ends_are_closed_on_the_host() {
        let spare = Spare::default();
        let fds = CommandFds::new(&spec(false, Streams::Separate), &spare).unwrap();
        let host = fds.sent();
        // No one holds the far ends: end of file on the socket and both pipes.
        let mut buf = [0u8; 1];
        assert_eq!(rustix::io::read(host.socket(), &mut buf), Ok(0));
        let child = host.into_child();
        assert_eq!(rustix::io::read(&child.stdout, &mut buf), Ok(0));
        assert_eq!(rustix::io::read(child.stderr.as_ref().unwrap(), &mut buf), Ok(0));
        assert!(wire::readable(child.pidfd.as_ref().unwrap()), "the watch sees the end");
    }
}
