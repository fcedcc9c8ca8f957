//! A command's process, made before its request comes. While an init waits
//! for a request, it starts the process that will run the next command,
//! and that process does at once everything that does not depend on the
//! command: it leads a process group of its own, unblocks every signal,
//! drops every capability and installs the observing filter. Installing a
//! seccomp filter costs the kernel a fraction of a millisecond (it checks,
//! translates and compiles the program, and works out which calls it
//! always allows), which is then off the call's path. The process tells
//! its init it is ready on the channel between them, with the filter's
//! listener, and waits there.
//!
//! When the request comes, the init reads the command, checks its mounts,
//! puts the command where the process finds it, sends the command's stdio
//! on the channel and the listener to the host; the process enters the working directory, moves
//! its stdio to fds 0-2 and execs. The channel is close-on-exec: it reaches
//! end of file at the exec, or first carries the errno of the step that
//! failed, so the init knows whether the command started before it says so.
//!
//! The process is made as `posix_spawn` makes one: a clone that shares the
//! init's memory, on a stack of its own, so no page tables are copied and
//! its exec has no copy of the init's memory to tear down. Unlike
//! `posix_spawn`'s, it runs beside its init until its exec, so it makes only
//! system calls, on values the init prepared and no longer changes: it
//! allocates nothing, takes no lock and panics nowhere. The C library calls
//! it makes (the filter's installation among them) set `errno`, which it
//! shares with the init, only when they fail; the init meanwhile makes its
//! calls through rustix, which never reads `errno`. It makes no call the
//! filter notifies before its exec (its send carries no address, it opens
//! and creates nothing), so it cannot wait on a host without the listener.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::sandbox::process_calls::{self, SignalSet};
use crate::sandbox::wire;

/// The exit code of a process whose command could not start, as a shell's.
const NOT_STARTED: libc::c_int = 127;

/// What a command's process does before its request comes.
#[derive(Clone, Copy)]
pub(super) struct Preparation<'a> {
    /// The observing filter it installs on itself, if any.
    pub observe: Option<&'a [libc::sock_filter]>,
    /// The capabilities it drops: its init's bounding set.
    pub bounding: u64,
}

/// One init's means of making command processes: the stack they run on
/// until their exec, and where they find their preparation and command.
pub(super) struct Launcher<'a> {
    stack: Stack,
    /// The PID namespace's `ns_last_pid`, open for writing.
    last_pid: OwnedFd,
    /// At a fixed address, read by each process while it shares the init's
    /// memory.
    shared: Box<Shared<'a>>,
}

/// What a command's process reads in its init's memory.
struct Shared<'a> {
    /// The process's end of its channel (a number in its own fd table).
    chan: RawFd,
    preparation: Preparation<'a>,
    /// Its command, set by the init before it sends the command's stdio.
    command: AtomicPtr<Command<'a>>,
}

/// A command as its process execs it, in strings the init owns until the
/// exec.
struct Command<'a> {
    program: &'a CStr,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    cwd: &'a CStr,
}

/// The next command's process, preparing or waiting for its request.
pub(super) struct Ready {
    pid: libc::pid_t,
    /// The init's end of the channel between them.
    chan: OwnedFd,
}

