//! The proxy's side of HTTP: reading a request's head, deciding where it
//! goes (a `CONNECT` tunnel, or a plain HTTP request judged by its host),
//! rewriting a plain request for the server it goes to, and the answers the
//! proxy gives itself. Parsing is `httparse`'s (the parser under hyper);
//! no TLS is looked into.

use std::io::Read;

use super::policy::Host;

/// The longest request head the proxy reads.
pub const MAX_HEAD: usize = 16 * 1024;
/// The most header fields a request head may have.
const MAX_HEADERS: usize = 100;

/// Hop-by-hop fields a forwarded request loses (the proxy writes its own
/// `Host` and `Connection`).
const DROPPED: &[&str] = &[
    "host",
    "connection",
    "proxy-connection",
    "proxy-authorization",
    "keep-alive",
];

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `CONNECT host:port`: a tunnel (TLS, usually), answered with 200
    /// once the server is reached.
    Tunnel { host: Host, port: u16 },
    /// A plain HTTP request: `head` is what the server gets (its path in
    /// origin form, `Connection: close`).
    Forward { host: Host, port: u16, head: Vec<u8> },
}

impl Request {
    pub fn host(&self) -> (&Host, u16) {
        match self {
            Request::Tunnel { host, port } | Request::Forward { host, port, .. } => (host, *port),
        }
    }
}

/// An answer the proxy gives itself: a status, a reason phrase that says
/// what happened (tools print it), and a body saying it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub reason: String,
    /// The `X-Proxy-Error` code of a refusal.
    pub code: Option<&'static str>,
    /// Whether it asks for credentials (`Proxy-Authenticate`, with a 407).
    pub challenge: bool,
}

impl Answer {
    pub fn new(status: u16, reason: impl Into<String>) -> Answer {
        Answer {
            status,
            reason: reason.into(),
            code: None,
            challenge: false,
        }
    }

    /// The answer's bytes. The reason phrase is ASCII without line breaks,
    /// as HTTP wants it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let reason: String = self
            .reason
            .chars()
            .map(|c| if c.is_ascii() && !c.is_ascii_control() { c } else { '?' })
            .collect();
        let body = format!("bash-mcp sandbox: {reason}\n");
        let mut out = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n",
            self.status
        );
        if let Some(code) = self.code {
            out.push_str(&format!("X-Proxy-Error: {code}\r\n"));
        }
        if self.challenge {
            out.push_str("Proxy-Authenticate: Basic realm=\"bash-mcp sandbox\"\r\n");
        }
        out.push_str(&format!(
            "Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
        out.into_bytes()
    }
}

fn bad(reason: impl Into<String>) -> Answer {
    Answer::new(400, reason)
}

/// Reads from `stream` until a whole request head is in: the bytes read
/// (the head, and what followed it) and the head's length.
pub fn read_head(stream: &mut impl Read) -> Result<(Vec<u8>, usize), Answer> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = match stream.read(&mut chunk) {
            Ok(0) => return Err(bad("the connection closed before a whole request head")),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Answer::new(408, format!("no whole request head arrived ({e})"))),
        };
        let searched_from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        let end = buf[searched_from..]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|at| searched_from + at + 4);
        match end {
            Some(end) if end <= MAX_HEAD => return Ok((buf, end)),
            None if buf.len() <= MAX_HEAD => {}
            _ => {
                return Err(Answer::new(
                    431,
                    format!("the request head is longer than {MAX_HEAD} bytes"),
                ));
            }
        }
    }
}

