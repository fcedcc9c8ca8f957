//! Starting a session: preparing the shell's launch, spawning it on a pseudo-terminal,
//! building its `Session` and waiting for its first prompt.

use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Instant;

use super::files::{COMMAND_FILE, CommandFile, HISTORY_FILE, scopeguard, write_new};
use super::shell::Launch;
use super::{
    HistoryMode, Phase, START_TIMEOUT, Session, SessionConfig, SessionManager, ShellKind, Slot, StartOptions, State,
    internal, kill_session_tree, pty, read_loop, shell, spawn_failed, view,
};
use crate::config::{Config, resolve_program};
use crate::dirfd::Dir;
use crate::error::{ErrorCode, ToolError};

/// What the shell is started with: its program, arguments, environment and directory.
struct Prepared {
    launch: Launch,
    cmd_file: CommandFile,
    hist_file: CommandFile,
    envp: Vec<CString>,
    argv: Vec<CString>,
    program_c: CString,
    cwd_c: CString,
    run_marker: Vec<u8>,
}

/// The shell running on its terminal.
struct Spawned {
    pid: libc::pid_t,
    master: OwnedFd,
    tty: libc::dev_t,
    stop: OwnedFd,
    network: Option<Arc<crate::sandbox::network::link::Link>>,
    /// The shell's own temp dir, when its sandbox made one.
    sandbox_temp: Option<Arc<crate::sandbox::temp::CommandTemp>>,
    /// The sandbox's own pids cgroup, when its bound is one.
    sandbox_cgroup: Option<Arc<crate::sandbox::own_bound::SandboxCgroup>>,
}

/// What a new session is made of, besides its shell.
struct Parts {
    id: String,
    kind: ShellKind,
    cwd: PathBuf,
    files: Dir,
    cmd_file: CommandFile,
    hist_file: CommandFile,
    run_marker: Vec<u8>,
}

impl SessionManager {
    /// Starts a shell and returns its session id (128 random bits, hex).
    pub fn start(&self, options: &StartOptions) -> Result<String, ToolError> {
        self.inner.evict_idle();
        let (config, server, base_dir, _) = self.inner.config.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let mut slot = Slot::reserve(&self.inner, config.max_sessions)?;
        let (kind, program) = shell_of(options)?;
        let dir = options.working_dir.as_deref().unwrap_or(&base_dir);
        let cwd = crate::roots::confined_dir(
            dir,
            Some(&base_dir),
            server.allowed_roots.as_deref(),
            server.project_trust(),
        )?;
        check_env_names(options)?;
        let hist_target = history_target(kind, options, &config)?;

        let id = crate::process::ids::secret_id()?;
        let nonce = crate::process::ids::secret_id()?;
        let files = private_dir(&id)?;
        let dir = files.path().to_path_buf();
        let cleanup_dir = scopeguard(&files);
        let launch = shell::launch(
            kind,
            &program,
            &dir,
            &nonce,
            config.read_rc_files,
            config.history == HistoryMode::Suppress,
            hist_target.as_deref(),
        );
        let prepared = prepare(launch, &program, &files, &cwd, options, &server)?;
        let temp = self
            .inner
            .sandbox_temp
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let sandbox = options.sandbox.as_ref().unwrap_or(&server.sandbox);
        let spawned = spawn(&prepared, &program, (&cwd, &base_dir), &dir, sandbox, &temp)?;
        let Prepared {
            launch,
            cmd_file,
            hist_file,
            run_marker,
            ..
        } = prepared;
        // From here on the session removes the directory when it ends.
        std::mem::forget(cleanup_dir);
        let parts = Parts {
            id: id.clone(),
            kind,
            cwd,
            files,
            cmd_file,
            hist_file,
            run_marker,
        };
        let session = self.new_session(parts, spawned, options, &config, &server, &nonce);
        start_reader(&session, nonce)?;
        await_first_prompt(&session, &launch, &program)?;
        tracing::debug!(session = %id, shell = kind.as_str(), pid = session.pid, "session started");
        slot.fill(id.clone(), session);
        Ok(id)
    }

