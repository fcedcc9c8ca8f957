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

use std::net::{IpAddr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::OwnedFd;
use std::time::Duration;

use rustix::net::sockopt;
use rustix::process::{Pid, PidfdFlags, PidfdGetfdFlags};

use super::calls;
use super::target::Target;

/// The most sockets one command's handler keeps bound at once.
const MAX_PINS: usize = 64;

/// The first port an unprivileged process may bind (the handler runs with
/// the server's privileges, which may be more than the command's).
const FIRST_UNPRIVILEGED: u16 = 1024;

/// `PIDFD_THREAD` (linux/pidfd.h, Linux 6.9+; not in `libc` nor `rustix`):
/// a pidfd of the thread that made the call, which need not lead its process.
const PIDFD_THREAD: PidfdFlags = PidfdFlags::from_bits_retain(libc::O_EXCL as u32);

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
    let socket = rustix::process::pidfd_getfd(&pidfd, fd, PidfdGetfdFlags::empty()).ok()?;
    // The pid could have been reused since the call was read.
    (target.still_valid() && is_tcp(&socket)).then_some(socket)
}

/// A pidfd of the thread `tid` (Linux 6.9+), else of its process.
fn pidfd(tid: u32) -> Option<OwnedFd> {
    let open = |pid: i32, flags: PidfdFlags| rustix::process::pidfd_open(Pid::from_raw(pid)?, flags).ok();
    open(i32::try_from(tid).ok()?, PIDFD_THREAD).or_else(|| {
        let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
        let tgid = status
            .lines()
            .find_map(|l| l.strip_prefix("Tgid:"))?
            .trim()
            .parse()
            .ok()?;
        open(tgid, PidfdFlags::empty())
    })
}

fn is_tcp(socket: &OwnedFd) -> bool {
    use rustix::net::{AddressFamily, ipproto};
    sockopt::socket_protocol(socket).is_ok_and(|p| p == Some(ipproto::TCP))
        && matches!(
            sockopt::socket_domain(socket),
            Ok(AddressFamily::INET | AddressFamily::INET6)
        )
}

fn listening(socket: &OwnedFd) -> bool {
    sockopt::socket_acceptconn(socket).unwrap_or(false)
}

/// The internet address in the command's `sockaddr` bytes, whole (flow
/// label and scope too); `EINVAL` where the kernel would say it, for an
/// address shorter than its family's.
fn socket_addr(sockaddr: &[u8]) -> Result<SocketAddr, i32> {
    let (ip, port) = calls::inet_peer(sockaddr).ok_or(libc::EINVAL)?;
    let word = |at: usize| {
        sockaddr
            .get(at..at + 4)
            .map_or(0, |b| u32::from_ne_bytes(b.try_into().unwrap_or_default()))
    };
    match ip {
        IpAddr::V4(_) if sockaddr.len() < std::mem::size_of::<libc::sockaddr_in>() => Err(libc::EINVAL),
        IpAddr::V4(ip) => Ok(SocketAddrV4::new(ip, port).into()),
        // `sin6_flowinfo` at 4, `sin6_scope_id` at 24 (absent from the
        // older, 24-byte form, where it is 0).
        IpAddr::V6(ip) => Ok(SocketAddrV6::new(ip, port, word(4), word(24)).into()),
    }
}

fn bind(socket: &OwnedFd, sockaddr: &[u8]) -> Result<(), i32> {
    rustix::net::bind(socket, &socket_addr(sockaddr)?).map_err(|e| e.raw_os_error())
}

/// How long a blocking connect made here may wait (a full accept queue
/// retries its SYN for minutes): the handler answers one call at a time.
const CONNECT_BOUND: Duration = Duration::from_secs(30);

fn connect(socket: &OwnedFd, sockaddr: &[u8]) -> Result<(), i32> {
    use rustix::net::sockopt::Timeout;
    let address = socket_addr(sockaddr)?;
    let unbounded = sockopt::socket_timeout(socket, Timeout::Send).is_ok_and(|t| t.is_none());
    if unbounded {
        let _ = sockopt::set_socket_timeout(socket, Timeout::Send, Some(CONNECT_BOUND));
    }
    let result = rustix::net::connect(socket, &address).map_err(|e| e.raw_os_error());
    if unbounded {
        let _ = sockopt::set_socket_timeout(socket, Timeout::Send, None);
    }
    result
}

fn local_port(socket: &OwnedFd) -> Option<u16> {
    let address = SocketAddr::try_from(rustix::net::getsockname(socket).ok()?).ok()?;
    Some(address.port())
}
