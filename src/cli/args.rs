//! Command-line parsing with `lexopt`: a tiny, dependency-free parser that
//! handles `--flag value`, `--flag=value`, `--` and non-UTF-8 errors
//! correctly. clap would add several crates and noticeable build time for
//! four subcommands and five flags; the help text is written by hand anyway.

use std::ffi::OsString;
use std::path::PathBuf;

use lexopt::prelude::*;

/// What to do.
#[derive(Debug, PartialEq)]
pub enum Command {
    /// Serve MCP over stdio, or over Streamable HTTP with `--http`.
    Serve(Common, Http),
    /// Run one command and print its result.
    Exec {
        common: Common,
        json: bool,
        command: String,
    },
    /// Print the permission pattern of a command.
    Pattern(String),
    /// Print the advisory class of a command.
    Classify(String),
    /// Connect this terminal to a running session (or list them).
    Attach { session: Option<String>, read_only: bool },
    /// Print the help text.
    Help,
    /// Print the version.
    Version,
    /// No subcommand and stdin is a terminal: print help, exit 2.
    Interactive,
}

/// Options shared by `serve` and `exec`.
#[derive(Debug, Default, PartialEq)]
pub struct Common {
    pub config: Option<PathBuf>,
    pub working_dir: Option<PathBuf>,
    pub timeout: Option<f64>,
    pub log_level: Option<String>,
    /// `--no-sandbox`: commands run unsandboxed, whatever the file says.
    pub no_sandbox: bool,
    /// `--quiet`: no start-up line naming the sandbox.
    pub quiet: bool,
    /// `--network-ask ask|refuse`: `network_ask.mode`, over the file's.
    pub network_ask: Option<String>,
}

/// The options of `serve --http`; `listen: None` serves stdio.
#[derive(Debug, Default, PartialEq)]
pub struct Http {
    /// The address to listen on (`--http ADDR`).
    pub listen: Option<String>,
    /// A file holding the bearer token every request must carry.
    pub auth_token_file: Option<PathBuf>,
    /// Origins a browser may call from, beside the loopback ones.
    pub allowed_origins: Vec<String>,
    /// OAuth: this server's URL as clients reach it (the tokens' audience).
    pub oauth_resource: Option<String>,
    /// OAuth: the authorization server (the tokens' issuer).
    pub oauth_issuer: Option<String>,
    /// OAuth: the issuer's public keys (a JWKS file).
    pub oauth_jwks_file: Option<PathBuf>,
    /// OAuth: the scope every token must carry.
    pub oauth_scope: Option<String>,
    /// Seconds a session may idle before it is released.
    pub session_idle: Option<f64>,
}

impl Http {
    fn is_set(&self) -> bool {
        *self != Http::default()
    }
}

pub const HELP: &str = "\
bash-mcp — a shell tool for AI models, served over MCP (Model Context Protocol)

USAGE:
    bash-mcp [serve] [OPTIONS]            serve MCP over stdin/stdout (the default
                                          when stdin is not a terminal)
    bash-mcp exec [OPTIONS] [--json] CMD  run one command as the execute tool would,
                                          print its output; exit status mirrors it
    bash-mcp pattern CMD                  print the permission pattern of CMD
    bash-mcp classify CMD                 print the advisory class of CMD
                                          (safe, dangerous or catastrophic)
    bash-mcp attach [SESSION] [--read-only]
                                          watch a running session in this terminal
                                          and type into it (no SESSION: list them,
                                          or attach to the only one); detach with
                                          Ctrl-] then d
    bash-mcp --help | --version

