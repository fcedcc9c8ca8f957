//! The host side of a command's network by name: the socket its sandbox
//! hands the proxy's listener over and the proxy started on that listener,
//! or its registration with a proxy several commands share (a
//! supervisor's); and the variables that point the command's tools at it.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex, PoisonError};

use super::ask::Asking;
use super::inside::{LISTENING, PROXY_PORT};
use super::proxy::Client;
use super::{NetPolicy, Proxy};
use crate::sandbox::Denial;
use crate::sandbox::wire;

/// The proxy of one command (or session): its own, once its sandbox has
/// handed over the listener, or its registration with a shared one.
/// Dropping the link stops its own proxy, or ends the registration.
#[derive(Debug)]
pub struct Link {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Own(Arc<Mutex<State>>),
    Shared(Client),
    /// A proxy of its own on the host's loopback, serving its token only.
    Host {
        proxy: Proxy,
        client: Client,
    },
}

#[derive(Debug, Default)]
struct State {
    proxy: Option<Proxy>,
    closed: bool,
}

impl Link {
    /// A link whose listener comes over a new socket: the fd returned is
    /// the sandbox's end (to become its [`LINK_FD`](super::inside::LINK_FD));
    /// a thread waits for the listener and starts the proxy on it.
    pub fn over_socket(policy: NetPolicy, asking: Option<Asking>) -> std::io::Result<(Link, OwnedFd)> {
        let (ours, theirs) = wire::socket_pair(libc::SOCK_SEQPACKET)?;
        let state = Arc::new(Mutex::new(State::default()));
        let s = state.clone();
        std::thread::Builder::new()
            .name("sandbox-proxy-link".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let mut buf = [0u8; 4];
                // End of file when the sandbox never started: nothing to serve.
                let Ok((n, mut fds)) = wire::recv_with_fds(ours.as_fd(), &mut buf) else {
                    return;
                };
                if n == 0 || buf[0] != LISTENING || fds.len() != 1 {
                    return;
                }
                let listener = std::net::TcpListener::from(fds.pop().expect("one fd"));
                let proxy = match Proxy::serve(listener, policy, asking) {
                    Ok(proxy) => proxy,
                    Err(e) => {
                        tracing::error!("could not start the sandbox's network proxy: {e}");
                        return;
                    }
                };
                let mut state = s.lock().unwrap_or_else(PoisonError::into_inner);
                if !state.closed {
                    state.proxy = Some(proxy);
                }
            })?;
        Ok((Link { kind: Kind::Own(state) }, theirs))
    }

    /// A command served by a shared proxy as `client`.
    pub fn shared(client: Client) -> Link {
        Link {
            kind: Kind::Shared(client),
        }
    }

    /// A command's own proxy on the host's loopback (an ephemeral port),
    /// which serves only requests carrying its token: any local user can
    /// reach the port.
    pub fn on_host(policy: NetPolicy, asking: Option<Asking>) -> std::io::Result<Link> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        let clients = super::proxy::Clients::new();
        let client = clients.register(policy, asking)?;
        let proxy = Proxy::serve_clients(listener, clients)?;
        Ok(Link {
            kind: Kind::Host { proxy, client },
        })
    }

    /// The port of a proxy on the host's loopback (none for a proxy in
    /// the sandbox's own network namespace).
    pub fn port(&self) -> Option<u16> {
        match &self.kind {
            Kind::Host { proxy, .. } => Some(proxy.port()),
            Kind::Own(_) | Kind::Shared(_) => None,
        }
    }

    /// The variables that point the command's tools at its proxy.
    pub fn env(&self) -> Vec<(String, String)> {
        match &self.kind {
            Kind::Own(_) => sandbox_env(),
            Kind::Shared(client) => shared_env(client),
            Kind::Host { proxy, client } => env(proxy.port(), Some(client.token())),
        }
    }

    /// The connections the proxy refused this command so far.
    pub fn refusals(&self) -> Vec<Denial> {
        match &self.kind {
            Kind::Own(state) => {
                let state = state.lock().unwrap_or_else(PoisonError::into_inner);
                state.proxy.as_ref().map(Proxy::refusals).unwrap_or_default()
            }
            Kind::Shared(client) | Kind::Host { client, .. } => client.refusals(),
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if let Kind::Own(state) = &self.kind {
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            state.closed = true;
            state.proxy = None;
        }
    }
}

/// The URL of the proxy at `127.0.0.1:<port>`, with the client's token
/// as the password when the proxy is shared (tools send it as
/// `Proxy-Authorization: Basic`).
pub fn proxy_url(port: u16, token: Option<&str>) -> String {
    match token {
        Some(token) => format!("http://{USER}:{token}@127.0.0.1:{port}"),
        None => format!("http://127.0.0.1:{port}"),
    }
}

/// The user name of a shared proxy's URLs (only the password is checked).
const USER: &str = "bash-mcp";

/// The variables that send a command's tools through the proxy at
/// `127.0.0.1:<port>` (see [`proxy_url`]): the standard ones in both cases
/// (git and curl read these), and the keys of npm, yarn, pip, cargo and
/// Node's own fetch. `NO_PROXY` names only the loopback, where a command's
/// test server may listen.
pub fn env(port: u16, token: Option<&str>) -> Vec<(String, String)> {
    let url = proxy_url(port, token);
    let mut vars: Vec<(String, String)> = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "npm_config_proxy",
        "npm_config_https_proxy",
        "YARN_HTTP_PROXY",
        "YARN_HTTPS_PROXY",
        "PIP_PROXY",
        "CARGO_HTTP_PROXY",
    ]
    .into_iter()
    .map(|name| (name.to_owned(), url.clone()))
    .collect();
    for name in ["NO_PROXY", "no_proxy", "npm_config_noproxy"] {
        vars.push((name.to_owned(), "localhost,127.0.0.1,::1".to_owned()));
    }
    // Node's built-in fetch honours the variables above only when asked.
    vars.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
    vars
}

/// [`env()`] for a command's own proxy on its sandbox's loopback.
pub fn sandbox_env() -> Vec<(String, String)> {
    env(PROXY_PORT, None)
}

/// [`env()`] for a client of the shared proxy on its sandbox's loopback.
pub fn shared_env(client: &Client) -> Vec<(String, String)> {
    env(PROXY_PORT, Some(client.token()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variables_name_the_proxy_and_leave_only_loopback_direct() {
        let vars = env(3128, None);
        let get = |name: &str| vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        for name in [
            "HTTPS_PROXY",
            "https_proxy",
            "ALL_PROXY",
            "npm_config_https_proxy",
            "PIP_PROXY",
            "CARGO_HTTP_PROXY",
        ] {
            assert_eq!(get(name), Some("http://127.0.0.1:3128"), "{name}");
        }
        assert_eq!(get("NO_PROXY"), Some("localhost,127.0.0.1,::1"));
        let vars = env(3128, Some("0123abcd"));
        let get = |name: &str| vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        assert_eq!(get("CARGO_HTTP_PROXY"), Some("http://bash-mcp:0123abcd@127.0.0.1:3128"));
    }

    #[test]
    fn a_link_whose_sandbox_never_starts_ends_quietly() {
        let (link, theirs) = Link::over_socket(NetPolicy::default(), None).unwrap();
        drop(theirs);
        assert!(link.refusals().is_empty());
    }
}
