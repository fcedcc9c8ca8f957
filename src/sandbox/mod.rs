//! The OS sandbox behind every command (see docs/sandbox.md).
//!
//! A [`SandboxConfig`] says what commands may do; the [`probe()`] finds a
//! backend that can enforce it here (bubblewrap, else Landlock + seccomp)
//! and says exactly why when none can; [`wrap`] turns one command line into
//! the sandboxed one. Nothing here widens a sandbox: a configuration that
//! cannot be enforced fails with `sandbox_unavailable` unless the operator
//! chose `warn-and-run-unsandboxed`.

pub mod bwrap;
mod caches;
mod caps;
pub mod config;
pub mod denial;
mod denial_summary;
pub mod exec_helper;
mod fsread;
pub mod git;
pub mod guard;
pub mod helper;
mod hidden;
pub mod in_force;
pub mod kept;
pub mod landlock;
mod lexical;
pub mod limits;
mod limits_status;
pub mod network;
pub mod note;
pub mod notify;
pub mod own_bound;
pub mod plan;
pub mod probe;
mod process_calls;
pub mod reaper;
pub mod seccomp;
mod settled;
pub mod supervisor;
pub mod temp;
pub mod wire;

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

pub use config::{BackendChoice, DEFAULT_PROTECTED, Mode, Network, OnUnavailable, SandboxConfig};
pub use denial::Denial;
pub use denial_summary::summary as denial_summary;
pub use in_force::{InForce, OPT_OUT_LINE, in_force};
pub use note::Note;
pub use plan::Plan;
pub use probe::{Backend, Probe};
pub use supervisor::Supervisors;
pub use temp::ServerTemp;

use crate::error::{ErrorCode, ToolError};

type ProbeKey = (Option<PathBuf>, Option<PathBuf>, u8);

/// The probe for `config`'s backend settings: run on first use, then kept
/// (and logged once).
pub fn probe(config: &SandboxConfig) -> Arc<Probe> {
    static PROBES: Mutex<Option<HashMap<ProbeKey, Arc<Probe>>>> = Mutex::new(None);
    let key = (
        config.bwrap_path.clone(),
        config.helper_path.clone(),
        config.backend as u8,
    );
    let mut probes = PROBES.lock().unwrap_or_else(PoisonError::into_inner);
    let probes = probes.get_or_insert_with(HashMap::new);
    if let Some(probe) = probes.get(&key) {
        return probe.clone();
    }
    let probe = Arc::new(Probe::run(config));
    match &probe.chosen {
        Some(backend) => tracing::info!(backend = backend.name(), probe = %probe.to_value(), "sandbox backend"),
        None => {
            let (reason, fix) = probe.unavailable_reason();
            tracing::warn!(%reason, %fix, "no sandbox backend works here");
        }
    }
    probes.insert(key, probe.clone());
    probe
}

/// `status` / `check_env` view: the sandbox in force for a server whose
/// working directory is `working_dir`, the configuration and, when a
/// sandbox is configured (or `always`), the probe.
pub fn status_value(config: &SandboxConfig, working_dir: &Path, always: bool) -> Value {
    let mut value = json!({"in_force": in_force(config, working_dir).to_value(), "config": config.to_value()});
    if always || config.is_on() {
        let probe = probe(config);
        value["probe"] = probe.to_value();
        value["process_limit"] = limits_status::status(
            config.max_processes,
            config.supervisor,
            helper::find(config.helper_path.as_deref()).is_some_and(|h| helper::is_executable(&h)),
            probe.chosen.as_ref(),
        );
    }
    value
}

/// The error every command gets while `config` asks for a sandbox that no
/// backend here can give, unless the operator accepts unsandboxed runs:
/// why, the fix, and the line that runs commands unsandboxed.
pub fn unavailable(config: &SandboxConfig) -> Option<ToolError> {
    if !config.is_on() || config.on_unavailable == OnUnavailable::WarnAndRunUnsandboxed {
        return None;
    }
    let probe = probe(config);
    if probe.chosen.is_some() {
        return None;
    }
    let (reason, fix) = probe.unavailable_reason();
    Some(ToolError::new(
        ErrorCode::SandboxUnavailable,
        format!(
            "a sandbox is configured but no backend works here, so the command did not run: {reason}. Fix: {fix}. Or run commands unsandboxed with the configuration line `{OPT_OUT_LINE}`"
        ),
        format!(
            "{fix}; or, to run commands unsandboxed, the operator sets `{OPT_OUT_LINE}` (or `sandbox.on_unavailable` to \"warn-and-run-unsandboxed\")"
        ),
    ))
}

