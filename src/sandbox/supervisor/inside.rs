//! The supervisor process: `bash-mcp __sandbox-supervise`, run by bwrap
//! inside the sandbox's namespaces with the control socket as fd 3.
//!
//! It holds the namespaces (user, mount, PID, network, IPC, UTS) so that a
//! command costs far less than a whole bwrap, and keeps a small pool of
//! inits ready: each one cloned in PID, mount and IPC namespaces of its
//! own, with that namespace's `/proc` already mounted, waiting on the
//! control socket itself. The host's request goes straight to one of them
//! (the kernel hands each message to one reader); the init tells the
//! supervisor it took it, on the channel between them.
//!
//! The init checks its mounts and starts the command in the process it
//! made ahead: the leader of its process group, with no capabilities,
//! every signal at its default, the requested environment and working
//! directory, and only fds 0-2. It reports the command's exit status on
//! the command's socket, then kills everything left in its namespace and
//! reaps it: escaped `setsid`
//! and double-forked children die with their call. It kills on request,
//! and everything when the host's end of the socket closes (the call was
//! abandoned or the host died; it exits then).
//!
//! An init whose command ended clears its namespaces for the next command
//! off the call's path (see `recycle`): nothing is left in its PID
//! namespace and the next pid is 2 again, it takes a new IPC namespace and
//! new empty tmpfs mounts (an init whose command changed what the next
//! would inherit from it, such as its limits, exits instead: see
//! `supervisor::inherited`). Then it makes the next command's process and
//! comes back to the supervisor,
//! which hands it the control socket again if fewer than `POOL` inits
//! are ready, or lets it exit. So a command costs no clone of the mount
//! namespace, no new PID namespace and no `/proc` mount, and the next
//! call finds an init waiting; a new init is cloned only when none is
//! ready or one exited. Every init dies with the supervisor
//! (`PR_SET_PDEATHSIG`, and bwrap's PID namespace ends with it too), so
//! the pool cannot outlive it.
//!
//! Commands cannot reach the channel: every fd above 2 closes at their
//! `exec`, an init holds the control socket only while it waits for a
//! request, the supervisor and the inits are not dumpable (no `ptrace`, no
//! `/proc/<pid>/fd`), the supervisor and the other inits are outside each
//! command's PID namespace, and a command's own init ignores every signal
//! sent from inside it. Commands cannot get capabilities back either:
//! their process drops every one before its `exec` (the init keeps its own
//! for the next command's mounts), and the namespace's user-namespace
//! limit is 0.
//!
//! The supervisor and its inits are single-threaded, so their forks may
//! allocate (no other thread can hold the allocator's lock). Each command's
//! process is made by its init before the request comes, and prepares what
//! does not depend on the command there (see `command_process.rs`).

use std::ffi::{CStr, CString, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, poll};
use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, StatxAttributes, StatxFlags};
use rustix::io::Errno;
use rustix::mount::{MountFlags, MoveMountFlags, OpenTreeFlags, UnmountFlags};
use rustix::process::{DumpableBehavior, Pid, Signal, WaitOptions};
use rustix::thread::UnshareFlags;

use super::command_process::{Launcher, Preparation, Ready};
use super::inherited::Inherited;
use crate::sandbox::process_calls::{self, SignalSet};
use crate::sandbox::wire::{self, Body};

/// The first argument that makes the binary act as the supervisor.
pub const SUPERVISE_ARG: &str = "__sandbox-supervise";

/// The argument that makes each command's init install the observing
/// filter for writes (see [`notify`](crate::sandbox::notify)).
pub const OBSERVE_ARG: &str = "--observe";
/// The same, and for connections too (the sandbox has no network).
pub const OBSERVE_NETWORK_ARG: &str = "--observe-network";
/// Before it, a path bwrap mounted (a writable root, a protected or hidden
/// path, a directory kept in place) that each init checks is still a mount
/// when its request comes.
pub const BOUND_ARG: &str = "--bound";
/// Before it, a guarded directory's writable subdirectory, which bwrap
/// bound if it was there (`--bind-try`): each init checks it is still a
/// mount if it exists (the host may remove it, not replace it).
pub const BOUND_IF_PRESENT_ARG: &str = "--bound-if-present";
/// The argument that gives each command an empty `/tmp` of its own
/// (read-only mode), as it always gets an empty `/dev/shm`.
pub const FRESH_TMP_ARG: &str = "--fresh-tmp";
/// The argument before a path the sandbox mounts below `/tmp` or
/// `/dev/shm`, which an init carries over onto its fresh tmpfs.
pub const KEEP_ARG: &str = "--keep";
/// The same, for a mount bwrap made only if its path was there.
pub const KEEP_IF_PRESENT_ARG: &str = "--keep-if-present";

/// The argument before the port the supervisor opens on its sandbox's own
/// loopback and hands to the host with its readiness: the listener of the
/// shared proxy of a network by name (see [`network`](crate::sandbox::network)).
pub const NET_LISTEN_ARG: &str = "--net-listen";

/// The argument before the most processes each command may run.
pub const MAX_PROCESSES_ARG: &str = "--max-processes";

