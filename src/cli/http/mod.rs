//! `bash-mcp serve --http ADDR`: MCP over Streamable HTTP at `/mcp`, in
//! both protocol eras, with `/healthz` for probes.
//!
//! The library's handler stays synchronous; this front end runs hyper on a
//! tokio runtime in the binary only (see docs/dependencies.md) and hands
//! every message to a handler on the blocking pool. Each handshake-era
//! session (`initialize`, then `Mcp-Session-Id`) has a handler of its own;
//! every 2026-07-28 request goes to one shared stateless handler. All of
//! them serve the one server object: one server, one workspace. The front
//! end knows it only as an `McpServer` ([`Served`]), so the conformance
//! fixtures example serves its tools through these same files.
//!
//! Bounds: at most [`MAX_CONNECTIONS`] connections (more are answered 503
//! and closed), a body of at most the handler's message limit (413),
//! [`MAX_SESSIONS`] sessions, each dropped after [`SESSION_IDLE`] without a
//! request or a running call, and request heads read within
//! [`HEADER_TIMEOUT`].

mod access;
mod endpoint;
mod oauth;
mod service;
mod sessions;
mod sse;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bash_mcp::McpServer;
use bash_mcp::mcp::HandlerOptions;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use tokio::io::AsyncWriteExt;

use access::Access;
use endpoint::Endpoint;
use sessions::Sessions;

/// Most connections open at once.
pub const MAX_CONNECTIONS: usize = 512;
/// Most handshake-era sessions kept at once.
pub const MAX_SESSIONS: usize = 1024;
/// How long a session lives without a request or a running call.
pub const SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// How long a client may take to send a request's head.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long shutdown waits, in all, for calls and jobs to end after killing them.
const SHUTDOWN_WAIT: Duration = Duration::from_millis(700);

/// What is served: the server, its handler's options, and how its own
/// work (background jobs, sessions) ends on shutdown.
pub struct Served<'a> {
    pub server: Arc<dyn McpServer>,
    pub options: HandlerOptions,
    /// Kills the server's jobs and sessions, waiting at most the limit
    /// (`None`: no limit); whether everything ended.
    pub end_work: Box<dyn Fn(Option<Duration>) -> bool + Send + Sync>,
    /// Says what the server serves, once it listens (the binary's start-up line).
    pub announce: Box<dyn FnOnce() + 'a>,
}

/// Who may call: the `serve --http` options that say it.
#[derive(Default)]
pub struct AccessSettings<'a> {
    pub auth_token_file: Option<&'a Path>,
    pub allowed_origins: &'a [String],
    pub oauth_resource: Option<&'a str>,
    pub oauth_issuer: Option<&'a str>,
    pub oauth_jwks_file: Option<&'a Path>,
    pub oauth_scope: Option<&'a str>,
}

/// What every request needs.
pub struct Front {
    server: Arc<dyn McpServer>,
    end_work: Box<dyn Fn(Option<Duration>) -> bool + Send + Sync>,
    options: HandlerOptions,
    access: Access,
    stateless: Arc<Endpoint>,
    sessions: Sessions,
    max_body: usize,
}