/// A command line rewritten to run inside the sandbox.
#[derive(Debug, Clone)]
pub struct Wrapped {
    pub program: CString,
    pub argv: Vec<CString>,
    pub backend: &'static str,
    pub plan: Plan,
    /// The supervisor that starts the command inside a long-lived sandbox
    /// (then `argv` is the command itself), or `None`: `argv` starts the
    /// sandbox too.
    pub supervisor: Option<supervisor::Supervised>,
    /// The Landlock helper that keeps the command (then `argv` starts the
    /// helper, which reports to the host on a control socket of its own).
    pub kept: Option<kept::KeptLaunch>,
    /// The seccomp observation of the command, when it has one.
    pub observation: Option<Arc<notify::Observation>>,
    /// Whether the observation names the denials (`notify_denials`); when
    /// not, it only serves the guarded directories and denials come from
    /// the error text.
    pub denials_notified: bool,
    /// Fds the sandbox's first process gets as its fds 3, 4, ...: the
    /// socket the Landlock helper sends its listener on, or bwrap's seccomp
    /// program.
    pub pass_fds: Vec<std::os::fd::RawFd>,
    /// Keeps open the fds of `pass_fds` that nothing else owns.
    pub owned_fds: Vec<Arc<std::os::fd::OwnedFd>>,
    /// The process limit in force for the command, and what bounds it.
    pub process_limit: Option<(u32, limits::Bound)>,
    /// The sandbox's own `pids` cgroup, removed when the last copy of this
    /// is dropped: keep it as long as the sandbox runs.
    pub cgroup: Option<Arc<own_bound::SandboxCgroup>>,
    /// The proxy of a network open by name; it stops when the last holder
    /// (the command's run, or its session) lets go.
    pub network: Option<Arc<network::link::Link>>,
    /// Variables the command's environment must hold (`TMPDIR=...`, the
    /// proxy's), in place of any of the same name.
    pub env: Vec<CString>,
    /// The command's own temp dir, removed when the last copy of this is
    /// dropped: keep it as long as the command runs.
    pub command_temp: Option<Arc<temp::CommandTemp>>,
}

impl Wrapped {
    /// What starts the command when it is not a plain spawn of `argv`: the
    /// supervisor, or the host's side of the Landlock helper.
    pub(crate) fn launcher(&self) -> Option<&dyn crate::process::spawn::Launch> {
        match (&self.supervisor, &self.kept) {
            (Some(supervised), _) => Some(supervised),
            (None, Some(kept)) => Some(kept),
            (None, None) => None,
        }
    }

    /// What the result should say about how the sandbox held, once the
    /// command has ended with `output`.
    pub fn notes(&self, output: &str) -> Vec<Note> {
        let mut notes = Vec::new();
        if let Some((max, bound)) = self.process_limit
            && limits::fork_failed(output)
        {
            notes.push(Note::ProcessLimit {
                max,
                bound_by: bound.name(),
            });
        }
        if let Some(signal) = self.kept.as_ref().and_then(|k| k.state.helper_killed()) {
            notes.push(Note::HelperKilled { signal });
        }
        notes
    }

    /// What the sandbox refused, and where that was learned: from the
    /// seccomp listener when the command had one, else read from its
    /// output (a heuristic: see [`denial`]).
    pub fn denials(&self, output: &str) -> (Vec<Denial>, &'static str) {
        let notified = self
            .observation
            .as_ref()
            .filter(|_| self.denials_notified)
            .and_then(|o| o.denials());
        let (mut found, from) = match notified {
            Some(found) => (found, denial::FROM_NOTIFICATION),
            None => (self.denials_in_text(output), denial::FROM_ERROR_TEXT),
        };
        // A read is never notified (read-only opens stay in the kernel): a
        // hidden path's error line names it, on every route.
        found.extend(self.hidden_reads(output));
        if let Some(link) = &self.network {
            // Past the proxy, an address the command reached for is a direct connection.
            for d in &mut found {
                if let Denial::Connect { addr } = d {
                    *d = Denial::Direct {
                        addr: std::mem::take(addr),
                    };
                }
            }
            // The proxy's refusals are its own record, whatever named the rest.
            for refused in link.refusals() {
                if !found.contains(&refused) {
                    found.push(refused);
                }
            }
        }
        (found, from)
    }

    /// Reads of `read_deny` paths the output's error lines name.
    fn hidden_reads(&self, output: &str) -> Vec<Denial> {
        if self.plan.read_deny.is_empty() {
            return Vec::new();
        }
        let hidden = |p: &str| {
            let path = self.plan.cwd.join(p);
            let path = notify::target::landing(Path::new("/"), &path, true);
            self.plan
                .read_deny
                .iter()
                .any(|d| path.starts_with(&d.path))
                .then(|| path.display().to_string())
        };
        denial::hidden_reads(output, &hidden)
    }

    /// The fallback: denials read from the command's output.
    fn denials_in_text(&self, output: &str) -> Vec<Denial> {
        let writable = |p: &str| {
            let path = Path::new(p);
            let path = if path.is_absolute() {
                path.to_path_buf()
            } else {
                self.plan.cwd.join(path)
            };
            // Where the write would land: a symlink in a root may lead out.
            let path = notify::target::landing(Path::new("/"), &path, true);
            // A hidden path's error is a refused read (see `hidden_reads`).
            self.plan.read_deny.iter().any(|d| path.starts_with(&d.path))
                || self.plan.in_writable_place(&path)
                    && !self.plan.protected.iter().any(|pr| path.starts_with(&pr.path))
        };
        denial::find(output, !self.plan.network, &writable)
    }
}

