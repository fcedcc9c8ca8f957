//! The seccomp user-notification listener, behind a safe interface: the
//! filter's installation that makes it, the ioctls that receive a call,
//! confirm it is still waiting, answer it or hand it a descriptor, and the
//! read of the calling process's memory. No safe crate covers these, so
//! the whole of the observer's `unsafe` is here, one block per call.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP` (linux/seccomp.h; not in `libc`).
const SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: libc::c_ulong = 1;

/// Installs `program` on the calling thread (which must have
/// `no_new_privs`; every process it starts inherits it) and returns the
/// listener, close-on-exec. Fails with `EBUSY` when a filter above already
/// has a listener (the host itself runs under one).
pub fn install(program: &[libc::sock_filter]) -> io::Result<OwnedFd> {
    let len = libc::c_ushort::try_from(program.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a seccomp program has at most 65535 instructions",
        )
    })?;
    let prog = libc::sock_fprog {
        len,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: seccomp reads `prog` and the `len` instructions it points to,
    // both alive for the call (it writes nothing through `filter`); its
    // result is a new descriptor that nothing else owns, or -1.
    unsafe {
        let fd = libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &prog as *const libc::sock_fprog,
        );
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd as libc::c_int))
    }
}

/// Asks the kernel to wake the handler on the target's CPU and back
/// (Linux 6.6+; an older kernel refuses, and answers are only slower).
pub fn sync_wake_up(listener: &OwnedFd) {
    // SAFETY: the ioctl takes the flags as its argument, no pointer.
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS,
            SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP,
        )
    };
}

/// The next notified call; `None` when the target died before it was read
/// (`ENOENT`) or the wait was interrupted.
pub fn receive(listener: &OwnedFd) -> Option<libc::seccomp_notif> {
    // SAFETY: seccomp_notif is plain data (all-zero is valid, and what the
    // kernel wants); the ioctl writes one into our own.
    unsafe {
        let mut notif: libc::seccomp_notif = std::mem::zeroed();
        (libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut notif) == 0).then_some(notif)
    }
}

/// Whether the call `id` is still waiting for its answer (so its process,
/// read meanwhile, is the one that made it).
pub fn still_waiting(listener: &OwnedFd, id: u64) -> bool {
    let mut id = id;
    // SAFETY: the ioctl reads one u64 we own.
    unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &mut id) == 0 }
}

/// Answers the call `id`. A target that died meanwhile makes this fail
/// with `ENOENT`: nothing to answer.
pub fn respond(listener: &OwnedFd, mut response: libc::seccomp_notif_resp) {
    // SAFETY: the ioctl reads one seccomp_notif_resp we own.
    unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &mut response) };
}

/// Puts `fd` in the command's descriptor table and answers its call `id`
/// with the number (`SECCOMP_ADDFD_FLAG_SEND`, Linux 5.14+); the errno
/// otherwise.
pub fn hand_over(listener: &OwnedFd, id: u64, fd: &OwnedFd, cloexec: bool) -> Result<(), i32> {
    let addfd = libc::seccomp_notif_addfd {
        id,
        flags: libc::SECCOMP_ADDFD_FLAG_SEND as u32,
        srcfd: fd.as_raw_fd() as u32,
        newfd: 0,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    // SAFETY: the ioctl reads one seccomp_notif_addfd we own.
    let rc = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ADDFD, &addfd) };
    if rc < 0 {
        Err(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
    } else {
        Ok(())
    }
}

/// Reads `buf.len()` bytes at `addr` in process `pid` (the target of a
/// call, in the listener's PID namespace, which need not be the one of the
/// `/proc` this process sees); how many it got.
pub fn read_memory(pid: u32, addr: u64, buf: &mut [u8]) -> usize {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: `local` covers `buf`, which we own; `remote` is only read by
    // the kernel, from the other process, which it checks access to.
    let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    n.max(0) as usize
}
