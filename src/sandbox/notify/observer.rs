//! The handler: one thread per sandboxed command, answering its listener
//! until the kernel reports hangup (every filtered process is gone).
//!
//! One thread per command rather than one shared poll loop: it lives
//! exactly as long as its command's processes, needs no registry shared
//! between calls, and a slow path resolution in one command never delays
//! another's system calls. It costs one thread start per command.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use super::calls::{self, Named, PathArg};
use super::judge::{Judge, Verdict};
use super::listener;
use super::loopback::{Bound, Loopback};
use super::mediate::{self, Mediator, Outcome};
use super::target::Target;
use crate::sandbox::Denial;
use crate::sandbox::guard::Layout;
use crate::sandbox::wire;

/// The most denials kept for one command.
const MAX_DENIALS: usize = 20;

/// How long a command's result waits for the Landlock helper's word on its
/// listener, which it sends before the command starts (a hang guard: the
/// helper has exited by the time anyone asks).
const HANDSHAKE_BOUND: Duration = Duration::from_secs(10);

/// What the handler records, and what it does in guarded directories.
#[derive(Debug, Clone)]
pub struct Policy {
    pub judge: Judge,
    /// Connections to an internet address are denials (network is off).
    pub network_off: bool,
    /// The command has a network namespace of its own (bubblewrap): its
    /// loopback is its own, so traffic to a loopback port something in the
    /// sandbox has bound stays inside, and is no denial.
    pub own_loopback: bool,
    /// The port of the command's proxy on the host's loopback, when its
    /// network is open by name on the Landlock backend: every TCP socket
    /// the command opens is made here, bound to the loopback device (see
    /// `lo_socket`), and a connection to `127.0.0.1:<port>` is no denial.
    pub proxy: Option<u16>,
    /// The mediated directories whose entries the handler changes for the
    /// command (see [`guard`](crate::sandbox::guard)); `None`: it only observes.
    pub guard: Option<Guard>,
}

/// The handler's part in guarded directories.
#[derive(Debug, Clone)]
pub struct Guard {
    pub layout: Layout,
    /// The writable roots: what a rename or a link may bring into a
    /// mediated directory, or take out of one.
    pub roots: Vec<std::path::PathBuf>,
    /// The errno of a refused change (the backend's own: `EROFS`, `EACCES`).
    pub refuse: i32,
}

#[derive(Debug, Default)]
struct State {
    /// Still waiting to learn whether a listener comes.
    waiting: bool,
    /// A listener was received: the denials are the handler's.
    listening: bool,
    denials: Vec<Denial>,
}

/// What the handler thread shares with the command's result.
#[derive(Debug, Default)]
struct Watch {
    state: Mutex<State>,
    changed: Condvar,
}

impl Watch {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(&self, denial: Denial) {
        let mut state = self.lock();
        if state.denials.len() < MAX_DENIALS && !state.denials.contains(&denial) {
            state.denials.push(denial);
        }
    }
}

/// One command's observation: whether it has a listener, and what the
/// handler has recorded so far.
#[derive(Debug, Default)]
pub struct Observation {
    watch: Arc<Watch>,
    /// Our copy of the socket the Landlock helper sends its listener on,
    /// closed once the helper has it, or when the command never starts (so
    /// the receiving thread sees end of file and ends).
    helper_end: Mutex<Option<OwnedFd>>,
}

impl Observation {
    /// An observation with no listener (yet): the supervisor adds one at launch.
    pub fn new() -> Observation {
        Observation::default()
    }

