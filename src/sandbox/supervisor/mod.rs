//! The long-lived sandbox: one supervisor per sandbox configuration,
//! started on first use inside bwrap (which then holds the namespaces),
//! restarted if it dies, torn down with the server that owns it. Each
//! command costs a `clone` inside the sandbox instead of a new bwrap.
//!
//! The host keeps capture exactly as without a sandbox: it makes the
//! command's pipes and passes their far ends, with a socket of the
//! command's own, over the supervisor's control socket (`SCM_RIGHTS`). On
//! that socket the host learns that the command started (or why not) and
//! its exit status, and asks for signals; the supervisor side kills
//! everything the command started when the host's end closes, so an
//! abandoned call or a killed host leaves nothing running. See
//! [`inside`] for the supervisor process itself.

mod command_fds;
mod command_process;
mod inherited;
pub mod inside;
mod key;
#[cfg(test)]
mod tests;

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::event::{PollFd, PollFlags, Timespec};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::bwrap::{self, BwrapOptions};
use super::guard::Layout;
use super::limits;
use super::network::Proxy;
use super::network::inside::PROXY_PORT;
use super::network::proxy::Clients;
use super::notify::{Observation, Policy};
use super::plan::Plan;
use super::temp::Temp;
use super::wire;
use crate::process::spawn::{self, Child, Launch, RemoteGroup, SpawnSpec};
use command_fds::{CommandFds, Spare};

/// The most supervisors one server keeps; past it the least recently used
/// idle one is stopped (each distinct working dir with default roots is a
/// configuration of its own).
const MAX_SUPERVISORS: usize = 8;

/// How long a starting supervisor may take to say it is ready.
const START_BOUND: Duration = Duration::from_secs(20);

/// A server's supervisors, by configuration, each with what decided its
/// command line. Dropping it stops them all.
#[derive(Default)]
pub struct Supervisors {
    pool: Mutex<Vec<(key::Key, Arc<Supervisor>)>>,
}

impl std::fmt::Debug for Supervisors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.pool.lock().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("Supervisors").field("count", &count).finish()
    }
}

impl Supervisors {
    pub fn new() -> Self {
        Self::default()
    }

    /// The running supervisor for this plan, started if needed. `Err` says
    /// why it could not start (the caller runs the command in a bwrap of
    /// its own instead).
    pub(crate) fn get(
        &self,
        bwrap_path: &Path,
        helper: &Path,
        plan: &Plan,
        layout: &Layout,
        options: Options,
    ) -> io::Result<Arc<Supervisor>> {
        let seen = bwrap::Seen::read(plan);
        let wanted = key::Wanted {
            bwrap: bwrap_path,
            helper,
            plan,
            layout,
            options,
            seen: &seen,
        };
        let supervisor = {
            let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
            let (key, s) = match pool.iter().position(|(key, _)| wanted.is(key)) {
                Some(i) => pool.remove(i),
                None => {
                    let key = wanted.to_key();
                    let s = by_command_line(&mut pool, &key);
                    (key, s)
                }
            };
            // The most recently used last.
            pool.push((key, s.clone()));
            s
        };
        supervisor.control()?;
        Ok(supervisor)
    }

    /// How many supervisors are running (for tests and `status`).
    pub fn running(&self) -> usize {
        let pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        pool.iter()
            .filter(|(_, s)| s.state.lock().unwrap_or_else(PoisonError::into_inner).is_some())
            .count()
    }

    /// The host pids of the running supervisors' bwrap processes.
    pub fn pids(&self) -> Vec<libc::pid_t> {
        let pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        pool.iter()
            .filter_map(|(_, s)| {
                s.state
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .as_ref()
                    .map(|r| r.pid)
            })
            .collect()
    }
}

