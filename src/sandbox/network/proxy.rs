//! The proxy a sandboxed command reaches the network through, run by the
//! server on the host side: one per command (or session), serving the
//! listener that command connects to, judging every request by its
//! [`NetPolicy`], resolving names itself, and recording what it refused.
//!
//! Synchronous, a thread per connection: the accept loop's, one per
//! connection while its head is read, the server reached and the bytes
//! relayed, plus one for the second direction of the relay. At most
//! [`MAX_CONNECTIONS`] are open at once per proxy; each relays through
//! two kernel pipes of [`PIPE`] bytes with `splice` (or, without a pipe,
//! two buffers of [`BUFFER`] bytes), so a proxy's memory stays bounded whatever
//! its command does.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use super::ask::{Asked, Asking, Verdict};
use super::http::{self, Answer, Request};
use super::policy::{Host, NetPolicy, Refusal};
use crate::sandbox::Denial;

/// The most connections one proxy keeps open; past it, `503`.
pub const MAX_CONNECTIONS: usize = 128;
/// The relay's buffer, per direction of a connection, when it has no pipe.
pub const BUFFER: usize = 32 * 1024;
/// The kernel pipe the relay splices through, per direction.
pub const PIPE: usize = 64 * 1024;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long reaching one address of a server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// The most refusals kept for one command (the result lists 20 denials).
const MAX_REFUSALS: usize = 20;

/// One client of a proxy: the policy its requests are judged by, and what
/// the proxy refused it.
#[derive(Debug)]
struct Account {
    policy: NetPolicy,
    refusals: Mutex<Vec<Denial>>,
    /// How a host the policy does not allow is put to the person, when it is.
    asked: Option<Asked>,
}

impl Account {
    fn new(policy: NetPolicy, asking: Option<Asking>) -> Arc<Account> {
        Arc::new(Account {
            policy,
            refusals: Mutex::new(Vec::new()),
            asked: asking.map(Asked::new),
        })
    }

    /// Lets a connection to `host:port` through, or answers why not: the
    /// policy, else (for a host no allow entry names) the person.
    fn admit(&self, host: &Host, port: u16) -> Result<(), Answer> {
        let Err(refusal) = self.policy.judge_host(host, port) else {
            return Ok(());
        };
        let Some(asked) = &self.asked else {
            return Err(self.refuse(host, port, &refusal));
        };
        // An address written as the host that its address alone refuses
        // (special-purpose, or in a deny block) is not put to the person:
        // no answer could let it through.
        let refusal = match (host, refusal) {
            (Host::Ip(ip), Refusal::NotAllowed) => self
                .policy
                .judge_address(*ip, port)
                .err()
                .unwrap_or(Refusal::NotAllowed),
            (_, refusal) => refusal,
        };
        match asked.decide(host, port, &refusal) {
            Verdict::Allow => Ok(()),
            Verdict::Refuse { rule, code } => Err(self.refuse_by(host, port, rule, code)),
        }
    }

    fn refuse(&self, host: &Host, port: u16, refusal: &Refusal) -> Answer {
        self.refuse_by(host, port, refusal.rule(), refusal.code())
    }

    fn refuse_by(&self, host: &Host, port: u16, rule: String, code: &'static str) -> Answer {
        tracing::info!(%host, port, %rule, "the sandbox's proxy refused a connection");
        let denial = Denial::Host {
            host: host.to_string(),
            port,
            rule: rule.clone(),
        };
        let mut refusals = self.refusals.lock().unwrap_or_else(PoisonError::into_inner);
        if refusals.len() < MAX_REFUSALS && !refusals.contains(&denial) {
            refusals.push(denial);
        }
        let mut answer = Answer::new(
            403,
            format!("the sandbox's network policy refused {host}:{port} ({rule})"),
        );
        answer.code = Some(code);
        answer
    }

