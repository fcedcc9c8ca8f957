//! The observing seccomp filter: which system calls reach the handler
//! ([`SECCOMP_RET_USER_NOTIF`](libc::SECCOMP_RET_USER_NOTIF)) and which run
//! on untouched, as a table walked into classic BPF. Read-only opens never
//! notify: the filter tests the flags argument itself.

/// When a listed call notifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    /// Argument `arg` (an int) has one of the bits of the mask set.
    AnyBit(u8, u32),
    /// Argument `arg` (a pointer) is not NULL.
    NonNull(u8),
    /// Argument `arg` (an int) differs from the value.
    Not(u8, u32),
}

/// Open flags that make an open a write.
pub const WRITE_FLAGS: u32 = (libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC) as u32;

/// Calls that change the file system at a path.
#[cfg(target_arch = "x86_64")]
pub const WRITES: &[(i64, When)] = &[
    (libc::SYS_open, When::AnyBit(1, WRITE_FLAGS)),
    (libc::SYS_openat, When::AnyBit(2, WRITE_FLAGS)),
    (libc::SYS_openat2, When::Always),
    (libc::SYS_creat, When::Always),
    (libc::SYS_mkdir, When::Always),
    (libc::SYS_mkdirat, When::Always),
    (libc::SYS_mknod, When::Always),
    (libc::SYS_mknodat, When::Always),
    (libc::SYS_unlink, When::Always),
    (libc::SYS_unlinkat, When::Always),
    (libc::SYS_rmdir, When::Always),
    (libc::SYS_rename, When::Always),
    (libc::SYS_renameat, When::Always),
    (libc::SYS_renameat2, When::Always),
    (libc::SYS_link, When::Always),
    (libc::SYS_linkat, When::Always),
    (libc::SYS_symlink, When::Always),
    (libc::SYS_symlinkat, When::Always),
    (libc::SYS_truncate, When::Always),
    (libc::SYS_chmod, When::Always),
    (libc::SYS_fchmodat, When::Always),
    (libc::SYS_chown, When::Always),
    (libc::SYS_lchown, When::Always),
    (libc::SYS_fchownat, When::Always),
];

/// Calls that change the file system at a path (the `*at` forms only).
#[cfg(not(target_arch = "x86_64"))]
pub const WRITES: &[(i64, When)] = &[
    (libc::SYS_openat, When::AnyBit(2, WRITE_FLAGS)),
    (libc::SYS_openat2, When::Always),
    (libc::SYS_mkdirat, When::Always),
    (libc::SYS_mknodat, When::Always),
    (libc::SYS_unlinkat, When::Always),
    (libc::SYS_renameat2, When::Always),
    (libc::SYS_linkat, When::Always),
    (libc::SYS_symlinkat, When::Always),
    (libc::SYS_truncate, When::Always),
    (libc::SYS_fchmodat, When::Always),
    (libc::SYS_fchownat, When::Always),
];

/// Calls that reach an address (a `sendto` without one uses its socket's
/// connection, already seen at `connect`).
pub const CONNECTS: &[(i64, When)] = &[(libc::SYS_connect, When::Always), (libc::SYS_sendto, When::NonNull(4))];

/// `connect` alone: what every observed command notifies, network on or
/// off, so that a connection to an attach socket is named and refused.
pub const CONNECT: &[(i64, When)] = &[(libc::SYS_connect, When::Always)];

/// Binding a socket: where the command shares the host's network and may
/// reach it by name only (Landlock), the handler binds its TCP servers.
pub const BIND: &[(i64, When)] = &[(libc::SYS_bind, When::Always)];

/// Opening a socket of any family but `AF_UNIX`.
pub const SOCKETS: &[(i64, When)] = &[(libc::SYS_socket, When::Not(0, libc::AF_UNIX as u32))];

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

// Offsets into `struct seccomp_data` (little-endian: an argument's low word first).
const NR: u32 = 0;
const ARCH: u32 = 4;
fn arg_low(arg: u8) -> u32 {
    16 + 8 * arg as u32
}

/// One instruction, with jumps to labels resolved later.
#[derive(Clone, Copy)]
enum Op {
    Load(u32),
    /// Compare A with a constant: to `yes` or `no` (labels).
    JumpEq(u32, Label, Label),
    JumpSet(u32, Label, Label),
    Return(u32),
    Mark(Label),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Next,
    Allow,
    Notify,
    At(usize),
}