/// How long an init waits for a request body the host announced.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The control socket's fd in the supervisor.
pub const CONTROL_FD: RawFd = 3;

/// How many inits the supervisor keeps ready: two, so that a command that
/// arrives while the last command's init is still clearing its namespaces
/// finds one as well.
const POOL: usize = 2;

/// `/proc` entries a fresh procfs gets read-only, as bubblewrap's own
/// `--proc` does: the sysctls, the SysRq trigger, IRQ and bus settings.
const PROC_COVERS: [&CStr; 4] = [c"/proc/sys", c"/proc/sysrq-trigger", c"/proc/irq", c"/proc/bus"];

/// The flags of every procfs mounted here, as bubblewrap's own.
const PROC_FLAGS: MountFlags = MountFlags::NOSUID.union(MountFlags::NODEV).union(MountFlags::NOEXEC);

/// The supervisor's arguments, as [`parse_args`] reads them.
struct Args {
    /// The observing filter each command's init installs.
    observe: Option<Vec<libc::sock_filter>>,
    /// The paths that must still be mounts when a request comes.
    bound: Vec<CString>,
    /// The paths that must still be mounts if they exist.
    bound_if_present: Vec<CString>,
    /// The `pid_max` of each command's PID namespace (its most processes,
    /// plus the init and pid 0), where the kernel has one per namespace.
    pid_max: Option<u32>,
    /// The port of the proxy's listener on the sandbox's loopback.
    net_listen: Option<u16>,
    /// Empty tmpfs mounts each command gets: `/dev/shm`, and `/tmp` in
    /// read-only mode.
    fresh: Vec<CString>,
    /// What the sandbox mounts below those, carried over onto each.
    keep: Vec<Keep>,
    /// The signals whose disposition is not the default in the supervisor,
    /// and so in each init it clones: what an init resets for its command.
    not_default: Vec<libc::c_int>,
    /// The supervisor's bounding set (and so each init's): what each
    /// command's process drops.
    bounding: u64,
}

impl Args {
    /// What each command's process does before its request comes.
    fn preparation(&self) -> Preparation<'_> {
        Preparation {
            observe: self.observe.as_deref(),
            bounding: self.bounding,
        }
    }
}

/// A mount below a fresh tmpfs that an init carries over onto it.
struct Keep {
    path: CString,
    /// bwrap made it only if its path was there (`--bind-try`), and the
    /// host may have removed it since: then there is nothing to carry.
    if_present: bool,
}

/// Runs the supervisor: returns only on failure to set up, with a message
/// for stderr; exits 0 once the host has closed the control socket and the
/// last command it started has ended.
pub fn supervise_main(args: &[OsString]) -> String {
    let mut args = match parse_args(args) {
        Ok(args) => args,
        Err(e) => return format!("bash-mcp sandbox supervisor: {e}"),
    };
    let Some(control) = process_calls::take_inherited(CONTROL_FD) else {
        return format!("bash-mcp sandbox supervisor: fd {CONTROL_FD}, the control socket, is not open (internal)");
    };
    match setup(&control, args.net_listen) {
        Ok(sigfd) => {
            // The supervisor changes no disposition from here on.
            args.not_default = not_default_signals();
            args.bounding = crate::sandbox::caps::bounding_set();
            serve(control, sigfd.as_fd(), &args)
        }
        Err(e) => format!("bash-mcp sandbox supervisor: {e}"),
    }
}

fn parse_args(args: &[OsString]) -> Result<Args, String> {
    use crate::sandbox::notify::filter;
    let mut parsed = Args {
        observe: None,
        bound: Vec::new(),
        bound_if_present: Vec::new(),
        pid_max: None,
        net_listen: None,
        fresh: vec![c"/dev/shm".to_owned()],
        keep: Vec::new(),
        not_default: Vec::new(),
        // Until it is read: every capability number, so nothing is kept.
        bounding: u64::MAX,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some(OBSERVE_ARG) => parsed.observe = Some(filter::program(&[filter::WRITES, filter::CONNECT].concat())),
            Some(OBSERVE_NETWORK_ARG) => {
                parsed.observe = Some(filter::program(&[filter::WRITES, filter::CONNECTS].concat()))
            }
            Some(MAX_PROCESSES_ARG) => {
                let n = args.next().and_then(|n| n.to_str()?.parse::<u32>().ok());
                parsed.pid_max = Some(n.ok_or("--max-processes needs a number")?.saturating_add(2));
            }
            Some(NET_LISTEN_ARG) => {
                let port = args.next().and_then(|p| p.to_str()?.parse::<u16>().ok());
                parsed.net_listen = Some(port.ok_or("--net-listen needs a port")?);
            }
            Some(FRESH_TMP_ARG) => parsed.fresh.push(c"/tmp".to_owned()),
            Some(flag @ (KEEP_ARG | KEEP_IF_PRESENT_ARG)) => parsed.keep.push(Keep {
                path: path_after(flag, args.next())?,
                if_present: flag == KEEP_IF_PRESENT_ARG,
            }),
            Some(BOUND_ARG) => parsed.bound.push(path_after(BOUND_ARG, args.next())?),
            Some(BOUND_IF_PRESENT_ARG) => parsed
                .bound_if_present
                .push(path_after(BOUND_IF_PRESENT_ARG, args.next())?),
            _ => return Err(format!("unknown argument {arg:?} (internal)")),
        }
    }
    Ok(parsed)
}