/// `envp` (`NAME=value` entries) with `vars` (the same) set over it: each
/// of `vars` replaces any entry of the same name. Borrowed, not copied;
/// each entry's name is found once and looked up among `vars`' sorted
/// names (a network by name sets some twenty variables over an
/// environment of as many or more).
pub fn with_env<'e>(envp: &'e [CString], vars: &'e [CString]) -> impl Iterator<Item = &'e CStr> + 'e {
    fn name(var: &CString) -> &[u8] {
        let bytes = var.as_bytes();
        &bytes[..bytes.iter().position(|&c| c == b'=').unwrap_or(bytes.len())]
    }
    let mut names: Vec<&[u8]> = vars.iter().map(name).collect();
    names.sort_unstable();
    envp.iter()
        .filter(move |entry| names.binary_search(&name(entry)).is_err())
        .chain(vars)
        .map(CString::as_c_str)
}

/// Where and how one command runs.
pub struct Request<'a> {
    /// Where the command starts.
    pub cwd: &'a Path,
    /// The server's working directory, set by its host or operator:
    /// writable when the configuration names no roots, whatever `cwd` is.
    pub working_dir: &'a Path,
    /// Writable besides the roots (a session's private dir).
    pub extra_writable: &'a [PathBuf],
    /// The server's temp dir, which its commands see as theirs.
    pub temp: &'a ServerTemp,
    /// The command line (`<shell> -c <command>`, or a session's shell).
    pub command: &'a [CString],
    /// False for a session shell, which outlives the thread that starts it.
    pub die_with_parent: bool,
    /// How a connection its network policy does not allow is put to the
    /// person while it waits; `None`: refused, unasked.
    pub network_ask: Option<network::ask::Asking>,
}

/// The sandboxed command line, or `None` when the sandbox is off (or
/// unavailable and the operator accepts unsandboxed runs).
pub fn wrap(config: &SandboxConfig, request: &Request<'_>) -> Result<Option<Wrapped>, ToolError> {
    wrap_in(config, request, None)
}

/// [`wrap`], with a command that waits for its call run through one of
/// `supervisors` when the backend is bubblewrap and `sandbox.supervisor` is
/// on. A supervisor that cannot start is logged, and the command gets a
/// bwrap of its own: as sandboxed, only slower.
pub fn wrap_in(
    config: &SandboxConfig,
    request: &Request<'_>,
    supervisors: Option<&Supervisors>,
) -> Result<Option<Wrapped>, ToolError> {
    if !config.is_on() {
        return Ok(None);
    }
    let probe = probe(config);
    let Some(backend) = &probe.chosen else {
        return match unavailable(config) {
            Some(error) => Err(error),
            None => Ok(None),
        };
    };
    let setting = Setting::new(config, request, backend)?;
    if let Some((supervisor, link)) = supervisor_for(config, request, backend, supervisors, &setting) {
        return Ok(Some(setting.supervised(config, request, backend, supervisor, link)));
    }
    wrap_own(config, request, backend, setting).map(Some)
}

/// What every way of running a command in the sandbox starts from: its
/// plan, the layout of its guarded directories, and its environment.
struct Setting {
    plan: Plan,
    layout: guard::Layout,
    /// The errno of a write into a guarded directory's protected entry.
    refuse: i32,
    /// Whether there are guarded directories: they need the handler whether
    /// or not denials are named; without it, their entries stay as they are
    /// (nothing created in `.git`, so no `git add`), never writable.
    guarded: bool,
    /// Whether the handler names the command's denials: sessions outlive
    /// their call and report none, so only commands that wait for their call
    /// are observed.
    observe: bool,
    env: Vec<CString>,
    command_temp: Option<Arc<temp::CommandTemp>>,
}

impl Setting {
    fn new(config: &SandboxConfig, request: &Request<'_>, backend: &Backend) -> Result<Setting, ToolError> {
        let (temp, command_temp) = temp_for(config, backend, request.temp)?;
        let plan = Plan::new(config, (request.cwd, request.working_dir), request.extra_writable, temp)
            .map_err(|p| ToolError::new(ErrorCode::InvalidConfig, p.message, p.hint))?;
        let (keeping, refuse) = match backend {
            Backend::Bwrap { .. } => (guard::Keeping::MountPoints, libc::EROFS),
            Backend::Landlock { .. } => (guard::Keeping::Mediation, libc::EACCES),
        };
        let layout = guard::Layout::new(&plan, keeping);
        let mut env = vec![tmpdir_variable(plan.temp.seen_at())];
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        env.extend(caches::variables(&plan, home.as_deref()));
        Ok(Setting {
            guarded: !layout.is_empty(),
            observe: config.notify_denials && request.die_with_parent,
            plan,
            layout,
            refuse,
            env,
            command_temp,
        })
    }

    /// What the seccomp handler of the command judges, and mediates in its
    /// guarded directories.
    fn policy(&self, backend: &Backend) -> notify::Policy {
        notify::Policy {
            judge: notify::Judge::new(&self.plan, &self.layout),
            network_off: !self.plan.network,
            own_loopback: matches!(backend, Backend::Bwrap { .. }),
            proxy: None,
            guard: self.guarded.then(|| notify::Guard {
                layout: self.layout.clone(),
                roots: self.plan.writable.clone(),
                refuse: self.refuse,
            }),
        }
    }

