//! Pseudo-terminals and the process-level facts a session needs: opening a
//! pty pair, spawning a shell as a session leader with the pty as its
//! controlling terminal, the terminal's foreground group, and /proc scans.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::{Mode, OFlags};
use rustix::termios::{LocalModes, OptionalActions, OutputModes, Winsize};

/// The master side of a pty and the path of its slave.
pub(crate) struct Pty {
    pub master: OwnedFd,
    pub slave_path: CString,
}

/// Opens a pty pair (`posix_openpt`, `grantpt`, `unlockpt`, `ptsname`),
/// sets the terminal modes a session wants (no echo, no CR/LF translation on
/// output, a wide window), and returns the master.
pub(crate) fn open() -> io::Result<Pty> {
    use rustix::pty::OpenptFlags;
    let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    rustix::pty::grantpt(&master)?;
    rustix::pty::unlockpt(&master)?;
    let slave_path = rustix::pty::ptsname(&master, Vec::with_capacity(128))?;

    // Configure the line discipline through a slave fd (without making it
    // our controlling terminal); the settings stay with the pty.
    let slave = rustix::fs::open(
        slave_path.as_c_str(),
        OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut tio = rustix::termios::tcgetattr(&slave)?;
    // Echo stays on, as on any terminal: a person watching sees what is
    // typed, and a program that reads a secret turns it off, which is
    // how a secret prompt is recognized (see `hides_input`).
    tio.local_modes |= LocalModes::ECHO;
    tio.local_modes &= !(LocalModes::ECHOE | LocalModes::ECHOK | LocalModes::ECHONL | LocalModes::ECHOCTL);
    // No output processing at all: with `ONLCR` off it would change no
    // byte (the other output flags are off by default), and the kernel's
    // per-character pass over every write made a chatty command's
    // output 20-30 % slower to come through (see docs/benchmarks.md).
    tio.output_modes &= !(OutputModes::ONLCR | OutputModes::OPOST);
    rustix::termios::tcsetattr(&slave, OptionalActions::Now, &tio)?;
    let _ = rustix::termios::tcsetwinsize(&master, window(50, 200));
    crate::process::spawn::set_nonblocking(&master);
    Ok(Pty { master, slave_path })
}

fn window(rows: u16, cols: u16) -> Winsize {
    Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

/// Spawns `argv` as the leader of a new session whose controlling terminal
/// is the pty slave: `POSIX_SPAWN_SETSID` runs `setsid()` in the child before
/// the file actions, so opening the slave (without `O_NOCTTY`) as fd 0
/// acquires it. Signals are reset, the mask emptied, `pass_fds` become fds
/// 3, 4, ... (a sandbox's own), every other fd ≥ 3 is closed.
pub(crate) fn spawn_on_pty(
    program: &CStr,
    argv: &[CString],
    envp: &[CString],
    cwd: &CStr,
    slave_path: &CStr,
    pass_fds: &[RawFd],
) -> io::Result<libc::pid_t> {
    use crate::process::spawn::{Attrs, FileAction, FileActions};
    crate::process::guard::ensure();
    let mut fa = FileActions::new()?;
    fa.add(FileAction::Open {
        fd: 0,
        path: slave_path,
        flags: libc::O_RDWR,
    })?;
    fa.add(FileAction::Dup2 { from: 0, to: 1 })?;
    fa.add(FileAction::Dup2 { from: 0, to: 2 })?;
    fa.add(FileAction::Chdir(cwd))?;
    let passed = crate::process::spawn::pass_fds(&mut fa, pass_fds)?;
    let mut attr = Attrs::with_clean_signals(libc::POSIX_SPAWN_SETSID as libc::c_int)?;
    let pid = crate::process::spawn::posix_spawn(program, argv, envp, &mut fa, &mut attr);
    drop(passed);
    pid
}

/// The terminal's foreground process group, asked on the master side.
pub(crate) fn foreground_group(master: BorrowedFd<'_>) -> Option<libc::pid_t> {
    let pgrp = rustix::termios::tcgetpgrp(master).ok()?.as_raw_nonzero().get();
    (pgrp > 0).then_some(pgrp)
}

/// The longest line the kernel keeps in canonical mode (N_TTY_BUF_SIZE
/// minus the newline); it drops the rest of a longer line silently.
pub(crate) const MAX_CANON_LINE: usize = 4095;

/// Whether the terminal is in canonical (line) mode, asked on the master
/// side (Linux answers with the slave's settings).
pub(crate) fn canonical(master: BorrowedFd<'_>) -> bool {
    local_flags(master).is_some_and(|f| f.contains(LocalModes::ICANON))
}

fn local_flags(master: BorrowedFd<'_>) -> Option<LocalModes> {
    rustix::termios::tcgetattr(master).ok().map(|tio| tio.local_modes)
}

/// Whether the terminal echoes input (`ECHO`).
pub(crate) fn echoes(master: BorrowedFd<'_>) -> bool {
    local_flags(master).is_some_and(|f| f.contains(LocalModes::ECHO))
}

/// Whether the terminal reads lines without echoing them: `ECHO` cleared
/// while in line mode, as `sudo`, `ssh`, `read -s` and `getpass` set it to
/// read a secret (full-screen programs leave line mode as well).
pub(crate) fn hides_input(master: BorrowedFd<'_>) -> bool {
    local_flags(master).is_some_and(|f| !f.contains(LocalModes::ECHO) && f.contains(LocalModes::ICANON))
}

/// Sets the terminal's window size; the kernel tells the foreground group (SIGWINCH).
pub(crate) fn resize(master: BorrowedFd<'_>, rows: u16, cols: u16) -> io::Result<()> {
    Ok(rustix::termios::tcsetwinsize(master, window(rows, cols))?)
}

/// Writes all of `data` to the master, waiting while the terminal's input
/// queue is full.
pub(crate) fn write_all(master: BorrowedFd<'_>, mut data: &[u8]) -> io::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !data.is_empty() {
        let err = match rustix::io::write(master, data) {
            Ok(n) if n > 0 => {
                data = &data[n..];
                continue;
            }
            Ok(_) => io::Error::from(io::ErrorKind::WriteZero),
            Err(e) => io::Error::from(e),
        };
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN) => {
                if std::time::Instant::now() > deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the terminal's input queue stayed full for 10 s (the program is not reading input)",
                    ));
                }
                let pause = Timespec {
                    tv_sec: 0,
                    tv_nsec: 50_000_000,
                };
                let _ = rustix::event::poll(&mut [PollFd::from_borrowed_fd(master, PollFlags::OUT)], Some(&pause));
            }
            _ => return Err(err),
        }
    }
    Ok(())
}