/// The path argument after `flag`.
fn path_after(flag: &str, path: Option<&OsString>) -> Result<CString, String> {
    use std::os::unix::ffi::OsStrExt;
    let path = path.ok_or_else(|| format!("{flag} needs a path"))?;
    CString::new(path.as_bytes()).map_err(|_| format!("a {flag} path holds NUL"))
}

fn setup(control: &OwnedFd, net_listen: Option<u16>) -> Result<OwnedFd, String> {
    // Not dumpable, so a command cannot ptrace the supervisor or open its
    // /proc entries.
    rustix::process::set_dumpable_behavior(DumpableBehavior::NotDumpable)
        .map_err(|e| format!("PR_SET_DUMPABLE: {e}"))?;
    limit_user_namespaces()?;
    // SIGCHLD is blocked so that the signalfd (inherited by every init)
    // receives it.
    let sigchld = SignalSet::of(&[libc::SIGCHLD]);
    process_calls::block(&sigchld);
    let sigfd = process_calls::signalfd(&sigchld).map_err(|e| format!("signalfd: {e}"))?;
    // The proxy's port on this sandbox's loopback, held by the host's
    // listener from here on, so no command can take it.
    let listener = match net_listen {
        Some(port) => Some(
            std::net::TcpListener::bind(("127.0.0.1", port))
                .map_err(|e| format!("could not open the proxy's port 127.0.0.1:{port}: {e}"))?,
        ),
        None => None,
    };
    let fds: Vec<BorrowedFd<'_>> = listener.iter().map(AsFd::as_fd).collect();
    wire::send_with_fds(control.as_fd(), &[wire::READY], &fds).map_err(|e| format!("control socket: {e}"))?;
    Ok(sigfd)
}

/// Sets this user namespace's limit of nested user namespaces to 0, so no
/// command can create one (where it would hold capabilities again). bwrap
/// mounts `/proc/sys` read-only, so this writes through a procfs of our
/// own, in a mount namespace of our own, and unmounts it again.
fn limit_user_namespaces() -> Result<(), String> {
    process_calls::unshare(UnshareFlags::NEWNS).map_err(|e| format!("unshare(CLONE_NEWNS): {e}"))?;
    mount_procfs().map_err(|e| format!("mounting /proc: {e}"))?;
    let written = std::fs::write("/proc/sys/user/max_user_namespaces", "0");
    let _ = rustix::mount::unmount(c"/proc", UnmountFlags::DETACH);
    written.map_err(|e| format!("setting user.max_user_namespaces to 0: {e}"))
}

/// Mounts a procfs on `/proc`, with bubblewrap's flags.
fn mount_procfs() -> Result<(), Errno> {
    rustix::mount::mount(c"proc", c"/proc", c"proc", PROC_FLAGS, None)
}

fn serve(control: OwnedFd, sigfd: BorrowedFd<'_>, args: &Args) -> String {
    let mut pool = Pool {
        control: Some(control),
        ready: Vec::with_capacity(POOL),
        busy: Vec::new(),
        ended: false,
        pending: false,
    };
    loop {
        pool.top_up(sigfd, args);
        let events = pool.wait(sigfd);
        if !events.signals.is_empty() {
            pool.reap(sigfd);
        }
        if events.control.intersects(PollFlags::HUP | PollFlags::ERR) {
            pool.drain();
        }
        if events.control.contains(PollFlags::IN) {
            pool.pending = true;
        }
        pool.hear(&events.chans);
    }
}

/// What [`Pool::wait`] saw.
struct Events {
    /// On the control socket (none once it is closed).
    control: PollFlags,
    /// On the signalfd: an init exited.
    signals: PollFlags,
    /// On the ready inits' channels, then the busy ones'.
    chans: Vec<PollFlags>,
}

/// The supervisor's inits, by the supervisor's ends of their channels.
struct Pool {
    /// The control socket, until the host closes it: then no more commands
    /// come, and the supervisor exits once the last one it started has
    /// ended (it is draining).
    control: Option<OwnedFd>,
    /// Inits waiting on the control socket.
    ready: Vec<OwnedFd>,
    /// Inits running a command (each comes back once its namespaces are clear).
    busy: Vec<OwnedFd>,
    /// An init exited: the pool is topped up then rather than at once, so
    /// that making inits does not compete with a running command.
    ended: bool,
    /// A request came while no init was ready.
    pending: bool,
}

impl Pool {
    /// Whether the host closed the control socket.
    fn draining(&self) -> bool {
        self.control.is_none()
    }

    /// Makes inits until [`POOL`] are ready, when none is or one exited
    /// (unless draining); refuses a waiting request if none could be made.
    fn top_up(&mut self, sigfd: BorrowedFd<'_>, args: &Args) {
        let mut failure = 0;
        if (self.ready.is_empty() || self.ended) && !self.draining() {
            while self.ready.len() < POOL {
                match prepare(&mut self.control, sigfd, args) {
                    Ok(chan) => self.ready.push(chan),
                    Err(errno) => {
                        failure = errno;
                        break;
                    }
                }
            }
        }
        self.ended = false;
        if let Some(control) = self.control.as_ref().filter(|_| self.pending && self.ready.is_empty()) {
            refuse(control, failure);
        }
        self.pending = false;
    }