/// Serves MCP at `listen` until a signal ends the process: checks the
/// access settings, then builds what is served (`build`), then listens.
pub fn run<'a>(
    listen: &str,
    http: &AccessSettings<'_>,
    session_idle: Duration,
    build: impl FnOnce() -> Result<Served<'a>, String>,
) -> Result<(), String> {
    let mut signals =
        Signals::new([SIGTERM, SIGINT, SIGHUP]).map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let addr = resolve(listen)?;
    let oauth = match (http.oauth_resource, http.oauth_issuer, http.oauth_jwks_file) {
        (None, None, None) if http.oauth_scope.is_none() => None,
        (Some(resource), Some(issuer), Some(jwks)) => {
            Some(oauth::OAuth::new(resource, issuer, jwks, http.oauth_scope)?)
        }
        _ => {
            return Err(
                "OAuth needs --oauth-resource (this server's URL as clients reach it, e.g. https://ws.example/mcp), \
                 --oauth-issuer (the authorization server) and --oauth-jwks-file (its public keys) together"
                    .into(),
            );
        }
    };
    let access = Access::new(addr, http.auth_token_file, oauth, http.allowed_origins)?;
    let Served {
        server,
        options,
        end_work,
        announce,
    } = build()?;
    let front = Arc::new(Front {
        stateless: Endpoint::new(server.clone(), options.clone()),
        max_body: options.max_line_bytes,
        server,
        end_work,
        options,
        access,
        sessions: Sessions::new(session_idle, MAX_SESSIONS),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("http")
        .build()
        .map_err(|e| format!("cannot start the HTTP runtime: {e}"))?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(addr))
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?;
    // Tests and scripts read this line to learn the port of `--http 127.0.0.1:0`.
    // One write: a client that reads the URL from a partial line would take a wrong one.
    let line = format!("bash-mcp: serving MCP on http://{bound}/mcp\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    (announce)();
    tracing::info!(%bound, authenticated = front.access.authenticates(), server = front.server.name(), "serving MCP over HTTP");

    let on_signal = front.clone();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                tracing::info!(signal, "signal received; stopping");
                stop(&on_signal);
            }
        })
        .map_err(|e| format!("cannot start the signal thread: {e}"))?;

    runtime.spawn(reap_idle(front.clone()));
    runtime.block_on(accept(listener, front.clone()));
    stop(&front)
}

/// The one address `listen` names.
fn resolve(listen: &str) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = listen
        .to_socket_addrs()
        .map_err(|e| format!("--http {listen:?} is not an address to listen on (e.g. 127.0.0.1:8080): {e}"))?
        .collect();
    // A name may resolve to loopback and other addresses: listen on the first,
    // judged by what it is.
    addrs
        .first()
        .copied()
        .ok_or_else(|| format!("--http {listen:?} resolves to no address"))
}

async fn accept(listener: tokio::net::TcpListener, front: Arc<Front>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (mut stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // EMFILE and the like: wait a little rather than spin.
                tracing::warn!("cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(%peer, "{MAX_CONNECTIONS} connections open; refusing one more");
            tokio::spawn(async move {
                let busy = format!(
                    "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{}",
                    BUSY.len(),
                    BUSY
                );
                let _ = stream.write_all(busy.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
            continue;
        };
        let front = front.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let service = service_fn(move |request| service::handle(front.clone(), request));
            let served = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                tracing::debug!(%peer, "connection ended: {e}");
            }
        });
    }
}

const BUSY: &str = "too many connections open; retry in a moment\n";

/// Drops the sessions that have idled out, now and then.
async fn reap_idle(front: Arc<Front>) {
    let mut tick = tokio::time::interval((front.sessions.idle / 4).max(Duration::from_secs(1)));
    loop {
        tick.tick().await;
        for (id, session) in front.sessions.take_idle() {
            tracing::info!(session = %id, "session idled out; releasing it");
            let _ = tokio::task::spawn_blocking(move || session.endpoint.shutdown_within(Duration::from_secs(5))).await;
        }
    }
}

/// Kills every running call, background job and session, and exits (as
/// the stdio server does).
fn stop(front: &Front) -> ! {
    let deadline = Instant::now() + SHUTDOWN_WAIT;
    let until = |reserve: Duration| deadline.saturating_duration_since(Instant::now() + reserve);
    let sessions = front.sessions.take_all();
    let endpoints: Vec<&Endpoint> = std::iter::once(&*front.stateless)
        .chain(sessions.iter().map(|s| &*s.endpoint))
        .collect();
    for endpoint in &endpoints {
        endpoint.shutdown_within(Duration::ZERO);
    }
    let mut ended = (front.end_work)(Some(until(SHUTDOWN_WAIT / 2)));
    for endpoint in &endpoints {
        ended &= endpoint.shutdown_within(until(SHUTDOWN_WAIT / 5));
    }
    ended &= (front.end_work)(Some(until(Duration::ZERO)));
    if !ended {
        tracing::warn!("some calls or jobs did not end in time; exiting anyway (their process groups were killed)");
    }
    std::process::exit(0);
}
