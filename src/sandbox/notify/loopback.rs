//! A command's own servers on the loopback, where it shares the host's
//! network (Landlock with the network open by name): Landlock lets the
//! command bind no TCP port and connect to its proxy's port only, so the
//! handler does both for it, on its own copy of the address, and only
//! this much: a bind to `127.0.0.1` or `::1` (every TCP socket there is
//! already bound to the loopback device), and a connect to a loopback
//! address and port where a socket this command bound is listening.
//!
//! The handler keeps a duplicate of each socket it bound ("pins"), so the
//! port stays the command's while it decides a connect: a host service
//! cannot take it over between the check and the connect (`SO_REUSEPORT`,
//! which would let one share it, is refused by the command's filter). A
//! connect to any other loopback port goes on into the kernel, which
//! Landlock refuses: the host's own services stay out of reach.

use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::calls;
use super::target::Target;

/// The most sockets one command's handler keeps bound at once.
const MAX_PINS: usize = 64;

/// The first port an unprivileged process may bind (the handler runs with
/// the server's privileges, which may be more than the command's).
const FIRST_UNPRIVILEGED: u16 = 1024;

/// `PIDFD_THREAD` (linux/pidfd.h, Linux 6.9+; not in `libc`): a pidfd of
/// the thread that made the call, which need not lead its process.
const PIDFD_THREAD: libc::c_int = libc::O_EXCL;

/// What a bind became.
pub enum Bound {
    /// Not an internet address (a Unix socket's): the kernel decides.
    NotInet,
    /// Refused, naming the address (outside what [`Loopback`] binds).
    Refused(String),
    /// The handler made it: `Ok(())`, or the errno the call gets.
    Made(Result<(), i32>),
}

/// One socket the command bound, kept by the handler.
struct Pin {
    ip: IpAddr,
    port: u16,
    socket: OwnedFd,
}

/// The sockets one command bound on the loopback.
#[derive(Default)]
pub struct Loopback {
    pins: Vec<Pin>,
}

impl Loopback {
    /// `bind(fd, sockaddr)` made for the target, if it is allowed.
    pub fn bind(&mut self, target: &Target<'_>, fd: i32, sockaddr: &[u8]) -> Bound {
        let Some((ip, port)) = calls::inet_peer(sockaddr) else {
            return Bound::NotInet;
        };
        let ip = plain(ip);
        let loopback =
            ip == IpAddr::from(std::net::Ipv4Addr::LOCALHOST) || ip == IpAddr::from(std::net::Ipv6Addr::LOCALHOST);
        if !loopback || (port != 0 && port < FIRST_UNPRIVILEGED) {
            return Bound::Refused(calls::peer_text(ip, port));
        }
        let Some(socket) = target_socket(target, fd) else {
            return Bound::Made(Err(libc::EACCES));
        };
        let mut result = bind(&socket, sockaddr);
        if result == Err(libc::EADDRINUSE) && self.pins.iter().any(|p| p.port == port) {
            // A server of the command's that it closed, kept here: let the
            // port go (if the command still holds it, it stays in use).
            self.pins.retain(|p| p.port != port);
            result = bind(&socket, sockaddr);
        }
        if result.is_ok()
            && let Some(port) = local_port(&socket)
        {
            if self.pins.len() == MAX_PINS {
                self.pins.remove(0);
            }
            self.pins.push(Pin { ip, port, socket });
        }
        Bound::Made(result)
    }

    /// `connect(fd, sockaddr)` made for the target when it reaches a
    /// server of the command's own; `None`: not one (the kernel decides).
    pub fn connect(&self, target: &Target<'_>, fd: i32, sockaddr: &[u8]) -> Option<Result<(), i32>> {
        let (ip, port) = calls::inet_peer(sockaddr)?;
        let ip = plain(ip);
        self.pins
            .iter()
            .find(|p| p.port == port && p.ip == ip && listening(&p.socket))?;
        let socket = target_socket(target, fd)?;
        Some(connect(&socket, sockaddr))
    }
}

