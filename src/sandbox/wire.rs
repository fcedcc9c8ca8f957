//! The channel between the host and what runs a sandboxed command (the
//! supervisor, the Landlock helper, the network's listener inside):
//! file descriptors passed with `SCM_RIGHTS`, a command's request as
//! length-prefixed byte strings, and the short fixed-size messages both
//! sides exchange while it runs. Numbers are big-endian, as on the attach
//! protocol's socket (`session/attach/wire.rs`).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Supervisor to host on the control socket: started and ready for requests.
pub const READY: u8 = b'R';
/// Host to supervisor on the control socket: a command's fds follow.
pub const COMMAND: u8 = b'C';
/// Supervisor to host on a command's socket: it started (value: its pid
/// inside its namespace).
pub const STARTED: u8 = b'S';
/// Supervisor to host: it could not start (value: the errno).
pub const FAILED: u8 = b'E';
/// Supervisor to host: the command's shell exited (value: its wait status).
pub const EXITED: u8 = b'X';
/// To the host, with the listener of the command's observing seccomp filter
/// attached (from a supervisor's init on the command's socket, or from the
/// Landlock helper on its own socket), before the command starts.
pub const LISTENER: u8 = b'L';
/// The Landlock helper to the host: no observing filter could be installed.
pub const NO_LISTENER: u8 = b'N';
/// Host to supervisor: signal the command's group (value: the signal;
/// SIGKILL reaches everything the command started).
pub const KILL: u8 = b'K';

/// Largest request accepted (argv and environment are bounded by the
/// kernel's own limits well below this).
pub const MAX_BODY: usize = 64 << 20;

/// The most fds one control message carries: the command's socket, stdin,
/// stdout and stderr.
pub const MAX_FDS: usize = 4;

/// One command to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    pub program: CString,
    pub argv: Vec<CString>,
    pub envp: Vec<CString>,
    pub cwd: CString,
}

impl Body {
    /// Length-prefixed encoding: total length, then the program, the argv
    /// count and strings, the environment count and strings, the cwd.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0u8; 4];
        let string = |out: &mut Vec<u8>, s: &[u8]| {
            out.extend_from_slice(&(s.len() as u32).to_be_bytes());
            out.extend_from_slice(s);
        };
        string(&mut out, self.program.as_bytes());
        for list in [&self.argv, &self.envp] {
            out.extend_from_slice(&(list.len() as u32).to_be_bytes());
            for s in list {
                string(&mut out, s.as_bytes());
            }
        }
        string(&mut out, self.cwd.as_bytes());
        let total = (out.len() - 4) as u32;
        out[..4].copy_from_slice(&total.to_be_bytes());
        out
    }

    /// The inverse of [`Body::encode`] (without the total length).
    pub fn decode(data: &[u8]) -> io::Result<Body> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "malformed supervisor request");
        let mut at = 0usize;
        let u32_at = |at: &mut usize| -> io::Result<usize> {
            let bytes = data.get(*at..*at + 4).ok_or_else(bad)?;
            *at += 4;
            Ok(u32::from_be_bytes(bytes.try_into().expect("four bytes")) as usize)
        };
        let string = |at: &mut usize| -> io::Result<CString> {
            let len = u32_at(at)?;
            let bytes = data.get(*at..*at + len).ok_or_else(bad)?;
            *at += len;
            CString::new(bytes).map_err(|_| bad())
        };
        let program = string(&mut at)?;
        let mut lists = [Vec::new(), Vec::new()];
        for list in &mut lists {
            let count = u32_at(&mut at)?;
            if count > data.len() {
                return Err(bad());
            }
            for _ in 0..count {
                list.push(string(&mut at)?);
            }
        }
        let cwd = string(&mut at)?;
        if at != data.len() {
            return Err(bad());
        }
        let [argv, envp] = lists;
        Ok(Body {
            program,
            argv,
            envp,
            cwd,
        })
    }
}