    fn refusals(&self) -> Vec<Denial> {
        self.refusals.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// Whom a proxy serves.
enum Gate {
    /// Every connection: a listener only one command can reach (on its
    /// sandbox's own loopback).
    Anyone(Arc<Account>),
    /// Requests whose `Proxy-Authorization` carries the token of a client
    /// registered now: a listener several commands share.
    Clients(Arc<Clients>),
}

/// The clients of a shared proxy, by the secret token each one's proxy
/// URL carries. The token both names the command (its refusals are its
/// own, judged by its own policy) and keeps out whoever does not have it.
#[derive(Debug, Default)]
pub struct Clients {
    by_token: Mutex<HashMap<Vec<u8>, Weak<Account>>>,
}

impl Clients {
    pub fn new() -> Arc<Clients> {
        Arc::new(Clients::default())
    }

    /// A new client under `policy`, with a fresh token; it is served until
    /// it is dropped. With `asking`, a host the policy does not allow is put
    /// to the person while the connection waits.
    pub fn register(self: &Arc<Self>, policy: NetPolicy, asking: Option<Asking>) -> std::io::Result<Client> {
        let token = fresh_token()?;
        let account = Account::new(policy, asking);
        let mut by_token = self.by_token.lock().unwrap_or_else(PoisonError::into_inner);
        by_token.retain(|_, a| a.strong_count() > 0);
        by_token.insert(token.clone().into_bytes(), Arc::downgrade(&account));
        Ok(Client {
            account,
            token,
            clients: Arc::downgrade(self),
        })
    }

    fn find(&self, token: &[u8]) -> Option<Arc<Account>> {
        let by_token = self.by_token.lock().unwrap_or_else(PoisonError::into_inner);
        by_token.get(token).and_then(Weak::upgrade)
    }

    /// How many clients are registered (for tests).
    pub fn len(&self) -> usize {
        let by_token = self.by_token.lock().unwrap_or_else(PoisonError::into_inner);
        by_token.values().filter(|a| a.strong_count() > 0).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// 128 random bits, as 32 hex digits.
fn fresh_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    let mut filled = 0;
    while filled < bytes.len() {
        let flags = rustix::rand::GetRandomFlags::empty();
        filled += rustix::io::retry_on_intr(|| rustix::rand::getrandom(&mut bytes[filled..], flags))?;
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    Ok(bytes
        .iter()
        .flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]])
        .map(char::from)
        .collect())
}

/// One command's (or session's) registration with a shared proxy.
#[derive(Debug)]
pub struct Client {
    account: Arc<Account>,
    token: String,
    clients: Weak<Clients>,
}

impl Client {
    /// The secret its proxy URL carries as the password.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The connections the proxy refused this client so far.
    pub fn refusals(&self) -> Vec<Denial> {
        self.account.refusals()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(clients) = self.clients.upgrade() {
            let mut by_token = clients.by_token.lock().unwrap_or_else(PoisonError::into_inner);
            by_token.remove(self.token.as_bytes());
        }
    }
}

/// What every connection of one proxy shares.
struct Shared {
    gate: Gate,
    open: AtomicUsize,
    stopped: AtomicBool,
}

impl Shared {
    /// The client a request with head `head` comes from, or the answer
    /// that refuses it.
    fn client(&self, head: &[u8]) -> Result<Arc<Account>, Answer> {
        match &self.gate {
            Gate::Anyone(account) => Ok(account.clone()),
            Gate::Clients(clients) => match http::credentials(head).and_then(|token| clients.find(&token)) {
                Some(account) => Ok(account),
                None => {
                    tracing::warn!("the sandbox's proxy refused a request without the credentials of a command");
                    let mut answer = Answer::new(
                        407,
                        "the sandbox's proxy serves only its server's commands, whose proxy variables (HTTPS_PROXY, HTTP_PROXY) carry their credentials",
                    );
                    answer.code = Some("proxy-credentials");
                    answer.challenge = true;
                    Err(answer)
                }
            },
        }
    }
}

/// A running proxy. Dropping it stops accepting; connections already open
/// run on until their ends close.
pub struct Proxy {
    shared: Arc<Shared>,
    listener: Arc<TcpListener>,
    port: u16,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("port", &self.port).finish()
    }
}

impl Proxy {
    /// Serves `listener` (a listening TCP socket: on the host's loopback,
    /// or on a sandbox's own, from inside its network namespace) under
    /// `policy`.
    pub fn serve(listener: TcpListener, policy: NetPolicy, asking: Option<Asking>) -> std::io::Result<Proxy> {
        Proxy::start(listener, Gate::Anyone(Account::new(policy, asking)))
    }

    /// Serves `listener` for the registered `clients`, each request under
    /// its client's policy: one listener several commands share.
    pub fn serve_clients(listener: TcpListener, clients: Arc<Clients>) -> std::io::Result<Proxy> {
        Proxy::start(listener, Gate::Clients(clients))
    }

