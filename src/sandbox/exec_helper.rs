//! The helper's command line and its entry point: the server runs the
//! `bash-mcp` binary as `bash-mcp __sandbox-exec <spec> [--env NAME=VALUE]...
//! -- <command...>` (see [`argv`]); the helper reads it back ([`helper_main`])
//! and either keeps the command as its parent ([`reaper`](super::reaper)) or
//! bounds its processes, restricts itself ([`landlock`])
//! and execs the command, which inherits every restriction.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStringExt;

use super::landlock::{self, HelperSpec};

/// The first argument that makes the binary act as the helper.
pub const HELPER_ARG: &str = "__sandbox-exec";

/// The argument before each `NAME=VALUE` the helper adds to the command's
/// environment (and keeps out of its own: see [`env_arg`]).
pub const ENV_ARG: &str = "--env";

/// The helper's argv: `<helper> __sandbox-exec <spec> -- <command...>`.
pub fn argv(helper: &std::path::Path, spec: &HelperSpec, command: &[CString]) -> Vec<CString> {
    let json = serde_json::to_string(spec).expect("spec serializes");
    let mut argv = vec![
        CString::new(helper.as_os_str().as_encoded_bytes()).unwrap_or_default(),
        CString::new(HELPER_ARG).expect("no NUL"),
        CString::new(json).unwrap_or_default(),
        CString::new("--").expect("no NUL"),
    ];
    argv.extend(command.iter().cloned());
    argv
}

/// `argv` (from [`argv`]) with `entry` added to the command's environment
/// by the helper: `--env <entry>` before the `--`. The run marker goes this
/// way, so that the guard, which kills what carries it when the host dies,
/// leaves the helper to kill everything it keeps.
pub fn env_arg(argv: &[CString], entry: &std::ffi::CStr) -> Vec<CString> {
    let mut out = argv[..3].to_vec();
    out.push(CString::new(ENV_ARG).expect("no NUL"));
    out.push(entry.to_owned());
    out.extend_from_slice(&argv[3..]);
    out
}

/// Runs the helper: `args` are the arguments after `__sandbox-exec`.
/// Returns only on failure, with a message for stderr.
pub fn helper_main(args: &[OsString]) -> String {
    let Parsed { spec, env, command } = match parse_args(args) {
        Ok(parsed) => parsed,
        Err(e) => return e,
    };
    if spec.subreaper {
        return super::reaper::run_as_keeper(&spec, &env, &command);
    }
    // A session shell has no keeper to remove a cgroup after it: the
    // server's cgroup, else the user's process limit, bounds it.
    if let Some(bound) = &spec.bound {
        if let Err(e) = super::own_bound::apply(bound) {
            return format!("bash-mcp sandbox: could not bound the command's processes, so it did not run: {e}");
        }
    } else if let Some(max) = spec.max_processes
        && !super::limits::is_root()
    {
        super::limits::limit_user_processes(max);
    }
    if let Err(e) = landlock::restrict(&spec, None) {
        return format!("bash-mcp sandbox: could not restrict the command: {e}");
    }
    let err = super::process_calls::exec(&command, &env);
    format!(
        "bash-mcp sandbox: could not start {}: {err}",
        command[0].to_string_lossy()
    )
}

/// The helper's arguments, parsed.
#[derive(Debug)]
struct Parsed {
    spec: HelperSpec,
    /// `NAME=VALUE` entries for the command's environment.
    env: Vec<CString>,
    command: Vec<CString>,
}

fn parse_args(args: &[OsString]) -> Result<Parsed, String> {
    let usage =
        "bash-mcp sandbox: usage: bash-mcp __sandbox-exec <spec-json> [--env NAME=VALUE]... -- <command...> (internal)";
    let c_string =
        |a: &OsString| CString::new(a.clone().into_vec()).map_err(|_| "bash-mcp sandbox: NUL in argument".to_owned());
    let [spec, rest @ ..] = args else {
        return Err(usage.into());
    };
    let mut rest = rest;
    let mut env = Vec::new();
    while let [flag, entry, tail @ ..] = rest
        && flag == ENV_ARG
    {
        env.push(c_string(entry)?);
        rest = tail;
    }
    let [dashdash, command @ ..] = rest else {
        return Err(usage.into());
    };
    if dashdash != "--" || command.is_empty() {
        return Err(usage.into());
    }
    let spec: HelperSpec =
        serde_json::from_str(&spec.to_string_lossy()).map_err(|e| format!("bash-mcp sandbox: invalid spec: {e}"))?;
    let command = command.iter().map(c_string).collect::<Result<Vec<_>, _>>()?;
    Ok(Parsed { spec, env, command })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn argv_round_trips_through_the_helper_parser() {
        let spec = HelperSpec {
            writable: vec![PathBuf::from("/w")],
            network: false,
            subreaper: true,
            observe: true,
            max_processes: Some(400),
            bound: Some(super::super::own_bound::InnerBound {
                max: 400,
                cgroup_fd: Some(5),
            }),
            grants: vec![PathBuf::from("/w/src")],
            files: Vec::new(),
            landlock: true,
            listener_fd: None,
            proxy_port: Some(41000),
        };
        let argv = argv(
            std::path::Path::new("/bin/bash-mcp"),
            &spec,
            &[c"/bin/sh".into(), c"-c".into(), c"true".into()],
        );
        assert_eq!(argv[1].to_str().unwrap(), HELPER_ARG);
        let argv = env_arg(&argv, c"BASH_MCP_RUN_ID=x-1");
        let rest: Vec<OsString> = argv[2..].iter().map(|a| OsString::from(a.to_str().unwrap())).collect();
        let parsed = parse_args(&rest).unwrap();
        assert_eq!(parsed.spec, spec);
        assert_eq!(parsed.env, [c"BASH_MCP_RUN_ID=x-1".to_owned()]);
        assert_eq!(parsed.command.len(), 3);
    }

    #[test]
    fn bad_helper_arguments_say_what_is_expected() {
        assert!(parse_args(&[]).unwrap_err().contains("usage"));
        let e = parse_args(&["{".into(), "--".into(), "true".into()]).unwrap_err();
        assert!(e.contains("invalid spec"), "{e}");
    }
}