    /// Waits for events: the control socket's (hangup; a request, when no
    /// init is ready to read it itself), an init's exit, a message on an
    /// init's channel. The poll entries: the control socket, the signalfd,
    /// then the ready inits' channels and the busy ones'.
    fn wait(&self, sigfd: BorrowedFd<'_>) -> Events {
        // POLLHUP needs no event bit.
        let control_events = if self.ready.is_empty() {
            PollFlags::IN
        } else {
            PollFlags::empty()
        };
        let mut fds = Vec::with_capacity(2 + self.ready.len() + self.busy.len());
        fds.push(PollFd::new(&sigfd, PollFlags::IN));
        fds.extend(
            self.ready
                .iter()
                .chain(&self.busy)
                .map(|chan| PollFd::new(chan, PollFlags::IN)),
        );
        // A closed control socket is polled no more (it would report hangup at once).
        let chans = fds.len();
        if let Some(control) = &self.control {
            fds.push(PollFd::new(control, control_events));
        }
        // EINTR leaves every event empty: the caller polls again.
        let _ = poll(&mut fds, None);
        Events {
            control: fds.get(chans).map_or(PollFlags::empty(), PollFd::revents),
            signals: fds[0].revents(),
            chans: fds[1..chans].iter().map(PollFd::revents).collect(),
        }
    }

    /// Reaps the inits that exited; exits when none is left while draining.
    fn reap(&mut self, sigfd: BorrowedFd<'_>) {
        drain_signals(sigfd);
        loop {
            match rustix::process::wait(WaitOptions::NOHANG) {
                Ok(Some(_)) => self.ended = true,
                // No init left at all: a draining supervisor is done.
                Err(Errno::CHILD) if self.draining() => std::process::exit(0),
                _ => break,
            }
        }
    }

    /// The host closed the control socket (it stopped this supervisor, or
    /// it died). Ready inits read end of file and exit; a running one exits
    /// when it comes back (its channel closes) or its call is abandoned,
    /// which kills what is left in its namespace.
    fn drain(&mut self) {
        self.pending = false;
        // Closes the control socket in this process only; the ready inits
        // hold their own copies.
        self.control = None;
        self.busy.clear();
        // As in `reap`: reaps an exited init without blocking.
        if let Err(Errno::CHILD) = rustix::process::wait(WaitOptions::NOHANG) {
            std::process::exit(0);
        }
    }

    /// One message from each init whose channel has an event (`events`, in
    /// the order of [`Pool::wait`]): a ready init took its request (or
    /// died), a busy one came back (or died).
    fn hear(&mut self, events: &[PollFlags]) {
        let (was_ready, was_busy) = (std::mem::take(&mut self.ready), std::mem::take(&mut self.busy));
        let count = was_ready.len();
        for (i, chan) in was_ready.into_iter().chain(was_busy).enumerate() {
            let from_ready = i < count;
            if events.get(i).is_none_or(|events| events.is_empty()) {
                if from_ready {
                    self.ready.push(chan)
                } else {
                    self.busy.push(chan)
                }
                continue;
            }
            match (from_ready, read_tag(&chan)) {
                (true, Some(wire::TAKEN)) => self.busy.push(chan),
                // Ready again: it gets the control socket back.
                (false, Some(wire::BACK))
                    if self.ready.len() < POOL
                        && self.control.as_ref().is_some_and(|control| {
                            wire::send_with_fds(chan.as_fd(), &[wire::AGAIN], &[control.as_fd()]).is_ok()
                        }) =>
                {
                    self.ready.push(chan)
                }
                // Enough are ready, or no more requests come (or the
                // control socket could not be sent): closing its channel
                // makes it exit. A closed channel: it died.
                _ => {}
            }
        }
    }
}

/// The tag of one message on an init's channel; `None` at end of file or
/// on an error (the init is gone).
fn read_tag(chan: &OwnedFd) -> Option<u8> {
    let mut buf = [0u8; 8];
    match wire::recv_with_fds(chan.as_fd(), &mut buf) {
        Ok((n, _)) if n > 0 => Some(buf[0]),
        _ => None,
    }
}

/// Reads every pending signal off the signalfd; it is non-blocking, so
/// this stops when none is left.
fn drain_signals(sigfd: BorrowedFd<'_>) {
    let mut info = [0u8; 128]; // one signalfd_siginfo
    while matches!(rustix::io::read(sigfd, &mut info), Ok(n) if n > 0) {}
}

/// Answers one request on the control socket with `errno` (no init could
/// be made for it); exits when the host has closed the socket.
fn refuse(control: &OwnedFd, errno: i32) {
    let mut buf = [0u8; 16];
    match wire::recv_with_fds(control.as_fd(), &mut buf) {
        Ok((0, _)) => std::process::exit(0),
        Ok((_, fds)) if buf[0] == wire::COMMAND && fds.len() == wire::MAX_FDS => {
            let _ = wire::send_message(fds[0].as_fd(), wire::FAILED, errno);
        }
        Ok(_) | Err(_) => {} // a malformed message (its fds close here), or EINTR
    }
}

