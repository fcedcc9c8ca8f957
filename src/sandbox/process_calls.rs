//! The process-level calls of the sandbox's own processes (the Landlock
//! helper and its keeper, the supervisor and its inits, the network helper)
//! and of the host's threads that act for commands, that no safe crate
//! wraps: `fork`, `execvpe`, `_exit`, the signal mask,
//! signal dispositions, `signalfd`, `unshare` and closing the fds a clone
//! inherited. Each function here is safe to call; `fork`, sound only in a
//! process with one thread, checks that first.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use rustix::thread::UnshareFlags;

/// A set of signals.
#[derive(Clone, Copy)]
pub struct SignalSet(libc::sigset_t);

impl SignalSet {
    /// The set of `signals`.
    pub fn of(signals: &[libc::c_int]) -> SignalSet {
        SignalSet::made(false, signals)
    }

    /// Every signal.
    pub fn all() -> SignalSet {
        SignalSet::made(true, &[])
    }

    /// Every signal when `full`, else none; then `signals` added.
    fn made(full: bool, signals: &[libc::c_int]) -> SignalSet {
        // SAFETY: an all-zero sigset_t is valid storage for sigfillset and
        // sigemptyset, which initialize it; sigaddset only sets bits in it.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            if full {
                libc::sigfillset(&mut set);
            } else {
                libc::sigemptyset(&mut set);
            }
            for &signal in signals {
                libc::sigaddset(&mut set, signal);
            }
            SignalSet(set)
        }
    }
}

/// Sets the signal mask (of the calling thread; in these single-threaded
/// processes, of the process) to `set` and returns the one before.
pub fn set_mask(set: &SignalSet) -> SignalSet {
    change_mask(libc::SIG_SETMASK, set)
}

/// Adds `set` to the signal mask (see [`set_mask`]) and returns the one before.
pub fn block(set: &SignalSet) -> SignalSet {
    change_mask(libc::SIG_BLOCK, set)
}

/// The signal mask changed by `how` (`SIG_SETMASK`, `SIG_BLOCK`) with `set`;
/// returns the one before.
fn change_mask(how: libc::c_int, set: &SignalSet) -> SignalSet {
    // SAFETY: both sets are live sigset_t values; the old mask is written
    // into the one we own (all-zero is valid storage for it).
    unsafe {
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(how, &set.0, &mut old);
        SignalSet(old)
    }
}

/// Moves the calling thread into new namespaces of the kinds in `flags`, or
/// gives it filesystem attributes of its own (`FS`): any kind but a
/// descriptor table of its own (`FILES`, refused), which would leave other
/// threads with descriptors this one no longer sees.
pub fn unshare(flags: UnshareFlags) -> io::Result<()> {
    assert!(
        !flags.contains(UnshareFlags::FILES),
        "unshare of the descriptor table (internal: no caller asks for it)"
    );
    // SAFETY: without FILES (refused above) the descriptor table stays
    // shared, so every thread still sees the same descriptors: the one
    // condition unshare_unsafe sets.
    unsafe { rustix::thread::unshare_unsafe(flags) }.map_err(io::Error::from)
}