    /// The session of a shell just spawned, in its starting phase.
    fn new_session(
        &self,
        parts: Parts,
        spawned: Spawned,
        options: &StartOptions,
        config: &SessionConfig,
        server: &Config,
        nonce: &str,
    ) -> Arc<Session> {
        let now = Instant::now();
        let (number, handle) = self.inner.new_name(nonce);
        Arc::new(Session {
            id: parts.id,
            name: options.name.clone(),
            handle,
            number,
            view: Mutex::new(view::View::new()),
            kind: parts.kind,
            pid: spawned.pid,
            master: spawned.master,
            tty: spawned.tty,
            files: parts.files,
            history: config.history,
            output_limit: config.output_limit_bytes,
            outputs: server
                .output_store
                .enabled
                .then(|| {
                    self.inner
                        .outputs
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clone()
                })
                .flatten(),
            state: Mutex::new(State::starting(parts.cwd, config.output_limit_bytes, now)),
            changed: Condvar::new(),
            busy: Mutex::new(()),
            stop: spawned.stop,
            reader: Mutex::new(None),
            in_flight: std::sync::atomic::AtomicBool::new(false),
            cmd_file: Mutex::new(parts.cmd_file),
            hist_file: Mutex::new(parts.hist_file),
            run_marker: parts.run_marker,
            _network: spawned.network,
            _sandbox_temp: spawned.sandbox_temp,
            _sandbox_cgroup: spawned.sandbox_cgroup,
        })
    }
}

/// The shell asked for, and the program that runs it.
fn shell_of(options: &StartOptions) -> Result<(ShellKind, PathBuf), ToolError> {
    let shell_name = options.shell.as_deref().unwrap_or("bash");
    let kind = ShellKind::from_name(shell_name).ok_or_else(|| {
        ToolError::new(
            ErrorCode::InvalidArguments,
            format!("unsupported shell {shell_name:?}"),
            "use bash, zsh, fish or sh (dash), by name or path",
        )
    })?;
    let program = resolve_program(shell_name).ok_or_else(|| {
        ToolError::new(
            ErrorCode::ShellNotFound,
            format!("shell {shell_name:?} is not installed (not found on PATH)"),
            "install it, pass its absolute path, or use bash",
        )
    })?;
    Ok((kind, program))
}

fn check_env_names(options: &StartOptions) -> Result<(), ToolError> {
    for (name, _) in &options.env {
        if !crate::config::is_valid_env_name(name) {
            return Err(ToolError::new(
                ErrorCode::InvalidEnv,
                format!("`env` has an invalid variable name {name:?}"),
                "use names without '=' or NUL",
            ));
        }
    }
    Ok(())
}

/// History: where "keep" writes, and conflicts with suppression.
fn history_target(
    kind: ShellKind,
    options: &StartOptions,
    config: &SessionConfig,
) -> Result<Option<PathBuf>, ToolError> {
    let caller_histfile = options
        .env
        .iter()
        .find(|(n, _)| n == "HISTFILE")
        .map(|(_, v)| PathBuf::from(v));
    if config.history == HistoryMode::Suppress && caller_histfile.is_some() {
        return Err(ToolError::new(
            ErrorCode::HistoryConflict,
            "`env` sets HISTFILE, but history suppression is on for this session",
            "drop HISTFILE from `env`, or set sessions.history (or BASH_MCP_HISTORY) to \"keep\" to have commands written to that file",
        ));
    }
    let env_or_host = |name: &str| {
        options
            .env
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(name).ok())
    };
    let home = env_or_host("HOME").unwrap_or_else(|| "/".into());
    Ok(match kind {
        ShellKind::Bash => Some(
            caller_histfile
                .clone()
                .unwrap_or_else(|| Path::new(&home).join(".bash_history")),
        ),
        ShellKind::Zsh => Some(
            caller_histfile
                .clone()
                .unwrap_or_else(|| Path::new(&home).join(".zsh_history")),
        ),
        ShellKind::Fish => {
            let data = env_or_host("XDG_DATA_HOME").unwrap_or_else(|| format!("{home}/.local/share"));
            Some(Path::new(&data).join("fish").join("fish_history"))
        }
        ShellKind::Sh => None,
    })
}