/// The supervisor of `pool` with the command line of `key`, taken out of
/// it, or a new one (not started yet). What differs in a key may not reach
/// the command line (an absent name the layout does not use): a supervisor
/// with the same one serves. Past the bound, the least recently used idle
/// supervisor is stopped.
fn by_command_line(pool: &mut Vec<(key::Key, Arc<Supervisor>)>, key: &key::Key) -> Arc<Supervisor> {
    let argv = supervisor_argv(key);
    if let Some(i) = pool.iter().position(|(_, s)| s.argv == argv) {
        return pool.remove(i).1;
    }
    if pool.len() >= MAX_SUPERVISORS
        && let Some(idle) = pool.iter().position(|(_, s)| Arc::strong_count(s) == 1)
    {
        pool.remove(idle);
    }
    Arc::new(Supervisor {
        argv,
        network: key.plan.network,
        clients: key.options.by_name.then(Clients::new),
        state: Mutex::new(None),
        retired: Mutex::new(Vec::new()),
        spare: Spare::default(),
    })
}

/// What a supervisor does besides the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Options {
    /// Its inits install the observing filter.
    pub observe: bool,
    /// The most processes each command may run.
    pub max_processes: u32,
    /// Its commands reach the network by name, through a proxy on its
    /// sandbox's loopback.
    pub by_name: bool,
    /// Hidden paths get mode-000 stand-ins (see
    /// [`BwrapOptions::stand_ins_from`]).
    pub stand_ins: bool,
}

/// The bwrap command line of a supervisor: the plan's sandbox, with the
/// capabilities the supervisor needs inside its user namespace (commands
/// get none), running `<helper> __sandbox-supervise`, with `--observe` or
/// `--observe-network` when its inits install the observing filter, the
/// most processes each command may run, and `--net-listen` for a network
/// by name.
fn supervisor_argv(key: &key::Key) -> Vec<CString> {
    let key::Key {
        bwrap: bwrap_path,
        helper,
        plan,
        layout,
        options,
        seen,
    } = key;
    let Options {
        observe,
        max_processes,
        by_name,
        stand_ins,
    } = *options;
    let mut command = vec![
        CString::new(helper.as_os_str().as_encoded_bytes()).unwrap_or_default(),
        CString::new(inside::SUPERVISE_ARG).expect("no NUL"),
    ];
    if observe {
        let arg = if plan.network {
            inside::OBSERVE_ARG
        } else {
            inside::OBSERVE_NETWORK_ARG
        };
        command.push(CString::new(arg).expect("no NUL"));
    }
    // Only where a PID namespace has a pid_max of its own: there the inits
    // refuse to run a command they could not bound (status says what bounds
    // commands elsewhere).
    if limits::pid_max_per_namespace() {
        command.push(CString::new(inside::MAX_PROCESSES_ARG).expect("no NUL"));
        command.push(CString::new(max_processes.to_string()).expect("digits"));
    }
    if by_name {
        command.push(CString::new(inside::NET_LISTEN_ARG).expect("no NUL"));
        command.push(CString::new(PROXY_PORT.to_string()).expect("digits"));
    }
    command.extend(mount_args(plan, layout));
    bwrap::argv_seeing(
        bwrap_path,
        plan,
        layout,
        seen,
        BwrapOptions {
            die_with_parent: false,
            disable_userns: false,
            supervisor: true,
            seccomp_fd: Some(SECCOMP_FD),
            stand_ins_from: stand_ins.then_some(SECCOMP_FD + 1),
        },
        &command,
    )
}

/// The supervisor's arguments about the sandbox's mounts: the paths its
/// inits check are still mounts (a path the host may remove only if it is
/// a guarded directory's writable subdirectory, bound only if present),
/// and the fresh tmpfs mounts each command gets, with what the sandbox
/// mounts below them, carried over (again, some only if present).
fn mount_args(plan: &Plan, layout: &Layout) -> Vec<CString> {
    let mut args = Vec::new();
    let bound = bwrap::bound_paths(plan, layout);
    for path in &bound.always {
        push_path(&mut args, inside::BOUND_ARG, path);
    }
    for path in &bound.if_present {
        push_path(&mut args, inside::BOUND_IF_PRESENT_ARG, path);
    }
    // Each command gets an empty /dev/shm (and, in read-only mode, /tmp) of
    // its own, mounted by its init, which carries over what the sandbox
    // mounts below them.
    let mut fresh = vec![Path::new("/dev/shm")];
    if plan.temp == Temp::Fresh {
        fresh.push(Path::new("/tmp"));
        args.push(CString::new(inside::FRESH_TMP_ARG).expect("no NUL"));
    }
    for base in fresh {
        for (kept, if_present) in bwrap::mounts_under(plan, layout, base) {
            let arg = if if_present {
                inside::KEEP_IF_PRESENT_ARG
            } else {
                inside::KEEP_ARG
            };
            push_path(&mut args, arg, &kept);
        }
    }
    args
}