/// A close-on-exec, non-blocking signalfd for `set` (which the caller
/// blocks, so its signals queue there).
pub fn signalfd(set: &SignalSet) -> io::Result<OwnedFd> {
    // SAFETY: signalfd reads the live set; a non-negative result is a fresh
    // fd that nothing else owns.
    unsafe {
        let fd = libc::signalfd(-1, &set.0, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Ends this process by `signal`, as a command it ran ended: the signal's
/// default action, unblocked, sent to itself; `_exit(128 + signal)` should
/// that not end it.
pub fn die_by(signal: libc::c_int) -> ! {
    // SAFETY: SIG_DFL installs no handler of ours, so nothing of this
    // process runs when the signal comes; the mask set is a live, empty
    // sigset_t; kill and _exit take plain integers.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal)
    }
}

/// Whether this process runs one thread (what `/proc/self/task` lists).
fn single_threaded() -> bool {
    std::fs::read_dir("/proc/self/task").is_ok_and(|tasks| tasks.count() == 1)
}

/// Forks: `Ok(None)` in the child, `Ok(Some(pid))` in the parent. Refused
/// in a process with more than one thread, where the child could find a
/// lock held by a thread it does not have.
pub fn fork() -> io::Result<Option<libc::pid_t>> {
    if !single_threaded() {
        return Err(io::Error::other("fork refused: this process runs more than one thread"));
    }
    // SAFETY: this process has one thread (checked above), so the child
    // may run any code before it execs or exits.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        pid => Ok(Some(pid)),
    }
}

/// Replaces this process with `command` (found on `PATH`, as `execvp`
/// does), its environment this process's with `env` (`NAME=value`
/// entries) put over it. Returns only if the exec failed, with why.
pub fn exec(command: &[CString], env: &[CString]) -> io::Error {
    let Some(program) = command.first() else {
        return io::Error::new(io::ErrorKind::InvalidInput, "no command to run");
    };
    let name_of = |entry: &[u8]| entry.split(|&b| b == b'=').next().unwrap_or_default().to_vec();
    let replaced: Vec<Vec<u8>> = env.iter().map(|e| name_of(e.as_bytes())).collect();
    let mut environment: Vec<CString> = std::env::vars_os()
        .filter(|(name, _)| !replaced.iter().any(|r| r.as_slice() == name.as_bytes()))
        .filter_map(|(name, value)| {
            let mut entry = name.as_bytes().to_vec();
            entry.push(b'=');
            entry.extend_from_slice(OsStr::as_bytes(&value));
            CString::new(entry).ok()
        })
        .collect();
    environment.extend(env.iter().cloned());
    let pointers = |strings: &[CString]| {
        let mut pointers: Vec<*const libc::c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        pointers.push(std::ptr::null());
        pointers
    };
    let (argv, envp) = (pointers(command), pointers(&environment));
    // SAFETY: both arrays end with a null pointer and point to C strings
    // that live until the exec replaces this process (or returns).
    unsafe { libc::execvpe(program.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    io::Error::last_os_error()
}

/// Closes every fd above 2 but those in `keep`, allocating nothing (a
/// process that shares its parent's memory calls it too). Only right after
/// a clone: the objects that own the fds it closes are the parent's.
pub fn close_all_but<const N: usize>(mut keep: [RawFd; N]) {
    let close = |from: u32, to: u32| {
        // SAFETY: close_range takes plain integers; it closes fds of this
        // process's own table, which nothing in this process uses.
        unsafe { libc::syscall(libc::SYS_close_range, from, to, 0u32) };
    };
    keep.sort_unstable();
    let mut from: u32 = 3;
    for fd in keep.map(|fd| fd as u32) {
        if fd > from {
            close(from, fd - 1);
        }
        from = from.max(fd + 1);
    }
    close(from, u32::MAX);
}

/// Ends this process at once with `code`: no destructor, no exit handler,
/// no buffered output of the parent's flushed again in a forked child.
pub fn exit_now(code: libc::c_int) -> ! {
    // SAFETY: _exit takes a plain integer and does not return.
    unsafe { libc::_exit(code) }
}

/// Takes `fd`, one of the fixed descriptors a spawn handed this process
/// (its control socket, the listener's socket, the link to the server),
/// which no object in it owns yet: `None` when it is not open.
pub fn take_inherited(fd: libc::c_int) -> Option<OwnedFd> {
    // SAFETY: F_GETFD takes no pointer and tells whether the number is
    // open; the callers pass the fixed numbers they inherited, each taken
    // once, so the OwnedFd made of one is its only owner.
    unsafe { (libc::fcntl(fd, libc::F_GETFD) >= 0).then(|| OwnedFd::from_raw_fd(fd)) }
}

/// Closes `fd` (see [`take_inherited`]); nothing happens when it is not open.
pub fn close_inherited(fd: libc::c_int) {
    drop(take_inherited(fd));
}
