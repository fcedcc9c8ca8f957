//! Persistent shell sessions: a real interactive shell per session, under a
//! pseudo-terminal, driven by a marker protocol (see the `marker` module).
//!
//! A [`SessionManager`] owns the sessions. Each session has a reader thread
//! that drains the pty master continuously, parses the markers, and keeps
//! the command's output (head+tail) and a bounded ring for incremental reads.

mod arguments;
pub mod attach;
mod checks;
mod commands;
mod echo;
mod files;
mod keys;
mod marker;
mod names;
mod pty;
mod reader;
mod shell;
mod slots;
mod start;
mod state;
mod subscribe;
pub(crate) mod tools;
mod types;
mod view;
mod wait;
mod window;

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::process::Signal;

pub use crate::config::{HISTORY_ENV, HistoryMode, SessionConfig};
pub use checks::MAX_COMMAND_BYTES;
pub use names::is_name;
pub use shell::ShellKind;
pub use subscribe::Subscription;
pub use types::{RunOptions, RunResult, RunState, SessionInfo, StartOptions};
pub use view::{TerminalCallback, TerminalEvent};

use checks::{check_line_lengths, closed, internal, shell_exited, spawn_failed, validate_command};
use files::CommandFile;
use reader::read_loop;
use slots::{Slot, sweep};
use state::{Phase, State};
use wait::{OnToldSecret, snapshot};

use crate::config::Config;
use crate::error::{ErrorCode, ToolError};
use crate::outputs::OutputStore;
use crate::process::spawn::signal;

struct Session {
    id: String,
    name: Option<String>,
    /// The human name (`falcon`) and number (`#2`).
    handle: String,
    number: u32,
    /// What people watching the terminal see.
    view: Mutex<view::View>,
    kind: ShellKind,
    pid: libc::pid_t,
    master: OwnedFd,
    /// The device number of the terminal's slave side.
    tty: libc::dev_t,
    /// The private directory, held open (see `files`).
    files: crate::dirfd::Dir,
    history: HistoryMode,
    output_limit: usize,
    /// Where a command's whole output goes once it outgrows `output_limit`.
    outputs: Option<Arc<OutputStore>>,
    state: Mutex<State>,
    changed: Condvar,
    /// Serializes calls that type into the shell.
    busy: Mutex<()>,
    stop: OwnedFd,
    reader: Mutex<Option<JoinHandle<()>>>,
    /// Set by the reader from before a read until its bytes are applied.
    in_flight: std::sync::atomic::AtomicBool,
    /// The file the typed line sources.
    cmd_file: Mutex<CommandFile>,
    /// The text a kept command adds to the shell's history, which the shell appends.
    hist_file: Mutex<CommandFile>,
    /// The `BASH_MCP_RUN_ID=...` entry every process of the session inherits.
    run_marker: Vec<u8>,
    /// The proxy of a sandbox whose network is open by name: it serves the
    /// session's shell for as long as the session lives.
    _network: Option<std::sync::Arc<crate::sandbox::network::link::Link>>,
    /// The shell's own temp dir in a read-only Landlock sandbox, removed
    /// when the session goes.
    _sandbox_temp: Option<Arc<crate::sandbox::temp::CommandTemp>>,
    /// The shell's sandbox's own pids cgroup: removed (and anything left in
    /// it killed) once the session is gone.
    _sandbox_cgroup: Option<Arc<crate::sandbox::own_bound::SandboxCgroup>>,
}

impl Session {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The view; taken after the state lock when both are needed.
    fn view(&self) -> MutexGuard<'_, view::View> {
        self.view.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Kills every process of the shell's session, then the shell; reaps it.
    /// A call waiting on the session returns at once with `RunState::Closed`.
    fn terminate(&self) {
        {
            let mut state = self.lock();
            if !matches!(state.phase, Phase::Exited(_)) {
                if state.phase == Phase::Running {
                    state.cmd_duration = state.cmd_started.elapsed();
                }
                state.phase = Phase::Closed;
            }
        }
        self.changed.notify_all();
        let _ = rustix::io::write(&self.stop, &1u64.to_ne_bytes());
        if let Some(handle) = self.reader.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = handle.join();
        }
        kill_session_tree(self.pid);
        crate::command::lifetime::sweep_escapees(&self.run_marker);
        let _ = self.files.remove_all();
        self.view().close();
    }
}

