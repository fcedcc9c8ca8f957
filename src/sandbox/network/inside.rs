//! Inside a bubblewrap sandbox with its own network namespace: the
//! `bash-mcp __sandbox-net-listen <port> -- <command...>` step that makes
//! the proxy reachable. It opens a TCP listener on the namespace's own
//! loopback (`127.0.0.1:<port>`, the address the command's proxy variables
//! name), hands the listening socket itself to the server over the socket
//! it inherits as fd [`LINK_FD`] (`SCM_RIGHTS`), closes its copies, and
//! execs the command. The server accepts on that socket from the host side:
//! nothing of the proxy runs inside the sandbox, no bytes are copied by a
//! bridge, and no socket file is left where a command could replace it.
//! The port stays taken by the server's listener, so no command can bind
//! it in its place.

use std::ffi::{CString, OsString};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStringExt;

use crate::sandbox::wire;

/// The first argument that makes the binary act as this step.
pub const LISTEN_ARG: &str = "__sandbox-net-listen";
/// The fd the step sends the listener on.
pub const LINK_FD: libc::c_int = 4;
/// The port of the proxy on a sandbox's own loopback.
pub const PROXY_PORT: u16 = 3128;
/// The message the listener travels with.
pub const LISTENING: u8 = b'P';

/// The argv that runs `command` behind this step.
pub fn argv(helper: &std::path::Path, command: &[CString]) -> Vec<CString> {
    let mut argv = vec![
        CString::new(helper.as_os_str().as_encoded_bytes()).unwrap_or_default(),
        CString::new(LISTEN_ARG).expect("no NUL"),
        CString::new(PROXY_PORT.to_string()).expect("no NUL"),
        CString::new("--").expect("no NUL"),
    ];
    argv.extend(command.iter().cloned());
    argv
}

/// Runs the step: `args` are the arguments after [`LISTEN_ARG`]. Returns
/// only on failure, with a message for stderr.
pub fn listen_main(args: &[OsString]) -> String {
    let usage = "bash-mcp sandbox: usage: bash-mcp __sandbox-net-listen <port> -- <command...> (internal)";
    let [port, dashdash, command @ ..] = args else {
        return usage.into();
    };
    let Some(port) = port.to_str().and_then(|p| p.parse::<u16>().ok()) else {
        return usage.into();
    };
    if dashdash != "--" || command.is_empty() {
        return usage.into();
    }
    let listener = match std::net::TcpListener::bind(("127.0.0.1", port)) {
        Ok(listener) => listener,
        Err(e) => {
            return format!(
                "bash-mcp sandbox: could not open the proxy's port 127.0.0.1:{port} inside the sandbox: {e}"
            );
        }
    };
    // The link to the server, which the command must not inherit: closed
    // once the listener is handed over.
    let link = crate::sandbox::process_calls::take_inherited(LINK_FD);
    let sent = match &link {
        Some(link) => wire::send_with_fds(link.as_fd(), &[LISTENING], &[listener.as_fd()]),
        None => Err(std::io::Error::from_raw_os_error(libc::EBADF)),
    };
    if let Err(e) = sent {
        return format!("bash-mcp sandbox: could not hand the proxy's listener to the server: {e}");
    }
    drop(listener);
    drop(link);
    let command: Vec<CString> = match command
        .iter()
        .map(|a| CString::new(a.clone().into_vec()))
        .collect::<Result<_, _>>()
    {
        Ok(command) => command,
        Err(_) => return "bash-mcp sandbox: NUL in argument".into(),
    };
    let err = crate::sandbox::process_calls::exec(&command, &[]);
    format!(
        "bash-mcp sandbox: could not start {}: {}",
        command[0].to_string_lossy(),
        err
    )
}