    /// The command run by `supervisor`, a client of its shared proxy through
    /// `link` when its network is open by name.
    fn supervised(
        mut self,
        config: &SandboxConfig,
        request: &Request<'_>,
        backend: &Backend,
        supervisor: Arc<supervisor::Supervisor>,
        link: Option<network::link::Link>,
    ) -> Wrapped {
        self.env.extend(variables(
            link.as_ref().map(network::link::Link::env).unwrap_or_default(),
        ));
        let observation = Arc::new(notify::Observation::new());
        let policy = self.policy(backend);
        Wrapped {
            program: request.command[0].clone(),
            argv: request.command.to_vec(),
            backend: backend.name(),
            plan: self.plan,
            supervisor: Some(supervisor::Supervised {
                supervisor,
                observer: supervisor::Observer {
                    observation: observation.clone(),
                    policy,
                },
            }),
            kept: None,
            observation: Some(observation),
            denials_notified: self.observe,
            pass_fds: Vec::new(),
            owned_fds: Vec::new(),
            process_limit: limits::pid_max_per_namespace()
                .then_some((config.max_processes, limits::Bound::PidNamespace)),
            cgroup: None,
            network: link.map(Arc::new),
            env: self.env,
            command_temp: self.command_temp,
        }
    }
}

/// The supervisor of `supervisors` that runs the command, and the command's
/// link to the supervisor's shared proxy when its network is open by name;
/// `None` when none does: the backend is Landlock, `sandbox.supervisor` is
/// off, the command is a session's, or no supervisor could start (logged:
/// the command gets a bwrap of its own, as sandboxed, only slower).
fn supervisor_for(
    config: &SandboxConfig,
    request: &Request<'_>,
    backend: &Backend,
    supervisors: Option<&Supervisors>,
    setting: &Setting,
) -> Option<(Arc<supervisor::Supervisor>, Option<network::link::Link>)> {
    let (Backend::Bwrap { path, disable_userns }, Some(supervisors), true, true) =
        (backend, supervisors, config.supervisor, request.die_with_parent)
    else {
        return None;
    };
    let helper = helper::find(config.helper_path.as_deref())?;
    let by_name = config.network.policy();
    let got = supervisors
        .get(
            path,
            &helper,
            &setting.plan,
            &setting.layout,
            supervisor::Options {
                observe: setting.observe || setting.guarded,
                max_processes: config.max_processes,
                by_name: by_name.is_some(),
                stand_ins: *disable_userns,
            },
        )
        .and_then(|supervisor| {
            // A network by name: this command is a client of the
            // supervisor's shared proxy, judged by its own policy.
            let link = match (by_name, supervisor.clients()) {
                (Some(policy), Some(clients)) => Some(network::link::Link::shared(
                    clients.register(policy.clone(), request.network_ask.clone())?,
                )),
                _ => None,
            };
            Ok((supervisor, link))
        });
    got.inspect_err(|e| tracing::warn!("{e}; this command gets a bwrap of its own"))
        .ok()
}

/// What a sandbox of the command's own holds besides its command line.
#[derive(Default)]
struct OwnLaunch {
    observation: Option<Arc<notify::Observation>>,
    kept: Option<kept::KeptLaunch>,
    pass_fds: Vec<std::os::fd::RawFd>,
    owned_fds: Vec<Arc<std::os::fd::OwnedFd>>,
    cgroup: Option<Arc<own_bound::SandboxCgroup>>,
    limit: Option<(u32, limits::Bound)>,
}

/// The command in a sandbox of its own: a bwrap (with a proxy of its own
/// when its network is open by name), or the Landlock helper.
fn wrap_own(
    config: &SandboxConfig,
    request: &Request<'_>,
    backend: &Backend,
    mut setting: Setting,
) -> Result<Wrapped, ToolError> {
    let by_name = config.network.policy();
    if let Some(policy) = by_name
        && !matches!(backend, Backend::Landlock { .. })
    {
        let Setting {
            plan,
            layout,
            env,
            command_temp,
            ..
        } = setting;
        return wrap_by_name(config, request, backend, plan, policy, &layout, (env, command_temp));
    }
    // Landlock's network by name: a proxy of the command's own on the
    // host's loopback (see `landlock_proxy`).
    let link = match (by_name, backend) {
        (Some(policy), Backend::Landlock { .. }) => Some(landlock_proxy(policy, request.network_ask.clone())?),
        _ => None,
    };
    let mut policy = setting.policy(backend);
    policy.proxy = link.as_ref().and_then(|l| l.port());
    let mut launch = OwnLaunch::default();
    let argv = match backend {
        Backend::Bwrap { path, disable_userns } => {
            bwrap_command(config, request, (path, *disable_userns), &setting, policy, &mut launch)?
        }
        Backend::Landlock { .. } if !setting.plan.read_deny.is_empty() => {
            return Err(ToolError::new(
                ErrorCode::SandboxUnavailable,
                "`sandbox.read_deny` is set, but the landlock backend cannot hide paths (Landlock rules only grant access), so the command did not run",
                "install bubblewrap so the bwrap backend can hide them, or remove `read_deny`",
            ));
        }
        Backend::Landlock { helper, .. } => {
            landlock_command(config, request, helper, &setting, link.as_ref(), policy, &mut launch)?
        }
    };
    setting.env.extend(variables(
        link.as_ref().map(network::link::Link::env).unwrap_or_default(),
    ));
    Ok(Wrapped {
        program: argv[0].clone(),
        argv,
        backend: backend.name(),
        plan: setting.plan,
        supervisor: None,
        kept: launch.kept,
        observation: launch.observation,
        denials_notified: setting.observe,
        pass_fds: launch.pass_fds,
        owned_fds: launch.owned_fds,
        process_limit: match backend {
            Backend::Landlock { .. } => limits::landlock_bound().ok().map(|b| (config.max_processes, b)),
            Backend::Bwrap { .. } => launch.limit,
        },
        cgroup: launch.cgroup,
        network: link.map(Arc::new),
        env: setting.env,
        command_temp: setting.command_temp,
    })
}

