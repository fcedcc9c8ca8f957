//! The `bash-mcp` command line: argument parsing, configuration, and the
//! `serve`, `exec`, `attach`, `pattern` and `classify` subcommands.

pub mod args;
mod attach;
mod exec;
mod gate;
mod http;
mod serve;
pub mod settings;
mod startup;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use bash_mcp::{BashServer, DEFAULT_SERVER_NAME};
use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;

use args::Command;
use settings::Settings;

/// Runs the command line and returns the process exit status.
pub fn main() -> ExitCode {
    let stdin_is_tty = std::io::stdin().is_terminal();
    let command = match args::parse(std::env::args_os().skip(1), stdin_is_tty) {
        Ok(command) => command,
        Err(message) => {
            note(&format!("{message}\nRun `bash-mcp --help` for usage."));
            return ExitCode::from(2);
        }
    };
    match command {
        Command::Help => print_out(args::HELP),
        Command::Version => print_out(&format!(
            "bash-mcp {} (MCP revisions {})\n",
            bash_mcp::VERSION,
            bash_mcp::mcp::SUPPORTED_VERSIONS.join(", ")
        )),
        Command::Interactive => {
            let _ = writeln!(std::io::stderr(), "{}", args::HELP);
            note(
                "stdin is a terminal; run `bash-mcp serve` to serve MCP here anyway, or configure an MCP client to start it.",
            );
            ExitCode::from(2)
        }
        Command::Serve(common, http) => with_settings(&common, (2, 1), |settings| match &http.listen {
            Some(listen) => serve_http(settings, listen, &http).map(|()| 0),
            None => serve::run(settings).map(|()| 0),
        }),
        // Whatever keeps the command from running (a configuration that does
        // not load, a working directory that does not exist) is exec's
        // documented "could not run" status.
        Command::Exec { common, json, command } => {
            let failed = exec::EXIT_FAILED;
            with_settings(&common, (failed, failed), |settings| {
                exec::run(settings, &command, json)
            })
        }
        Command::Pattern(command) => report(gate::pattern(&command)),
        Command::Classify(command) => report(gate::classify(&command)),
        Command::Attach { session, read_only } => match attach::run(session.as_deref(), read_only) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                note(&message);
                ExitCode::from(1)
            }
        },
    }
}

/// Loads the settings and runs `run` with them; `failed` is the exit status
/// when the settings do not load and when `run` fails.
fn with_settings(
    common: &args::Common,
    failed: (u8, u8),
    run: impl FnOnce(&Settings) -> Result<u8, String>,
) -> ExitCode {
    let mut settings = match settings::load(common) {
        Ok(settings) => settings,
        Err(message) => {
            note(&message);
            return ExitCode::from(failed.0);
        }
    };
    init_logging(&settings.log_level);
    settings.sandbox_fitted = startup::fit_default(&mut settings);
    match run(&settings) {
        Ok(status) => ExitCode::from(status),
        Err(message) => {
            note(&message);
            ExitCode::from(failed.1)
        }
    }
}

fn report(result: Result<String, String>) -> ExitCode {
    match result {
        Ok(text) => print_out(&format!("{text}\n")),
        Err(message) => {
            note(&message);
            ExitCode::from(1)
        }
    }
}

/// Writes `text` to stdout. A reader that has gone away (EPIPE, as in
/// `bash-mcp classify CMD | head -1`) is not an error: it wanted no more
/// output, so the status stays success. Any other write error is reported
/// on stderr, status 1.
fn print_out(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            note(&format!("cannot write to stdout: {e}"));
            ExitCode::from(1)
        }
    }
}