    fn start(listener: TcpListener, gate: Gate) -> std::io::Result<Proxy> {
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared {
            gate,
            open: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
        });
        let listener = Arc::new(listener);
        let (s, l) = (shared.clone(), listener.clone());
        std::thread::Builder::new()
            .name("sandbox-proxy".into())
            .stack_size(64 * 1024)
            .spawn(move || accept_loop(&l, &s))?;
        Ok(Proxy { shared, listener, port })
    }

    /// The port commands reach it on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The connections refused so far (for a proxy that serves anyone on
    /// its listener; a shared one keeps them by client).
    pub fn refusals(&self) -> Vec<Denial> {
        match &self.shared.gate {
            Gate::Anyone(account) => account.refusals(),
            Gate::Clients(_) => Vec::new(),
        }
    }

    /// How many connections are open now.
    pub fn open_connections(&self) -> usize {
        self.shared.open.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        // Wakes the accept loop: a shut-down listening socket fails accept.
        let _ = rustix::net::shutdown(&*self.listener, rustix::net::Shutdown::Both);
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    loop {
        let accepted = listener.accept();
        if shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        let client = match accepted {
            Ok((client, _)) => client,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::ECONNABORTED)) => continue,
            Err(e) => {
                // Out of fds or memory: the clients wait in the backlog meanwhile.
                tracing::warn!("the sandbox's proxy could not accept a connection: {e}");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if shared.open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            shared.open.fetch_sub(1, Ordering::SeqCst);
            let answer = Answer::new(
                503,
                format!("more than {MAX_CONNECTIONS} connections are open through the sandbox's proxy"),
            );
            let _ = (&client).write_all(&answer.to_bytes());
            continue;
        }
        let s = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("sandbox-proxy-conn".into())
            // Room for getaddrinfo and its NSS modules.
            .stack_size(256 * 1024)
            .spawn(move || {
                connection(client, &s);
                s.open.fetch_sub(1, Ordering::SeqCst);
            });
        if let Err(e) = spawned {
            shared.open.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!("the sandbox's proxy could not start a thread for a connection: {e}");
        }
    }
}

/// One client connection, from its request head to its end.
fn connection(mut client: TcpStream, shared: &Shared) {
    let _ = client.set_read_timeout(Some(HEAD_TIMEOUT));
    let _ = client.set_nodelay(true);
    let opened = http::read_head(&mut client)
        .and_then(|(buf, len)| Ok((http::parse(&buf[..len])?, buf, len)))
        .and_then(|(request, buf, len)| {
            let account = shared.client(&buf[..len])?;
            let (host, port) = request.host();
            account.admit(host, port)?;
            let upstream = reach(host, port, &account)?;
            Ok((request, upstream, buf, len))
        });
    match opened {
        Ok((request, upstream, buf, len)) => {
            let _ = client.set_read_timeout(None);
            let _ = upstream.set_nodelay(true);
            let mut first = Vec::new();
            match request {
                Request::Tunnel { .. } => {
                    if client
                        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                        .is_err()
                    {
                        return;
                    }
                }
                Request::Forward { head, .. } => first = head,
            }
            first.extend_from_slice(&buf[len..]);
            relay(client, upstream, &first);
        }
        Err(answer) => answer_and_close(client, &answer),
    }
}

/// Writes `answer`, then reads what the client still sends until it
/// closes (briefly), so that closing does not reset the connection before
/// the client has read the answer.
fn answer_and_close(mut client: TcpStream, answer: &Answer) {
    if client.write_all(&answer.to_bytes()).is_err() {
        return;
    }
    let _ = client.shutdown(Shutdown::Write);
    let _ = client.set_read_timeout(Some(Duration::from_secs(2)));
    let mut sink = [0u8; 4096];
    let mut left: usize = 64 * 1024;
    while left > 0 {
        match client.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

/// Resolves `host` here, on the host side, and connects to the first
/// address the policy allows. A refusal is recorded only when no address
/// was allowed.
fn reach(host: &Host, port: u16, account: &Account) -> Result<TcpStream, Answer> {
    let addrs: Vec<SocketAddr> = match host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, port)],
        Host::Name(name) => match (name.as_str(), port).to_socket_addrs() {
            Ok(addrs) => addrs.collect(),
            Err(e) => return Err(Answer::new(502, format!("could not resolve {name} ({e})"))),
        },
    };
    let mut refused = None;
    let mut failed = None;
    for addr in addrs {
        if let Err(refusal) = account.policy.judge_address(addr.ip(), port) {
            refused.get_or_insert(refusal);
            continue;
        }
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(stream) => {
                tracing::debug!(%host, port, %addr, "the sandbox's proxy connected");
                return Ok(stream);
            }
            Err(e) => failed = Some((addr, e)),
        }
    }
    match (failed, refused) {
        (Some((addr, e)), _) => Err(Answer::new(
            502,
            format!("could not connect to {host}:{port} at {addr} ({e})"),
        )),
        (None, Some(refusal)) => Err(account.refuse(host, port, &refusal)),
        (None, None) => Err(Answer::new(502, format!("{host} resolved to no address"))),
    }
}