/// The command line of a bwrap of the command's own at `path`, with its
/// seccomp program and, for guarded directories, the helper that hands their
/// handler its listener and bounds the sandbox's processes.
fn bwrap_command(
    config: &SandboxConfig,
    request: &Request<'_>,
    (path, disable_userns): (&Path, bool),
    setting: &Setting,
    policy: notify::Policy,
    launch: &mut OwnLaunch,
) -> Result<Vec<CString>, ToolError> {
    let plan = &setting.plan;
    let program = seccomp::bwrap_program(plan.network)
        .and_then(|p| seccomp::program_fd(p).map_err(|e| e.to_string()))
        .map_err(|e| {
            ToolError::new(
                ErrorCode::SandboxUnavailable,
                format!("could not prepare the sandbox's seccomp filter, so the command did not run: {e}"),
                "retry; if it persists, the host is out of file descriptors or memory",
            )
        })?;
    launch.pass_fds.push(program.as_raw_fd());
    launch.owned_fds.push(Arc::new(program));
    // bwrap execs the command itself: the handler of guarded
    // directories gets its listener from the helper run in between,
    // which bounds the sandbox's processes too.
    let helper = helper::find(config.helper_path.as_deref()).filter(|h| helper::is_executable(h));
    if setting.guarded && helper.is_none() {
        tracing::warn!(
            "the bash-mcp helper was not found, so no handler serves this command's guarded directories: their entries stay read-only"
        );
    }
    let spec = match setting.guarded && helper.is_some() {
        true => guard_handler(plan.network, policy, launch),
        false => None,
    };
    let bound = own_bound::prepare(config.max_processes, helper.is_some()).map_err(bound_failed)?;
    let spec = with_bound(
        spec,
        plan.network,
        config.max_processes,
        bound.as_ref(),
        &mut launch.pass_fds,
    );
    let command = match (&helper, &spec) {
        (Some(helper), Some(spec)) => exec_helper::argv(helper, spec, request.command),
        _ => request.command.to_vec(),
    };
    launch.cgroup = bound.as_ref().and_then(|b| b.cgroup.clone());
    launch.limit = bound.map(|b| (config.max_processes, b.bound));
    let argv = own_bwrap_argv(
        path,
        (plan, &setting.layout),
        request.die_with_parent,
        (disable_userns, launch.pass_fds.len()),
        &command,
    );
    add_stand_ins(&argv, &mut launch.pass_fds, &mut launch.owned_fds)?;
    Ok(argv)
}

/// The spec of the helper that hands the guarded directories' handler,
/// serving `policy`, its listener (the next of `launch`'s passed fds);
/// `None`, logged, when the handler cannot start: their entries stay
/// read-only.
fn guard_handler(network: bool, policy: notify::Policy, launch: &mut OwnLaunch) -> Option<landlock::HelperSpec> {
    match notify::Observation::over_socket(policy) {
        Ok((o, fd)) => {
            let spec = landlock::HelperSpec {
                network,
                observe: true,
                landlock: false,
                listener_fd: Some(bwrap::SECCOMP_FD + launch.pass_fds.len() as i32),
                ..landlock::HelperSpec::default()
            };
            launch.pass_fds.push(fd);
            launch.observation = Some(Arc::new(o));
            Some(spec)
        }
        Err(e) => {
            tracing::warn!(
                "no handler for the guarded directories of this command ({e}): their entries stay read-only"
            );
            None
        }
    }
}

/// The command line of a bwrap of the command's own running `command`,
/// its seccomp program at [`bwrap::SECCOMP_FD`] with `passed` fds after it
/// (`disable_userns`: the program refuses user namespaces, and hidden
/// files' stand-ins read their empty content from the fds after those).
fn own_bwrap_argv(
    path: &Path,
    (plan, layout): (&Plan, &guard::Layout),
    die_with_parent: bool,
    (disable_userns, passed): (bool, usize),
    command: &[CString],
) -> Vec<CString> {
    let stand_ins_from = disable_userns.then_some(bwrap::SECCOMP_FD + passed as i32);
    let options = bwrap::BwrapOptions {
        die_with_parent,
        disable_userns,
        supervisor: false,
        seccomp_fd: Some(bwrap::SECCOMP_FD),
        stand_ins_from,
    };
    bwrap::argv(path, plan, layout, options, command)
}

/// The fds that hidden files' stand-ins in `argv` read their (empty)
/// content from, added to `pass_fds` (one /dev/null, kept in `owned_fds`).
fn add_stand_ins(
    argv: &[CString],
    pass_fds: &mut Vec<std::os::fd::RawFd>,
    owned_fds: &mut Vec<Arc<std::os::fd::OwnedFd>>,
) -> Result<(), ToolError> {
    let stand_ins = bwrap::stand_in_fds(argv);
    if stand_ins > 0 {
        let empty = Arc::new(supervisor::dev_null().map_err(no_dev_null)?);
        pass_fds.extend(std::iter::repeat_n(empty.as_raw_fd(), stand_ins));
        owned_fds.push(empty);
    }
    Ok(())
}

