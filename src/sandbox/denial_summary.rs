//! The denials of one command in one short phrase a model reads in a
//! result's text: what was refused, grouped by kind, each kind with why.

use super::denial::{BIND_RULE, Denial, SOCKET_RULE};

/// Objects named per kind before the rest is counted ("and 4 more").
const NAMED_PER_KIND: usize = 3;

/// The kinds of refusal, in the order a summary names them.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Write,
    Read,
    Host,
    Direct,
    Connect,
    Send,
    Socket,
    AttachSocket,
    Bind,
}

impl Kind {
    fn of(denial: &Denial) -> (Kind, String) {
        match denial {
            Denial::Write { path } => (Kind::Write, path.clone()),
            Denial::Connect { addr } => (Kind::Connect, addr.clone()),
            Denial::Send { addr } => (Kind::Send, addr.clone()),
            Denial::Read { path } => (Kind::Read, path.clone()),
            Denial::Socket { family } => (Kind::Socket, family.clone()),
            Denial::Host { host, port, .. } => (Kind::Host, format!("{host}:{port}")),
            Denial::Direct { addr } => (Kind::Direct, addr.clone()),
            Denial::AttachSocket { path } => (Kind::AttachSocket, path.clone()),
            Denial::Bind { addr } => (Kind::Bind, addr.clone()),
        }
    }

    /// The noun for `count` refusals of this kind.
    fn noun(self, count: usize) -> &'static str {
        match (self, count) {
            (Kind::Write, 1) => "a write to",
            (Kind::Write, _) => "writes to",
            (Kind::Connect, 1) | (Kind::Host, 1) => "a network connection to",
            (Kind::Connect, _) | (Kind::Host, _) => "network connections to",
            (Kind::Direct, 1) => "a direct connection to",
            (Kind::Direct, _) => "direct connections to",
            (Kind::Read, 1) => "a read of",
            (Kind::Read, _) => "reads of",
            (Kind::Send, 1) => "a network send to",
            (Kind::Send, _) => "network sends to",
            (Kind::Socket, 1) => "a socket of family",
            (Kind::Socket, _) => "sockets of families",
            (Kind::AttachSocket, 1) => "a connection to the bash-mcp attach socket",
            (Kind::AttachSocket, _) => "connections to the bash-mcp attach sockets",
            (Kind::Bind, 1) => "a server's port at",
            (Kind::Bind, _) => "servers' ports at",
        }
    }

    /// Why refusals of this kind were made; for the proxy's, the rules
    /// that refused `denied`.
    fn why(self, denied: &[Denial]) -> String {
        match self {
            Kind::Write => "outside the writable roots, or protected".into(),
            Kind::Read => "hidden by read_deny".into(),
            Kind::Connect | Kind::Send => "network is off".into(),
            Kind::Socket => SOCKET_RULE.into(),
            Kind::Bind => BIND_RULE.into(),
            Kind::AttachSocket => "sessions are for people, not for sandboxed commands".into(),
            Kind::Direct => "only the sandbox's proxy reaches the network: use HTTP_PROXY/HTTPS_PROXY".into(),
            Kind::Host => {
                let mut rules: Vec<&str> = Vec::new();
                for denial in denied {
                    if let Denial::Host { rule, .. } = denial
                        && !rules.contains(&rule.as_str())
                    {
                        rules.push(rule);
                    }
                }
                format!("the network policy: {}", rules.join("; "))
            }
        }
    }
}

/// What the sandbox refused, briefly: `a write to /etc/x (outside the
/// writable roots, or protected); network connections to 1.1.1.1:443 and
/// 10.0.0.1:80 (network is off)`. At most three objects per kind are named;
/// the rest are counted (every one is in the result's `sandbox.denied`).
/// Empty when nothing was refused.
pub fn summary(denied: &[Denial]) -> String {
    let mut kinds: Vec<(Kind, Vec<String>)> = Vec::new();
    for denial in denied {
        let (kind, object) = Kind::of(denial);
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, objects)) => objects.push(object),
            None => kinds.push((kind, vec![object])),
        }
    }
    kinds.sort_by_key(|(kind, _)| *kind);
    let phrases: Vec<String> = kinds
        .iter()
        .map(|(kind, objects)| {
            let objects: Vec<&str> = objects.iter().map(String::as_str).collect();
            format!(
                "{} {} ({})",
                kind.noun(objects.len()),
                listed(&objects),
                kind.why(denied)
            )
        })
        .collect();
    phrases.join("; ")
}

/// `a`, `a and b`, `a, b and c`, `a, b, c and 2 more`.
fn listed(objects: &[&str]) -> String {
    let named = &objects[..objects.len().min(NAMED_PER_KIND)];
    let rest = objects.len() - named.len();
    match (named, rest) {
        ([one], 0) => (*one).to_owned(),
        (named, 0) => {
            let (last, first) = named.split_last().expect("at least two");
            format!("{} and {last}", first.join(", "))
        }
        (named, rest) => format!("{} and {rest} more", named.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &str) -> Denial {
        Denial::Write { path: path.into() }
    }

    #[test]
    fn one_denial_names_it_and_why() {
        assert_eq!(
            summary(&[write("/etc/x")]),
            "a write to /etc/x (outside the writable roots, or protected)"
        );
        assert_eq!(summary(&[]), "");
    }

    #[test]
    fn kinds_are_grouped_and_long_lists_counted() {
        let denied = [
            Denial::Connect {
                addr: "1.1.1.1:443".into(),
            },
            write("/a"),
            write("/b"),
            write("/c"),
            write("/d"),
            write("/e"),
            Denial::Socket {
                family: "AF_INET6".into(),
            },
        ];
        assert_eq!(
            summary(&denied),
            "writes to /a, /b, /c and 2 more (outside the writable roots, or protected); \
             a network connection to 1.1.1.1:443 (network is off); \
             a socket of family AF_INET6 (network is off, or open by name: TCP through the sandbox's proxy only)"
        );
        assert_eq!(
            summary(&[write("/a"), write("/b")]),
            "writes to /a and /b (outside the writable roots, or protected)"
        );
    }

    #[test]
    fn proxy_refusals_name_their_rules_and_direct_connections_the_proxy() {
        let host = |host: &str, rule: &str| Denial::Host {
            host: host.into(),
            port: 443,
            rule: rule.into(),
        };
        let denied = [
            host("a.com", "not in network.allow"),
            Denial::Direct {
                addr: "151.101.0.223:443".into(),
            },
            host("b.com", "not in network.allow"),
            host("localhost", "special-purpose address 127.0.0.1 (loopback)"),
        ];
        assert_eq!(
            summary(&denied),
            "network connections to a.com:443, b.com:443 and localhost:443 (the network policy: not in network.allow; \
             special-purpose address 127.0.0.1 (loopback)); \
             a direct connection to 151.101.0.223:443 (only the sandbox's proxy reaches the network: use HTTP_PROXY/HTTPS_PROXY)"
        );
    }
}
