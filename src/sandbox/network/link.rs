//! The host side of a command's network by name: the socket its sandbox
//! hands the proxy's listener over, the proxy started on that listener,
//! and the variables that point the command's tools at it.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex, PoisonError};

use super::inside::{LISTENING, PROXY_PORT};
use super::{NetPolicy, Proxy};
use crate::sandbox::Denial;
use crate::sandbox::supervisor::wire;

/// The proxy of one command (or session), once its sandbox has handed
/// over the listener. Dropping the link stops the proxy.
#[derive(Debug, Default)]
pub struct Link {
    state: Arc<Mutex<State>>,
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
    pub fn over_socket(policy: NetPolicy) -> std::io::Result<(Link, OwnedFd)> {
        let (ours, theirs) = wire::socket_pair(libc::SOCK_SEQPACKET)?;
        let state = Arc::new(Mutex::new(State::default()));
        let s = state.clone();
        std::thread::Builder::new()
            .name("sandbox-proxy-link".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let mut buf = [0u8; 4];
                // End of file when the sandbox never started: nothing to serve.
                let Ok((n, mut fds)) = wire::recv_with_fds(ours.as_raw_fd(), &mut buf) else {
                    return;
                };
                if n == 0 || buf[0] != LISTENING || fds.len() != 1 {
                    return;
                }
                let listener = std::net::TcpListener::from(fds.pop().expect("one fd"));
                let proxy = match Proxy::serve(listener, policy) {
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
        Ok((Link { state }, theirs))
    }

    /// The connections the proxy refused so far.
    pub fn refusals(&self) -> Vec<Denial> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.proxy.as_ref().map(Proxy::refusals).unwrap_or_default()
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.closed = true;
        state.proxy = None;
    }
}

/// The variables that send a command's tools through the proxy at
/// `127.0.0.1:<port>`: the standard ones in both cases (git and curl read
/// these), and the keys of npm, yarn, pip, cargo and Node's own fetch.
/// `NO_PROXY` names only the sandbox's own loopback, where a command's test
/// server may listen.
pub fn env(port: u16) -> Vec<(String, String)> {
    let url = format!("http://127.0.0.1:{port}");
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

/// [`env()`] for the proxy on a sandbox's own loopback.
pub fn sandbox_env() -> Vec<(String, String)> {
    env(PROXY_PORT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variables_name_the_proxy_and_leave_only_loopback_direct() {
        let vars = env(3128);
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
    }

    #[test]
    fn a_link_whose_sandbox_never_starts_ends_quietly() {
        let (link, theirs) = Link::over_socket(NetPolicy::default()).unwrap();
        drop(theirs);
        assert!(link.refusals().is_empty());
    }
}