/// The command line of the Landlock helper `helper` running the command,
/// observed by a seccomp handler serving `policy` when denials are named,
/// directories guarded or the network open by name (through `link`).
fn landlock_command(
    config: &SandboxConfig,
    request: &Request<'_>,
    helper: &Path,
    setting: &Setting,
    link: Option<&network::link::Link>,
    policy: notify::Policy,
    launch: &mut OwnLaunch,
) -> Result<Vec<CString>, ToolError> {
    if setting.observe || setting.guarded || link.is_some() {
        landlock_observation(policy, link.is_some(), launch)?;
    }
    let plan = &setting.plan;
    let layout = &setting.layout;
    // A root that holds a guarded directory is mediated itself:
    // only its writable subdirectories and files are granted. The
    // temp dir is granted whole.
    let mediated: Vec<&Path> = layout.mediated.iter().map(|m| m.dir.as_path()).collect();
    let mut writable: Vec<PathBuf> = plan
        .writable
        .iter()
        .filter(|r| !mediated.contains(&r.as_path()))
        .cloned()
        .collect();
    writable.push(plan.temp.seen_at().to_path_buf());
    let spec = landlock::HelperSpec {
        writable,
        network: plan.network,
        bound: session_bound(config, request, launch)?,
        proxy_port: link.and_then(|l| l.port()),
        subreaper: request.die_with_parent,
        observe: launch.observation.is_some(),
        max_processes: Some(config.max_processes),
        grants: layout.entries_of(guard::Kind::WritableDir),
        files: layout.entries_of(guard::Kind::WritableFile),
        // A kept command's helper has its control socket first (fd
        // 3) and the listener's socket next; a session's helper has
        // only the listener's, as fd 3.
        listener_fd: (!request.die_with_parent).then_some(3),
        ..landlock::HelperSpec::default()
    };
    if spec.subreaper {
        launch.kept = Some(kept::KeptLaunch::default());
    }
    Ok(exec_helper::argv(helper, &spec, request.command))
}

/// Starts the Landlock command's seccomp handler, serving `policy`, its
/// socket the next of `launch`'s passed fds. A handler that cannot start is
/// logged (denials then come from the error text), unless the network is
/// open `by_name`: the handler makes its sockets, so the command does not run.
fn landlock_observation(policy: notify::Policy, by_name: bool, launch: &mut OwnLaunch) -> Result<(), ToolError> {
    match notify::Observation::over_socket(policy) {
        Ok((o, fd)) => {
            launch.observation = Some(Arc::new(o));
            launch.pass_fds.push(fd);
        }
        // The handler makes a network by name's sockets.
        Err(e) if by_name => {
            return Err(ToolError::new(
                ErrorCode::SandboxUnavailable,
                format!("could not start the seccomp handler a network by name needs, so the command did not run: {e}"),
                "retry; if it persists, the host is out of file descriptors, threads or memory",
            ));
        }
        Err(e) => tracing::warn!("no seccomp observation for this command ({e}); denials come from its error text"),
    }
    Ok(())
}

/// The bound of a Landlock session's processes: a session has no keeper to
/// remove a cgroup after it, so the server makes it (kept in `launch`) and
/// the helper joins it, through the next of `launch`'s passed fds.
fn session_bound(
    config: &SandboxConfig,
    request: &Request<'_>,
    launch: &mut OwnLaunch,
) -> Result<Option<own_bound::InnerBound>, ToolError> {
    match (request.die_with_parent, limits::landlock_bound()) {
        (false, Ok(limits::Bound::Cgroup)) => {
            let cgroup = Arc::new(own_bound::SandboxCgroup::create(config.max_processes).map_err(bound_failed)?);
            let bound = own_bound::InnerBound {
                max: config.max_processes,
                cgroup_fd: Some(3 + launch.pass_fds.len() as i32),
            };
            launch.pass_fds.push(cgroup.fd());
            launch.cgroup = Some(cgroup);
            Ok(Some(bound))
        }
        _ => Ok(None),
    }
}

/// The error of a sandbox whose hidden files' stand-ins could not get
/// their empty content: the command does not run.
fn no_dev_null(e: std::io::Error) -> ToolError {
    ToolError::new(
        ErrorCode::SandboxUnavailable,
        format!("could not open the empty file that stands in for hidden files, so the command did not run: {e}"),
        "check that /dev/null exists and is readable in this environment",
    )
}

/// The error of a sandbox whose process bound could not be prepared: the
/// command does not run unbounded.
fn bound_failed(e: std::io::Error) -> ToolError {
    ToolError::new(
        ErrorCode::SandboxUnavailable,
        format!(
            "could not make the pids cgroup that bounds the sandbox's processes (`sandbox.max_processes`), so the command did not run: {e}"
        ),
        "retry; if it persists, check that this user may still create cgroups below its own",
    )
}

