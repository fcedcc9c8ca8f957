//! Denials the model can act on: which write or connection the sandbox
//! refused, read from the command's output.
//!
//! The precise source is seccomp user notification (see
//! [`notify`](super::notify)); where a command ran without a listener,
//! [`find`] is the fallback: a heuristic on error text (the messages
//! `EROFS`, `EACCES`, `EPERM` and `ENETUNREACH` print as), reported as such.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

/// One refused operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial {
    Write {
        path: String,
    },
    Connect {
        addr: String,
    },
    /// A datagram sent to an address (`sendto`).
    Send {
        addr: String,
    },
    /// A read of a path `read_deny` hides (named from the error text on
    /// every route: a read-only open is never notified).
    Read {
        path: String,
    },
    /// A socket of a network family, refused before any address was named
    /// (the Landlock backend with network off).
    Socket {
        family: String,
    },
    /// A connection through the sandbox's proxy that its network policy
    /// refused, with the rule that did.
    Host {
        host: String,
        port: u16,
        rule: String,
    },
    /// A connection straight to an address, past the proxy, where the
    /// network is open by name: only the proxy reaches out.
    Direct {
        addr: String,
    },
    /// A connection to a bash-mcp attach socket (this server's or
    /// another's): sessions are for people, never for sandboxed commands.
    AttachSocket {
        path: String,
    },
    /// A TCP port bound where the command shares the host's network
    /// (Landlock with the network open by name): only on the loopback.
    Bind {
        addr: String,
    },
}

/// Why a [`Denial::Socket`] was refused: no socket of a network family with
/// network off; none but TCP with a network by name (on Landlock, where
/// the socket is refused before any address is named).
pub const SOCKET_RULE: &str = "network is off, or open by name: TCP through the sandbox's proxy only";

/// The rule a [`Denial::Direct`] names.
pub const DIRECT_RULE: &str = "no direct route: only the sandbox's proxy (HTTP_PROXY, HTTPS_PROXY) reaches the network";

/// The rule a [`Denial::Bind`] names.
pub const BIND_RULE: &str =
    "a server of the command's own listens on 127.0.0.1 or ::1 only, on a port from 1024 (or 0: any free one)";

/// Where a result's denials come from.
pub const FROM_NOTIFICATION: &str = "seccomp notification";
/// The fallback: the command's error text.
pub const FROM_ERROR_TEXT: &str = "error text (heuristic)";

impl Denial {
    pub fn to_value(&self) -> Value {
        match self {
            Denial::Write { path } => json!({"op": "write", "path": path}),
            Denial::Connect { addr } => json!({"op": "connect", "addr": addr}),
            Denial::Send { addr } => json!({"op": "send", "addr": addr}),
            Denial::Read { path } => json!({"op": "read", "path": path}),
            Denial::Socket { family } => json!({"op": "socket", "family": family}),
            Denial::Host { host, port, rule } => json!({"op": "connect", "host": host, "port": port, "rule": rule}),
            Denial::Direct { addr } => json!({"op": "connect", "addr": addr, "rule": DIRECT_RULE}),
            Denial::AttachSocket { path } => json!({"op": "connect", "path": path}),
            Denial::Bind { addr } => json!({"op": "bind", "addr": addr, "rule": BIND_RULE}),
        }
    }

    /// A line for the model: what was refused and what to do.
    pub fn sentence(&self) -> String {
        match self {
            Denial::Write { path } => {
                format!("the sandbox refused a write to {path}: it is outside the writable roots or protected")
            }
            Denial::Connect { addr } => format!("the sandbox refused a network connection ({addr}): network is off"),
            Denial::Send { addr } => format!("the sandbox refused a network send ({addr}): network is off"),
            Denial::Read { path } => format!("the sandbox hides {path} (read_deny): it cannot be read"),
            Denial::Socket { family } => {
                format!("the sandbox refused to open a network socket ({family}): {SOCKET_RULE}")
            }
            Denial::Host { host, port, rule } => {
                format!("the sandbox's proxy refused a connection to {host}:{port} ({rule})")
            }
            Denial::Direct { addr } => format!("the sandbox refused a connection to {addr} ({DIRECT_RULE})"),
            Denial::AttachSocket { path } => format!(
                "the sandbox refused a connection to {path}: it is a bash-mcp attach socket, and sessions are for people to attach to, never for sandboxed commands"
            ),
            Denial::Bind { addr } => format!("the sandbox refused to bind {addr} ({BIND_RULE})"),
        }
    }
}

static WRITE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(read-only file system|permission denied)").expect("valid regex"));
static NET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(network is unreachable|temporary failure in name resolution|could not resolve host|address family not supported|socket: operation not permitted|connection refused)")
        .expect("valid regex")
});
/// The path right before the error text: `touch: cannot touch 'x': ...`,
/// `sh: 1: cannot create x: ...`, `bash: line 1: x: ...`.
static PATH_BEFORE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:'([^'\n]+)'|‘([^’\n]+)’|([^\s:'"‘’]+)): (?i:read-only file system|permission denied|operation not permitted)"#)
        .expect("valid regex")
});
/// The path after it: `OSError: [Errno 30] Read-only file system: '/x'`.
static PATH_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i:read-only file system|permission denied|operation not permitted): (?:'([^'\n]+)'|"([^"\n]+)")"#)
        .expect("valid regex")
});
static ADDR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([0-9]{1,3}(?:\.[0-9]{1,3}){3}(?::[0-9]+)?|\[[0-9a-fA-F:]+\](?::[0-9]+)?|[A-Za-z0-9.-]+\.[A-Za-z]{2,}(?::[0-9]+)?)")
        .expect("valid regex")
});