/// Clones the next ready init, in new PID, mount and IPC namespaces (so
/// SysV shared memory, semaphores and message queues are the command's
/// own). Returns the supervisor's end of the channel between them.
fn prepare(control: &mut Option<OwnedFd>, sigfd: BorrowedFd<'_>, args: &Args) -> Result<OwnedFd, i32> {
    let (ours, theirs) = wire::socket_pair(libc::SOCK_SEQPACKET).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    // SAFETY: a fork-like clone (no shared memory, no new stack) of this
    // single-threaded process into new PID and mount namespaces; the child
    // runs `init`, which never returns.
    let pid = unsafe { raw_fork(libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_NEWIPC) };
    if pid == 0 {
        drop(ours);
        // The child's memory and fd table are copies of the supervisor's:
        // this copy of the control socket is the init's own to take.
        let Some(control) = control.take() else { exit_init() };
        // What it inherits includes the supervisor's ends of the other
        // inits' channels: held here, one would keep an init that the
        // supervisor let go waiting for its channel to close.
        process_calls::close_all_but([control.as_raw_fd(), sigfd.as_raw_fd(), theirs.as_raw_fd()]);
        init(control, theirs, sigfd, args);
    }
    if pid < 0 {
        return Err(last_errno());
    }
    Ok(ours)
}