/// `spec` (the helper run first inside a bwrap of its own), made to apply
/// `bound` too, with the cgroup's fd added to `pass_fds` (the helper's next
/// fd); a spec of its own when there was none and a bound needs one.
fn with_bound(
    spec: Option<landlock::HelperSpec>,
    network: bool,
    max: u32,
    bound: Option<&own_bound::Prepared>,
    pass_fds: &mut Vec<std::os::fd::RawFd>,
) -> Option<landlock::HelperSpec> {
    let Some(bound) = bound else { return spec };
    let mut spec = spec.unwrap_or(landlock::HelperSpec {
        network,
        landlock: false,
        ..landlock::HelperSpec::default()
    });
    let cgroup_fd = bound.cgroup.as_ref().map(|c| {
        pass_fds.push(c.fd());
        bwrap::SECCOMP_FD + pass_fds.len() as i32 - 1
    });
    spec.bound = Some(own_bound::InnerBound { max, cgroup_fd });
    Some(spec)
}

/// The proxy of a command whose network is open by name on the Landlock
/// backend, which shares the host's network namespace: a listener of its
/// own on the host's loopback (an ephemeral port, the only TCP port its
/// Landlock domain may connect to), serving only requests that carry its
/// secret token, since any local user can reach that port.
fn landlock_proxy(
    policy: &network::NetPolicy,
    asking: Option<network::ask::Asking>,
) -> Result<network::link::Link, ToolError> {
    if let Some(abi) = landlock::landlock_abi().filter(|abi| *abi < landlock::BY_NAME_ABI) {
        return Err(ToolError::new(
            ErrorCode::SandboxUnavailable,
            format!(
                "`sandbox.network` is a policy by name, which the landlock backend enforces from Landlock ABI {} (Linux 6.12: TCP rules, and the scope that keeps commands off the host's abstract Unix sockets); this kernel has ABI {abi}, so the command did not run",
                landlock::BY_NAME_ABI
            ),
            "upgrade the kernel, or install bubblewrap (and let it create user namespaces), or set `sandbox.network` to true or false",
        ));
    }
    network::link::Link::on_host(policy.clone(), asking).map_err(|e| {
        ToolError::new(
            ErrorCode::SandboxUnavailable,
            format!("could not start the sandbox's network proxy, so the command did not run: {e}"),
            "retry; if it persists, the host is out of file descriptors, threads or memory",
        )
    })
}

/// A command whose network is open by name: bubblewrap gives it a network
/// namespace of its own (loopback only), the first step inside opens the
/// proxy's port on that loopback and hands the listener to the server, and
/// the server's proxy serves it under `policy` (see [`network`]): the route
/// of a session, and of a command when no supervisor serves it.
fn wrap_by_name(
    config: &SandboxConfig,
    request: &Request<'_>,
    backend: &Backend,
    plan: Plan,
    policy: &network::NetPolicy,
    layout: &guard::Layout,
    (mut env, command_temp): (Vec<CString>, Option<Arc<temp::CommandTemp>>),
) -> Result<Wrapped, ToolError> {
    let unavailable = |message: String, hint: &str| ToolError::new(ErrorCode::SandboxUnavailable, message, hint);
    let (path, disable_userns, helper) = by_name_needs(config, backend)?;
    let failed = |e: String| {
        unavailable(
            format!("could not prepare the sandbox's network proxy, so the command did not run: {e}"),
            "retry; if it persists, the host is out of file descriptors, threads or memory",
        )
    };
    let program = seccomp::bwrap_program(false)
        .and_then(|p| seccomp::program_fd(p).map_err(|e| e.to_string()))
        .map_err(failed)?;
    let (link, theirs) = network::link::Link::over_socket(policy.clone(), request.network_ask.clone())
        .map_err(|e| failed(e.to_string()))?;
    let mut pass_fds = vec![program.as_raw_fd(), theirs.as_raw_fd()];
    // The guarded directories' handler gets its listener from the helper run
    // after the network's (fd 5: the seccomp program and the link come
    // first); the same helper bounds the sandbox's processes.
    let (observation, spec) = match layout.is_empty() {
        true => (None, None),
        false => {
            let (o, spec) = by_name_guard_handler(&plan, layout, &mut pass_fds).map_err(|e| failed(e.to_string()))?;
            (Some(Arc::new(o)), Some(spec))
        }
    };
    let bound = own_bound::prepare(config.max_processes, true).map_err(bound_failed)?;
    let command = match with_bound(spec, true, config.max_processes, bound.as_ref(), &mut pass_fds) {
        Some(spec) => exec_helper::argv(&helper, &spec, request.command),
        None => request.command.to_vec(),
    };
    let argv = own_bwrap_argv(
        path,
        (&plan, layout),
        request.die_with_parent,
        (disable_userns, pass_fds.len()),
        &network::inside::argv(&helper, &command),
    );
    let mut owned_fds = vec![Arc::new(program), Arc::new(theirs)];
    add_stand_ins(&argv, &mut pass_fds, &mut owned_fds)?;
    env.extend(variables(network::link::sandbox_env()));
    Ok(Wrapped {
        program: argv[0].clone(),
        argv,
        backend: backend.name(),
        plan,
        supervisor: None,
        kept: None,
        observation,
        denials_notified: false,
        // fd 3: the seccomp program; fd 4: the link the listener comes back
        // on; then the handler's listener and the stand-ins' content.
        pass_fds,
        owned_fds,
        process_limit: bound.as_ref().map(|b| (config.max_processes, b.bound)),
        cgroup: bound.and_then(|b| b.cgroup),
        network: Some(Arc::new(link)),
        env,
        command_temp,
    })
}