/// Denials found in `output`, with `is_writable` telling whether a path was
/// writable in the sandbox (so a plain permission error on a writable path is
/// not blamed on it). Network lines count only when network is off.
pub fn find(output: &str, network_off: bool, is_writable: &dyn Fn(&str) -> bool) -> Vec<Denial> {
    let mut found: Vec<Denial> = Vec::new();
    for line in output.lines().take(10_000) {
        let denial = if network_off && NET.is_match(line) {
            let addr = ADDR.find(line).map_or("unknown", |m| m.as_str());
            Some(Denial::Connect { addr: addr.to_owned() })
        } else if WRITE.is_match(line) {
            path_in(line)
                .filter(|p| !is_writable(p))
                .map(|path| Denial::Write { path })
        } else {
            None
        };
        if let Some(d) = denial
            && !found.contains(&d)
        {
            found.push(d);
        }
        if found.len() >= 20 {
            break;
        }
    }
    found
}

/// The error lines for "Permission denied" or "No such file or directory",
/// the paths they name, for [`hidden_reads`].
static MISSING_OR_DENIED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(permission denied|no such file or directory)").expect("valid regex"));
static PATH_BEFORE_MISSING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:'([^'\n]+)'|‘([^’\n]+)’|([^\s:'"‘’]+)): (?i:permission denied|no such file or directory)"#)
        .expect("valid regex")
});
static PATH_AFTER_MISSING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i:permission denied|no such file or directory): (?:'([^'\n]+)'|"([^"\n]+)")"#).expect("valid regex")
});

/// Reads of hidden paths the output's error lines name: a path for which
/// `hidden` gives where it lies under a `read_deny` entry (it stands in
/// mode 000, or inside an empty directory), as that absolute path.
pub fn hidden_reads(output: &str, hidden: &dyn Fn(&str) -> Option<String>) -> Vec<Denial> {
    let first_group = |c: regex::Captures<'_>| (1..c.len()).find_map(|i| c.get(i)).map(|m| m.as_str().to_owned());
    let mut found: Vec<Denial> = Vec::new();
    for line in output.lines().take(10_000) {
        if !MISSING_OR_DENIED.is_match(line) {
            continue;
        }
        let path = PATH_BEFORE_MISSING
            .captures(line)
            .and_then(first_group)
            .or_else(|| PATH_AFTER_MISSING.captures(line).and_then(first_group));
        if let Some(path) = path.as_deref().and_then(hidden) {
            let denial = Denial::Read { path };
            if !found.contains(&denial) {
                found.push(denial);
            }
        }
        if found.len() >= 20 {
            break;
        }
    }
    found
}

fn path_in(line: &str) -> Option<String> {
    let first_group = |c: regex::Captures<'_>| (1..c.len()).find_map(|i| c.get(i)).map(|m| m.as_str().to_owned());
    PATH_BEFORE
        .captures(line)
        .and_then(first_group)
        .or_else(|| PATH_AFTER.captures(line).and_then(first_group))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never(_: &str) -> bool {
        false
    }

    #[test]
    fn common_write_errors_name_their_path() {
        let out = "touch: cannot touch '/etc/x': Read-only file system\n\
                   sh: 1: cannot create /usr/y: Read-only file system\n\
                   mkdir: cannot create directory ‘/opt/z’: Permission denied\n\
                   OSError: [Errno 30] Read-only file system: '/srv/w'\n\
                   /bin/sh: 1: cannot create .git/config: Read-only file system\n\
                   bash: line 1: /etc/v: Permission denied\n";
        let paths: Vec<_> = find(out, false, &never)
            .into_iter()
            .map(|d| match d {
                Denial::Write { path } => path,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(paths, ["/etc/x", "/usr/y", "/opt/z", "/srv/w", ".git/config", "/etc/v"]);
    }

    #[test]
    fn writable_paths_and_network_lines_with_network_on_are_not_blamed() {
        let out =
            "touch: cannot touch '/w/x': Permission denied\ncurl: (7) Failed to connect: Network is unreachable\n";
        assert!(find(out, false, &|p| p.starts_with("/w")).is_empty());
    }

    #[test]
    fn reads_of_hidden_paths_are_named_from_their_error_lines() {
        let out = "cat: /home/me/.ssh/id_rsa: Permission denied\n\
                   ls: cannot open directory '/home/me/.aws': Permission denied\n\
                   PermissionError: [Errno 13] Permission denied: '/home/me/.ssh/config'\n\
                   cat: /etc/other: Permission denied\n\
                   cat: /home/me/.aws/credentials: No such file or directory\n";
        let hidden = |p: &str| p.starts_with("/home/me/.").then(|| p.to_owned());
        let paths: Vec<String> = hidden_reads(out, &hidden)
            .into_iter()
            .map(|d| match d {
                Denial::Read { path } => path,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            paths,
            [
                "/home/me/.ssh/id_rsa",
                "/home/me/.aws",
                "/home/me/.ssh/config",
                "/home/me/.aws/credentials"
            ]
        );
    }

    #[test]
    fn connection_failures_name_the_address_with_network_off() {
        let out = "curl: (6) Could not resolve host: example.com\nnc: connect to 127.0.0.1 port 8080 (tcp) failed: Connection refused\n";
        assert_eq!(
            find(out, true, &never),
            vec![
                Denial::Connect {
                    addr: "example.com".into()
                },
                Denial::Connect {
                    addr: "127.0.0.1".into()
                }
            ]
        );
    }
}