/// `arg path` at the end of `args`.
fn push_path(args: &mut Vec<CString>, arg: &str, path: &Path) {
    args.push(CString::new(arg).expect("no NUL"));
    args.push(CString::new(path.as_os_str().as_encoded_bytes()).unwrap_or_default());
}

/// The fd the supervisor's bwrap reads the enforcing seccomp program from
/// (the control socket is fd 3).
const SECCOMP_FD: i32 = 4;

/// One sandbox configuration's supervisor.
pub struct Supervisor {
    argv: Vec<CString>,
    /// Whether its sandbox has network (which seccomp program it gets).
    network: bool,
    /// The commands of a network by name, served by the proxy on the
    /// listener the supervisor hands over (each supervisor started for
    /// this configuration has its own listener; the clients stay).
    clients: Option<Arc<Clients>>,
    state: Mutex<Option<Running>>,
    /// Supervisors whose mounts went stale: no new command goes to them,
    /// and they exit once their running commands have ended.
    retired: Mutex<Vec<Reaper>>,
    /// The fds of its next command, made once the last one had started.
    spare: Spare,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor")
            .field("argv", &bwrap::display(&self.argv))
            .finish()
    }
}

/// A started supervisor: our end of its control socket and the host pid of
/// its bwrap. Fields drop in order: closing the control socket ends the
/// supervisor (once its running commands have ended), which ends bwrap and
/// with it the namespaces; then bwrap is reaped.
struct Running {
    control: Arc<OwnedFd>,
    pid: libc::pid_t,
    reaper: Reaper,
    /// The shared proxy on the sandbox's loopback, for a network by name.
    _proxy: Option<Proxy>,
}

/// Reaps a supervisor's bwrap when dropped.
struct Reaper(libc::pid_t);

impl Drop for Reaper {
    fn drop(&mut self) {
        spawn::reap(self.0);
    }
}

/// `/dev/null` open for reading: an fd of empty content.
pub(crate) fn dev_null() -> io::Result<OwnedFd> {
    std::fs::File::open("/dev/null")
        .map(OwnedFd::from)
        .map_err(|e| io::Error::new(e.kind(), format!("/dev/null: {e}")))
}

impl Supervisor {
    /// The registry of the shared proxy's clients, for a network by name.
    pub fn clients(&self) -> Option<&Arc<Clients>> {
        self.clients.as_ref()
    }