/// Creates the session's private directory (mode 0700), held open.
fn private_dir(id: &str) -> Result<Dir, ToolError> {
    let prefix = crate::process::ids::session_dir_prefix();
    let (Some(parent), Some(start)) = (prefix.parent(), prefix.file_name()) else {
        return Err(spawn_failed(format!(
            "the session directory's prefix {} has no parent",
            prefix.display()
        )));
    };
    let mut name = start.to_owned();
    name.push(&id[..16]);
    Dir::create_private(parent, &name).map_err(|e| {
        spawn_failed(format!(
            "could not create the session's private directory {}: {e}",
            parent.join(&name).display()
        ))
    })
}

/// Writes the shell's start-up files and builds its argv, environment and directory.
fn prepare(
    launch: Launch,
    program: &Path,
    files: &Dir,
    cwd: &Path,
    options: &StartOptions,
    server: &Config,
) -> Result<Prepared, ToolError> {
    for (name, text) in &launch.files {
        write_new(files, name, text)?;
    }
    let cmd_file = CommandFile::create(files, COMMAND_FILE)
        .map_err(|e| spawn_failed(format!("could not create the session's command file: {e}")))?;
    let hist_file = CommandFile::create(files, HISTORY_FILE)
        .map_err(|e| spawn_failed(format!("could not create the session's history file: {e}")))?;
    let (envp, run_marker) = environment(&launch, options, server)?;
    let argv: Vec<CString> = launch
        .argv
        .iter()
        .map(|a| CString::new(a.as_str()))
        .collect::<Result<_, _>>()
        .map_err(|_| internal("a shell argument contains NUL".into()))?;
    let program_c =
        CString::new(program.as_os_str().as_bytes()).map_err(|_| internal("shell path contains NUL".into()))?;
    let cwd_c = CString::new(cwd.as_os_str().as_bytes()).map_err(|_| {
        ToolError::new(
            ErrorCode::InvalidArguments,
            "the working directory contains a NUL byte",
            "use another directory",
        )
    })?;
    Ok(Prepared {
        launch,
        cmd_file,
        hist_file,
        envp,
        argv,
        program_c,
        cwd_c,
        run_marker,
    })
}

/// The shell's environment: the caller's variables as the launch adjusts
/// them, over the server's, led by the session's run marker.
fn environment(launch: &Launch, options: &StartOptions, server: &Config) -> Result<(Vec<CString>, Vec<u8>), ToolError> {
    let mut env_pairs: Vec<(String, String)> = options.env.clone();
    env_pairs.retain(|(n, _)| !launch.env_remove.contains(&n.as_str()));
    env_pairs.extend(launch.env_set.iter().cloned());
    let mut envp = server.build_env(&env_pairs);
    envp.retain(|e| {
        let bytes = e.as_bytes();
        let name = &bytes[..bytes.iter().position(|b| *b == b'=').unwrap_or(bytes.len())];
        !launch.env_remove.iter().any(|r| r.as_bytes() == name)
            || launch.env_set.iter().any(|(n, _)| n.as_bytes() == name)
    });
    for (name, value) in &launch.env_default {
        let prefix = format!("{name}=");
        if !envp.iter().any(|e| e.as_bytes().starts_with(prefix.as_bytes())) {
            envp.push(
                CString::new(format!("{prefix}{value}")).map_err(|_| spawn_failed(format!("`{name}` contains NUL")))?,
            );
        }
    }
    // Like every command's, the session's processes carry a run marker:
    // closing finds those that left the terminal's session by it, and
    // the guard finds them all if the host dies.
    let run_marker = crate::process::ids::next_run_marker();
    envp.insert(
        0,
        CString::new(run_marker.clone()).map_err(|_| internal("run marker contains NUL".into()))?,
    );
    Ok((envp, run_marker))
}