fn read_body(sock: BorrowedFd<'_>) -> io::Result<Body> {
    let _ = rustix::net::sockopt::set_socket_timeout(sock, rustix::net::sockopt::Timeout::Recv, Some(BODY_TIMEOUT));
    let mut len = [0u8; 4];
    if !wire::read_exact(sock, &mut len)? {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > wire::MAX_BODY {
        return Err(io::Error::from_raw_os_error(libc::E2BIG));
    }
    let mut data = vec![0u8; len];
    if !wire::read_exact(sock, &mut data)? && len > 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Body::decode(&data)
}

/// `fork` as a raw `clone` with `flags` (namespace flags) and SIGCHLD.
///
/// # Safety
/// The caller must be single-threaded or run only async-signal-safe code
/// in the child, as after `fork`.
unsafe fn raw_fork(flags: libc::c_int) -> libc::pid_t {
    // SAFETY: clone with a null stack behaves like fork (the child gets a
    // copy-on-write copy of our stack); the other arguments are unused.
    unsafe {
        libc::syscall(
            libc::SYS_clone,
            (flags | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        ) as libc::pid_t
    }
}

/// A ready init: PID 1 of its namespace. It mounts the namespace's `/proc`,
/// then, for as long as its supervisor hands it the control socket again,
/// waits on it for one request with the command's process made ahead (see
/// `command_process.rs`), starts that command, watches it, and clears its
/// namespaces for the next. Never returns.
fn init(control: OwnedFd, chan: OwnedFd, sigfd: BorrowedFd<'_>, args: &Args) -> ! {
    // Die with the supervisor (the PID namespace of bwrap ends with it too).
    let _ = rustix::process::set_parent_process_death_signal(Some(Signal::KILL));
    // Failures here are reported to the request this init gets.
    let mut prepared = mount_proc(args.pid_max)
        .and_then(|last_pid| {
            args.fresh
                .iter()
                .try_for_each(|target| fresh_tmpfs(target, &args.keep))
                .map(|()| last_pid)
        })
        .and_then(|last_pid| settle(&args.not_default).map(|()| last_pid))
        .and_then(|last_pid| Launcher::new(args.preparation(), last_pid));
    // What its commands could change on it, as it was before the first.
    let inherited = Inherited::read();
    let mut next = match &mut prepared {
        Ok(launcher) => launcher.ready(),
        Err(errno) => Err(*errno),
    };
    let mut control = control;
    // A request: its tag, and its body when it fits (one byte more, so a
    // longer message shows as one that filled the buffer).
    let mut buf = vec![0u8; 1 + wire::INLINE_BODY + 1];
    loop {
        let received = loop {
            match wire::recv_with_fds(control.as_fd(), &mut buf) {
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                other => break other,
            }
        };
        // The control socket is not ours to hold while the command runs
        // (this closes its fd in this process only).
        drop(control);
        let (fds, inline) = match received {
            Ok((n, fds)) if n > 0 && n < buf.len() && buf[0] == wire::COMMAND && fds.len() == wire::MAX_FDS => {
                (fds, &buf[1..n])
            }
            // The host is gone, or the message was malformed (its fds close).
            _ => exit_init(),
        };
        let [sock, stdin, stdout, stderr]: [OwnedFd; 4] = fds.try_into().expect("four fds");
        let (launcher, ready) = match (prepared.as_mut().map_err(|e| *e), next) {
            (Ok(launcher), Ok(ready)) => (launcher, ready),
            (Err(errno), _) | (_, Err(errno)) => fail(sock.as_fd(), errno),
        };
        run(
            (&sock, inline),
            [stdin, stdout, stderr],
            (launcher, ready),
            (&chan, sigfd),
            args,
        );
        drop(sock);
        clear(sigfd);
        // The command changed what the next one would inherit (see
        // inherited.rs): this init serves no other.
        if inherited.is_none() || Inherited::read() != inherited {
            exit_init();
        }
        if recycle(args).is_err() {
            exit_init();
        }
        // Made in the namespaces as they are now: in the new IPC namespace.
        next = match launcher.ready() {
            Ok(ready) => Ok(ready),
            Err(_) => exit_init(),
        };
        control = match come_back(&chan) {
            Some(control) => control,
            None => exit_init(),
        };
    }
}

/// Starts the command of the request on `sock` (its body `inline`, or on
/// `sock` when that is empty) in `ready`, tells the supervisor on `chan`
/// that this init took a request, and watches the
/// command until its shell has exited and the host has its status. Exits
/// the init instead when the command cannot start, or its call was
/// abandoned.
fn run(
    (sock, inline): (&OwnedFd, &[u8]),
    stdio: [OwnedFd; 3],
    (launcher, ready): (&mut Launcher, Ready),
    (chan, sigfd): (&OwnedFd, BorrowedFd<'_>),
    args: &Args,
) {
    let sock = sock.as_fd();
    let body = match inline {
        [] => read_body(sock),
        framed => Body::decode_framed(framed),
    };
    let body = body.unwrap_or_else(|e| fail(sock, e.raw_os_error().unwrap_or(libc::EINVAL)));
    if !all_mounted(&args.bound) || !mounted_if_present(&args.bound_if_present) {
        // The host replaced a bound path: this namespace no longer keeps it.
        fail(sock, libc::ESTALE);
    }
    // The listener goes to the host before the command can make a call it
    // notifies, which then waits for the host's handler.
    let listener_message = wire::message(wire::LISTENER, 0);
    let to_host = |listener: OwnedFd| {
        wire::send_with_fds(sock, &listener_message, &[listener.as_fd()])
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    };
    let pid = launcher
        .start(ready, &body, stdio, to_host)
        .unwrap_or_else(|errno| fail(sock, errno));
    let _ = wire::send_message(sock, wire::STARTED, pid);
    // Only now: waking the supervisor earlier would put it before the
    // command on a busy CPU. Another ready init waits on the control socket
    // meanwhile; the supervisor then keeps the pool full.
    let _ = wire::send_message(chan.as_fd(), wire::TAKEN, 0);
    watch(sock, sigfd, pid)
}

/// Kills everything left in this init's PID namespace (what the command
/// left running: escaped `setsid` and double-forked children too) and
/// reaps it all: everything in the namespace descends from the init, so
/// once it has no child, nothing is left. Killing again after each reap
/// catches a process forked while the first kill went round.
fn clear(sigfd: BorrowedFd<'_>) {
    loop {
        kill_namespace();
        match rustix::process::wait(WaitOptions::empty()) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(_) => break, // ECHILD: the namespace holds the init alone
        }
    }
    drain_signals(sigfd);
}

/// Sends SIGKILL to every process in this init's PID namespace but the
/// init: `kill(-1)` from a namespace's init reaches exactly those.
fn kill_namespace() {
    let _ = rustix::process::kill_process_group(Pid::INIT, Signal::KILL);
}

/// Makes this init's namespaces as new ones for its next command, off the
/// call's path: a new IPC namespace replaces the one the last command's
/// SysV objects and POSIX message queues live in, and the tmpfs mounts of
/// its own are replaced by empty ones (the next command's process is pid 2
/// again: see `Launcher::ready`). The PID namespace is empty by now (see
/// [`clear`]), and the mount namespace is as the init left it: commands
/// cannot mount.
fn recycle(args: &Args) -> Result<(), i32> {
    process_calls::unshare(UnshareFlags::NEWIPC).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    for target in &args.fresh {
        rustix::mount::unmount(target.as_c_str(), UnmountFlags::DETACH).map_err(raw)?;
    }
    args.fresh.iter().try_for_each(|target| fresh_tmpfs(target, &args.keep))
}

/// Tells the supervisor this init is ready again, and waits for the
/// control socket; `None` when the supervisor lets it go instead.
fn come_back(chan: &OwnedFd) -> Option<OwnedFd> {
    wire::send_message(chan.as_fd(), wire::BACK, 0).ok()?;
    let mut buf = [0u8; 8];
    let (n, mut fds) = loop {
        match wire::recv_with_fds(chan.as_fd(), &mut buf) {
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            other => break other.ok()?,
        }
    };
    match (n, buf[0], fds.pop()) {
        (1, wire::AGAIN, Some(control)) if fds.is_empty() => Some(control),
        _ => None,
    }
}

/// Whether every path bwrap bound is still the root of a mount here. The
/// kernel takes a mount away from every namespace when the file or
/// directory it sits on is replaced by a rename or removed on the host (as
/// `git config` and editors do), and the path then shows the new file,
/// writable or visible, in its place.
fn all_mounted(bound: &[CString]) -> bool {
    bound.iter().all(|path| is_mount_root(path) == Ok(true))
}

/// Whether every path of `bound` (guarded directories' writable
/// subdirectories, bound only if present) is the root of a mount or does
/// not exist: the host may remove one (`rm -rf build`), which takes its
/// mount away and leaves its name to the read-only directory that holds
/// it; one that exists and is no mount was put there since, or replaced.
fn mounted_if_present(bound: &[CString]) -> bool {
    bound
        .iter()
        .all(|path| matches!(is_mount_root(path), Ok(true) | Err(Errno::NOENT)))
}

/// Whether `path` is the root of a mount here (true too where the kernel
/// cannot tell).
fn is_mount_root(path: &CStr) -> Result<bool, Errno> {
    let flags = AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT;
    let root = StatxAttributes::MOUNT_ROOT;
    let stx = rustix::fs::statx(CWD, path, flags, StatxFlags::empty())?;
    Ok(!stx.stx_attributes_mask.contains(root) || stx.stx_attributes.contains(root))
}

/// Ends the init; the kernel kills what is left in its namespace.
fn exit_init() -> ! {
    process_calls::exit_now(0)
}

/// The errno a raw call left (after a libc call that failed).
fn last_errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// The errno of a rustix call that failed.
fn raw(errno: Errno) -> i32 {
    errno.raw_os_error()
}

/// `write` (a `write` or `pwrite`) of all of `data` to `fd` in one call:
/// procfs files take a value whole. A short write fails with EIO.
fn write_all_at_once(
    fd: &OwnedFd,
    data: &[u8],
    write: impl FnOnce(&OwnedFd, &[u8]) -> Result<usize, Errno>,
) -> Result<(), i32> {
    match write(fd, data) {
        Ok(n) if n == data.len() => Ok(()),
        Ok(_) => Err(libc::EIO),
        Err(e) => Err(raw(e)),
    }
}

fn fail(sock: BorrowedFd<'_>, errno: i32) -> ! {
    let _ = wire::send_message(sock, wire::FAILED, errno);
    exit_init()
}

/// A procfs for this PID namespace (the command sees its own processes,
/// and `/proc/$$` is its shell), with bubblewrap's read-only covers; and,
/// before they go on, the namespace's `pid_max` (asked for only on Linux
/// 6.14 and later, where a namespace has one of its own: a write that
/// fails there fails the command, which must not run unbounded). Returns
/// the namespace's `ns_last_pid`, open for writing before the covers go
/// on, for [`recycle`].
fn mount_proc(pid_max: Option<u32>) -> Result<OwnedFd, i32> {
    mount_procfs().map_err(raw)?;
    if let Some(pid_max) = pid_max {
        set_pid_max(pid_max)?;
    }
    let last_pid = open_for_writing(c"/proc/sys/kernel/ns_last_pid")?;
    for path in PROC_COVERS {
        match rustix::mount::mount_bind_recursive(path, path) {
            Ok(()) => {}
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(raw(e)),
        }
        // A bind mount's remount reads no data: the empty string is as none.
        let ro = MountFlags::BIND | MountFlags::RDONLY | PROC_FLAGS;
        rustix::mount::mount_remount(path, ro, c"").map_err(raw)?;
    }
    Ok(last_pid)
}

/// Opens the procfs file `path` for writing (close-on-exec).
fn open_for_writing(path: &CStr) -> Result<OwnedFd, i32> {
    rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty()).map_err(raw)
}

/// Writes this PID namespace's `pid_max`.
fn set_pid_max(pid_max: u32) -> Result<(), i32> {
    let mut digits = [0u8; 12];
    let text = {
        let mut n = pid_max;
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        &digits[at..]
    };
    let fd = open_for_writing(c"/proc/sys/kernel/pid_max")?;
    write_all_at_once(&fd, text, |fd, data| rustix::io::write(fd, data))
}

/// Mounts an empty tmpfs of this init's own on `target`, so what one
/// command leaves there is gone for the next, and carries over the mounts
/// among `keep` that lie below it (a working dir under `/tmp`, roots,
/// protected and hidden paths): each is cloned, with everything below it,
/// before the tmpfs covers it, then moved onto a mount point made for it.
fn fresh_tmpfs(target: &CStr, keep: &[Keep]) -> Result<(), i32> {
    let below = |keep: &&Keep| {
        let (path, target) = (keep.path.as_bytes(), target.to_bytes());
        path.len() > target.len() && path.starts_with(target) && path[target.len()] == b'/'
    };
    let mut carried: Vec<(&CString, OwnedFd)> = Vec::new();
    // A detached copy of each mount tree, with everything below it.
    let clone = OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC | OpenTreeFlags::AT_RECURSIVE;
    for keep in keep.iter().filter(below) {
        match rustix::mount::open_tree(CWD, keep.path.as_c_str(), clone) {
            Ok(tree) => carried.push((&keep.path, tree)),
            Err(Errno::NOENT) if keep.if_present => {}
            Err(e) => return Err(raw(e)),
        }
    }
    let flags = MountFlags::NOSUID | MountFlags::NODEV;
    rustix::mount::mount(c"tmpfs", target, c"tmpfs", flags, c"mode=1777").map_err(raw)?;
    for (path, tree) in carried {
        mount_point_like(path, &tree)?;
        rustix::mount::move_mount(
            &tree,
            c"",
            CWD,
            path.as_c_str(),
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        )
        .map_err(raw)?;
    }
    Ok(())
}

/// Makes `path` (and its missing parents, as directories) on the fresh
/// tmpfs: a directory or an empty file, like the root of `tree`.
fn mount_point_like(path: &CStr, tree: &OwnedFd) -> Result<(), i32> {
    let is_dir = rustix::fs::fstat(tree).is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Directory);
    let bytes = path.to_bytes();
    for (i, _) in bytes.iter().enumerate().skip(1).filter(|(_, b)| **b == b'/') {
        let parent = CString::new(&bytes[..i]).map_err(|_| libc::EINVAL)?;
        existing_or_made(rustix::fs::mkdir(parent.as_c_str(), Mode::from_raw_mode(0o755)))?;
    }
    existing_or_made(if is_dir {
        rustix::fs::mkdir(path, Mode::from_raw_mode(0o755))
    } else {
        let create = OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC;
        rustix::fs::open(path, create, Mode::from_raw_mode(0o644)).map(drop)
    })
}

