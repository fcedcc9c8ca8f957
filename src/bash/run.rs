//! Running one request: its directory, its sandbox, the spawn and its errors, and the outcome built from what ran.

use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;
use std::time::{Duration, Instant};

use super::{ExecOutcome, ExecRequest, Output, SandboxCall, SandboxReport, Shared, Status};
use crate::command::lifetime::{self, Ending, Finish, RawOutcome, RunLimits};
use crate::command::request::validate_command;
use crate::command::yielding::Ran;
use crate::config::Config;
use crate::error::{ErrorCode, ToolError};
use crate::process::spawn::{SpawnSpec, Streams};
use crate::roots;
use crate::sandbox::{SandboxConfig, Wrapped};
use crate::tool::CallOptions;

impl Shared {
    /// Runs `request` and waits for it: the steps behind `BashServer::run_with`.
    pub(super) fn run(&self, request: &ExecRequest, options: CallOptions<'_>) -> Result<ExecOutcome, ToolError> {
        match self.run_within(request, options, None)? {
            Ran::Ended(outcome) => Ok(outcome),
            Ran::Running(_) => unreachable!("a run without a window runs to its end"),
        }
    }

    /// Runs `request` on this thread until it ends or `window` passes; a
    /// command still running then comes back as the rest of its run, which
    /// holds its concurrency slot and its sandbox until it ends.
    pub(super) fn run_within(
        &self,
        request: &ExecRequest,
        options: CallOptions<'_>,
        window: Option<Instant>,
    ) -> Result<Ran, ToolError> {
        let config = self.config.read().unwrap_or_else(PoisonError::into_inner).clone();
        let base = self.working_dir.read().unwrap_or_else(PoisonError::into_inner).clone();
        validate_command(&request.command)?;
        let dir = request.working_dir.as_deref().unwrap_or(&base);
        // Outside a sandbox the spawn itself finds a directory it cannot
        // start in, and only then is it checked for the error to give.
        let (cwd, checked) = if request.sandbox.is_none() && !config.sandbox.is_on() {
            roots::start_dir(
                dir,
                Some(&base),
                config.allowed_roots.as_deref(),
                config.project_trust(),
            )?
        } else {
            (self.confined_dir(dir, Some(&base), &config)?, true)
        };
        let dir_error = || {
            (!checked)
                .then(|| self.confined_dir(dir, Some(&base), &config).err())
                .flatten()
        };
        let timeout = config.effective_timeout(request.timeout);

        let (program, argv, sandbox) = self.command_line(request, &config, &cwd, &base)?;
        let env = self.env_cache.env(&config, &request.env);
        let run_marker = crate::process::ids::next_run_marker();
        let marker_c = CString::new(run_marker.clone()).expect("marker has no NUL");
        let mut envp: Vec<&CStr> = Vec::with_capacity(env.len() + 1);
        envp.push(&marker_c);
        // The sandbox's variables (its TMPDIR, its proxy) replace any of the same name.
        let sandbox_env = sandbox.as_ref().map_or(&[][..], |wrapped| &wrapped.env);
        envp.extend(crate::sandbox::with_env(&env, sandbox_env));
        let cwd_c = c_path(&cwd)?;
        let spec = SpawnSpec {
            program: &program,
            argv: &argv,
            envp: &envp,
            cwd: &cwd_c,
            stdin_pipe: request.stdin.is_some(),
            streams: request.streams,
            via: sandbox.as_ref().and_then(Wrapped::launcher),
            pass_fds: sandbox.as_ref().map_or(&[], |w| &w.pass_fds),
            new_session: sandbox.is_some(),
        };
        let limits = self.limits(&config, timeout, run_marker);

        // The limiter checks the token before it grants a slot: a call
        // cancelled before its turn never starts its command.
        let Some(permit) = self.limiter.acquire(options.cancel) else {
            if let Some(error) = dir_error() {
                return Err(error);
            }
            return Ok(Ran::Ended(cancelled_before_start(request.streams, cwd, timeout)));
        };
        tracing::debug!(command = %request.command, cwd = %cwd.display(), ?timeout, "execute");
        let finish = lifetime::run_within(
            &spec,
            request.stdin.as_deref(),
            &limits,
            options.cancel,
            options.on_output,
            window,
        )
        .map_err(|e| dir_error().unwrap_or_else(|| spawn_error(&e, &config.shell, &cwd)))?;
        match finish {
            Finish::Ended(raw) => Ok(Ran::Ended(outcome_of(raw, sandbox, cwd, timeout))),
            Finish::Running(detached) => {
                let permit = permit.keep(&self.limiter);
                Ok(Ran::Running(Box::new(move |options: CallOptions<'_>| {
                    let raw = detached.resume(options.cancel, options.on_output);
                    drop(permit);
                    Ok(outcome_of(raw, sandbox, cwd, timeout))
                })))
            }
        }
    }

    /// The program and arguments that run `request` in `cwd` for a server
    /// in `working_dir`: the shell with `-c` and the command, wrapped in the
    /// call's sandbox when one is on.
    fn command_line(
        &self,
        request: &ExecRequest,
        config: &Config,
        cwd: &Path,
        working_dir: &Path,
    ) -> Result<(CString, Vec<CString>, Option<Wrapped>), ToolError> {
        let shell = c_path(&config.shell)?;
        let command = [
            shell.clone(),
            c"-c".to_owned(),
            CString::new(request.command.as_str()).expect("checked for NUL above"),
        ];
        let sandbox_config = sandbox_config(request, config, (cwd, working_dir), &self.sandbox_overrides())?;
        let sandbox = crate::sandbox::wrap_in(
            &sandbox_config,
            &crate::sandbox::Request {
                cwd,
                working_dir,
                extra_writable: &[],
                temp: &self.sandbox_temp,
                command: &command,
                die_with_parent: true,
                network_ask: self.network_asking(request, config, cwd),
            },
            Some(&self.supervisors),
        )?;
        let (program, argv) = match &sandbox {
            Some(wrapped) => (wrapped.program.clone(), wrapped.argv.clone()),
            None => (shell, command.to_vec()),
        };
        Ok((program, argv, sandbox))
    }

    /// The limits of one run under `config`: its time limit, its output
    /// budget, and where a whole output too long to return is kept.
    fn limits(&self, config: &Config, timeout: Duration, run_marker: Vec<u8>) -> RunLimits {
        RunLimits {
            timeout,
            kill_grace: config.kill_grace,
            drain: config.drain,
            output_limit: config.output_limit_bytes,
            run_marker: Some(run_marker),
            keep: config.output_store.enabled.then(|| self.outputs.clone()),
        }
    }
}

