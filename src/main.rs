//! `bash-mcp`: the shell tool served over MCP on stdio. See `bash-mcp --help`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