impl<'a> Launcher<'a> {
    /// The launcher of processes that make `preparation`, in the PID
    /// namespace whose `ns_last_pid` is `last_pid` (kept open since before
    /// `/proc/sys` went read-only).
    pub(super) fn new(preparation: Preparation<'a>, last_pid: OwnedFd) -> Result<Launcher<'a>, i32> {
        Ok(Launcher {
            stack: Stack::new()?,
            last_pid,
            shared: Box::new(Shared {
                chan: -1,
                preparation,
                command: AtomicPtr::new(std::ptr::null_mut()),
            }),
        })
    }

    /// Starts the next command's process, which prepares itself beside the
    /// init. Only once the last one has exec'd or exited (its stack and
    /// its shared values are reused) and the PID namespace holds the init
    /// alone: the process is pid 2, as the first of a new namespace.
    pub(super) fn ready(&mut self) -> Result<Ready, i32> {
        let errno = |e: io::Error| e.raw_os_error().unwrap_or(libc::EIO);
        match rustix::io::pwrite(&self.last_pid, b"1", 0) {
            Ok(1) => {}
            Ok(_) => return Err(libc::EIO),
            Err(e) => return Err(e.raw_os_error()),
        }
        let (ours, theirs) = wire::socket_pair(libc::SOCK_SEQPACKET).map_err(errno)?;
        self.shared.chan = theirs.as_raw_fd();
        let shared: *const Shared<'a> = &*self.shared;
        // SAFETY: the process runs `process_main` on its own stack, reading
        // `shared` (boxed, unchanged until this process has exec'd or
        // exited: see `ready`'s caller and `Ready::start`) and what it
        // points to (the init's filter program, alive as long as the init),
        // and making only system calls. It shares no signal handlers (no
        // CLONE_SIGHAND) and no fd table (no CLONE_FILES).
        let pid = unsafe {
            libc::clone(
                process_main,
                self.stack.top(),
                libc::CLONE_VM | libc::SIGCHLD,
                shared.cast_mut().cast(),
            )
        };
        if pid < 0 {
            return Err(last_errno());
        }
        // The process has its copy of its end.
        drop(theirs);
        Ok(Ready { pid, chan: ours })
    }

    /// Runs the command `exec` in `ready`'s process with `stdio`: waits until
    /// the process is prepared, hands it the command, gives `listener_to`
    /// the filter's listener (if the filter could be installed), and waits
    /// for the exec. The process's pid, or the errno of the step that failed.
    pub(super) fn start(
        &mut self,
        ready: Ready,
        exec: &wire::Body,
        stdio: [OwnedFd; 3],
        listener_to: impl FnOnce(OwnedFd) -> Result<(), i32>,
    ) -> Result<libc::pid_t, i32> {
        let (argv, envp) = (pointers(&exec.argv), pointers(&exec.envp));
        let mut command = Command {
            program: &exec.program,
            argv: argv.as_ptr(),
            envp: envp.as_ptr(),
            cwd: &exec.cwd,
        };
        // Read by the process once the stdio has reached it; the borrow
        // ends when the process has exec'd (cleared below).
        let command: *mut Command<'_> = &raw mut command;
        self.shared.command.store(command.cast(), Ordering::Release);
        let fds = [stdio[0].as_fd(), stdio[1].as_fd(), stdio[2].as_fd()];
        let (ready, listener) = match hand_over(&ready, &fds) {
            Ok(listener) => (ready, listener),
            Err(Refusal::Failed(errno)) => return Err(errno),
            // Killed before its request (from the host: no command reaches
            // it): once gone, a new one takes its place and its stack.
            Err(Refusal::Gone) => {
                ready.end();
                let again = self.ready()?;
                match hand_over(&again, &fds) {
                    Ok(listener) => (again, listener),
                    Err(Refusal::Failed(errno)) => return Err(errno),
                    Err(Refusal::Gone) => return Err(libc::ECHILD),
                }
            }
        };
        // Only the command holds its stdio now, so its pipes end with it.
        drop(stdio);
        if let Some(listener) = listener {
            listener_to(listener)?;
        }
        // Until the exec (or the process's end), `command`, `argv`, `envp`
        // and `exec` stay where they are.
        let mut tag = [0u8; 5];
        let exec_result = loop {
            match wire::recv_fds_into(ready.chan.as_fd(), &mut tag, &mut []) {
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                // End of file: the channel closed at the exec (or the
                // process was killed before it, which its status tells).
                Ok(0) => break Ok(ready.pid),
                Ok(5) if tag[0] == wire::FAILED => break Err(errno_in(&tag)),
                Ok(_) => break Err(libc::EIO),
                Err(e) => break Err(e.raw_os_error().unwrap_or(libc::EIO)),
            }
        };
        self.shared.command.store(std::ptr::null_mut(), Ordering::Relaxed);
        exec_result
    }
}

/// Why a process made ahead did not take its command.
enum Refusal {
    /// It could not prepare itself, and said why.
    Failed(i32),
    /// It is gone, or its channel failed.
    Gone,
}

/// Waits until `ready`'s process is prepared and sends it the command's
/// stdio, `fds`: the filter's listener, if it has one.
fn hand_over(ready: &Ready, fds: &[BorrowedFd<'_>; 3]) -> Result<Option<OwnedFd>, Refusal> {
    let mut tag = [0u8; 5];
    let mut listener: [Option<OwnedFd>; 1] = [None];
    match wire::recv_fds_into(ready.chan.as_fd(), &mut tag, &mut listener) {
        Ok(1) if tag[0] == wire::READY => {}
        Ok(5) if tag[0] == wire::FAILED => return Err(Refusal::Failed(errno_in(&tag))),
        Ok(_) | Err(_) => return Err(Refusal::Gone),
    }
    match wire::send_with_fds(ready.chan.as_fd(), &[wire::COMMAND], fds) {
        Ok(()) => Ok(listener.into_iter().next().flatten()),
        Err(_) => Err(Refusal::Gone),
    }
}

/// The errno of a `FAILED` message.
fn errno_in(message: &[u8; 5]) -> i32 {
    i32::from_be_bytes([message[1], message[2], message[3], message[4]])
}

impl Ready {
    /// Kills the process and reaps it: then nothing runs on its stack.
    fn end(self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.pid) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
        }
    }
}

extern "C" fn process_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the init's `Shared`, unchanged while this process
    // shares its memory (see `Launcher::ready`), and only read here.
    let shared = unsafe { &*arg.cast_const().cast::<Shared<'_>>() };
    run_process(shared)
}

