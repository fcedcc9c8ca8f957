//! What each notified call names: the paths it writes (with the directory
//! each is relative to), the address it reaches, or the socket family it
//! asks for. A table as data; the handler walks it.

use std::net::IpAddr;

/// Where a path argument is: the index of its dirfd argument (`None`:
/// relative to the working directory) and of its pointer, and whether the
/// call follows a symlink in its last component (so the write lands where
/// the link leads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathArg {
    pub dirfd: Option<u8>,
    pub path: u8,
    pub follows: Follows,
}

/// Whether a call follows a symlink in a path's last component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follows {
    /// Never: it acts on the link itself (`unlink`, `rename`, `mkdir`...).
    No,
    /// Always (`truncate`, `chmod`...).
    Yes,
    /// Unless its open flags (the argument at this index) hold `O_NOFOLLOW`,
    /// or `O_CREAT` with `O_EXCL`.
    UnlessFlags(u8),
}

const fn cwd(path: u8) -> PathArg {
    PathArg {
        dirfd: None,
        path,
        follows: Follows::No,
    }
}

const fn at(dirfd: u8, path: u8) -> PathArg {
    PathArg {
        dirfd: Some(dirfd),
        path,
        follows: Follows::No,
    }
}

/// `arg`, through a symlink in its last component.
const fn following(arg: PathArg) -> PathArg {
    PathArg {
        follows: Follows::Yes,
        ..arg
    }
}

/// `arg`, through a symlink in its last component unless the open flags at
/// `flags` say not to.
const fn opening(arg: PathArg, flags: u8) -> PathArg {
    PathArg {
        follows: Follows::UnlessFlags(flags),
        ..arg
    }
}

impl Follows {
    /// Whether the call follows the link, given its open flags (`flags`,
    /// when this kind reads them).
    pub fn follows(self, flags: impl FnOnce(u8) -> u64) -> bool {
        match self {
            Follows::No => false,
            Follows::Yes => true,
            Follows::UnlessFlags(arg) => {
                let flags = flags(arg);
                let creat_excl = (libc::O_CREAT | libc::O_EXCL) as u64;
                flags & libc::O_NOFOLLOW as u64 == 0 && flags & creat_excl != creat_excl
            }
        }
    }
}

/// What one call names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// Paths it writes.
    Writes(&'static [PathArg]),
    /// `openat2`: a path, written only if its `open_how` (argument 2) says
    /// so (its flags, in memory, also say whether a last symlink is followed).
    OpenHow(PathArg),
    /// A socket address: pointer and length arguments; `send`: the call
    /// sends a datagram there (`sendto`) rather than connecting.
    Address { addr: u8, len: u8, send: bool },
    /// A new socket of the family in argument 0.
    Socket,
    /// `bind`: the socket (argument 0) and its address's pointer and length.
    Bind { addr: u8, len: u8 },
}

/// The table: system call number to what it names.
#[cfg(target_arch = "x86_64")]
const TABLE: &[(i64, Named)] = &[
    (libc::SYS_open, Named::Writes(&[opening(cwd(0), 1)])),
    (libc::SYS_creat, Named::Writes(&[following(cwd(0))])),
    (libc::SYS_mkdir, Named::Writes(&[cwd(0)])),
    (libc::SYS_mknod, Named::Writes(&[cwd(0)])),
    (libc::SYS_unlink, Named::Writes(&[cwd(0)])),
    (libc::SYS_rmdir, Named::Writes(&[cwd(0)])),
    (libc::SYS_rename, Named::Writes(&[cwd(0), cwd(1)])),
    (libc::SYS_link, Named::Writes(&[cwd(1)])),
    (libc::SYS_symlink, Named::Writes(&[cwd(1)])),
    (libc::SYS_truncate, Named::Writes(&[following(cwd(0))])),
    (libc::SYS_chmod, Named::Writes(&[following(cwd(0))])),
    (libc::SYS_chown, Named::Writes(&[following(cwd(0))])),
    (libc::SYS_lchown, Named::Writes(&[cwd(0)])),
    (libc::SYS_openat, Named::Writes(&[opening(at(0, 1), 2)])),
    (libc::SYS_openat2, Named::OpenHow(at(0, 1))),
    (libc::SYS_mkdirat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_mknodat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_unlinkat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_renameat, Named::Writes(&[at(0, 1), at(2, 3)])),
    (libc::SYS_renameat2, Named::Writes(&[at(0, 1), at(2, 3)])),
    (libc::SYS_linkat, Named::Writes(&[at(2, 3)])),
    (libc::SYS_symlinkat, Named::Writes(&[at(1, 2)])),
    (libc::SYS_fchmodat, Named::Writes(&[following(at(0, 1))])),
    (libc::SYS_fchownat, Named::Writes(&[following(at(0, 1))])),
    (
        libc::SYS_connect,
        Named::Address {
            addr: 1,
            len: 2,
            send: false,
        },
    ),
    (
        libc::SYS_sendto,
        Named::Address {
            addr: 4,
            len: 5,
            send: true,
        },
    ),
    (libc::SYS_socket, Named::Socket),
    (libc::SYS_bind, Named::Bind { addr: 1, len: 2 }),
];