/// Sends `data` with `fds` attached (`SCM_RIGHTS`), without SIGPIPE.
pub fn send_with_fds(sock: RawFd, data: &[u8], fds: &[RawFd]) -> io::Result<()> {
    let mut space = [0u64; 8]; // room for MAX_FDS fds, aligned for cmsghdr
    let fd_bytes = std::mem::size_of_val(fds) as u32;
    // SAFETY: msghdr and iovec are plain data; the pointers set below stay
    // valid for the sendmsg call; CMSG_* compute offsets inside `space`,
    // which is large enough for MAX_FDS fds.
    unsafe {
        assert!(fds.len() <= MAX_FDS && libc::CMSG_SPACE(fd_bytes) as usize <= std::mem::size_of_val(&space));
        let mut iov = libc::iovec {
            iov_base: data.as_ptr().cast_mut().cast(),
            iov_len: data.len(),
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            msg.msg_control = space.as_mut_ptr().cast();
            msg.msg_controllen = libc::CMSG_SPACE(fd_bytes) as _;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(fd_bytes) as _;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(cmsg).cast::<RawFd>(), fds.len());
        }
        loop {
            let n = libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL);
            if n >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// Receives one message into `buf` with the fds attached to it (made
/// close-on-exec). `Ok((0, []))` is end of file.
pub fn recv_with_fds(sock: RawFd, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut space = [0u64; 8];
    // SAFETY: as in send_with_fds; the kernel writes at most msg_controllen
    // bytes of control data, and every fd it hands over is read once into
    // an OwnedFd.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&space) as _;
        let n = loop {
            let n = libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC);
            if n >= 0 {
                break n as usize;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        };
        let mut fds = Vec::new();
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                let count = ((*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        Ok((n, fds))
    }
}

/// Writes all of `data` (a blocking socket), without SIGPIPE.
pub fn write_all(sock: RawFd, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        // SAFETY: data is valid for data.len() bytes.
        let n = unsafe { libc::send(sock, data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        data = &data[n as usize..];
    }
    Ok(())
}

/// Fills `buf` from a blocking socket; `Ok(false)` at end of file before
/// the first byte.
pub fn read_exact(sock: RawFd, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: the slice is valid for its length.
        let n = unsafe { libc::read(sock, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            if got == 0 {
                return Ok(false);
            }
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        got += n as usize;
    }
    Ok(true)
}

/// One fixed-size message: a tag and a value.
pub fn message(tag: u8, value: i32) -> [u8; 5] {
    let v = value.to_be_bytes();
    [tag, v[0], v[1], v[2], v[3]]
}

/// Sends a message without blocking and without SIGPIPE (a peer that is
/// gone makes it a no-op).
pub fn send_message(sock: RawFd, tag: u8, value: i32) -> io::Result<()> {
    let m = message(tag, value);
    // SAFETY: m is valid for its length.
    let n = unsafe { libc::send(sock, m.as_ptr().cast(), m.len(), libc::MSG_NOSIGNAL) };
    if n == m.len() as isize {
        Ok(())
    } else if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Err(io::ErrorKind::WriteZero.into())
    }
}

/// Reads one message; `None` at end of file.
pub fn read_message(sock: RawFd) -> io::Result<Option<(u8, i32)>> {
    let mut m = [0u8; 5];
    if !read_exact(sock, &mut m)? {
        return Ok(None);
    }
    Ok(Some((m[0], i32::from_be_bytes([m[1], m[2], m[3], m[4]]))))
}

/// A connected pair of close-on-exec Unix sockets of `kind`.
pub fn socket_pair(kind: libc::c_int) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid two-element array.
    if unsafe { libc::socketpair(libc::AF_UNIX, kind | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: socketpair returned two fresh fds that we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Whether `fd` has data (or end of file) to read right now.
pub fn readable(fd: &OwnedFd) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; a zero timeout only looks.
    unsafe { libc::poll(&mut p, 1, 0) == 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips() {
        let body = Body {
            program: c"/bin/sh".to_owned(),
            argv: vec![c"sh".to_owned(), c"-c".to_owned(), c"echo hi".to_owned()],
            envp: vec![c"A=1".to_owned()],
            cwd: c"/tmp".to_owned(),
        };
        let data = body.encode();
        let total = u32::from_be_bytes(data[..4].try_into().unwrap()) as usize;
        assert_eq!(total, data.len() - 4);
        assert_eq!(Body::decode(&data[4..]).unwrap(), body);
        assert!(Body::decode(&data[4..data.len() - 1]).is_err());
    }

    #[test]
    fn numbers_are_big_endian() {
        assert_eq!(message(KILL, 9), [KILL, 0, 0, 0, 9]);
        let body = Body {
            program: c"sh".to_owned(),
            argv: vec![],
            envp: vec![],
            cwd: c"/".to_owned(),
        };
        // Total 19: the program's length and bytes, two empty lists, the cwd's length and byte.
        assert_eq!(body.encode()[..10], [0, 0, 0, 19, 0, 0, 0, 2, b's', b'h']);
    }

    #[test]
    fn fds_travel_with_a_message() {
        let (a, b) = socket_pair(libc::SOCK_SEQPACKET).unwrap();
        let (r, w) = crate::process::spawn::pipe().unwrap();
        send_with_fds(a.as_raw_fd(), &[COMMAND], &[w.as_raw_fd()]).unwrap();
        drop(w);
        let mut buf = [0u8; 8];
        let (n, fds) = recv_with_fds(b.as_raw_fd(), &mut buf).unwrap();
        assert_eq!((n, buf[0], fds.len()), (1, COMMAND, 1));
        // SAFETY: writes one byte from a static slice to the received pipe end.
        assert_eq!(unsafe { libc::write(fds[0].as_raw_fd(), b"x".as_ptr().cast(), 1) }, 1);
        let mut got = [0u8; 1];
        assert!(read_exact(r.as_raw_fd(), &mut got).unwrap());
        assert_eq!(&got, b"x");
        drop(a);
        assert_eq!(recv_with_fds(b.as_raw_fd(), &mut buf).unwrap().0, 0);
    }
}
