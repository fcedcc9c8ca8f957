//! The seccomp user-notification listener, behind a safe interface: the
//! filter's installation that makes it, the ioctls that receive a call,
//! confirm it is still waiting, answer it or hand it a descriptor, and the
//! read of the calling process's memory. No safe crate covers these, so
//! the whole of the observer's `unsafe` is here: the installation, one
//! block for every ioctl (each typed with its argument) and the read.

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

/// One of the listener's ioctls, with the value it reads or writes: each
/// request is typed with its own argument, so [`ioctl`] can make no other.
enum Request<'a> {
    SetFlags(libc::c_ulong),
    Receive(&'a mut libc::seccomp_notif),
    IdValid(&'a mut u64),
    Send(&'a mut libc::seccomp_notif_resp),
    AddFd(&'a libc::seccomp_notif_addfd),
}

/// Makes `request` on `listener`; the ioctl's result (negative on failure,
/// with errno set).
fn ioctl(listener: &OwnedFd, request: Request<'_>) -> libc::c_int {
    let fd = listener.as_raw_fd();
    // SAFETY: each request passes the argument type the kernel expects for
    // it (linux/seccomp.h): flags by value, or a reference to a value we
    // own or borrow for the call, which the kernel reads or (RECV) writes
    // whole; a seccomp_notif written by the kernel is plain data.
    unsafe {
        match request {
            Request::SetFlags(flags) => libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS, flags),
            Request::Receive(notif) => {
                libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_RECV, notif as *mut libc::seccomp_notif)
            }
            Request::IdValid(id) => libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, id as *mut u64),
            Request::Send(response) => libc::ioctl(
                fd,
                libc::SECCOMP_IOCTL_NOTIF_SEND,
                response as *mut libc::seccomp_notif_resp,
            ),
            Request::AddFd(addfd) => libc::ioctl(
                fd,
                libc::SECCOMP_IOCTL_NOTIF_ADDFD,
                addfd as *const libc::seccomp_notif_addfd,
            ),
        }
    }
}

/// Asks the kernel to wake the handler on the target's CPU and back
/// (Linux 6.6+; an older kernel refuses, and answers are only slower).
pub fn sync_wake_up(listener: &OwnedFd) {
    ioctl(listener, Request::SetFlags(SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP));
}

/// The next notified call; `None` when the target died before it was read
/// (`ENOENT`) or the wait was interrupted.
pub fn receive(listener: &OwnedFd) -> Option<libc::seccomp_notif> {
    // All-zero, as the kernel wants it (it refuses a notif with data in it).
    let mut notif = libc::seccomp_notif {
        id: 0,
        pid: 0,
        flags: 0,
        data: libc::seccomp_data {
            nr: 0,
            arch: 0,
            instruction_pointer: 0,
            args: [0; 6],
        },
    };
    (ioctl(listener, Request::Receive(&mut notif)) == 0).then_some(notif)
}

/// Whether the call `id` is still waiting for its answer (so its process,
/// read meanwhile, is the one that made it).
pub fn still_waiting(listener: &OwnedFd, id: u64) -> bool {
    let mut id = id;
    ioctl(listener, Request::IdValid(&mut id)) == 0
}

/// Answers the call `id`. A target that died meanwhile makes this fail
/// with `ENOENT`: nothing to answer.
pub fn respond(listener: &OwnedFd, mut response: libc::seccomp_notif_resp) {
    ioctl(listener, Request::Send(&mut response));
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
    if ioctl(listener, Request::AddFd(&addfd)) < 0 {
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