/// Fields after the command name of /proc/<pid>/stat (state is index 0).
fn stat_fields(pid: libc::pid_t) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// Every live process whose session id (field 6 of /proc/pid/stat) is `sid`.
pub(crate) fn session_members(sid: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|&pid| {
            stat_fields(pid)
                .is_some_and(|f| f.first().map(String::as_str) != Some("Z") && f.get(3) == Some(&sid.to_string()))
        })
        .collect()
}

/// Processes in process group `pgrp`.
fn group_members(pgrp: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|&pid| stat_fields(pid).is_some_and(|f| f.get(2) == Some(&pgrp.to_string())))
        .collect()
}

/// The device number of the pty slave (to recognize it among a process's fds).
pub(crate) fn device_of(path: &CStr) -> Option<libc::dev_t> {
    rustix::fs::stat(path).ok().map(|st| st.st_rdev)
}

/// Whether some process of the terminal's foreground group is blocked
/// reading the terminal `tty` (the slave's device number), from the kernel's
/// view: `/proc/<pid>/syscall` shows it in `read` on a descriptor of that
/// terminal, or in `poll`/`select`/`epoll_wait` waiting for one to become
/// readable. The wait channel alone cannot tell: on current kernels a
/// terminal read and a TCP receive both sleep in `wait_woken`.
pub(crate) fn foreground_reading(master: BorrowedFd<'_>, tty: libc::dev_t) -> bool {
    let Some(pgrp) = foreground_group(master) else {
        return false;
    };
    // The group's leader first: scanning /proc for the other members costs more.
    blocked_on_tty_read(pgrp, tty)
        || group_members(pgrp)
            .into_iter()
            .any(|pid| pid != pgrp && blocked_on_tty_read(pid, tty))
}

/// Syscalls that read one descriptor (its number is the first argument).
fn reads_fd(nr: libc::c_long) -> bool {
    nr == libc::SYS_read || nr == libc::SYS_readv
}

/// poll-like syscalls: (pollfd array, count, ...).
fn is_poll(nr: libc::c_long) -> bool {
    #[cfg(target_arch = "x86_64")]
    if nr == libc::SYS_poll {
        return true;
    }
    nr == libc::SYS_ppoll
}

/// select-like syscalls: (nfds, read set, ...).
fn is_select(nr: libc::c_long) -> bool {
    #[cfg(target_arch = "x86_64")]
    if nr == libc::SYS_select {
        return true;
    }
    nr == libc::SYS_pselect6
}

/// epoll_wait-like syscalls: (epoll fd, ...).
fn is_epoll_wait(nr: libc::c_long) -> bool {
    #[cfg(target_arch = "x86_64")]
    if nr == libc::SYS_epoll_wait {
        return true;
    }
    nr == libc::SYS_epoll_pwait || nr == libc::SYS_epoll_pwait2
}