/// An IPv4 address mapped into IPv6 as the IPv4 one.
fn plain(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The target's TCP socket `fd` (the same open socket, duplicated into the
/// handler), if the call is still the one waiting.
fn target_socket(target: &Target<'_>, fd: i32) -> Option<OwnedFd> {
    let pidfd = pidfd(target.pid)?;
    // SAFETY: pidfd_getfd with plain integers; the result is ours.
    let got = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    if got < 0 {
        return None;
    }
    // SAFETY: a fresh fd that nothing else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(got as i32) };
    // The pid could have been reused since the call was read.
    (target.still_valid() && is_tcp(&socket)).then_some(socket)
}

/// A pidfd of the thread `tid` (Linux 6.9+), else of its process.
fn pidfd(tid: u32) -> Option<OwnedFd> {
    let open = |pid: i64, flags: libc::c_int| {
        // SAFETY: pidfd_open with plain integers; the result is ours.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, flags) };
        // SAFETY: a fresh fd that nothing else owns.
        (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
    };
    open(tid.into(), PIDFD_THREAD).or_else(|| {
        let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
        let tgid = status
            .lines()
            .find_map(|l| l.strip_prefix("Tgid:"))?
            .trim()
            .parse()
            .ok()?;
        open(tgid, 0)
    })
}

fn int_option(socket: &OwnedFd, level: libc::c_int, name: libc::c_int) -> Option<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes one int we own, and its length.
    let rc = unsafe { libc::getsockopt(socket.as_raw_fd(), level, name, (&raw mut value).cast(), &mut len) };
    (rc == 0).then_some(value)
}

fn is_tcp(socket: &OwnedFd) -> bool {
    int_option(socket, libc::SOL_SOCKET, libc::SO_PROTOCOL) == Some(libc::IPPROTO_TCP)
        && matches!(
            int_option(socket, libc::SOL_SOCKET, libc::SO_DOMAIN),
            Some(libc::AF_INET | libc::AF_INET6)
        )
}

fn listening(socket: &OwnedFd) -> bool {
    int_option(socket, libc::SOL_SOCKET, libc::SO_ACCEPTCONN) == Some(1)
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

fn bind(socket: &OwnedFd, sockaddr: &[u8]) -> Result<(), i32> {
    // SAFETY: bind reads the address of the length given, our own copy.
    let rc = unsafe {
        libc::bind(
            socket.as_raw_fd(),
            sockaddr.as_ptr().cast(),
            sockaddr.len() as libc::socklen_t,
        )
    };
    if rc == 0 { Ok(()) } else { Err(errno()) }
}

/// How long a blocking connect made here may wait (a full accept queue
/// retries its SYN for minutes): the handler answers one call at a time.
const CONNECT_BOUND: libc::timeval = libc::timeval { tv_sec: 30, tv_usec: 0 };

fn connect(socket: &OwnedFd, sockaddr: &[u8]) -> Result<(), i32> {
    let fd = socket.as_raw_fd();
    let size = std::mem::size_of::<libc::timeval>() as libc::socklen_t;
    let mut before = libc::timeval { tv_sec: 0, tv_usec: 0 };
    let mut len = size;
    // SAFETY: getsockopt writes one timeval we own, and its length.
    let read = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDTIMEO,
            (&raw mut before).cast(),
            &mut len,
        )
    };
    let unbounded = read == 0 && before.tv_sec == 0 && before.tv_usec == 0;
    if unbounded {
        let bound = CONNECT_BOUND;
        // SAFETY: setsockopt reads one timeval of the size given.
        unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDTIMEO, (&raw const bound).cast(), size) };
    }
    // SAFETY: connect reads the address of the length given, our own copy.
    let rc = unsafe { libc::connect(fd, sockaddr.as_ptr().cast(), sockaddr.len() as libc::socklen_t) };
    let result = if rc == 0 { Ok(()) } else { Err(errno()) };
    if unbounded {
        // SAFETY: setsockopt reads one timeval of the size given.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_SNDTIMEO,
                (&raw const before).cast(),
                size,
            )
        };
    }
    result
}

fn local_port(socket: &OwnedFd) -> Option<u16> {
    // SAFETY: sockaddr_storage is plain data.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: getsockname writes at most `len` bytes into the storage we own.
    let rc = unsafe { libc::getsockname(socket.as_raw_fd(), (&raw mut addr).cast(), &mut len) };
    if rc != 0 {
        return None;
    }
    // SAFETY: the storage is at least as large as the byte view taken of it.
    let bytes = unsafe { std::slice::from_raw_parts((&raw const addr).cast::<u8>(), len as usize) };
    calls::inet_peer(bytes).map(|(_, port)| port)
}