/// The sandbox configuration of one call: the configured one, tightened by
/// the call's `sandbox` argument, or the one its host set.
fn sandbox_config<'a>(
    request: &'a ExecRequest,
    config: &'a Config,
    (cwd, working_dir): (&Path, &Path),
    overrides: &[String],
) -> Result<Cow<'a, SandboxConfig>, ToolError> {
    Ok(match &request.sandbox {
        Some(SandboxCall::Tighten(call)) => Cow::Owned(
            config
                .sandbox
                .tighten(call, cwd, working_dir)
                .map_err(|p| super::sandbox_argument::refusal(&config.sandbox, call, cwd, p, overrides))?,
        ),
        Some(SandboxCall::HostOverride(sandbox)) => {
            tracing::info!(sandbox = %sandbox.to_value(), "the host set this call's sandbox");
            Cow::Borrowed(sandbox)
        }
        None => Cow::Borrowed(&config.sandbox),
    })
}

/// The outcome of a call cancelled before its command started.
fn cancelled_before_start(streams: Streams, cwd: PathBuf, timeout: Duration) -> ExecOutcome {
    ExecOutcome {
        status: Status::Cancelled,
        output: empty_output(streams),
        duration: Duration::ZERO,
        truncated: false,
        output_bytes: 0,
        working_dir: cwd,
        timeout,
        sandbox: None,
        output_id: None,
        stderr_output_id: None,
    }
}

/// The outcome of a command that ran: its status, its output rendered (the
/// ids of whole outputs kept), and what the sandbox refused, if it ran in one.
fn outcome_of(mut raw: RawOutcome, sandbox: Option<Wrapped>, cwd: PathBuf, timeout: Duration) -> ExecOutcome {
    let status = match raw.ending {
        Ending::Exited => Status::Exited(raw.status),
        Ending::StatusLost => Status::ExitStatusLost,
        Ending::TimedOut => Status::TimedOut,
        Ending::Cancelled => Status::Cancelled,
    };
    let truncated = raw.stdout.is_truncated() || raw.stderr.as_ref().is_some_and(|e| e.is_truncated());
    // Before rendering: the marker line names where the whole output is kept.
    let output_id = raw.stdout.finish_keeping().and_then(|k| k.output_id);
    let stderr_output_id = raw
        .stderr
        .as_mut()
        .and_then(|e| e.finish_keeping())
        .and_then(|k| k.output_id);
    let output_bytes = raw.stdout.total() + raw.stderr.as_ref().map_or(0, |e| e.total());
    let output = match &raw.stderr {
        Some(err) => Output::Separate {
            stdout: raw.stdout.render(),
            stderr: err.render(),
        },
        None => Output::Merged(raw.stdout.render()),
    };
    let sandbox = sandbox.map(|wrapped| {
        let text = output.text();
        let (denied, denials_from) = wrapped.denials(&text);
        SandboxReport {
            backend: wrapped.backend,
            denied,
            denials_from,
            notes: wrapped.notes(&text),
        }
    });
    tracing::debug!(?status, elapsed = ?raw.elapsed, output_bytes, "execute finished");
    ExecOutcome {
        status,
        output,
        duration: raw.elapsed,
        truncated,
        output_bytes,
        working_dir: cwd,
        timeout,
        sandbox,
        output_id,
        stderr_output_id,
    }
}

fn empty_output(streams: Streams) -> Output {
    match streams {
        Streams::Merged => Output::Merged(String::new()),
        Streams::Separate => Output::Separate {
            stdout: String::new(),
            stderr: String::new(),
        },
    }
}

fn c_path(path: &Path) -> Result<CString, ToolError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        ToolError::new(
            ErrorCode::InvalidArguments,
            format!("path {} contains a NUL byte", path.display()),
            "use a path without NUL bytes",
        )
    })
}

fn spawn_error(error: &std::io::Error, shell: &Path, cwd: &Path) -> ToolError {
    let (message, hint) = match error.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE) => (
            format!("could not start {}: out of file descriptors ({error})", shell.display()),
            "the host has too many open files; close some or raise its fd limit (ulimit -n), then retry",
        ),
        Some(libc::E2BIG) => (
            format!(
                "could not start {}: the command and environment exceed the system's argument limit ({error})",
                shell.display()
            ),
            "shorten the command or the environment; put long scripts in a file",
        ),
        Some(libc::ENOENT) | Some(libc::EACCES) | Some(libc::ENOTDIR) => (
            format!("could not start {} in {}: {error}", shell.display(), cwd.display()),
            "check that the shell exists and is executable and that the working directory is accessible",
        ),
        _ => (
            format!("could not start {}: {error}", shell.display()),
            "retry; if it persists, check the host's process and memory limits",
        ),
    };
    ToolError::new(ErrorCode::SpawnFailed, message, hint)
}
