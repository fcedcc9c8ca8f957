//! `bash-mcp`: the shell tool served over MCP on stdio. See `bash-mcp --help`.

mod cli;

fn main() -> std::process::ExitCode {
    // The binary doubles as the sandbox helper: restrict, then exec.
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args
        .first()
        .is_some_and(|a| a == bash_mcp::sandbox::exec_helper::HELPER_ARG)
    {
        let message = bash_mcp::sandbox::exec_helper::helper_main(&args[1..]);
        eprintln!("{message}");
        return std::process::ExitCode::from(bash_mcp::sandbox::landlock::HELPER_FAILED as u8);
    }
    if args
        .first()
        .is_some_and(|a| a == bash_mcp::sandbox::supervisor::inside::SUPERVISE_ARG)
    {
        let message = bash_mcp::sandbox::supervisor::inside::supervise_main(&args[1..]);
        eprintln!("{message}");
        return std::process::ExitCode::from(bash_mcp::sandbox::landlock::HELPER_FAILED as u8);
    }
    if args
        .first()
        .is_some_and(|a| a == bash_mcp::sandbox::network::inside::LISTEN_ARG)
    {
        let message = bash_mcp::sandbox::network::inside::listen_main(&args[1..]);
        eprintln!("{message}");
        return std::process::ExitCode::from(bash_mcp::sandbox::landlock::HELPER_FAILED as u8);
    }
    cli::main()
}
