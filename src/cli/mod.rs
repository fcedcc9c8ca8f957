//! The `bash-mcp` command line: argument parsing, configuration, and the
//! `serve`, `exec`, `pattern` and `classify` subcommands.

pub mod args;
mod exec;
mod gate;
mod serve;
pub mod settings;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use bash_mcp::{BashServer, DEFAULT_SERVER_NAME};

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
        Command::Serve(common) => with_settings(&common, |settings| serve::run(settings).map(|()| 0)),
        Command::Exec { common, json, command } => {
            with_settings(&common, |settings| exec::run(settings, &command, json))
        }
        Command::Pattern(command) => report(gate::pattern(&command)),
        Command::Classify(command) => report(gate::classify(&command)),
    }
}

fn with_settings(common: &args::Common, run: impl FnOnce(&Settings) -> Result<u8, String>) -> ExitCode {
    let settings = match settings::load(common) {
        Ok(settings) => settings,
        Err(message) => {
            note(&message);
            return ExitCode::from(2);
        }
    };
    init_logging(&settings.log_level);
    match run(&settings) {
        Ok(status) => ExitCode::from(status),
        Err(message) => {
            note(&message);
            ExitCode::from(1)
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

/// `bash-mcp: message` on stderr; never panics (stderr may be closed too).
pub(crate) fn note(message: &str) {
    let _ = writeln!(std::io::stderr(), "bash-mcp: {message}");
}

fn init_logging(level: &str) {
    let filter = match level {
        "off" => tracing::level_filters::LevelFilter::OFF,
        "error" => tracing::level_filters::LevelFilter::ERROR,
        "info" => tracing::level_filters::LevelFilter::INFO,
        "debug" => tracing::level_filters::LevelFilter::DEBUG,
        "trace" => tracing::level_filters::LevelFilter::TRACE,
        _ => tracing::level_filters::LevelFilter::WARN,
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(filter)
        .with_target(false)
        .init();
}

/// The server the settings describe. A default audit location that cannot
/// be written is a warning (the server runs without an audit log); an
/// explicitly configured one that cannot be written is an error.
pub fn build_server(settings: &Settings) -> Result<Arc<BashServer>, String> {
    let build = |config: bash_mcp::Config| {
        BashServer::with_config(DEFAULT_SERVER_NAME, &settings.working_dir, None, config)
            .map_err(|e| format!("{} ({})", e.message, e.hint))
    };
    match build(settings.config.clone()) {
        Err(e) if settings.audit_is_default && settings.config.audit.is_some() && e.contains("audit.path") => {
            tracing::warn!("audit log off: {e}");
            let mut config = settings.config.clone();
            config.audit = None;
            build(config).map(Arc::new)
        }
        other => other.map(Arc::new),
    }
}