/// What a network by name needs here: bubblewrap (its path, and whether
/// user namespaces are disabled inside) and the bash-mcp helper binary.
fn by_name_needs<'b>(config: &SandboxConfig, backend: &'b Backend) -> Result<(&'b Path, bool, PathBuf), ToolError> {
    let unavailable = |message: &str, hint: &str| ToolError::new(ErrorCode::SandboxUnavailable, message, hint);
    let Backend::Bwrap { path, disable_userns } = backend else {
        return Err(unavailable(
            "`sandbox.network` is a policy by name, which this server enforces with bubblewrap only for now, and the backend here is landlock, so the command did not run",
            "install bubblewrap (and let it create user namespaces), or set `sandbox.network` to true or false",
        ));
    };
    let Some(helper) = helper::find(config.helper_path.as_deref()).filter(|h| h.is_file()) else {
        return Err(unavailable(
            "`sandbox.network` is a policy by name, which needs the bash-mcp helper binary inside the sandbox, and it was not found, so the command did not run",
            "install it with scripts/install-c.sh (or `cargo install --locked --path . --features cli`), or set `sandbox.helper_path`",
        ));
    };
    Ok((path, *disable_userns, helper))
}

/// The handler of `layout`'s guarded directories for a command whose network
/// is open by name, and the spec of the helper that hands it its listener
/// (the next of `pass_fds`).
fn by_name_guard_handler(
    plan: &Plan,
    layout: &guard::Layout,
    pass_fds: &mut Vec<std::os::fd::RawFd>,
) -> std::io::Result<(notify::Observation, landlock::HelperSpec)> {
    let watch = notify::Policy {
        judge: notify::Judge::new(plan, layout),
        network_off: false,
        own_loopback: true,
        proxy: None,
        guard: Some(notify::Guard {
            layout: layout.clone(),
            roots: plan.writable.clone(),
            refuse: libc::EROFS,
        }),
    };
    let (o, fd) = notify::Observation::over_socket(watch)?;
    let spec = landlock::HelperSpec {
        network: true,
        observe: true,
        landlock: false,
        listener_fd: Some(bwrap::SECCOMP_FD + pass_fds.len() as i32),
        ..landlock::HelperSpec::default()
    };
    pass_fds.push(fd);
    Ok((o, spec))
}

/// The temp dir of a command in `config`'s sandbox on `backend`: its
/// server's in `workspace-write`, its own in `read-only` mode (with the
/// directory that then exists for it alone, on Landlock).
fn temp_for(
    config: &SandboxConfig,
    backend: &Backend,
    server: &ServerTemp,
) -> Result<(temp::Temp, Option<Arc<temp::CommandTemp>>), ToolError> {
    let failed = |e: std::io::Error| {
        ToolError::new(
            ErrorCode::SpawnFailed,
            format!("the command did not run: {e}"),
            "make room in the temp dir (or point TMPDIR at a writable directory) and retry",
        )
    };
    Ok(match (config.mode, backend) {
        (Mode::ReadOnly, Backend::Bwrap { .. }) => (temp::Temp::Fresh, None),
        (Mode::ReadOnly, Backend::Landlock { .. }) => {
            let own = temp::CommandTemp::new().map_err(failed)?;
            (temp::Temp::Granted(own.path().to_path_buf()), Some(Arc::new(own)))
        }
        (_, Backend::Bwrap { .. }) => (temp::Temp::AtTmp(server.dir().map_err(failed)?), None),
        (_, Backend::Landlock { .. }) => (temp::Temp::Granted(server.dir().map_err(failed)?), None),
    })
}

/// `NAME=value` entries of `pairs`.
fn variables(pairs: Vec<(String, String)>) -> impl Iterator<Item = CString> {
    pairs
        .into_iter()
        .filter_map(|(name, value)| CString::new(format!("{name}={value}")).ok())
}

/// `TMPDIR=<dir>`.
fn tmpdir_variable(dir: &Path) -> CString {
    let mut bytes = b"TMPDIR=".to_vec();
    bytes.extend_from_slice(dir.as_os_str().as_encoded_bytes());
    CString::new(bytes).unwrap_or_else(|_| c"TMPDIR=/tmp".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandboxs_variables_replace_entries_of_the_same_name_only() {
        let c = |s: &str| CString::new(s).unwrap();
        let envp = [c("A=1"), c("TMPDIR=/tmp"), c("TMP=/x"), c("HTTP_PROXY="), c("NOVALUE")];
        let vars = [c("TMPDIR=/t"), c("HTTP_PROXY=http://p"), c("NEW=3"), c("NOVALUE=set")];
        let got: Vec<&str> = with_env(&envp, &vars).map(|e| e.to_str().unwrap()).collect();
        assert_eq!(
            got,
            [
                "A=1",
                "TMP=/x",
                "TMPDIR=/t",
                "HTTP_PROXY=http://p",
                "NEW=3",
                "NOVALUE=set"
            ]
        );
        let nothing_set: Vec<&CStr> = with_env(&envp, &[]).collect();
        assert_eq!(nothing_set, envp.iter().map(CString::as_c_str).collect::<Vec<_>>());
    }
}