    /// An observation whose listener comes over a new socket: the raw fd
    /// returned is the helper's end (to become its [`LISTENER_FD`]); the
    /// thread that receives the listener starts now.
    ///
    /// [`LISTENER_FD`]: crate::sandbox::landlock::LISTENER_FD
    pub fn over_socket(policy: Policy) -> std::io::Result<(Observation, std::os::fd::RawFd)> {
        let (ours, theirs) = wire::socket_pair(libc::SOCK_SEQPACKET)?;
        // Clear of fd 3, which the spawn makes it (dup2 onto its own number
        // would keep close-on-exec).
        let theirs = rustix::io::fcntl_dupfd_cloexec(&theirs, 10)?;
        let watch = Arc::new(Watch::default());
        watch.lock().waiting = true;
        let w = watch.clone();
        spawn_thread(move || {
            let mut buf = [0u8; 8];
            let listener = match wire::recv_with_fds(ours.as_fd(), &mut buf) {
                Ok((n, mut fds)) if n > 0 && buf[0] == wire::LISTENER && fds.len() == 1 => fds.pop(),
                _ => None,
            };
            drop(ours);
            {
                let mut state = w.lock();
                state.listening = listener.is_some();
                state.waiting = false;
            }
            w.changed.notify_all();
            if let Some(listener) = listener {
                serve(&listener, &policy, &w);
            }
        })?;
        let helper_fd = theirs.as_raw_fd();
        Ok((
            Observation {
                watch,
                helper_end: Mutex::new(Some(theirs)),
            },
            helper_fd,
        ))
    }

    /// Starts the handler on `listener` (a supervisor's init sent it).
    pub fn listen(&self, listener: OwnedFd, policy: Policy) -> std::io::Result<()> {
        self.watch.lock().listening = true;
        let w = self.watch.clone();
        spawn_thread(move || serve(&listener, &policy, &w)).inspect_err(|_| self.watch.lock().listening = false)
    }

    /// Closes our copy of the helper's socket (the helper holds its own).
    pub fn release_helper_end(&self) {
        self.helper_end.lock().unwrap_or_else(PoisonError::into_inner).take();
    }

    /// The denials recorded so far, when a listener observed the command
    /// (`None`: there was none; fall back to the error text). Every call
    /// the command's shell made was answered before it exited, and each
    /// denial is recorded before its answer.
    pub fn denials(&self) -> Option<Vec<Denial>> {
        self.release_helper_end();
        let state = self.watch.lock();
        let (state, _) = self
            .watch
            .changed
            .wait_timeout_while(state, HANDSHAKE_BOUND, |s| s.waiting)
            .unwrap_or_else(PoisonError::into_inner);
        state.listening.then(|| state.denials.clone())
    }
}

fn spawn_thread(f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("sandbox-notify".into())
        .stack_size(256 * 1024)
        .spawn(f)
        .map(drop)
}

/// How the handler answers one call.
enum Answer {
    Continue,
    Refuse(i32),
    /// The handler made the call: its return value.
    Value(i64),
    /// The handler opened the file: it becomes the command's.
    Fd(OwnedFd, bool),
}

/// Answers every notification until hangup. Never returns early while a
/// filtered process lives: the kernel would fail its notified calls with
/// `ENOSYS` once the listener closed.
fn serve(listener: &OwnedFd, policy: &Policy, watch: &Watch) {
    let mediator = policy.guard.as_ref().map(|g| {
        Mediator::prepare_thread();
        Mediator::new(g.layout.clone(), g.roots.clone(), g.refuse)
    });
    // The target sleeps until we answer: wake the handler on the target's
    // CPU and back (Linux 6.6+; without it, only slower).
    listener::sync_wake_up(listener);
    let mut own = Loopback::default();
    loop {
        use rustix::event::{PollFd, PollFlags};
        let mut p = [PollFd::new(listener, PollFlags::IN)];
        if rustix::event::poll(&mut p, None).is_err() {
            continue; // EINTR
        }
        let revents = p[0].revents();
        if revents.contains(PollFlags::IN) {
            answer_one(listener, policy, mediator.as_ref(), watch, &mut own);
        } else if revents.intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL) {
            return;
        }
    }
}