/// Opens a pseudo-terminal and spawns the shell on it in `cwd`, in
/// `sandbox_config` when it is on (for a server in `working_dir`, whose
/// commands see `temp` as their temp dir).
fn spawn(
    prepared: &Prepared,
    program: &Path,
    (cwd, working_dir): (&Path, &Path),
    dir: &Path,
    sandbox_config: &crate::sandbox::SandboxConfig,
    temp: &crate::sandbox::ServerTemp,
) -> Result<Spawned, ToolError> {
    let pty = pty::open().map_err(|e| spawn_failed(format!("could not open a pseudo-terminal: {e}")))?;
    let tty = pty::device_of(&pty.slave_path).ok_or_else(|| {
        spawn_failed(format!(
            "could not stat the pseudo-terminal {}: {}",
            pty.slave_path.to_string_lossy(),
            std::io::Error::last_os_error()
        ))
    })?;
    // The whole session lives in the sandbox; its private dir stays
    // writable (the shell reads commands from it and writes markers).
    let dir = dir.to_path_buf();
    let sandbox = crate::sandbox::wrap(
        sandbox_config,
        &crate::sandbox::Request {
            cwd,
            working_dir,
            extra_writable: std::slice::from_ref(&dir),
            temp,
            command: &prepared.argv,
            die_with_parent: false,
            // A session outlives its call: nobody holds it open to ask.
            network_ask: None,
        },
    )?;
    let (program_c, argv) = match &sandbox {
        Some(wrapped) => (&wrapped.program, &wrapped.argv),
        None => (&prepared.program_c, &prepared.argv),
    };
    // The sandbox's variables (its TMPDIR, its proxy) replace any of the same name.
    let envp = match &sandbox {
        Some(wrapped) => crate::sandbox::with_env(&prepared.envp, &wrapped.env)
            .map(CStr::to_owned)
            .collect(),
        None => prepared.envp.clone(),
    };
    let pass_fds = sandbox.as_ref().map_or(&[][..], |w| &w.pass_fds);
    let pid = pty::spawn_on_pty(program_c, argv, &envp, &prepared.cwd_c, &pty.slave_path, pass_fds)
        .map_err(|e| spawn_failed(format!("could not start {}: {e}", program.display())))?;
    let flags = rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK;
    let stop = match rustix::event::eventfd(0, flags) {
        Ok(stop) => stop,
        Err(e) => {
            kill_session_tree(pid);
            return Err(spawn_failed(format!("eventfd failed: {}", std::io::Error::from(e))));
        }
    };
    Ok(Spawned {
        pid,
        master: pty.master,
        tty,
        stop,
        sandbox_temp: sandbox.as_ref().and_then(|w| w.command_temp.clone()),
        sandbox_cgroup: sandbox.as_ref().and_then(|w| w.cgroup.clone()),
        network: sandbox.and_then(|w| w.network),
    })
}

/// Starts the thread that reads the session's terminal; kills the shell if it cannot.
fn start_reader(session: &Arc<Session>, nonce: String) -> Result<(), ToolError> {
    let reader_session = session.clone();
    let handle = std::thread::Builder::new()
        .name(format!("bash-mcp-session-{}", &session.id[..8]))
        .spawn(move || read_loop(&reader_session, &nonce));
    match handle {
        Ok(h) => *session.reader.lock().unwrap_or_else(PoisonError::into_inner) = Some(h),
        Err(e) => {
            kill_session_tree(session.pid);
            let _ = session.files.remove_all();
            return Err(spawn_failed(format!(
                "could not start the session's reader thread: {e}"
            )));
        }
    }
    Ok(())
}

/// Ready once the first prompt marker arrives; the start-up files go either way.
fn await_first_prompt(session: &Session, launch: &Launch, program: &Path) -> Result<(), ToolError> {
    let deadline = Instant::now() + START_TIMEOUT;
    let mut state = session.lock();
    while state.phase == Phase::Starting && Instant::now() < deadline {
        state = session
            .changed
            .wait_timeout(state, deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
    let phase = state.phase;
    drop(state);
    for (name, _) in &launch.files {
        let _ = session.files.remove(std::ffi::OsStr::new(name));
    }
    if phase != Phase::Idle {
        session.terminate();
        return Err(spawn_failed(match phase {
            Phase::Exited(code) => format!("{} exited during start-up with status {code}", program.display()),
            _ => format!(
                "{} did not show its first prompt within {} s",
                program.display(),
                START_TIMEOUT.as_secs()
            ),
        }));
    }
    Ok(())
}
