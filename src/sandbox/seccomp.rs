//! The enforcing seccomp rules every sandboxed command runs under, on both
//! backends: the calls that reach past a sandbox's namespaces or Landlock
//! domain into what the host shares with it. The Landlock helper installs
//! them with its own (see [`landlock`](super::landlock)); bubblewrap loads
//! the same program with `--seccomp` for the supervisor (its inits and
//! commands inherit it), for a command's own bwrap and for session shells.
//!
//! - Terminal input: `TIOCSTI` pushes bytes into a terminal's input queue
//!   as if typed, `TIOCLINUX` pastes the console's selection, `TIOCSETD`
//!   changes how a terminal reads its input. A sandboxed command starts in
//!   a new session without the host's controlling terminal; refusing these
//!   covers any terminal it still reaches.
//! - The kernel keyrings: a process inherits its session keyring through
//!   every namespace, and the user keyring is per user; a command could
//!   read the host's keys and add its own.
//! - `io_uring_setup`: io_uring runs operations (opening sockets among
//!   them) without the system calls the filters check.
//! - With network off, under bubblewrap: sockets of families that a network
//!   namespace does not isolate (`AF_VSOCK` reaches the hypervisor and its
//!   other guests whatever the namespace); the Landlock helper refuses
//!   every family but `AF_UNIX` itself.
//! - On x86-64, every system call of the x32 ABI: its numbers are the
//!   native ones with bit 30 set, under the same architecture tag, so a
//!   filter that lists native numbers would let them through.
//!
//! Calls of another architecture (32-bit x86 through `int 0x80`) end the
//! process: their numbers differ, and the rules cannot be checked for them.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    sock_filter,
};

/// The filter's rules: for each system call, the argument conditions under
/// which it is refused (an empty list: always).
pub(crate) type Rules = BTreeMap<i64, Vec<SeccompRule>>;

/// `ioctl` requests refused on any file: typing into a terminal, pasting
/// its selection, changing its line discipline.
pub const TERMINAL_IOCTLS: &[(libc::Ioctl, &str)] = &[
    (libc::TIOCSTI, "TIOCSTI"),
    (libc::TIOCLINUX, "TIOCLINUX"),
    (libc::TIOCSETD, "TIOCSETD"),
];

/// System calls refused on every backend.
pub const REFUSED_EVERYWHERE: &[i64] = &[
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_io_uring_setup,
];

/// The socket families a network namespace isolates: with network off,
/// bubblewrap's commands may open only these (inside an empty namespace).
pub const NAMESPACED_FAMILIES: &[libc::c_int] = &[libc::AF_UNIX, libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK];

/// The x32 ABI's marker bit in a system call number.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The rules both backends share.
pub(crate) fn common_rules() -> Result<Rules, String> {
    let mut rules: Rules = REFUSED_EVERYWHERE.iter().map(|&nr| (nr, Vec::new())).collect();
    let ioctls = TERMINAL_IOCTLS
        .iter()
        .map(|&(request, _)| {
            // The request is an `unsigned int`: only its low 32 bits count,
            // so the comparison ignores the high ones a caller may set.
            #[allow(clippy::unnecessary_cast)] // `Ioctl` is `c_int` on some targets
            let is =
                SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request as u64).map_err(err)?;
            SeccompRule::new(vec![is]).map_err(err)
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_ioctl, ioctls);
    Ok(rules)
}

/// bubblewrap's rules: the common ones and, with network off, no socket
/// of a family the network namespace does not isolate.
pub(crate) fn bwrap_rules(network: bool) -> Result<Rules, String> {
    let mut rules = common_rules()?;
    if !network {
        let outside = NAMESPACED_FAMILIES
            .iter()
            .map(|&family| {
                SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family as u64).map_err(err)
            })
            .collect::<Result<Vec<_>, _>>()?;
        rules.insert(libc::SYS_socket, vec![SeccompRule::new(outside).map_err(err)?]);
    }
    Ok(rules)
}

/// `rules` as a program that refuses each listed call with `EPERM` and,
/// on x86-64, every x32 call.
pub(crate) fn compile(rules: Rules) -> Result<BpfProgram, String> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        std::env::consts::ARCH.try_into().map_err(err)?,
    )
    .map_err(err)?;
    let program: BpfProgram = filter.try_into().map_err(err)?;
    Ok(with_x32_refused(program))
}

/// `program` behind a check that refuses x32 system calls (x86-64 only;
/// the check reads the call number, which sits at the same offset on every
/// architecture, before the program checks the architecture itself).
fn with_x32_refused(program: BpfProgram) -> BpfProgram {
    #[cfg(target_arch = "x86_64")]
    {
        let mut out = vec![
            // A = seccomp_data.nr
            sock_filter {
                code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
                jt: 0,
                jf: 0,
                k: 0,
            },
            // if (A & X32_SYSCALL_BIT) refuse, else go on
            sock_filter {
                code: (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16,
                jt: 0,
                jf: 1,
                k: X32_SYSCALL_BIT,
            },
            sock_filter {
                code: (libc::BPF_RET | libc::BPF_K) as u16,
                jt: 0,
                jf: 0,
                k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
            },
        ];
        out.extend(program);
        out
    }
    #[cfg(not(target_arch = "x86_64"))]
    program
}

/// `program` in the kernel's `struct sock_filter` layout, as bwrap's
/// `--seccomp` reads it.
pub(crate) fn to_bytes(program: &[sock_filter]) -> Vec<u8> {
    let mut out = Vec::with_capacity(program.len() * 8);
    for op in program {
        out.extend_from_slice(&op.code.to_ne_bytes());
        out.push(op.jt);
        out.push(op.jf);
        out.extend_from_slice(&op.k.to_ne_bytes());
    }
    out
}

/// bubblewrap's program for `network`, compiled once per process.
pub(crate) fn bwrap_program(network: bool) -> Result<&'static [u8], String> {
    static PROGRAMS: OnceLock<[Result<Vec<u8>, String>; 2]> = OnceLock::new();
    let programs = PROGRAMS
        .get_or_init(|| [false, true].map(|network| bwrap_rules(network).and_then(compile).map(|p| to_bytes(&p))));
    programs[usize::from(network)].as_deref().map_err(Clone::clone)
}

/// A pipe's read end holding `bytes` and then end of file (bwrap reads the
/// program to its end), above the fds a spawn hands out, close-on-exec.
pub(crate) fn program_fd(bytes: &[u8]) -> io::Result<OwnedFd> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    // A program is a few hundred bytes: far below a pipe's capacity, so
    // this write does not block with no reader yet.
    let mut written = 0;
    while written < bytes.len() {
        written += rustix::io::retry_on_intr(|| rustix::io::write(&write, &bytes[written..]))?;
    }
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bwrap_programs_compile_and_refuse_x32_calls_first() {
        for network in [false, true] {
            let bytes = bwrap_program(network).unwrap();
            assert_eq!(bytes.len() % 8, 0);
            #[cfg(target_arch = "x86_64")]
            assert_eq!(u32::from_ne_bytes(bytes[12..16].try_into().unwrap()), X32_SYSCALL_BIT);
        }
        assert!(bwrap_program(false).unwrap().len() > bwrap_program(true).unwrap().len());
    }

    #[test]
    fn the_program_is_readable_from_its_fd_to_the_end() {
        let bytes = bwrap_program(false).unwrap();
        let fd = program_fd(bytes).unwrap();
        let mut read = Vec::new();
        std::io::Read::read_to_end(&mut std::fs::File::from(fd), &mut read).unwrap();
        assert_eq!(read, bytes);
    }
}