/// The request in `head` (a whole head, as [`read_head`] returns it).
pub fn parse(head: &[u8]) -> Result<Request, Answer> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut fields);
    match request.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(bad("an incomplete request head")),
        Err(e) => return Err(bad(format!("a malformed request head ({e})"))),
    }
    let method = request.method.unwrap_or_default();
    let target = request.path.unwrap_or_default();
    let host_field = request
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map(|h| std::str::from_utf8(h.value).map_err(|_| bad("a Host field that is not text")))
        .transpose()?;
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = authority(target, None)?;
        return Ok(Request::Tunnel { host, port });
    }
    let (host, port, path) = match target.split_once("://") {
        Some((scheme, rest)) => {
            if !scheme.eq_ignore_ascii_case("http") {
                return Err(bad(format!(
                    "a {scheme}:// request can only go through a CONNECT tunnel (the proxy does not look into TLS)"
                )));
            }
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let (host, port) = authority(&rest[..end], Some(80))?;
            // The field must not name another host than the one judged.
            if let Some(field) = host_field
                && authority(field, Some(80))? != (host.clone(), port)
            {
                return Err(bad(format!(
                    "the Host field ({field}) names another host than the request ({})",
                    &rest[..end]
                )));
            }
            let path = match &rest[end..] {
                "" => "/".to_owned(),
                p if p.starts_with('/') => p.to_owned(),
                p => format!("/{p}"),
            };
            (host, port, path)
        }
        None if target.starts_with('/') => {
            let field =
                host_field.ok_or_else(|| bad("a request without a host (no absolute URL and no Host field)"))?;
            let (host, port) = authority(field, Some(80))?;
            (host, port, target.to_owned())
        }
        None => return Err(bad(format!("a request target the proxy cannot forward ({target})"))),
    };
    let mut out = format!("{method} {path} HTTP/1.{}\r\n", request.version.unwrap_or(1)).into_bytes();
    let default_port = if port == 80 { String::new() } else { format!(":{port}") };
    out.extend_from_slice(format!("Host: {}{default_port}\r\n", host.to_authority()).as_bytes());
    for field in request.headers.iter() {
        if DROPPED.iter().any(|d| field.name.eq_ignore_ascii_case(d)) {
            continue;
        }
        out.extend_from_slice(field.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(field.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Request::Forward { host, port, head: out })
}

/// The password of the request's `Proxy-Authorization: Basic` field (a
/// proxy URL's `http://user:password@host:port` becomes one), if it has
/// one.
pub fn credentials(head: &[u8]) -> Option<Vec<u8>> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut fields);
    request.parse(head).ok()?;
    let value = request
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("proxy-authorization"))?
        .value;
    let value = std::str::from_utf8(value).ok()?.trim();
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64_decode(encoded.trim())?;
    let at = decoded.iter().position(|&b| b == b':')?;
    Some(decoded[at + 1..].to_vec())
}

