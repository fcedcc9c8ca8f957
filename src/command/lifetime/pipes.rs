//! A run's pipes: polling them, reading them into a per-thread buffer, and
//! writing stdin without SIGPIPE.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::time::Duration;

use super::OutputStream;
use crate::process::spawn;

pub(super) struct Pipe {
    pub(super) fd: OwnedFd,
    pub(super) stream: OutputStream,
    /// Whether the pipe has been grown past its default capacity.
    pub(super) grown: bool,
}

const READ_CHUNK: usize = 256 * 1024;
/// The read buffer, kept per thread between runs: a fresh 256 KiB buffer on
/// every call would cost an mmap, page faults and an munmap each time.
pub(super) struct ReadBuffer(Vec<u8>);

thread_local! {
    static SPARE_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

impl ReadBuffer {
    /// This thread's spare buffer, or a new one (e.g. for a run started from
    /// inside another run's output callback).
    pub(super) fn take() -> Self {
        let mut buf = SPARE_BUFFER.with(|spare| spare.take());
        buf.resize(READ_CHUNK, 0);
        Self(buf)
    }
}

impl Drop for ReadBuffer {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.0);
        let _ = SPARE_BUFFER.try_with(|spare| spare.set(buf));
    }
}

impl std::ops::Deref for ReadBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl std::ops::DerefMut for ReadBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

/// Reads once from each pipe `poll` reported ready (`fds` starts with one
/// entry per pipe, in order) with `read`, which reads the stream from the
/// descriptor and delivers what it got; drops pipes at EOF.
pub(super) fn read_ready(
    pipes: &mut Vec<Pipe>,
    fds: &[libc::pollfd],
    read: &mut impl FnMut(OutputStream, BorrowedFd<'_>) -> ReadResult,
) {
    let mut index = 0;
    pipes.retain_mut(|pipe| {
        let ready = fds[index].revents != 0;
        index += 1;
        if !ready {
            return true;
        }
        match read(pipe.stream, pipe.fd.as_fd()) {
            ReadResult::Data(n) => {
                if n >= spawn::DEFAULT_PIPE_SIZE && !pipe.grown {
                    spawn::grow_pipe(&pipe.fd);
                    pipe.grown = true;
                }
                true
            }
            ReadResult::Eof => false,
            ReadResult::WouldBlock => true,
        }
    });
}

pub(super) fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd { fd, events, revents: 0 }
}

pub(super) fn poll(fds: &mut [libc::pollfd], wait: Duration) {
    // Round up so a sub-millisecond remainder does not spin.
    let ms = if wait == Duration::MAX {
        -1
    } else {
        wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int
    };
    // SAFETY: fds is a valid slice of pollfd.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if rc < 0 {
        // EINTR: the caller loops and re-polls.
        for fd in fds.iter_mut() {
            fd.revents = 0;
        }
    }
}

pub(super) enum ReadResult {
    Data(usize),
    Eof,
    WouldBlock,
}

pub(super) fn read_some(fd: BorrowedFd<'_>, buf: &mut [u8]) -> ReadResult {
    loop {
        match rustix::io::read(fd, &mut *buf) {
            Ok(0) => return ReadResult::Eof,
            Ok(n) => return ReadResult::Data(n),
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::AGAIN) => return ReadResult::WouldBlock,
            Err(_) => return ReadResult::Eof,
        }
    }
}

/// Writes to a pipe without letting a vanished reader raise SIGPIPE in the
/// host: the signal is blocked for this thread around the write, and a
/// SIGPIPE raised by it is consumed before the mask is restored.
pub(super) fn write_without_sigpipe(fd: RawFd, data: &[u8]) -> io::Result<usize> {
    // SAFETY: signal-set manipulation on local sets; write from a valid slice.
    unsafe {
        let mut pipe_set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe_set);
        libc::sigaddset(&mut pipe_set, libc::SIGPIPE);
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe_set, &mut old);
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut pending);
        let was_pending = libc::sigismember(&pending, libc::SIGPIPE) == 1;

        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let result = if n >= 0 {
            Ok(n as usize)
        } else {
            Err(io::Error::last_os_error())
        };

        if matches!(&result, Err(e) if e.raw_os_error() == Some(libc::EPIPE)) && !was_pending {
            let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            libc::sigtimedwait(&pipe_set, std::ptr::null_mut(), &zero);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        result
    }
}