/// `bash-mcp: message` on stderr in one write, so that a reader never sees
/// half a line (stderr is unbuffered: `writeln!` would write each piece of
/// the format on its own); never panics (stderr may be closed too).
pub(crate) fn note(message: &str) {
    let line = format!("bash-mcp: {message}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// The named levels of `--log-level`.
pub const LOG_LEVELS: &[&str] = &["off", "error", "warn", "info", "debug", "trace"];

/// The stderr log filter for `--log-level`.
///
/// A named level applies to bash-mcp's own records; everything else (the
/// shell parser logs every token at debug) stays at `warn`, or at the named
/// level when it is quieter. Anything else is a full filter of
/// comma-separated `target=level` directives (a bare level sets the
/// default), e.g. `info,bash_mcp=trace` (bash-mcp at trace, everything
/// else at info).
pub fn log_filter(level: &str) -> Result<Targets, String> {
    if LOG_LEVELS.contains(&level) {
        let own: LevelFilter = level.parse().map_err(|e| format!("{e}"))?;
        let others = own.min(LevelFilter::WARN);
        return Ok(Targets::new()
            .with_default(others)
            .with_target(env!("CARGO_CRATE_NAME"), own));
    }
    let bad = |why: String| {
        format!(
            "--log-level must be one of {} or a filter such as `info,bash_mcp=trace`; got {level:?} ({why})",
            LOG_LEVELS.join(", ")
        )
    };
    // A bare word would parse as a target enabled at every level: a typo
    // such as `degub` must not be taken for one.
    if let Some(part) = level
        .split(',')
        .find(|part| !part.contains('=') && !LOG_LEVELS.contains(part))
    {
        return Err(bad(format!("{part:?} is neither a level nor `target=level`")));
    }
    level.parse::<Targets>().map_err(|e| bad(e.to_string()))
}

fn init_logging(level: &str) {
    let full_filter = !LOG_LEVELS.contains(&level);
    let filter = log_filter(level).unwrap_or_else(|_| Targets::new().with_default(LevelFilter::WARN));
    let subscriber = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(LevelFilter::TRACE)
        .with_target(full_filter)
        .finish()
        .with(filter);
    let _ = tracing::subscriber::set_global_default(subscriber);
}

/// The server the settings describe. A default audit location that cannot
/// be written is a warning (the server runs without an audit log); an
/// explicitly configured one that cannot be written is an error.
pub fn build_server(settings: &Settings) -> Result<Arc<BashServer>, String> {
    let build = |config: bash_mcp::Config| {
        BashServer::with_config(DEFAULT_SERVER_NAME, &settings.working_dir, None, config)
            .map_err(|e| format!("{} ({})", e.message, e.hint))
    };
    let server = match build(settings.config.clone()) {
        Err(e) if settings.audit_is_default && settings.config.audit.is_some() && e.contains("audit.path") => {
            tracing::warn!("audit log off: {e}");
            let mut config = settings.config.clone();
            config.audit = None;
            build(config)
        }
        other => other,
    }?;
    // The gate enforces these; the model learns of them from execute's definition.
    server.announce_sandbox_overrides(&settings.sandbox_overrides);
    Ok(Arc::new(server))
}

/// `serve --http`: the configured server behind the HTTP front end.
fn serve_http(settings: &settings::Settings, listen: &str, http: &args::Http) -> Result<(), String> {
    let access = http::AccessSettings {
        auth_token_file: http.auth_token_file.as_deref(),
        allowed_origins: &http.allowed_origins,
        oauth_resource: http.oauth_resource.as_deref(),
        oauth_issuer: http.oauth_issuer.as_deref(),
        oauth_jwks_file: http.oauth_jwks_file.as_deref(),
        oauth_scope: http.oauth_scope.as_deref(),
    };
    let idle = http
        .session_idle
        .map_or(http::SESSION_IDLE, std::time::Duration::from_secs_f64);
    http::run(listen, &access, idle, || {
        let server = build_server(settings)?;
        let options = serve::handler_options(settings, &server)?;
        let working_dir = server.working_dir();
        Ok(http::Served {
            server: server.clone(),
            options,
            end_work: Box::new(move |limit| server.shutdown_within(limit)),
            announce: Box::new(move || {
                startup::announce(settings, &working_dir);
                tracing::info!(working_dir = %settings.working_dir.display(), "the server's working directory");
            }),
        })
    })
}