/// What a `mkdir` or `open(O_CREAT)` returned, where a path that exists
/// already is as good as made.
fn existing_or_made(made: Result<(), Errno>) -> Result<(), i32> {
    match made {
        Ok(()) | Err(Errno::EXIST) => Ok(()),
        Err(e) => Err(raw(e)),
    }
}

/// What the init's commands inherit, set once before its first request
/// arrives: every signal at its default disposition (the Rust runtime's
/// handlers and ignored SIGPIPE included; as PID 1, the init then ignores
/// every signal sent from inside its namespace), and `no_new_privs`. The
/// init keeps its capabilities for the next command's mounts; each
/// command's process drops them all before its `exec`.
fn settle(not_default: &[libc::c_int]) -> Result<(), i32> {
    let default = KernelSigaction {
        handler: libc::SIG_DFL,
        flags: 0,
        restorer: 0,
        mask: 0,
    };
    for &signal in not_default {
        // SAFETY: sets a disposition from a valid kernel sigaction of the
        // size given; the old one is not asked for.
        unsafe { libc::syscall(libc::SYS_rt_sigaction, signal, &default, std::ptr::null::<u8>(), 8usize) };
    }
    rustix::thread::set_no_new_privs(true).map_err(raw)
}

/// The kernel's `struct sigaction`, for the raw call: glibc refuses to
/// touch the two signals it keeps for itself (32 and 33), which must start
/// at their default too.
#[repr(C)]
struct KernelSigaction {
    handler: usize,
    flags: libc::c_ulong,
    restorer: usize,
    mask: u64,
}