fn answer_one(listener: &OwnedFd, policy: &Policy, mediator: Option<&Mediator>, watch: &Watch, own: &mut Loopback) {
    let Some(notif) = listener::receive(listener) else {
        return; // the target died before we read it (ENOENT), or EINTR
    };
    let target = Target {
        listener,
        id: notif.id,
        pid: notif.pid,
    };
    // Whatever goes wrong in reading, the call gets its answer.
    let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        examine(&target, &notif.data, policy, mediator, watch, own)
    }))
    .unwrap_or_else(|_| match policy.proxy {
        // A socket not made here would not be bound to the loopback.
        Some(_) if notif.data.nr as i64 == libc::SYS_socket => Answer::Refuse(libc::EACCES),
        _ => Answer::Continue,
    });
    let (val, error, flags) = match answer {
        Answer::Continue => (0, 0, libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32),
        Answer::Refuse(errno) => (0, -errno, 0),
        Answer::Value(v) => (v, 0, 0),
        Answer::Fd(fd, cloexec) => match listener::hand_over(listener, notif.id, &fd, cloexec) {
            // The call is answered with the command's new fd.
            Ok(()) => return,
            Err(errno) => (0, -errno, 0),
        },
    };
    let response = libc::seccomp_notif_resp {
        id: notif.id,
        val,
        error,
        flags,
    };
    listener::respond(listener, response);
}

/// What the mediator's outcome answers, with a refused protected path
/// recorded as a denial.
fn answer_of(outcome: Outcome, watch: &Watch) -> Option<Answer> {
    match outcome {
        Outcome::Continue => None,
        Outcome::Refuse { errno, denied } => {
            if let Some(path) = denied {
                watch.record(Denial::Write {
                    path: path.display().to_string(),
                });
            }
            Some(Answer::Refuse(errno))
        }
        Outcome::Value(v) => Some(Answer::Value(v)),
        Outcome::Fd { fd, cloexec } => Some(Answer::Fd(fd, cloexec)),
    }
}

/// Reads what the call names, does it when it changes a mediated
/// directory, and records what the plan forbids.
fn examine(
    target: &Target<'_>,
    data: &libc::seccomp_data,
    policy: &Policy,
    mediator: Option<&Mediator>,
    watch: &Watch,
    own: &mut Loopback,
) -> Answer {
    match calls::named(data.nr as i64) {
        Some(Named::Writes(paths)) => examine_writes(target, data, paths, policy, mediator, watch),
        Some(Named::OpenHow(path)) => examine_openat2(target, data, &path, policy, mediator, watch),
        Some(Named::Address { addr, len, send }) => {
            examine_address(target, data, (addr, len, send), policy, watch, own)
        }
        Some(Named::Socket) => examine_socket(data, policy, watch),
        Some(Named::Bind { addr, len }) => examine_bind(target, data, (addr, len), policy, watch, own),
        None => Answer::Continue,
    }
}

/// A call that writes `paths`: done by the mediator when it changes a
/// mediated directory, else left to the kernel, with the verdict recorded.
fn examine_writes(
    target: &Target<'_>,
    data: &libc::seccomp_data,
    paths: &[PathArg],
    policy: &Policy,
    mediator: Option<&Mediator>,
    watch: &Watch,
) -> Answer {
    let arg = |i: u8| data.args[i as usize];
    if let Some(m) = mediator
        && let Some(answer) = answer_of(
            m.decide(target, data.nr as i64, &data.args, &|p| resolve(target, &p, &arg)),
            watch,
        )
    {
        return answer;
    }
    let verdicts: Vec<(Verdict, String)> = paths
        .iter()
        .filter_map(|p| {
            let path = resolve(target, p, &arg)?;
            let landing = target.landing(&path, p.follows.follows(arg));
            Some((policy.judge.verdict(&landing), landing.display().to_string()))
        })
        .collect();
    if target.still_valid() {
        verdicts.into_iter().for_each(|v| record(watch, v));
    }
    Answer::Continue
}

