//! The `bash-mcp` command line: argument parsing, configuration, and the
//! `serve`, `exec`, `pattern` and `classify` subcommands.

pub mod args;
mod exec;
mod gate;
mod serve;
pub mod settings;

use std::io::IsTerminal;
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
            eprintln!("bash-mcp: {message}\nRun `bash-mcp --help` for usage.");
            return ExitCode::from(2);
        }
    };
    match command {
        Command::Help => {
            print!("{}", args::HELP);
            ExitCode::SUCCESS
        }
        Command::Version => {
            println!(
                "bash-mcp {} (MCP revisions {})",
                bash_mcp::VERSION,
                bash_mcp::mcp::SUPPORTED_VERSIONS.join(", ")
            );
            ExitCode::SUCCESS
        }
        Command::Interactive => {
            eprint!("{}", args::HELP);
            eprintln!(
                "\nbash-mcp: stdin is a terminal; run `bash-mcp serve` to serve MCP here anyway, or configure an MCP client to start it."
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
            eprintln!("bash-mcp: {message}");
            return ExitCode::from(2);
        }
    };
    init_logging(&settings.log_level);
    match run(&settings) {
        Ok(status) => ExitCode::from(status),
        Err(message) => {
            eprintln!("bash-mcp: {message}");
            ExitCode::from(1)
        }
    }
}

fn report(result: Result<String, String>) -> ExitCode {
    match result {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("bash-mcp: {message}");
            ExitCode::from(1)
        }
    }
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