/// Every signal whose disposition in this process is not the default
/// (ignored, or handled): the ones an init must reset, once, rather than
/// all 64 for each command.
fn not_default_signals() -> Vec<libc::c_int> {
    (1..=64)
        .filter(|&signal| signal != libc::SIGKILL && signal != libc::SIGSTOP)
        .filter(|&signal| {
            let mut old = KernelSigaction {
                handler: libc::SIG_DFL,
                flags: 0,
                restorer: 0,
                mask: 0,
            };
            // SAFETY: reads one disposition into a kernel sigaction we own
            // of the size given; none is set.
            let rc = unsafe { libc::syscall(libc::SYS_rt_sigaction, signal, std::ptr::null::<u8>(), &mut old, 8usize) };
            // One that cannot be read is reset all the same.
            rc != 0 || old.handler != libc::SIG_DFL
        })
        .collect()
}

/// Until the command's shell exits (returns once its status is sent):
/// reap whatever is reparented to us, pass kill requests on, kill
/// everything if the host goes away.
fn watch(sock: BorrowedFd<'_>, sigfd: BorrowedFd<'_>, pid: libc::pid_t) {
    loop {
        let mut fds = [PollFd::new(&sock, PollFlags::IN), PollFd::new(&sigfd, PollFlags::IN)];
        // EINTR leaves every event empty: the loop polls again.
        let _ = poll(&mut fds, None);
        let (request, signals) = (fds[0].revents(), fds[1].revents());
        if !signals.is_empty() {
            drain_signals(sigfd);
            while let Ok(Some((reaped, status))) = rustix::process::wait(WaitOptions::NOHANG) {
                if reaped.as_raw_pid() == pid {
                    let _ = wire::send_message(sock, wire::EXITED, status.as_raw());
                    return;
                }
            }
        }
        if !request.is_empty() {
            match wire::read_message(sock) {
                Ok(Some((wire::KILL, libc::SIGKILL))) => kill_namespace(),
                Ok(Some((wire::KILL, signal))) => signal_group(pid, signal),
                Ok(Some(_)) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                // The host is gone or gave up on the call: exiting
                // kills everything left in the namespace.
                Ok(None) | Err(_) => exit_init(),
            }
        }
    }
}

/// Sends `signal` to the command's process group, led by `pid`. Only
/// named signals are sent, as to a command outside a sandbox.
fn signal_group(pid: libc::pid_t, signal: libc::c_int) {
    if let (Some(pid), Some(signal)) = (Pid::from_raw(pid), Signal::from_named_raw(signal)) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}
