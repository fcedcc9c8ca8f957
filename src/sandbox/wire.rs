//! The channel between the host and what runs a sandboxed command (the
//! supervisor, the Landlock helper, the network's listener inside):
//! file descriptors passed with `SCM_RIGHTS`, a command's request as
//! length-prefixed byte strings, and the short fixed-size messages both
//! sides exchange while it runs. Numbers are big-endian, as on the attach
//! protocol's socket (`session/attach/wire.rs`).

use std::ffi::{CStr, CString};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
    recvmsg, sendmsg,
};

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

/// An init to its supervisor, on the channel between them: it took a
/// request (and closed its copy of the control socket).
pub const TAKEN: u8 = b'T';
/// An init to its supervisor: its command ended and its namespaces are
/// clear again; it waits for the control socket to take another request.
pub const BACK: u8 = b'B';
/// The supervisor to an init that came back, with the control socket
/// attached: take the next request.
pub const AGAIN: u8 = b'A';

/// Largest request accepted (argv and environment are bounded by the
/// kernel's own limits well below this).
pub const MAX_BODY: usize = 64 << 20;

/// Largest request body sent in the request message itself, after its
/// tag (a command and its environment are a few kilobytes); a larger one
/// follows on the command's socket.
pub const INLINE_BODY: usize = 16 << 10;

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

/// A body's parts, borrowed: what the host encodes for each command
/// without copying its environment first.
pub struct BodyParts<'a> {
    pub program: &'a CStr,
    pub argv: &'a [CString],
    pub envp: &'a [&'a CStr],
    pub cwd: &'a CStr,
}

impl BodyParts<'_> {
    /// `prefix` (a request's tag, or nothing) followed by the body's
    /// length-prefixed encoding: total length, then the program, the argv
    /// count and strings, the environment count and strings, the cwd.
    pub fn encode_after(&self, prefix: &[u8]) -> Vec<u8> {
        let strings = std::iter::once(self.program)
            .chain(self.argv.iter().map(CString::as_c_str))
            .chain(self.envp.iter().copied())
            .chain(std::iter::once(self.cwd));
        let length: usize = strings.map(|s| 4 + s.to_bytes().len()).sum::<usize>() + 4 + 4;
        let mut out = Vec::with_capacity(prefix.len() + 4 + length);
        out.extend_from_slice(prefix);
        out.extend_from_slice(&(length as u32).to_be_bytes());
        let string = |out: &mut Vec<u8>, s: &CStr| {
            out.extend_from_slice(&(s.to_bytes().len() as u32).to_be_bytes());
            out.extend_from_slice(s.to_bytes());
        };
        string(&mut out, self.program);
        out.extend_from_slice(&(self.argv.len() as u32).to_be_bytes());
        self.argv.iter().for_each(|s| string(&mut out, s));
        out.extend_from_slice(&(self.envp.len() as u32).to_be_bytes());
        self.envp.iter().for_each(|s| string(&mut out, s));
        string(&mut out, self.cwd);
        out
    }
}

#[cfg(test)]
impl Body {
    /// Length-prefixed encoding (see [`BodyParts::encode_after`]).
    pub fn encode(&self) -> Vec<u8> {
        let envp: Vec<&CStr> = self.envp.iter().map(CString::as_c_str).collect();
        BodyParts {
            program: &self.program,
            argv: &self.argv,
            envp: &envp,
            cwd: &self.cwd,
        }
        .encode_after(&[])
    }
}

impl Body {
    /// The inverse of [`BodyParts::encode_after`], total length included.
    pub fn decode_framed(data: &[u8]) -> io::Result<Body> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "malformed supervisor request");
        let (len, rest) = data.split_first_chunk::<4>().ok_or_else(bad)?;
        if u32::from_be_bytes(*len) as usize != rest.len() {
            return Err(bad());
        }
        Body::decode(rest)
    }

    /// The inverse of [`BodyParts::encode_after`] (without the total length).
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
pub fn send_with_fds(sock: BorrowedFd<'_>, data: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    assert!(fds.len() <= MAX_FDS, "at most {MAX_FDS} fds go with one message");
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() {
        control.push(SendAncillaryMessage::ScmRights(fds));
    }
    let data = [io::IoSlice::new(data)];
    rustix::io::retry_on_intr(|| sendmsg(sock, &data, &mut control, SendFlags::NOSIGNAL))?;
    Ok(())
}