/// Copies bytes both ways until both directions have ended: `first` to
/// the server, then whatever each side sends. An end of file is passed on
/// as a half-close; an error ends both directions.
fn relay(client: TcpStream, upstream: TcpStream, first: &[u8]) {
    if (&upstream).write_all(first).is_err() {
        return;
    }
    let (Ok(client_in), Ok(upstream_out)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let outbound = std::thread::Builder::new()
        .name("sandbox-proxy-up".into())
        .stack_size(64 * 1024)
        .spawn(move || pipe(&client_in, &upstream_out));
    let Ok(outbound) = outbound else { return };
    pipe(&upstream, &client);
    let _ = outbound.join();
}

/// Copies `from` to `to` until end of file (then half-closes `to`) or an
/// error (then shuts both down, so the other direction ends too): through
/// a kernel pipe with `splice`, so no byte is copied into this process,
/// else (no pipe to be had) through a buffer of [`BUFFER`] bytes.
fn pipe(from: &TcpStream, to: &TcpStream) {
    if let Some(ended) = splice_all(from, to) {
        match ended {
            true => {
                let _ = to.shutdown(Shutdown::Write);
            }
            false => {
                let _ = from.shutdown(Shutdown::Both);
                let _ = to.shutdown(Shutdown::Both);
            }
        }
        return;
    }
    let mut buf = vec![0u8; BUFFER];
    loop {
        let n = match (&*from).read(&mut buf) {
            Ok(0) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if (&*to).write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// Moves `from`'s bytes to `to` through a pipe of [`PIPE`] bytes with
/// `splice`, until end of file (`Some(true)`) or an error (`Some(false)`);
/// `None` when no pipe could be made (nothing was moved).
fn splice_all(from: &TcpStream, to: &TcpStream) -> Option<bool> {
    use rustix::pipe::{PipeFlags, SpliceFlags, pipe_with};
    let (r, w) = pipe_with(PipeFlags::CLOEXEC).ok()?;
    // A failure leaves the pipe its default size (64 KiB).
    let _ = rustix::pipe::fcntl_setpipe_size(&w, PIPE);
    let splice = |from: &dyn AsFd, to: &dyn AsFd, len: usize| -> rustix::io::Result<usize> {
        rustix::io::retry_on_intr(|| rustix::pipe::splice(from.as_fd(), None, to.as_fd(), None, len, SpliceFlags::MOVE))
    };
    loop {
        match splice(from, &w, PIPE) {
            Ok(0) => return Some(true),
            Err(_) => return Some(false),
            Ok(n) => {
                let mut left = n;
                while left > 0 {
                    match splice(&r, to, left) {
                        Ok(m) if m > 0 => left -= m,
                        _ => return Some(false),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;

    /// A server on the host's loopback that answers each connection with
    /// `reply` after reading one line.
    fn origin(reply: &'static [u8]) -> (u16, std::thread::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut line = String::new();
            std::io::BufReader::new(&stream).read_line(&mut line).unwrap();
            (&stream).write_all(reply).unwrap();
        });
        (port, handle)
    }

    fn proxy(allow: &[&str]) -> Proxy {
        let policy = NetPolicy::new(allow, &[]).unwrap();
        Proxy::serve(TcpListener::bind("127.0.0.1:0").unwrap(), policy, None).unwrap()
    }

    fn exchange(proxy: &Proxy, request: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", proxy.port())).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = stream.read_to_string(&mut out);
        out
    }

    #[test]
    fn an_unlisted_host_gets_a_403_naming_the_rule_and_is_recorded() {
        let p = proxy(&["pypi.org"]);
        let out = exchange(&p, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
        assert!(
            out.starts_with(
                "HTTP/1.1 403 the sandbox's network policy refused example.com:443 (not in network.allow)\r\n"
            ),
            "{out}"
        );
        assert!(out.contains("X-Proxy-Error: blocked-by-allowlist"), "{out}");
        assert_eq!(
            p.refusals(),
            vec![Denial::Host {
                host: "example.com".into(),
                port: 443,
                rule: "not in network.allow".into()
            }]
        );
    }

    #[test]
    fn an_allowed_name_that_resolves_to_loopback_is_refused_unless_listed_by_address() {
        let (port, server) = origin(b"HTTP/1.0 200 OK\r\n\r\nfrom the host's loopback");
        let p = proxy(&["localhost"]);
        let out = exchange(&p, &format!("GET http://localhost:{port}/ HTTP/1.1\r\n\r\n"));
        assert!(out.starts_with("HTTP/1.1 403 "), "{out}");
        assert!(out.contains("special-purpose address"), "{out}");
        assert!(!out.contains("from the host's loopback"), "{out}");
        let listed = proxy(&["localhost", &format!("127.0.0.1:{port}")]);
        let out = exchange(&listed, &format!("GET http://localhost:{port}/x HTTP/1.1\r\n\r\n"));
        assert!(out.ends_with("from the host's loopback"), "{out}");
        server.join().unwrap();
    }

    #[test]
    fn a_tunnel_relays_both_ways_after_its_200() {
        let (port, server) = origin(b"pong\n");
        let p = proxy(&[&format!("127.0.0.1:{port}")]);
        let mut stream = TcpStream::connect(("127.0.0.1", p.port())).unwrap();
        stream
            .write_all(format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nping\n").as_bytes())
            .unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).unwrap();
        assert_eq!(out, "HTTP/1.1 200 Connection established\r\n\r\npong\n");
        server.join().unwrap();
        assert!(p.refusals().is_empty());
    }

    #[test]
    fn a_plain_request_reaches_its_server_in_origin_form() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut head = String::new();
            let mut reader = std::io::BufReader::new(&stream);
            while reader.read_line(&mut head).unwrap() > 2 {}
            (&stream).write_all(b"HTTP/1.0 200 OK\r\n\r\nok").unwrap();
            head
        });
        let p = proxy(&[&format!("127.0.0.1:{port}")]);
        let out = exchange(
            &p,
            &format!("GET http://127.0.0.1:{port}/p?q HTTP/1.1\r\nProxy-Connection: keep-alive\r\n\r\n"),
        );
        assert!(out.ends_with("\r\n\r\nok"), "{out}");
        let head = server.join().unwrap();
        assert_eq!(
            head,
            format!("GET /p?q HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")
        );
    }

    #[test]
    fn a_token_is_32_lowercase_hex_digits_and_fresh_each_time() {
        let (a, b) = (fresh_token().unwrap(), fresh_token().unwrap());
        for token in [&a, &b] {
            assert_eq!(token.len(), 32, "{token}");
            assert!(
                token.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)),
                "{token}"
            );
        }
        assert_ne!(a, b);
    }

    #[test]
    fn a_shared_proxy_serves_registered_clients_by_token_each_under_its_own_policy() {
        let clients = Clients::new();
        let p = Proxy::serve_clients(TcpListener::bind("127.0.0.1:0").unwrap(), clients.clone()).unwrap();
        let wide = clients
            .register(NetPolicy::new(&["*.example.com"], &[]).unwrap(), None)
            .unwrap();
        let narrow = clients
            .register(NetPolicy::new(&["a.example.com"], &[]).unwrap(), None)
            .unwrap();
        assert_ne!(wide.token(), narrow.token());
        let connect = |token: Option<&str>| {
            let auth = token.map_or_else(String::new, |t| {
                let basic = encode(&format!("bash-mcp:{t}"));
                format!("Proxy-Authorization: Basic {basic}\r\n")
            });
            exchange(&p, &format!("CONNECT b.example.com:443 HTTP/1.1\r\n{auth}\r\n"))
        };
        // No credentials, or a token nobody holds: 407, recorded for no one.
        for token in [None, Some("0123456789abcdef0123456789abcdef")] {
            let out = connect(token);
            assert!(out.starts_with("HTTP/1.1 407 the sandbox's proxy serves only"), "{out}");
            assert!(out.contains("\r\nProxy-Authenticate: Basic"), "{out}");
        }
        assert!(wide.refusals().is_empty() && narrow.refusals().is_empty());
        // The narrow client is refused and it alone has the refusal.
        let out = connect(Some(narrow.token()));
        assert!(out.starts_with("HTTP/1.1 403 "), "{out}");
        assert_eq!(narrow.refusals().len(), 1);
        assert!(wide.refusals().is_empty());
        // A dropped client's token opens nothing any more.
        let token = narrow.token().to_owned();
        drop(narrow);
        assert_eq!(clients.len(), 1);
        assert!(connect(Some(&token)).starts_with("HTTP/1.1 407 "));
    }

    /// Base64 of `text` (for Basic credentials).
    fn encode(text: &str) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in text.as_bytes().chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    #[test]
    fn dropping_the_proxy_stops_its_listener() {
        let p = proxy(&["*"]);
        let port = p.port();
        drop(p);
        wait_refused(port);
    }

    /// Waits until nothing accepts on `port` any more (the accept loop has
    /// closed its listener), within a hang guard.
    pub(super) fn wait_refused(port: u16) {
        let start = std::time::Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_ok() {
            assert!(start.elapsed() < Duration::from_secs(30), "port {port} still accepts");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