/// `openat2` of `path`: a write only if its `open_how`'s flags say so.
fn examine_openat2(
    target: &Target<'_>,
    data: &libc::seccomp_data,
    path: &PathArg,
    policy: &Policy,
    mediator: Option<&Mediator>,
    watch: &Watch,
) -> Answer {
    let arg = |i: u8| data.args[i as usize];
    // struct open_how: u64 flags, mode and resolve.
    let how = target.bytes(arg(2), 24).unwrap_or_default();
    let flags = how
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_ne_bytes);
    if let Some(m) = mediator
        && flags & super::filter::WRITE_FLAGS as u64 != 0
        && let Some((flags, mode)) = mediate::openat2_op(&how)
        && let Some(p) = resolve(target, path, &arg)
        && let Some(answer) = answer_of(m.decide_openat2(target, flags, mode, p), watch)
    {
        return answer;
    }
    if flags & super::filter::WRITE_FLAGS as u64 != 0
        && let Some(p) = resolve(target, path, &arg)
    {
        let follows = calls::Follows::UnlessFlags(0).follows(|_| flags);
        let landing = target.landing(&p, follows);
        let verdict = policy.judge.verdict(&landing);
        if target.still_valid() {
            record(watch, (verdict, landing.display().to_string()));
        }
    }
    Answer::Continue
}

/// A connect or a send to the address in arguments `(addr, len)`: a path
/// socket is refused, a loopback server of the command's own is made by the
/// handler, and a peer the network does not allow is recorded.
fn examine_address(
    target: &Target<'_>,
    data: &libc::seccomp_data,
    (addr, len, send): (u8, u8, bool),
    policy: &Policy,
    watch: &Watch,
    own: &mut Loopback,
) -> Answer {
    let arg = |i: u8| data.args[i as usize];
    let Some(sockaddr) = sockaddr_of(target, data, (addr, len)) else {
        return Answer::Continue;
    };
    if let Some(path) = attach_socket(target, &sockaddr) {
        // The first barrier, and the name of the refusal: the path
        // is read from memory the command can change, so the
        // servers' check of every peer is what holds.
        if target.still_valid() {
            watch.record(Denial::AttachSocket {
                path: path.display().to_string(),
            });
        }
        return Answer::Refuse(libc::EACCES);
    }
    if policy.proxy.is_some()
        && !send
        && let Some(result) = own.connect(target, arg(0) as i32, &sockaddr)
    {
        // A server of the command's own on the loopback.
        return made(result);
    }
    if policy.network_off
        && let Some((ip, port)) = calls::inet_peer(&sockaddr)
        && !(policy.own_loopback && calls::is_loopback(ip) && target.bound_inside(port))
        && !(policy.proxy == Some(port) && ip == std::net::Ipv4Addr::LOCALHOST)
        && target.still_valid()
    {
        let addr = calls::peer_text(ip, port);
        watch.record(match send {
            true => Denial::Send { addr },
            false => Denial::Connect { addr },
        });
    }
    Answer::Continue
}

/// A new socket: with the network through the proxy, a TCP one is made by
/// the handler on the loopback and a route netlink one is let be; any other
/// is refused and recorded.
fn examine_socket(data: &libc::seccomp_data, policy: &Policy, watch: &Watch) -> Answer {
    let arg = |i: u8| data.args[i as usize];
    let (family, kind, protocol) = (arg(0) as i32, arg(1) as i32, arg(2) as i32);
    let tcp = matches!(family, libc::AF_INET | libc::AF_INET6)
        && kind & 0xf == libc::SOCK_STREAM
        && matches!(protocol, 0 | libc::IPPROTO_TCP);
    if policy.proxy.is_some() && tcp {
        return match lo_socket(family, kind) {
            Ok(fd) => Answer::Fd(fd, kind & libc::SOCK_CLOEXEC != 0),
            Err(errno) => Answer::Refuse(errno),
        };
    }
    if policy.proxy.is_some() && family == libc::AF_NETLINK && protocol == libc::NETLINK_ROUTE {
        // What the host's interfaces are (`getifaddrs`), which its
        // `/proc/net` shows anyway; changing them needs a capability
        // the command does not have.
        return Answer::Continue;
    }
    let family = match policy.proxy {
        Some(_) => format!("{} {}", calls::family_name(family), calls::kind_name(kind)),
        None => calls::family_name(family),
    };
    watch.record(Denial::Socket { family });
    Answer::Refuse(libc::EPERM)
}