/// Standard base64 with padding (RFC 4648 section 4), as Basic credentials use it.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// `host:port` (`[v6]:port`); the port may be left out only where
/// `default` gives one. No user information: `user@host` would let the
/// judged and the reached host differ between readers.
fn authority(text: &str, default: Option<u16>) -> Result<(Host, u16), Answer> {
    if text.contains('@') {
        return Err(bad(format!("user information in a proxied address ({text})")));
    }
    let (host, port) = match text.rsplit_once(':') {
        // `[::1]` alone has colons inside its brackets only.
        Some((host, port)) if !port.contains(']') => (host, Some(port)),
        _ => (text, None),
    };
    let port = match (port, default) {
        (Some(p), _) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| bad(format!("`{p}` is not a port ({text})")))?,
        (None, Some(d)) => d,
        (None, None) => return Err(bad(format!("no port in {text}"))),
    };
    let host = Host::parse(host).ok_or_else(|| bad(format!("`{host}` is not a host name or an address")))?;
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> Host {
        Host::Name(n.into())
    }

    #[test]
    fn connect_names_a_tunnel() {
        assert_eq!(
            parse(b"CONNECT PyPI.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n"),
            Ok(Request::Tunnel {
                host: name("pypi.org"),
                port: 443
            })
        );
        assert_eq!(
            parse(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n"),
            Ok(Request::Tunnel {
                host: Host::Ip("::1".parse().unwrap()),
                port: 8443
            })
        );
        assert_eq!(parse(b"CONNECT pypi.org HTTP/1.1\r\n\r\n").unwrap_err().status, 400);
    }

    #[test]
    fn a_plain_request_is_rewritten_for_its_server() {
        let head = b"GET http://Example.com:8080/a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n";
        let Ok(Request::Forward { host, port, head }) = parse(head) else {
            panic!("forwarded")
        };
        assert_eq!((host, port), (name("example.com"), 8080));
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "GET /a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let Ok(Request::Forward { host, port, .. }) = parse(b"GET / HTTP/1.0\r\nHost: deb.debian.org\r\n\r\n") else {
            panic!("origin form")
        };
        assert_eq!((host, port), (name("deb.debian.org"), 80));
    }

    #[test]
    fn requests_that_could_reach_another_host_than_the_judged_one_are_refused() {
        for (head, says) in [
            (
                &b"GET http://pypi.org/ HTTP/1.1\r\nHost: evil.com\r\n\r\n"[..],
                "names another host",
            ),
            (b"GET http://pypi.org@evil.com/ HTTP/1.1\r\n\r\n", "user information"),
            (b"GET https://pypi.org/ HTTP/1.1\r\n\r\n", "CONNECT tunnel"),
            (b"GET / HTTP/1.1\r\n\r\n", "without a host"),
            (b"GET http://a b/ HTTP/1.1\r\n\r\n", "malformed"),
            (b"GET http://2130706433/ HTTP/1.1\r\n\r\n", "not a host name"),
        ] {
            let e = parse(head).unwrap_err();
            assert!(
                e.status == 400 && e.reason.contains(says),
                "{}: {e:?}",
                String::from_utf8_lossy(head)
            );
        }
    }

    #[test]
    fn basic_credentials_give_their_password() {
        // "bash-mcp:s3cret" and "u:" in base64.
        let head = b"CONNECT a.b:443 HTTP/1.1\r\nProxy-Authorization: Basic YmFzaC1tY3A6czNjcmV0\r\n\r\n";
        assert_eq!(credentials(head), Some(b"s3cret".to_vec()));
        assert_eq!(
            credentials(b"GET / HTTP/1.1\r\nproxy-authorization: basic dTo=\r\n\r\n"),
            Some(Vec::new())
        );
        for head in [
            &b"CONNECT a.b:443 HTTP/1.1\r\n\r\n"[..],
            b"CONNECT a.b:443 HTTP/1.1\r\nProxy-Authorization: Bearer YmFzaC1tY3A6czNjcmV0\r\n\r\n",
            b"CONNECT a.b:443 HTTP/1.1\r\nProxy-Authorization: Basic !!!\r\n\r\n",
            b"CONNECT a.b:443 HTTP/1.1\r\nProxy-Authorization: Basic bm9jb2xvbg==\r\n\r\n",
        ] {
            assert_eq!(credentials(head), None, "{}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn heads_are_read_whole_and_bounded() {
        let mut input: &[u8] = b"CONNECT a.b:443 HTTP/1.1\r\n\r\nTLS bytes";
        let (buf, len) = read_head(&mut input).unwrap();
        assert_eq!(&buf[len..], b"TLS bytes");
        let long = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "y".repeat(MAX_HEAD));
        assert_eq!(read_head(&mut long.as_bytes()).unwrap_err().status, 431);
        assert_eq!(read_head(&mut &b"GET / HTTP/1.1\r\n"[..]).unwrap_err().status, 400);
    }

    #[test]
    fn an_answer_names_its_reason_in_the_status_line_and_the_body() {
        let mut answer = Answer::new(403, "refused: x.org:443 is not in network.allow");
        answer.code = Some("blocked-by-allowlist");
        let text = String::from_utf8(answer.to_bytes()).unwrap();
        assert!(
            text.starts_with("HTTP/1.1 403 refused: x.org:443 is not in network.allow\r\n"),
            "{text}"
        );
        assert!(text.contains("\r\nX-Proxy-Error: blocked-by-allowlist\r\n"), "{text}");
        assert!(
            text.ends_with("\r\n\r\nbash-mcp sandbox: refused: x.org:443 is not in network.allow\n"),
            "{text}"
        );
    }
}