fn blocked_on_tty_read(pid: libc::pid_t, tty: libc::dev_t) -> bool {
    let Some(fields) = stat_fields(pid) else {
        return false;
    };
    if fields.first().map(String::as_str) != Some("S") {
        return false;
    }
    // /proc/<pid>/syscall: "<nr> <arg0> <arg1> ..." while blocked in a
    // syscall, "running", or "-1 ..." when blocked elsewhere.
    let Ok(syscall) = std::fs::read_to_string(format!("/proc/{pid}/syscall")) else {
        // Unreadable (no ptrace access): only the tty read path's own wait
        // channel, which older kernels show, is conclusive.
        return std::fs::read_to_string(format!("/proc/{pid}/wchan")).is_ok_and(|w| w == "n_tty_read");
    };
    let mut parts = syscall.split_whitespace();
    let nr = parts.next().and_then(|n| n.parse::<libc::c_long>().ok());
    let args: Vec<u64> = parts
        .take(2)
        .filter_map(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
        .collect();
    let (Some(nr), &[arg0, arg1]) = (nr, args.as_slice()) else {
        return false;
    };
    let is_tty = |fd: u64| is_terminal_fd(pid, fd, tty);
    if reads_fd(nr) {
        return is_tty(arg0);
    }
    // poll(fds, nfds, ...): an array of pollfd in the process's memory.
    if is_poll(nr) {
        let count = arg1.min(64) as usize;
        let Some(raw) = read_memory(pid, arg0, count * std::mem::size_of::<libc::pollfd>()) else {
            return false;
        };
        return raw.chunks_exact(std::mem::size_of::<libc::pollfd>()).any(|entry| {
            let fd = i32::from_ne_bytes([entry[0], entry[1], entry[2], entry[3]]);
            let events = i16::from_ne_bytes([entry[4], entry[5]]);
            fd >= 0 && events & libc::POLLIN != 0 && is_tty(fd as u64)
        });
    }
    // select(nfds, readfds, ...): a bit set of fds in the process's memory.
    if is_select(nr) {
        let nfds = arg0.min(1024);
        let Some(bits) = read_memory(pid, arg1, nfds.div_ceil(8) as usize) else {
            return false;
        };
        return (0..nfds).any(|fd| bits[(fd / 8) as usize] & (1 << (fd % 8)) != 0 && is_tty(fd));
    }
    // epoll_wait(epfd, ...): the watched fds are listed in the epoll fd's fdinfo.
    if is_epoll_wait(nr) {
        let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{arg0}")) else {
            return false;
        };
        return epoll_targets(&info)
            .into_iter()
            .any(|(fd, events)| events & libc::EPOLLIN as u32 != 0 && is_tty(fd));
    }
    false
}

/// The watched fds and event masks of an epoll fd, from its fdinfo
/// (`tfd:        0 events:       19 data: ...`).
fn epoll_targets(info: &str) -> Vec<(u64, u32)> {
    info.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("tfd:")?;
            let mut words = rest.split_whitespace();
            let fd = words.next()?.parse().ok()?;
            if words.next()? != "events:" {
                return None;
            }
            let events = u32::from_str_radix(words.next()?, 16).ok()?;
            Some((fd, events))
        })
        .collect()
}

/// Whether `fd` of `pid` is the session's terminal: the slave itself (same
/// device number), or `/dev/tty`, which in the session is that terminal.
fn is_terminal_fd(pid: libc::pid_t, fd: u64, tty: libc::dev_t) -> bool {
    let link = format!("/proc/{pid}/fd/{fd}");
    if std::fs::read_link(&link).is_ok_and(|p| p.as_os_str() == "/dev/tty") {
        return true;
    }
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    std::fs::metadata(&link).is_ok_and(|m| m.file_type().is_char_device() && m.rdev() == tty)
}

/// Reads `len` bytes at `address` in process `pid` (our own descendant),
/// through `/proc/<pid>/mem`, where the kernel checks access as for ptrace.
fn read_memory(pid: libc::pid_t, address: u64, len: usize) -> Option<Vec<u8>> {
    if address == 0 || len == 0 {
        return None;
    }
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut buf = vec![0u8; len];
    mem.read_exact_at(&mut buf, address).ok()?;
    Some(buf)
}

/// Resident set size of `pid` in KiB.
pub(crate) fn rss_kib(pid: libc::pid_t) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::epoll_targets;

    #[test]
    fn epoll_fdinfo_lists_watched_fds() {
        let info = "pos:\t0\nflags:\t02\nmnt_id:\t15\nino:\t1057\n\
                    tfd:        0 events:       19 data:                0  pos:0 ino:3 sdev:17\n\
                    tfd:        7 events:        4 data:                7  pos:0 ino:9 sdev:8\n";
        assert_eq!(epoll_targets(info), vec![(0, 0x19), (7, 0x4)]);
        assert!(epoll_targets("pos:\t0\n").is_empty());
    }
}