/// Receives one message into `buf` with the fds attached to it (made
/// close-on-exec). `Ok((0, []))` is end of file.
pub fn recv_with_fds(sock: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut fds: [Option<OwnedFd>; MAX_FDS] = Default::default();
    let received = recv_fds_into(sock, buf, &mut fds)?;
    Ok((received, fds.into_iter().flatten().collect()))
}

/// [`recv_with_fds`] into `fds`, allocating nothing (what a process that
/// shares its parent's memory may call): the fds fill its first places;
/// any beyond its length close.
pub fn recv_fds_into(sock: BorrowedFd<'_>, buf: &mut [u8], fds: &mut [Option<OwnedFd>]) -> io::Result<usize> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut data = [io::IoSliceMut::new(buf)];
    let received = rustix::io::retry_on_intr(|| recvmsg(sock, &mut data, &mut control, RecvFlags::CMSG_CLOEXEC))?;
    let mut places = fds.iter_mut();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(passed) = message {
            for fd in passed {
                if let Some(place) = places.next() {
                    *place = Some(fd);
                }
            }
        }
    }
    Ok(received.bytes)
}

/// Writes all of `data` (a blocking socket), without SIGPIPE.
pub fn write_all(sock: BorrowedFd<'_>, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        let n = rustix::io::retry_on_intr(|| rustix::net::send(sock, data, SendFlags::NOSIGNAL))?;
        data = &data[n..];
    }
    Ok(())
}

/// Fills `buf` from a blocking socket; `Ok(false)` at end of file before
/// the first byte.
pub fn read_exact(sock: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        let n = rustix::io::retry_on_intr(|| rustix::io::read(sock, &mut buf[got..]))?;
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
pub fn send_message(sock: BorrowedFd<'_>, tag: u8, value: i32) -> io::Result<()> {
    let m = message(tag, value);
    match rustix::net::send(sock, &m, SendFlags::NOSIGNAL)? {
        n if n == m.len() => Ok(()),
        _ => Err(io::ErrorKind::WriteZero.into()),
    }
}

/// Reads one message; `None` at end of file.
pub fn read_message(sock: BorrowedFd<'_>) -> io::Result<Option<(u8, i32)>> {
    let mut m = [0u8; 5];
    if !read_exact(sock, &mut m)? {
        return Ok(None);
    }
    Ok(Some((m[0], i32::from_be_bytes([m[1], m[2], m[3], m[4]]))))
}

/// A connected pair of close-on-exec Unix sockets of `kind`.
pub fn socket_pair(kind: libc::c_int) -> io::Result<(OwnedFd, OwnedFd)> {
    let kind = rustix::net::SocketType::from_raw(kind as u32);
    let flags = rustix::net::SocketFlags::CLOEXEC;
    Ok(rustix::net::socketpair(
        rustix::net::AddressFamily::UNIX,
        kind,
        flags,
        None,
    )?)
}

/// Whether `fd` has data (or end of file) to read right now.
pub fn readable(fd: &OwnedFd) -> bool {
    let mut p = [PollFd::new(fd, PollFlags::IN)];
    rustix::event::poll(&mut p, Some(&Timespec::default())) == Ok(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

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
        // With its total length, as a request carries it inline: a length
        // that is not the rest's is refused.
        assert_eq!(Body::decode_framed(&data).unwrap(), body);
        assert!(Body::decode_framed(&data[..data.len() - 1]).is_err());
        assert!(Body::decode_framed(&[&data[..], b"x"].concat()).is_err());
        assert!(Body::decode_framed(&data[..3]).is_err());
        // A request: its tag, then the same bytes.
        let envp: Vec<&CStr> = body.envp.iter().map(CString::as_c_str).collect();
        let parts = BodyParts {
            program: &body.program,
            argv: &body.argv,
            envp: &envp,
            cwd: &body.cwd,
        };
        assert_eq!(parts.encode_after(&[COMMAND]), [&[COMMAND][..], &data].concat());
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
        send_with_fds(a.as_fd(), &[COMMAND], &[w.as_fd()]).unwrap();
        drop(w);
        let mut buf = [0u8; 8];
        let (n, fds) = recv_with_fds(b.as_fd(), &mut buf).unwrap();
        assert_eq!((n, buf[0], fds.len()), (1, COMMAND, 1));
        assert_eq!(rustix::io::write(&fds[0], b"x"), Ok(1));
        let mut got = [0u8; 1];
        assert!(read_exact(r.as_fd(), &mut got).unwrap());
        assert_eq!(&got, b"x");
        drop(a);
        assert_eq!(recv_with_fds(b.as_fd(), &mut buf).unwrap().0, 0);
    }
}