/// The socket address a call names in its arguments `(addr, len)`, read
/// from the command's memory (at most 128 bytes, a `sockaddr_storage`).
fn sockaddr_of(target: &Target<'_>, data: &libc::seccomp_data, (addr, len): (u8, u8)) -> Option<Vec<u8>> {
    let len = (data.args[len as usize] as usize).min(128);
    target.bytes(data.args[addr as usize], len)
}

/// `bind` to the address in arguments `(addr, len)`, made by the handler
/// when the network goes through the proxy.
fn examine_bind(
    target: &Target<'_>,
    data: &libc::seccomp_data,
    (addr, len): (u8, u8),
    policy: &Policy,
    watch: &Watch,
    own: &mut Loopback,
) -> Answer {
    if policy.proxy.is_none() {
        return Answer::Continue;
    }
    let Some(sockaddr) = sockaddr_of(target, data, (addr, len)) else {
        return Answer::Refuse(libc::EFAULT);
    };
    match own.bind(target, data.args[0] as i32, &sockaddr) {
        Bound::NotInet => Answer::Continue,
        Bound::Refused(addr) => {
            if target.still_valid() {
                watch.record(Denial::Bind { addr });
            }
            Answer::Refuse(libc::EACCES)
        }
        Bound::Made(result) => made(result),
    }
}

/// The answer to a call the handler made: 0, or its errno.
fn made(result: Result<(), i32>) -> Answer {
    match result {
        Ok(()) => Answer::Value(0),
        Err(errno) => Answer::Refuse(errno),
    }
}

/// A TCP socket of `family` (with `kind`'s flags) made for a command
/// whose network is open by name on the Landlock backend, which shares
/// the host's network namespace: bound to the loopback device, so that
/// whatever port Landlock lets it connect to, no packet of it leaves the
/// host (the command's filter refuses `SO_BINDTODEVICE`, so it stays so).
fn lo_socket(family: i32, kind: i32) -> Result<OwnedFd, i32> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType, ipproto};
    let flags = SocketFlags::from_bits_retain((kind & libc::SOCK_NONBLOCK) as u32) | SocketFlags::CLOEXEC;
    let fd = rustix::net::socket_with(
        AddressFamily::from_raw(family as u16),
        SocketType::STREAM,
        flags,
        Some(ipproto::TCP),
    )
    .map_err(|e| e.raw_os_error())?;
    let device = c"lo";
    // SAFETY: setsockopt reads the device name of the length given (rustix
    // has no `SO_BINDTODEVICE`).
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_BINDTODEVICE,
            device.as_ptr().cast(),
            device.to_bytes().len() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO));
    }
    Ok(fd)
}

/// Records a write the plan forbids as a denial.
fn record(watch: &Watch, (verdict, path): (Verdict, String)) {
    if verdict == Verdict::Forbidden {
        watch.record(Denial::Write { path });
    }
}

/// The attach socket a Unix socket address leads to, if it does: where
/// the path lands as the target sees it (from its working directory, its
/// symlinks followed) lies in an attach directory.
fn attach_socket(target: &Target<'_>, sockaddr: &[u8]) -> Option<std::path::PathBuf> {
    let path = calls::unix_path(sockaddr)?;
    let path = match path.is_absolute() {
        true => path,
        false => Path::new(&target.base_dir(libc::AT_FDCWD)?).join(path),
    };
    let landing = target.landing(&path, true);
    let dirs = crate::process::ids::attach_dirs();
    let inside = |p: &Path| dirs.iter().any(|d| p.starts_with(d));
    (inside(&crate::sandbox::lexical::normalize(&path)) || inside(&landing)).then_some(landing)
}

/// The absolute path argument `p` names, as the target sees it (before
/// its symlinks are followed: see [`Target::landing`]).
fn resolve(target: &Target<'_>, p: &PathArg, arg: &dyn Fn(u8) -> u64) -> Option<std::path::PathBuf> {
    let path = std::path::PathBuf::from(target.string(arg(p.path))?);
    if path.is_absolute() {
        return Some(path);
    }
    let dirfd = p.dirfd.map_or(libc::AT_FDCWD, |i| arg(i) as i32);
    let base = target.base_dir(dirfd)?;
    Some(Path::new(&base).join(path))
}