    /// The control socket of a live supervisor, starting one if there is
    /// none or the last one died.
    fn control(&self) -> io::Result<Arc<OwnedFd>> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(running) = state.as_ref() {
            if !spawn::has_exited(running.pid) {
                return Ok(running.control.clone());
            }
            tracing::warn!(pid = running.pid, "the sandbox supervisor died; starting a new one");
        }
        *state = None;
        let running = self.start()?;
        let control = running.control.clone();
        *state = Some(running);
        Ok(control)
    }

    /// Forgets `control` if it is still the current one (its supervisor is gone).
    fn discard(&self, control: &Arc<OwnedFd>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.as_ref().is_some_and(|r| Arc::ptr_eq(&r.control, control)) {
            *state = None;
        }
    }

    /// Sends no more commands to the supervisor of `control` (its mounts
    /// went stale): closing our end makes it exit once the commands it
    /// runs have ended, and it is reaped then.
    fn retire(&self, control: &Arc<OwnedFd>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.as_ref().is_some_and(|r| Arc::ptr_eq(&r.control, control))
            && let Some(running) = state.take()
        {
            tracing::info!(
                pid = running.pid,
                "a path the sandbox supervisor mounted was replaced on the host; starting a new supervisor"
            );
            let mut retired = self.retired.lock().unwrap_or_else(PoisonError::into_inner);
            retired.retain(|r| !spawn::has_exited(r.0));
            retired.push(running.reaper);
        }
    }

    fn start(&self) -> io::Result<Running> {
        crate::process::guard::ensure();
        let (host, theirs) = wire::socket_pair(libc::SOCK_SEQPACKET)?;
        // The guard kills what carries this host's run marker if the host dies.
        let envp = [
            CString::new(crate::process::ids::next_run_marker()).expect("marker has no NUL"),
            c"PATH=/usr/bin:/bin".to_owned(),
            c"LC_ALL=C".to_owned(),
        ];
        let program = super::seccomp::bwrap_program(self.network).map_err(io::Error::other)?;
        let program = super::seccomp::program_fd(program)?;
        let empty = dev_null()?;
        let mut keep = vec![theirs.as_raw_fd(), program.as_raw_fd()];
        keep.extend(std::iter::repeat_n(empty.as_raw_fd(), bwrap::stand_in_fds(&self.argv)));
        let pid = spawn::spawn_helper(&self.argv[0], &self.argv, &envp, &keep)?;
        drop((theirs, program, empty));
        let mut running = Running {
            control: Arc::new(host),
            pid,
            reaper: Reaper(pid),
            _proxy: None,
        };
        let mut p = [PollFd::new(&*running.control, PollFlags::IN)];
        let bound = Timespec::try_from(START_BOUND).expect("the start bound fits a timespec");
        let _ = rustix::event::poll(&mut p, Some(&bound));
        let mut buf = [0u8; 4];
        let ready = match p[0].revents().contains(PollFlags::IN) {
            true => match wire::recv_with_fds(running.control.as_fd(), &mut buf) {
                Ok((1, fds)) if buf[0] == wire::READY => Some(fds),
                _ => None,
            },
            false => None,
        };
        let ready = match (ready, &self.clients) {
            (Some(fds), None) if fds.is_empty() => true,
            (Some(mut fds), Some(clients)) if fds.len() == 1 => {
                let listener = std::net::TcpListener::from(fds.pop().expect("one fd"));
                running._proxy = Some(Proxy::serve_clients(listener, clients.clone())?);
                true
            }
            _ => false,
        };
        if !ready {
            // Our unreaped child: the pid cannot have been recycled.
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            return Err(io::Error::other(format!(
                "the sandbox supervisor did not start (run `{}` to see why)",
                bwrap::display(&self.argv)
            )));
        }
        tracing::debug!(pid, "sandbox supervisor started");
        Ok(running)
    }

    /// Asks the supervisor to start `spec`, observed by `observer` if its
    /// init sends a listener. `Ok(Err(e))`: the request never reached a
    /// supervisor (it may be retried).
    fn request(
        &self,
        control: &OwnedFd,
        spec: &SpawnSpec<'_>,
        observer: &Observer,
    ) -> io::Result<Result<Child, io::Error>> {
        // The request: its tag, then the body.
        let request = wire::BodyParts {
            program: spec.program,
            argv: spec.argv,
            envp: spec.envp,
            cwd: spec.cwd,
        }
        .encode_after(&[wire::COMMAND]);
        let body = &request[1..];
        let fds = CommandFds::new(spec, &self.spare)?;
        // The body goes in the request itself when it fits, so the init has
        // it at once; else (or where the socket takes no message that long)
        // on the command's socket.
        let mut on_socket = body;
        if body.len() <= wire::INLINE_BODY {
            match wire::send_with_fds(control.as_fd(), &request, &fds.far_ends()) {
                Ok(()) => on_socket = &[],
                Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {}
                Err(e) => return Ok(Err(e)),
            }
        }
        if !on_socket.is_empty()
            && let Err(e) = wire::send_with_fds(control.as_fd(), &[wire::COMMAND], &fds.far_ends())
        {
            return Ok(Err(e));
        }
        let fds = fds.sent();
        await_start(fds.socket(), on_socket, observer)?;
        // While the command runs, when the host would only wait for it.
        self.spare.refill();
        Ok(Ok(fds.into_child()))
    }
}