/// Sends SIGHUP then SIGKILL to every process whose session id is the
/// shell's pid (found in /proc), and to the shell; reaps the shell. The shell
/// is reaped last, so its pid (the session id) cannot be reused meanwhile.
fn kill_session_tree(shell: libc::pid_t) {
    for pid in pty::session_members(shell) {
        // The session id is still reserved by our unreaped shell.
        signal(pid, Signal::HUP);
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let members = pty::session_members(shell);
        let others: Vec<_> = members.iter().copied().filter(|&p| p != shell).collect();
        for pid in &members {
            signal(*pid, Signal::KILL);
        }
        if others.is_empty() || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // The shell is our child.
    signal(shell, Signal::KILL);
    crate::process::spawn::reap(shell);
}

pub(crate) struct Inner {
    config: Mutex<(SessionConfig, Arc<Config>, PathBuf, Duration)>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Sessions being started: they count against `max_sessions` from the
    /// moment the limit is checked (changed only under the `sessions` lock).
    starting: std::sync::atomic::AtomicUsize,
    sweeper_stop: Mutex<bool>,
    sweeper_wake: Condvar,
    /// The number the next session gets (`#1`, `#2`, ...).
    next_number: std::sync::atomic::AtomicU32,
    /// The server's output store, for commands whose output outgrows the limit.
    outputs: Mutex<Option<Arc<OutputStore>>>,
    /// The temp dir of sandboxed shells: the server's when it has one.
    sandbox_temp: Mutex<Arc<crate::sandbox::ServerTemp>>,
}

/// Owns persistent shell sessions; closing or dropping it kills them all.
///
/// ```
/// use bash_mcp::session::{SessionManager, SessionConfig, StartOptions, RunOptions};
/// let manager = SessionManager::new(SessionConfig { enabled: true, ..Default::default() }, ".")?;
/// let id = manager.start(&StartOptions::default())?;
/// manager.run(&id, "cd /tmp && export X=1", &RunOptions::default())?;
/// let result = manager.run(&id, "echo $X; pwd", &RunOptions::default())?;
/// assert_eq!(result.output, "1\n/tmp\n");
/// assert_eq!(result.exit_code(), Some(0));
/// manager.close(&id)?;
/// # Ok::<(), bash_mcp::ToolError>(())
/// ```
pub struct SessionManager {
    inner: Arc<Inner>,
    sweeper: Mutex<Option<JoinHandle<()>>>,
    /// The socket that offers the sessions to `bash-mcp attach`, once served.
    attach: Mutex<Option<attach::AttachServer>>,
}

const DEFAULT_RUN_WAIT: Duration = Duration::from_secs(30);
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a waiting call looks at the kernel's view of the foreground process.
const INPUT_CHECK: Duration = Duration::from_millis(25);

impl SessionManager {
    /// A manager with `config`, starting shells in `working_dir` with the
    /// default server environment. `BASH_MCP_HISTORY` overrides `config.history`.
    pub fn new(config: SessionConfig, working_dir: impl AsRef<Path>) -> Result<Self, ToolError> {
        let base = Config::with_timeout(DEFAULT_RUN_WAIT);
        Self::with_server_config(config, Arc::new(base), working_dir.as_ref().to_path_buf())
    }

    pub(crate) fn with_server_config(
        mut config: SessionConfig,
        server: Arc<Config>,
        working_dir: PathBuf,
    ) -> Result<Self, ToolError> {
        if let Some(mode) = HistoryMode::from_env()? {
            config.history = mode;
        }
        let wait = server.timeout;
        let inner = Arc::new(Inner {
            config: Mutex::new((config, server, working_dir, wait)),
            sessions: Mutex::new(HashMap::new()),
            starting: std::sync::atomic::AtomicUsize::new(0),
            sweeper_stop: Mutex::new(false),
            sweeper_wake: Condvar::new(),
            next_number: std::sync::atomic::AtomicU32::new(1),
            outputs: Mutex::new(None),
            sandbox_temp: Mutex::new(Arc::new(crate::sandbox::ServerTemp::new())),
        });
        let weak = Arc::downgrade(&inner);
        let sweeper = std::thread::Builder::new()
            .name("bash-mcp-session-ttl".into())
            .spawn(move || sweep(weak))
            .map_err(|e| internal(format!("could not start the idle-session thread: {e}")))?;
        Ok(Self {
            inner,
            sweeper: Mutex::new(Some(sweeper)),
            attach: Mutex::new(None),
        })
    }

    /// Keeps the whole output of commands that outgrow the limit in `store`
    /// (for `output_read`), for sessions started from now on.
    pub(crate) fn keep_outputs_in(&self, store: Arc<OutputStore>) {
        *self.inner.outputs.lock().unwrap_or_else(PoisonError::into_inner) = Some(store);
    }

    /// Sandboxed shells started from now on see `temp` as their temp dir
    /// (the server's, shared with its other commands).
    pub(crate) fn share_sandbox_temp(&self, temp: Arc<crate::sandbox::ServerTemp>) {
        *self.inner.sandbox_temp.lock().unwrap_or_else(PoisonError::into_inner) = temp;
    }

    /// Replaces the configuration (existing sessions keep their shells).
    pub(crate) fn reconfigure(
        &self,
        mut config: SessionConfig,
        server: Arc<Config>,
        working_dir: PathBuf,
    ) -> Result<(), ToolError> {
        if let Some(mode) = HistoryMode::from_env()? {
            config.history = mode;
        }
        let wait = server.timeout;
        *self.inner.config.lock().unwrap_or_else(PoisonError::into_inner) = (config, server, working_dir, wait);
        self.inner.sweeper_wake.notify_all();
        Ok(())
    }

    /// The session configuration in force.
    pub fn config(&self) -> SessionConfig {
        self.inner
            .config
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .clone()
    }

    fn get(&self, id: &str) -> Result<Arc<Session>, ToolError> {
        self.inner.get(id)
    }

    /// The open sessions.
    pub fn list(&self) -> Vec<SessionInfo> {
        self.inner.list()
    }

    /// Closes a session: kills every process of its terminal session.
    pub fn close(&self, id: &str) -> Result<(), ToolError> {
        let session = self.get(id)?;
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        session.terminate();
        Ok(())
    }

    /// Memory the library holds for a session's buffers (bytes).
    pub fn buffer_bytes(&self, id: &str) -> Result<usize, ToolError> {
        let session = self.get(id)?;
        let state = session.lock();
        Ok(state.ring.data.capacity() + session.output_limit.min(state.output.total() as usize))
    }

    /// The shell's process id.
    pub fn shell_pid(&self, id: &str) -> Result<i32, ToolError> {
        Ok(self.get(id)?.pid)
    }

    /// Resident memory of the shell process, in KiB.
    pub fn shell_rss_kib(&self, id: &str) -> Result<u64, ToolError> {
        let session = self.get(id)?;
        pty::rss_kib(session.pid).ok_or_else(|| internal("the shell's /proc status is unreadable".into()))
    }

    /// Closes every session.
    pub fn close_all(&self) {
        let all: Vec<Arc<Session>> = self
            .inner
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, s)| s)
            .collect();
        for session in all {
            session.terminate();
        }
    }
}