/// The process: prepares itself, says so, waits for its command and
/// execs it. Tells the init why it could not, and exits with 127. Never
/// returns.
fn run_process(shared: &Shared<'_>) -> ! {
    // Of the init's fds (its control socket, its channels) it keeps none.
    process_calls::close_all_but([shared.chan]);
    let Some(chan) = process_calls::take_inherited(shared.chan) else {
        process_calls::exit_now(NOT_STARTED)
    };
    let chan = chan.as_fd();
    let _ = rustix::process::setpgid(None, None);
    process_calls::set_mask(&SignalSet::of(&[]));
    if let Err(errno) = crate::sandbox::caps::drop_held(shared.preparation.bounding) {
        give_up(chan, errno)
    }
    // A filter that cannot be installed leaves the host to fall back to
    // the error text.
    let listener =
        (shared.preparation.observe).and_then(|program| crate::sandbox::notify::filter::install(program).ok());
    let sent = match &listener {
        Some(listener) => wire::send_with_fds(chan, &[wire::READY], &[listener.as_fd()]),
        None => wire::send_with_fds(chan, &[wire::READY], &[]),
    };
    drop(listener);
    if sent.is_err() {
        process_calls::exit_now(NOT_STARTED)
    }
    let mut tag = [0u8; 1];
    let mut stdio: [Option<OwnedFd>; 3] = [None, None, None];
    let got = loop {
        match wire::recv_fds_into(chan, &mut tag, &mut stdio) {
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            other => break other,
        }
    };
    let command = shared.command.load(Ordering::Acquire);
    match (got, stdio, command.is_null()) {
        (Ok(1), [Some(stdin), Some(stdout), Some(stderr)], false) if tag[0] == wire::COMMAND => {
            // SAFETY: set by the init before it sent the stdio, and kept
            // there, with the strings it points to, until this exec.
            let command = unsafe { &*command };
            give_up(chan, exec_command(command, [stdin, stdout, stderr]))
        }
        // The init is gone, or let its request go.
        _ => process_calls::exit_now(NOT_STARTED),
    }
}

/// Enters the command's working directory, moves `stdio` to fds 0-2 and
/// execs, every fd above 2 closed at the exec. Returns only on failure,
/// with the errno.
fn exec_command(command: &Command<'_>, stdio: [OwnedFd; 3]) -> i32 {
    if let Err(e) = rustix::process::chdir(command.cwd) {
        return e.raw_os_error();
    }
    let [stdin, stdout, stderr] = stdio;
    let moved = rustix::stdio::dup2_stdin(&stdin)
        .and_then(|()| rustix::stdio::dup2_stdout(&stdout))
        .and_then(|()| rustix::stdio::dup2_stderr(&stderr));
    if let Err(e) = moved {
        return e.raw_os_error();
    }
    // SAFETY: close_range takes plain integers and marks this process's own
    // fds above 2 close-on-exec. execve reads the NUL-terminated program and
    // the null-ended pointer arrays, which the init keeps until the exec
    // replaces this process (or returns).
    unsafe {
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) != 0 {
            return last_errno();
        }
        libc::execve(command.program.as_ptr(), command.argv, command.envp);
    }
    last_errno()
}

/// Tells the init on `chan` why the command cannot start, and exits.
fn give_up(chan: BorrowedFd<'_>, errno: i32) -> ! {
    let errno = if errno == 0 { libc::EIO } else { errno };
    let _ = wire::send_message(chan, wire::FAILED, errno);
    process_calls::exit_now(NOT_STARTED)
}

/// The null-ended array of pointers to `strings` that `execve` takes.
fn pointers(strings: &[CString]) -> Vec<*const libc::c_char> {
    let mut p: Vec<*const libc::c_char> = strings.iter().map(|s| s.as_ptr()).collect();
    p.push(std::ptr::null());
    p
}

/// The stack a command's process runs on until its exec, with an
/// inaccessible page below it, so an overflow faults instead of writing
/// into the init's memory.
struct Stack {
    base: *mut libc::c_void,
}

impl Stack {
    const SIZE: usize = 64 * 1024;
    const GUARD: usize = 4096;

    fn new() -> Result<Stack, i32> {
        // SAFETY: a fresh anonymous private mapping, then its lowest page
        // made inaccessible; nothing else refers to it.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                Self::GUARD + Self::SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(last_errno());
            }
            if libc::mprotect(base, Self::GUARD, libc::PROT_NONE) != 0 {
                return Err(last_errno());
            }
            Ok(Stack { base })
        }
    }

    /// The highest address (stacks grow down); page-aligned.
    fn top(&self) -> *mut libc::c_void {
        self.base.wrapping_byte_add(Self::GUARD + Self::SIZE)
    }
}

/// The errno a raw call left.
fn last_errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}