OPTIONS (serve, exec):
    -c, --config FILE        configuration file, JSON or TOML (by extension)
    -C, --working-dir DIR    default working directory (default: current directory)
    -t, --timeout SECONDS    default time limit of a command (default: 120)
        --log-level LEVEL    stderr log level of bash-mcp's own records: off,
                             error, warn (default), info, debug, trace (other
                             libraries stay at warn); or a filter of
                             target=level directives, e.g. info,bash_mcp=trace
        --no-sandbox         run commands unsandboxed (the same as
                             sandbox.mode = \"off\" in the configuration file)
        --network-ask ask|refuse
                             whether a running command's connection to a host its
                             sandbox.network does not allow is put to the person
                             (through the MCP client or a task) while it waits
                             (default ask; network_ask.mode in the configuration)
    -q, --quiet              (serve) no start-up line on stderr naming the sandbox
        --json               (exec) print the raw JSON result document

OPTIONS (serve --http):
        --http ADDR          serve MCP over Streamable HTTP at http://ADDR/mcp
                             instead of stdio (e.g. 127.0.0.1:8080); GET /healthz
                             answers 200 without authentication
        --auth-token-file FILE
                             require `Authorization: Bearer TOKEN` with the token
                             in FILE (required to listen beyond loopback)
        --allow-origin ORIGIN
                             a browser Origin allowed besides the loopback ones
                             (repeatable; e.g. https://app.example.com)
        --oauth-resource URL --oauth-issuer URL --oauth-jwks-file FILE
                             accept OAuth access tokens (JWTs) for this server
                             (URL, as clients reach it) from that issuer, checked
                             against its keys in FILE (read again when it changes)
        --oauth-scope SCOPE  the scope every access token must carry
        --session-idle SECONDS
                             release a session idle this long (default 1800)

MCP CLIENT SETUP:
    Claude Code:     claude mcp add bash -- /path/to/bash-mcp serve
    Claude Desktop / Cursor (mcpServers in their JSON config):
        {\"mcpServers\": {\"bash\": {\"command\": \"/path/to/bash-mcp\", \"args\": [\"serve\"]}}}

CONFIGURATION FILE KEYS:
    timeout_seconds, max_timeout_seconds, shell, output_limit_bytes,
    kill_grace_ms, drain_ms, max_concurrent, non_interactive, env,
    allowed_roots, project_config, audit, sessions, jobs, output_store, sandbox,
    yield_seconds, tools (a list of exposed tools, or {\"status\": true} switches), working_dir,
    permissions {allow, ask, deny}, refuse_catastrophic, sandbox_overrides (rules naming the
    commands whose call may widen the sandbox), escalation_ceiling {network, writable_roots}
    (the most an `escalate` may ask the person for),
    network_ask {mode, wait_seconds, max_waiting} (asking about a running command's
    connection its network policy does not allow),
    tasks {enabled, ttl_seconds, max_ttl_seconds, poll_interval_ms} (MCP tasks)
    Defaults: a 120 s limit (calls may ask for up to 600 s), a call still
    running after 45 s handed back as a background job (yield_seconds), an audit log at
    $XDG_DATA_HOME/bash-mcp/audit.jsonl, project .bash-mcp.toml files honoured,
    catastrophic commands refused, sessions off, and every command sandboxed:
    sandbox.mode = \"workspace-write\" (only the working directory and a temp dir
    writable) with sandbox.network = { allow = [\"@package-registries\"] }.
    When no sandbox backend works here, commands fail and say what to install;
    sandbox.mode = \"off\" (or --no-sandbox) runs them unsandboxed.

Only protocol messages are written to stdout; logs go to stderr. On end of
input, SIGTERM, SIGINT or SIGHUP, every running command and background job is
killed (its whole process group) and every session is closed.
";

/// Parses the arguments (without the program name). `stdin_is_tty` decides
/// what no arguments mean.
pub fn parse(args: impl IntoIterator<Item = OsString>, stdin_is_tty: bool) -> Result<Command, String> {
    let mut parser = lexopt::Parser::from_args(args);
    let mut subcommand: Option<String> = None;
    let mut common = Common::default();
    let mut json = false;
    let mut read_only = false;
    let mut positional: Vec<String> = Vec::new();
    let mut http = Http::default();
    let err = |e: lexopt::Error| e.to_string();
    while let Some(arg) = parser.next().map_err(err)? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help),
            Short('V') | Long("version") => return Ok(Command::Version),
            Short('c') | Long("config") => common.config = Some(parser.value().map_err(err)?.into()),
            Short('C') | Long("working-dir") => common.working_dir = Some(parser.value().map_err(err)?.into()),
            Short('t') | Long("timeout") => {
                let value: String = parser.value().map_err(err)?.string().map_err(err)?;
                let secs = value
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
                    .ok_or_else(|| {
                        format!("--timeout needs a number of seconds above 0 and at most 86400, got {value:?}")
                    })?;
                common.timeout = Some(secs);
            }
            Long("log-level") => {
                let level: String = parser.value().map_err(err)?.string().map_err(err)?;
                super::log_filter(&level)?;
                common.log_level = Some(level);
            }
            Long("no-sandbox") => common.no_sandbox = true,
            Long("network-ask") => {
                let mode: String = parser.value().map_err(err)?.string().map_err(err)?;
                if mode != "ask" && mode != "refuse" {
                    return Err(format!("--network-ask takes `ask` or `refuse`, got {mode:?}"));
                }
                common.network_ask = Some(mode);
            }
            Short('q') | Long("quiet") => common.quiet = true,
            Long("json") => json = true,
            Long("http") => http.listen = Some(parser.value().map_err(err)?.string().map_err(err)?),
            Long("auth-token-file") => http.auth_token_file = Some(parser.value().map_err(err)?.into()),
            Long("oauth-resource") => http.oauth_resource = Some(parser.value().map_err(err)?.string().map_err(err)?),
            Long("oauth-issuer") => http.oauth_issuer = Some(parser.value().map_err(err)?.string().map_err(err)?),
            Long("oauth-jwks-file") => http.oauth_jwks_file = Some(parser.value().map_err(err)?.into()),
            Long("oauth-scope") => http.oauth_scope = Some(parser.value().map_err(err)?.string().map_err(err)?),
            Long("session-idle") => {
                let value: String = parser.value().map_err(err)?.string().map_err(err)?;
                let secs = value
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s >= 1.0 && *s <= 604_800.0)
                    .ok_or_else(|| format!("--session-idle needs seconds from 1 to 604800, got {value:?}"))?;
                http.session_idle = Some(secs);
            }
            Long("allow-origin") => http
                .allowed_origins
                .push(parser.value().map_err(err)?.string().map_err(err)?),
            Long("read-only") => read_only = true,
            Value(value) => {
                let value = value
                    .into_string()
                    .map_err(|v| format!("argument {v:?} is not valid UTF-8"))?;
                if subcommand.is_none() && positional.is_empty() {
                    subcommand = Some(value);
                } else {
                    positional.push(value);
                }
            }
            _ => {
                let unexpected = arg.unexpected().to_string();
                return Err(match subcommand.as_deref() {
                    // `bash-mcp exec ls -la`: the command's own options reached us.
                    Some(name @ ("exec" | "pattern" | "classify")) => format!(
                        "{unexpected}: `{name}` takes the whole command as one argument; quote it, \
                         e.g. bash-mcp {name} 'ls -la'"
                    ),
                    _ => unexpected,
                });
            }
        }
    }
    let one_command = |name: &str, positional: Vec<String>| -> Result<String, String> {
        match <[String; 1]>::try_from(positional) {
            Ok([command]) => Ok(command),
            Err(v) if v.is_empty() => Err(format!("`{name}` needs a command, e.g. bash-mcp {name} 'ls -l'")),
            Err(_) => Err(format!(
                "`{name}` takes the command as one argument; quote it, e.g. bash-mcp {name} 'git status && ls'"
            )),
        }
    };
    let no_extra = |name: &str, positional: &[String]| match positional.first() {
        Some(extra) => Err(format!("unexpected argument {extra:?} after `{name}`")),
        None => Ok(()),
    };
    if json && subcommand.as_deref() != Some("exec") {
        return Err("--json applies to `exec` only".into());
    }
    if read_only && subcommand.as_deref() != Some("attach") {
        return Err("--read-only applies to `attach` only".into());
    }
    let serves = matches!(subcommand.as_deref(), None | Some("serve"));
    if http.is_set() && !serves {
        return Err(
            "--http, --auth-token-file, --allow-origin, --session-idle and --oauth-* apply to `serve` only".into(),
        );
    }
    if http.is_set() && http.listen.is_none() {
        return Err(
            "--auth-token-file, --allow-origin, --session-idle and --oauth-* apply to `serve --http ADDR` only".into(),
        );
    }
    let uses_common = common != Common::default();
    let command = match subcommand.as_deref() {
        None if stdin_is_tty && !http.is_set() => Command::Interactive,
        None | Some("serve") => {
            no_extra("serve", &positional)?;
            Command::Serve(common, http)
        }
        Some("exec") => {
            let command = one_command("exec", positional)?;
            Command::Exec { common, json, command }
        }
        Some(name @ ("pattern" | "classify")) => {
            if uses_common {
                return Err(format!("`{name}` takes no options"));
            }
            let command = one_command(name, positional)?;
            if name == "pattern" {
                Command::Pattern(command)
            } else {
                Command::Classify(command)
            }
        }
        Some("attach") => {
            if uses_common {
                return Err("`attach` takes no options but --read-only".into());
            }
            let mut positional = positional.into_iter();
            let session = positional.next();
            if let Some(extra) = positional.next() {
                return Err(format!(
                    "unexpected argument {extra:?}: `attach` takes one session name or id"
                ));
            }
            Command::Attach { session, read_only }
        }
        Some("help") => Command::Help,
        Some(other) => {
            return Err(format!(
                "unknown subcommand {other:?}; expected serve, exec, attach, pattern or classify (see --help)"
            ));
        }
    };
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Command, String> {
        parse(args.iter().map(OsString::from), false)
    }

    #[test]
    fn no_sandbox_and_quiet() {
        let Ok(Command::Serve(common, _)) = p(&["serve", "--no-sandbox", "-q"]) else {
            panic!()
        };
        assert!(common.no_sandbox && common.quiet);
        let Ok(Command::Exec { common, .. }) = p(&["exec", "--quiet", "true"]) else {
            panic!()
        };
        assert!(common.quiet && !common.no_sandbox);
        let Ok(Command::Serve(common, _)) = p(&["serve", "--network-ask", "refuse"]) else {
            panic!()
        };
        assert_eq!(common.network_ask.as_deref(), Some("refuse"));
        let e = p(&["serve", "--network-ask", "maybe"]).unwrap_err();
        assert!(e.contains("--network-ask takes `ask` or `refuse`"), "{e}");
    }

    #[test]
    fn defaults_to_serve_unless_a_terminal() {
        assert_eq!(p(&[]), Ok(Command::Serve(Common::default(), Http::default())));
        assert_eq!(parse(Vec::<OsString>::new(), true), Ok(Command::Interactive));
        assert_eq!(
            parse([OsString::from("serve")], true),
            Ok(Command::Serve(Common::default(), Http::default()))
        );
    }

    #[test]
    fn parses_options() {
        let Ok(Command::Serve(common, _)) = p(&["serve", "--timeout=5", "-C", "/tmp", "--log-level", "debug"]) else {
            panic!()
        };
        assert_eq!(common.timeout, Some(5.0));
        assert_eq!(common.working_dir, Some(PathBuf::from("/tmp")));
        assert_eq!(common.log_level.as_deref(), Some("debug"));
        assert_eq!(
            p(&["exec", "--json", "echo hi"]),
            Ok(Command::Exec {
                common: Common::default(),
                json: true,
                command: "echo hi".into()
            })
        );
        assert_eq!(
            p(&["exec", "--", "-x"]).unwrap(),
            Command::Exec {
                common: Common::default(),
                json: false,
                command: "-x".into()
            }
        );
        assert_eq!(p(&["classify", "rm -rf /"]), Ok(Command::Classify("rm -rf /".into())));
        assert_eq!(p(&["--version"]), Ok(Command::Version));
        assert_eq!(p(&["serve", "--help"]), Ok(Command::Help));
    }

    #[test]
    fn rejects_nonsense() {
        assert!(p(&["--timeout", "0"]).unwrap_err().contains("--timeout"));
        assert!(p(&["--timeout", "abc"]).is_err());
        assert!(p(&["--log-level", "loud"]).is_err());
        assert!(p(&["--log-level", "bash_mcp=debug,degub"]).is_err());
        assert!(p(&["--log-level", "bash_mcp=loud"]).is_err());
        let Ok(Command::Serve(common, _)) = p(&["serve", "--log-level", "bash_mcp=debug,brush_parser=info"]) else {
            panic!("a full filter is accepted");
        };
        assert_eq!(common.log_level.as_deref(), Some("bash_mcp=debug,brush_parser=info"));
        assert!(p(&["exec"]).unwrap_err().contains("needs a command"));
        assert!(p(&["exec", "ls", "-l"]).is_err());
        assert!(p(&["frobnicate"]).unwrap_err().contains("unknown subcommand"));
        assert!(p(&["--bogus"]).is_err());
        assert!(p(&["serve", "extra"]).is_err());
        assert!(p(&["serve", "--json"]).is_err());
        assert!(p(&["serve", "--read-only"]).is_err());
        assert!(p(&["attach", "a", "b"]).is_err());
        assert_eq!(
            p(&["attach", "--read-only", "falcon"]),
            Ok(Command::Attach {
                session: Some("falcon".into()),
                read_only: true
            })
        );
        assert_eq!(
            p(&["attach"]),
            Ok(Command::Attach {
                session: None,
                read_only: false
            })
        );
    }

    #[test]
    fn parses_http_options() {
        let Ok(Command::Serve(_, http)) = p(&[
            "serve",
            "--http",
            "127.0.0.1:8080",
            "--auth-token-file",
            "token",
            "--allow-origin",
            "https://a.example",
        ]) else {
            panic!("serve --http parses")
        };
        assert_eq!(http.listen.as_deref(), Some("127.0.0.1:8080"));
        assert_eq!(http.auth_token_file, Some(PathBuf::from("token")));
        assert_eq!(http.allowed_origins, ["https://a.example"]);
        assert!(
            p(&["serve", "--auth-token-file", "t"])
                .unwrap_err()
                .contains("--http ADDR")
        );
        assert!(
            p(&["exec", "--http", "127.0.0.1:1", "ls"])
                .unwrap_err()
                .contains("`serve` only")
        );
    }

    #[test]
    fn help_names_every_configuration_key() {
        let keys = bash_mcp::config::CONFIG_KEYS
            .iter()
            .chain(crate::cli::settings::BINARY_KEYS);
        for key in keys {
            assert!(HELP.contains(key), "--help does not mention `{key}`");
        }
    }
}