impl Drop for SessionManager {
    fn drop(&mut self) {
        // No one attaches any more; those attached are told as sessions close.
        drop(self.attach.lock().unwrap_or_else(PoisonError::into_inner).take());
        *self.inner.sweeper_stop.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.inner.sweeper_wake.notify_all();
        if let Some(handle) = self.sweeper.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = handle.join();
        }
        self.close_all();
    }
}

impl Inner {
    fn get(&self, id: &str) -> Result<Arc<Session>, ToolError> {
        self.evict_idle();
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| {
                ToolError::new(
                    ErrorCode::SessionNotFound,
                    format!("no session with id {id:?} (it was closed, evicted after being idle, or never existed)"),
                    "call session_list to see open sessions, or session_start to open one",
                )
            })
    }

    /// The open sessions.
    fn list(&self) -> Vec<SessionInfo> {
        self.evict_idle();
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let mut list: Vec<SessionInfo> = sessions
            .values()
            .map(|s| {
                let state = s.lock();
                SessionInfo {
                    id: s.id.clone(),
                    name: s.name.clone(),
                    handle: s.handle.clone(),
                    number: s.number,
                    watchers: s.view().watchers(),
                    shell: s.kind,
                    pid: s.pid,
                    cwd: state.cwd.clone(),
                    state: match state.phase {
                        Phase::Starting | Phase::Idle => "idle",
                        Phase::Running => "running",
                        Phase::Exited(_) => "exited",
                        Phase::Closed => "closed",
                    },
                    idle: state.last_activity.elapsed(),
                }
            })
            .collect();
        list.sort_by(|a, b| a.id.cmp(&b.id));
        list
    }

    /// The next session's number and a human name no open session has.
    fn new_name(&self, random_hex: &str) -> (u32, String) {
        let number = self.next_number.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let taken: Vec<String> = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|s| s.handle.clone())
            .collect();
        let random = u64::from_str_radix(&random_hex[..12], 16).unwrap_or(u64::from(number));
        (number, names::pick(&taken, random))
    }
}