/// The BPF program for `rules`: notify a listed call when its condition
/// holds, allow everything else (other filters still apply).
pub fn program(rules: &[(i64, When)]) -> Vec<libc::sock_filter> {
    let mut ops = vec![
        Op::Load(ARCH),
        Op::JumpEq(AUDIT_ARCH, Label::Next, Label::Allow),
        Op::Mark(Label::At(0)),
    ];
    for (i, &(nr, when)) in rules.iter().enumerate() {
        let next = Label::At(i + 1);
        ops.push(Op::Load(NR));
        ops.push(Op::JumpEq(nr as u32, Label::Next, next));
        match when {
            When::Always => ops.push(Op::Return(libc::SECCOMP_RET_USER_NOTIF)),
            When::AnyBit(arg, mask) => {
                ops.push(Op::Load(arg_low(arg)));
                ops.push(Op::JumpSet(mask, Label::Notify, Label::Allow));
            }
            When::NonNull(arg) => {
                ops.push(Op::Load(arg_low(arg)));
                ops.push(Op::JumpEq(0, Label::Next, Label::Notify));
                ops.push(Op::Load(arg_low(arg) + 4));
                ops.push(Op::JumpEq(0, Label::Allow, Label::Notify));
            }
            When::Not(arg, value) => {
                ops.push(Op::Load(arg_low(arg)));
                ops.push(Op::JumpEq(value, Label::Allow, Label::Notify));
            }
        }
        ops.push(Op::Mark(next));
    }
    ops.push(Op::Mark(Label::Allow));
    ops.push(Op::Return(libc::SECCOMP_RET_ALLOW));
    ops.push(Op::Mark(Label::Notify));
    ops.push(Op::Return(libc::SECCOMP_RET_USER_NOTIF));
    assemble(&ops)
}

fn assemble(ops: &[Op]) -> Vec<libc::sock_filter> {
    // Where each label lands, counting only real instructions.
    let mut at = Vec::new();
    let mut n = 0usize;
    for op in ops {
        match op {
            Op::Mark(label) => at.push((*label, n)),
            _ => n += 1,
        }
    }
    let target = |label: Label, from: usize| -> u8 {
        let to = match label {
            Label::Next => from + 1,
            other => at.iter().find(|(l, _)| *l == other).expect("every label is marked").1,
        };
        u8::try_from(to - from - 1).expect("a jump of the observing filter fits in a byte")
    };
    let mut out = Vec::with_capacity(n);
    for op in ops {
        let here = out.len();
        let (code, jt, jf, k) = match *op {
            Op::Mark(_) => continue,
            Op::Load(offset) => (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, offset),
            Op::JumpEq(k, yes, no) => (
                libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
                target(yes, here),
                target(no, here),
                k,
            ),
            Op::JumpSet(k, yes, no) => (
                libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K,
                target(yes, here),
                target(no, here),
                k,
            ),
            Op::Return(k) => (libc::BPF_RET | libc::BPF_K, 0, 0, k),
        };
        out.push(libc::sock_filter {
            code: code as u16,
            jt,
            jf,
            k,
        });
    }
    out
}

pub use super::listener::install;

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program on one call, as the kernel would.
    fn verdict(program: &[libc::sock_filter], nr: i64, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&(nr as u32).to_le_bytes());
        data[4..8].copy_from_slice(&AUDIT_ARCH.to_le_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let ins = program[pc];
            let code = ins.code as u32;
            if code == libc::BPF_RET | libc::BPF_K {
                return ins.k;
            }
            if code == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS {
                let k = ins.k as usize;
                acc = u32::from_le_bytes(data[k..k + 4].try_into().unwrap());
                pc += 1;
                continue;
            }
            let taken = if code == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K {
                acc == ins.k
            } else {
                acc & ins.k != 0
            };
            pc += 1 + if taken { ins.jt } else { ins.jf } as usize;
        }
    }

    #[test]
    fn read_only_opens_pass_and_write_opens_notify() {
        let p = program(WRITES);
        let notify = libc::SECCOMP_RET_USER_NOTIF;
        let at = libc::AT_FDCWD as u64;
        assert_eq!(
            verdict(&p, libc::SYS_openat, [at, 1, libc::O_RDONLY as u64, 0, 0, 0]),
            libc::SECCOMP_RET_ALLOW
        );
        assert_eq!(
            verdict(&p, libc::SYS_openat, [at, 1, libc::O_WRONLY as u64, 0, 0, 0]),
            notify
        );
        assert_eq!(
            verdict(
                &p,
                libc::SYS_openat,
                [at, 1, (libc::O_CREAT | libc::O_CLOEXEC) as u64, 0, 0, 0]
            ),
            notify
        );
        assert_eq!(verdict(&p, libc::SYS_mkdirat, [at, 1, 0o755, 0, 0, 0]), notify);
        assert_eq!(verdict(&p, libc::SYS_getpid, [0; 6]), libc::SECCOMP_RET_ALLOW);
    }

    #[test]
    fn sendto_notifies_only_with_an_address_and_unix_sockets_pass() {
        let mut rules = CONNECTS.to_vec();
        rules.extend_from_slice(SOCKETS);
        let p = program(&rules);
        let notify = libc::SECCOMP_RET_USER_NOTIF;
        assert_eq!(
            verdict(&p, libc::SYS_sendto, [3, 1, 1, 0, 0, 0]),
            libc::SECCOMP_RET_ALLOW
        );
        assert_eq!(verdict(&p, libc::SYS_sendto, [3, 1, 1, 0, 1 << 33, 16]), notify);
        assert_eq!(verdict(&p, libc::SYS_connect, [3, 1, 16, 0, 0, 0]), notify);
        assert_eq!(
            verdict(&p, libc::SYS_socket, [libc::AF_UNIX as u64, 1, 0, 0, 0, 0]),
            libc::SECCOMP_RET_ALLOW
        );
        assert_eq!(
            verdict(&p, libc::SYS_socket, [libc::AF_INET as u64, 1, 0, 0, 0, 0]),
            notify
        );
    }
}