#[cfg(not(target_arch = "x86_64"))]
const TABLE: &[(i64, Named)] = &[
    (libc::SYS_truncate, Named::Writes(&[following(cwd(0))])),
    (libc::SYS_openat, Named::Writes(&[opening(at(0, 1), 2)])),
    (libc::SYS_openat2, Named::OpenHow(at(0, 1))),
    (libc::SYS_mkdirat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_mknodat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_unlinkat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_renameat2, Named::Writes(&[at(0, 1), at(2, 3)])),
    (libc::SYS_linkat, Named::Writes(&[at(2, 3)])),
    (libc::SYS_symlinkat, Named::Writes(&[at(1, 2)])),
    (libc::SYS_fchmodat, Named::Writes(&[following(at(0, 1))])),
    (libc::SYS_fchownat, Named::Writes(&[following(at(0, 1))])),
    (
        libc::SYS_connect,
        Named::Address {
            addr: 1,
            len: 2,
            send: false,
        },
    ),
    (
        libc::SYS_sendto,
        Named::Address {
            addr: 4,
            len: 5,
            send: true,
        },
    ),
    (libc::SYS_socket, Named::Socket),
    (libc::SYS_bind, Named::Bind { addr: 1, len: 2 }),
];

/// What call `nr` names, if the handler knows it.
pub fn named(nr: i64) -> Option<Named> {
    TABLE.iter().find(|(n, _)| *n == nr).map(|(_, named)| *named)
}

/// The address and port of an `AF_INET` or `AF_INET6` socket address
/// (`None` for every other family: a Unix socket is no network denial).
pub fn inet_peer(sockaddr: &[u8]) -> Option<(IpAddr, u16)> {
    let family = u16::from_ne_bytes(sockaddr.get(0..2)?.try_into().ok()?) as i32;
    let port = u16::from_be_bytes(sockaddr.get(2..4)?.try_into().ok()?);
    match family {
        libc::AF_INET => {
            let ip: [u8; 4] = sockaddr.get(4..8)?.try_into().ok()?;
            Some((IpAddr::from(ip), port))
        }
        libc::AF_INET6 => {
            let ip: [u8; 16] = sockaddr.get(8..24)?.try_into().ok()?;
            Some((IpAddr::from(ip), port))
        }
        _ => None,
    }
}

/// `ip:port`, or `[ip]:port` for IPv6.
pub fn peer_text(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(ip) => format!("{ip}:{port}"),
        IpAddr::V6(ip) => format!("[{ip}]:{port}"),
    }
}

/// `127.0.0.0/8`, `::1`, and IPv4 loopback mapped into IPv6.
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => ip.is_loopback(),
        IpAddr::V6(ip) => ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// The path of an `AF_UNIX` socket address (`None` for other families,
/// abstract and unnamed addresses).
pub fn unix_path(sockaddr: &[u8]) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let family = u16::from_ne_bytes(sockaddr.get(0..2)?.try_into().ok()?) as i32;
    let path = sockaddr.get(2..)?;
    let path = &path[..path.iter().position(|b| *b == 0).unwrap_or(path.len())];
    (family == libc::AF_UNIX && !path.is_empty()).then(|| std::ffi::OsStr::from_bytes(path).into())
}

/// A socket family's name, as `socket(2)` spells it.
pub fn family_name(family: i32) -> String {
    match family {
        libc::AF_INET => "AF_INET".into(),
        libc::AF_INET6 => "AF_INET6".into(),
        libc::AF_NETLINK => "AF_NETLINK".into(),
        libc::AF_PACKET => "AF_PACKET".into(),
        other => format!("family {other}"),
    }
}

/// A socket type's name (its flags left out).
pub fn kind_name(kind: i32) -> String {
    match kind & 0xf {
        libc::SOCK_STREAM => "SOCK_STREAM".into(),
        libc::SOCK_DGRAM => "SOCK_DGRAM (UDP)".into(),
        libc::SOCK_RAW => "SOCK_RAW".into(),
        libc::SOCK_SEQPACKET => "SOCK_SEQPACKET".into(),
        other => format!("type {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_filtered_call_has_a_row() {
        let filtered = super::super::filter::WRITES
            .iter()
            .chain(super::super::filter::CONNECTS)
            .chain(super::super::filter::SOCKETS)
            .chain(super::super::filter::BIND);
        for (nr, _) in filtered {
            assert!(named(*nr).is_some(), "system call {nr} is filtered but has no row");
        }
    }

    #[test]
    fn inet_addresses_print_as_ip_and_port_and_unix_ones_not_at_all() {
        let text = |sockaddr: &[u8]| inet_peer(sockaddr).map(|(ip, port)| peer_text(ip, port));
        let mut v4 = vec![0u8; 16];
        v4[0..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        v4[2..4].copy_from_slice(&8080u16.to_be_bytes());
        v4[4..8].copy_from_slice(&[127, 0, 0, 1]);
        assert_eq!(text(&v4).as_deref(), Some("127.0.0.1:8080"));
        let mut v6 = vec![0u8; 28];
        v6[0..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        v6[2..4].copy_from_slice(&443u16.to_be_bytes());
        v6[23] = 1;
        assert_eq!(text(&v6).as_deref(), Some("[::1]:443"));
        let unix = (libc::AF_UNIX as u16).to_ne_bytes();
        assert_eq!(text(&unix), None);
    }

    #[test]
    fn loopback_includes_the_whole_v4_block_and_its_v6_mapping() {
        for ip in ["127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.2"] {
            assert!(is_loopback(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["10.0.0.1", "::2", "::ffff:10.0.0.1"] {
            assert!(!is_loopback(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn unix_paths_are_read_up_to_their_nul_and_abstract_ones_not_at_all() {
        let mut named = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        named.extend_from_slice(b"/tmp/s.sock\0junk");
        assert_eq!(unix_path(&named), Some("/tmp/s.sock".into()));
        let mut abstract_name = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        abstract_name.extend_from_slice(b"\0hidden");
        assert_eq!(unix_path(&abstract_name), None);
        let mut v4 = vec![0u8; 16];
        v4[0..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        assert_eq!(unix_path(&v4), None);
    }
}