/// Sends `body` on the command's socket `host_end` (empty when the request
/// carried it) and waits for the supervisor's answer: started, or failed
/// with an errno; a listener first is handed to `observer`'s handler
/// before the command starts.
fn await_start(host_end: &OwnedFd, body: &[u8], observer: &Observer) -> io::Result<()> {
    let lost = || io::Error::other("the sandbox supervisor went away while starting the command");
    // An init that refuses the request early (its mounts went stale)
    // may close the socket before the body is all written: its answer
    // still comes first.
    let written = wire::write_all(host_end.as_fd(), body);
    let mut first = read_first_message(host_end.as_fd())?;
    if written.is_err() && !matches!(first, Some((wire::FAILED, _, _))) {
        return Err(lost());
    }
    if let Some((wire::LISTENER, _, Some(listener))) = first {
        // The command starts right after: its notified calls wait for this handler.
        if let Err(e) = observer.observation.listen(listener, observer.policy.clone()) {
            let _ = wire::send_message(host_end.as_fd(), wire::KILL, libc::SIGKILL);
            return Err(io::Error::other(format!(
                "could not start the thread that observes the sandboxed command: {e}"
            )));
        }
        first = wire::read_message(host_end.as_fd())?.map(|(tag, value)| (tag, value, None));
    }
    match first {
        Some((wire::STARTED, _, _)) => Ok(()),
        Some((wire::FAILED, errno, _)) => Err(io::Error::from_raw_os_error(errno)),
        _ => Err(lost()),
    }
}

/// The first message on a command's socket, with the fd it carries (a
/// listener), if any.
fn read_first_message(sock: BorrowedFd<'_>) -> io::Result<Option<(u8, i32, Option<OwnedFd>)>> {
    let mut m = [0u8; 5];
    let (n, mut fds) = wire::recv_with_fds(sock, &mut m)?;
    if n == 0 {
        return Ok(None);
    }
    if n < m.len() && !wire::read_exact(sock, &mut m[n..])? {
        return Ok(None);
    }
    let fd = fds.pop();
    Ok(Some((m[0], i32::from_be_bytes([m[1], m[2], m[3], m[4]]), fd)))
}

/// One command's launch through a supervisor, with the observation its
/// init's listener feeds.
#[derive(Debug, Clone)]
pub struct Observer {
    pub observation: Arc<Observation>,
    pub policy: Policy,
}

/// A supervisor and the observer of the one command it launches.
#[derive(Debug, Clone)]
pub struct Supervised {
    pub supervisor: Arc<Supervisor>,
    pub observer: Observer,
}

impl Launch for Supervised {
    fn launch(&self, spec: &SpawnSpec<'_>) -> io::Result<Child> {
        self.supervisor.launch_observed(spec, &self.observer)
    }
}

impl Supervisor {
    fn launch_observed(&self, spec: &SpawnSpec<'_>, observer: &Observer) -> io::Result<Child> {
        let control = self.control()?;
        match self.request(&control, spec, observer) {
            Ok(Ok(child)) => Ok(child),
            Ok(Err(e)) => {
                // Not delivered: that supervisor is gone. Once more with a new one.
                tracing::debug!("the sandbox supervisor's control socket failed ({e}); restarting it");
                self.discard(&control);
                let control = self.control()?;
                self.request(&control, spec, observer)?
            }
            Err(e) if e.raw_os_error() == Some(libc::ESTALE) => {
                // Its mounts no longer keep what the plan protects or hides.
                self.retire(&control);
                let control = self.control()?;
                match self.request(&control, spec, observer) {
                    Ok(launched) => launched,
                    Err(e) if e.raw_os_error() == Some(libc::ESTALE) => Err(io::Error::other(
                        "a path the sandbox mounts (a writable root, or a protected or hidden path) was replaced on the host again while a new sandbox was set up",
                    )),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }
}

/// A command running under a supervisor, reached through its socket.
#[derive(Debug)]
struct Remote {
    sock: OwnedFd,
}

impl RemoteGroup for Remote {
    fn signal(&self, signal: libc::c_int) {
        // A command that already exited has no one to read this: fine.
        let _ = wire::send_message(self.sock.as_fd(), wire::KILL, signal);
    }

    fn has_exited(&self) -> bool {
        wire::readable(&self.sock)
    }

    fn wait_status(&self) -> Option<i32> {
        loop {
            match wire::read_message(self.sock.as_fd()) {
                Ok(Some((wire::EXITED, status))) => return Some(shell_status(status)),
                Ok(Some(_)) => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(None) | Err(_) => return None,
            }
        }
    }
}

/// A wait status in the shell's convention (128+N after signal N).
pub(crate) fn shell_status(status: i32) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        -1
    }
}
