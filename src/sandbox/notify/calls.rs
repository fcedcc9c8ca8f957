//! What each notified call names: the paths it writes (with the directory
//! each is relative to), the address it reaches, or the socket family it
//! asks for. A table as data; the handler walks it.

/// Where a path argument is: the index of its dirfd argument (`None`:
/// relative to the working directory) and of its pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathArg {
    pub dirfd: Option<u8>,
    pub path: u8,
}

const fn cwd(path: u8) -> PathArg {
    PathArg { dirfd: None, path }
}

const fn at(dirfd: u8, path: u8) -> PathArg {
    PathArg {
        dirfd: Some(dirfd),
        path,
    }
}

/// What one call names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// Paths it writes.
    Writes(&'static [PathArg]),
    /// `openat2`: a path, written only if its `open_how` (argument 2) says so.
    OpenHow(PathArg),
    /// A socket address: pointer and length arguments.
    Address { addr: u8, len: u8 },
    /// A new socket of the family in argument 0.
    Socket,
}

/// The table: system call number to what it names.
#[cfg(target_arch = "x86_64")]
const TABLE: &[(i64, Named)] = &[
    (libc::SYS_open, Named::Writes(&[cwd(0)])),
    (libc::SYS_creat, Named::Writes(&[cwd(0)])),
    (libc::SYS_mkdir, Named::Writes(&[cwd(0)])),
    (libc::SYS_mknod, Named::Writes(&[cwd(0)])),
    (libc::SYS_unlink, Named::Writes(&[cwd(0)])),
    (libc::SYS_rmdir, Named::Writes(&[cwd(0)])),
    (libc::SYS_rename, Named::Writes(&[cwd(0), cwd(1)])),
    (libc::SYS_link, Named::Writes(&[cwd(1)])),
    (libc::SYS_symlink, Named::Writes(&[cwd(1)])),
    (libc::SYS_truncate, Named::Writes(&[cwd(0)])),
    (libc::SYS_chmod, Named::Writes(&[cwd(0)])),
    (libc::SYS_chown, Named::Writes(&[cwd(0)])),
    (libc::SYS_lchown, Named::Writes(&[cwd(0)])),
    (libc::SYS_openat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_openat2, Named::OpenHow(at(0, 1))),
    (libc::SYS_mkdirat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_mknodat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_unlinkat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_renameat, Named::Writes(&[at(0, 1), at(2, 3)])),
    (libc::SYS_renameat2, Named::Writes(&[at(0, 1), at(2, 3)])),
    (libc::SYS_linkat, Named::Writes(&[at(2, 3)])),
    (libc::SYS_symlinkat, Named::Writes(&[at(1, 2)])),
    (libc::SYS_fchmodat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_fchownat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_connect, Named::Address { addr: 1, len: 2 }),
    (libc::SYS_sendto, Named::Address { addr: 4, len: 5 }),
    (libc::SYS_socket, Named::Socket),
];

#[cfg(not(target_arch = "x86_64"))]
const TABLE: &[(i64, Named)] = &[
    (libc::SYS_truncate, Named::Writes(&[cwd(0)])),
    (libc::SYS_openat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_openat2, Named::OpenHow(at(0, 1))),
    (libc::SYS_mkdirat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_mknodat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_unlinkat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_renameat2, Named::Writes(&[at(0, 1), at(2, 3)])),
    (libc::SYS_linkat, Named::Writes(&[at(2, 3)])),
    (libc::SYS_symlinkat, Named::Writes(&[at(1, 2)])),
    (libc::SYS_fchmodat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_fchownat, Named::Writes(&[at(0, 1)])),
    (libc::SYS_connect, Named::Address { addr: 1, len: 2 }),
    (libc::SYS_sendto, Named::Address { addr: 4, len: 5 }),
    (libc::SYS_socket, Named::Socket),
];

/// What call `nr` names, if the handler knows it.
pub fn named(nr: i64) -> Option<Named> {
    TABLE.iter().find(|(n, _)| *n == nr).map(|(_, named)| *named)
}

/// `ip:port` for an `AF_INET` or `AF_INET6` socket address (`None` for
/// every other family: a Unix socket is no network denial).
pub fn inet_address(sockaddr: &[u8]) -> Option<String> {
    let family = u16::from_ne_bytes(sockaddr.get(0..2)?.try_into().ok()?) as i32;
    let port = u16::from_be_bytes(sockaddr.get(2..4)?.try_into().ok()?);
    match family {
        libc::AF_INET => {
            let ip: [u8; 4] = sockaddr.get(4..8)?.try_into().ok()?;
            Some(format!("{}:{port}", std::net::Ipv4Addr::from(ip)))
        }
        libc::AF_INET6 => {
            let ip: [u8; 16] = sockaddr.get(8..24)?.try_into().ok()?;
            Some(format!("[{}]:{port}", std::net::Ipv6Addr::from(ip)))
        }
        _ => None,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_filtered_call_has_a_row() {
        let filtered = super::super::filter::WRITES
            .iter()
            .chain(super::super::filter::CONNECTS)
            .chain(super::super::filter::SOCKETS);
        for (nr, _) in filtered {
            assert!(named(*nr).is_some(), "system call {nr} is filtered but has no row");
        }
    }

    #[test]
    fn inet_addresses_print_as_ip_and_port_and_unix_ones_not_at_all() {
        let mut v4 = vec![0u8; 16];
        v4[0..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        v4[2..4].copy_from_slice(&8080u16.to_be_bytes());
        v4[4..8].copy_from_slice(&[127, 0, 0, 1]);
        assert_eq!(inet_address(&v4).as_deref(), Some("127.0.0.1:8080"));
        let mut v6 = vec![0u8; 28];
        v6[0..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        v6[2..4].copy_from_slice(&443u16.to_be_bytes());
        v6[23] = 1;
        assert_eq!(inet_address(&v6).as_deref(), Some("[::1]:443"));
        let unix = (libc::AF_UNIX as u16).to_ne_bytes();
        assert_eq!(inet_address(&unix), None);
    }
}
