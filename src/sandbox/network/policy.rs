//! A network policy by name: which hosts a sandboxed command may reach
//! through the proxy. Entries are exact names (`pypi.org`), subdomain
//! wildcards (`*.pythonhosted.org`: any name below it, not the name
//! itself), `*` (every name), IP addresses and CIDR blocks, each with an
//! optional port (`localhost:5432`, `[::1]:8080`), and built-in lists
//! (`@package-registries`). The deny list is checked first; an empty allow
//! list allows nothing.
//!
//! Addresses are judged after resolution too: a deny block refuses an
//! address whatever name led to it, and a special-purpose address
//! (loopback, private, link-local, ...: see [`address`]) is
//! refused unless an allow entry names it by address.

use std::net::IpAddr;

use serde_json::{Value, json};

use super::address;

/// The built-in lists an entry may name, with the hosts in each.
pub const LISTS: &[(&str, &[&str])] = &[(
    "@package-registries",
    &[
        // Rust: the sparse index, the crate files, and the API that
        // `cargo search`, `publish` and `owner` use.
        "index.crates.io",
        "static.crates.io",
        "crates.io",
        // Python: the index and JSON API, and the file host.
        "pypi.org",
        "files.pythonhosted.org",
        // JavaScript: npm's registry (tarballs included) and yarn's alias of it.
        "registry.npmjs.org",
        "registry.yarnpkg.com",
        // Debian's archive and its security updates.
        "deb.debian.org",
        "security.debian.org",
    ],
)];

/// A host a connection asks for: a name, or an address written as one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    Name(String),
    Ip(IpAddr),
}

impl Host {
    /// A host as a request names it (`Example.COM.`, `127.0.0.1`,
    /// `[::1]`, `::1`): names lowercased without a trailing dot; `None`
    /// for anything that is neither a DNS name nor an address.
    pub fn parse(text: &str) -> Option<Host> {
        let inner = text.strip_prefix('[').and_then(|t| t.strip_suffix(']'));
        if let Some(v6) = inner {
            return v6.parse().ok().map(|ip| Host::Ip(IpAddr::V6(ip)));
        }
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Some(Host::Ip(ip));
        }
        dns_name(text).map(Host::Name)
    }

    /// The host as it is written in a URL authority.
    pub fn to_authority(&self) -> String {
        match self {
            Host::Name(name) => name.clone(),
            Host::Ip(IpAddr::V4(ip)) => ip.to_string(),
            Host::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
        }
    }
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// `text` as a DNS name (lowercase, no trailing dot), when it is one:
/// labels of letters, digits, `-` and `_`, 1 to 63 bytes each, 253 in all.
fn dns_name(text: &str) -> Option<String> {
    let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    let valid = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    // A last label of digits, or `0x` and hex digits, makes the whole an
    // address in some spelling (`2130706433`, `127.1`, `0x7f.1`), as
    // getaddrinfo and URL parsers read it: not a name. No real top-level
    // domain looks like that.
    let last = name.rsplit('.').next().unwrap_or("");
    let hex = last
        .strip_prefix("0x")
        .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
    let numeric = hex || last.bytes().all(|b| b.is_ascii_digit());
    (valid && !numeric).then_some(name)
}

/// What one rule matches.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// `*`: every name and every address written as a host.
    Any,
    Exact(String),
    /// `*.suffix`: every name below `suffix`.
    Below(String),
    /// An address or a CIDR block.
    Block(IpAddr, u8),
}

/// One pattern with the port it is limited to.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    pattern: Pattern,
    port: Option<u16>,
}

impl Rule {
    fn parse(text: &str) -> Result<Rule, String> {
        if text.contains('/') {
            let (ip, prefix) = text.split_once('/').expect("has a slash");
            let ip: IpAddr = ip
                .parse()
                .map_err(|_| format!("`{text}` is not a CIDR block: `{ip}` is not an IP address"))?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = prefix
                .parse()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("`{text}` is not a CIDR block: the prefix length must be 0 to {max}"))?;
            return Ok(Rule {
                pattern: Pattern::Block(ip, prefix),
                port: None,
            });
        }
        let (host, port) = split_port(text)?;
        let pattern = if host == "*" {
            Pattern::Any
        } else if let Some(suffix) = host.strip_prefix("*.") {
            match dns_name(suffix) {
                Some(suffix) => Pattern::Below(suffix),
                None => return Err(format!("`{text}`: `{suffix}` after `*.` is not a host name")),
            }
        } else {
            match Host::parse(host) {
                Some(Host::Name(name)) => Pattern::Exact(name),
                Some(Host::Ip(ip)) => Pattern::Block(ip, if ip.is_ipv4() { 32 } else { 128 }),
                None => {
                    return Err(format!(
                        "`{text}` is not a host name, `*.suffix`, `*`, an IP address or a CIDR block (names are ASCII: write an international name in its xn-- form)"
                    ));
                }
            }
        };
        Ok(Rule { pattern, port })
    }

    fn port_matches(&self, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
    }

    /// Whether the rule matches `host` itself (names by name, addresses
    /// written as hosts by address).
    fn matches_host(&self, host: &Host, port: u16) -> bool {
        self.port_matches(port)
            && match (&self.pattern, host) {
                (Pattern::Any, _) => true,
                (Pattern::Exact(name), Host::Name(h)) => name == h,
                (Pattern::Below(suffix), Host::Name(h)) => is_below(h, suffix),
                (Pattern::Block(net, prefix), Host::Ip(ip)) => in_block(*ip, *net, *prefix),
                _ => false,
            }
    }

    /// Whether the rule names `ip` by address.
    fn matches_address(&self, ip: IpAddr, port: u16) -> bool {
        self.port_matches(port) && matches!(self.pattern, Pattern::Block(net, prefix) if in_block(ip, net, prefix))
    }

    /// Whether everything `other` matches, this rule matches too (so a
    /// call that asks for `other` asks for no more than this).
    fn covers(&self, other: &Rule) -> bool {
        let ports = match (self.port, other.port) {
            (None, _) => true,
            (Some(a), Some(b)) => a == b,
            (Some(_), None) => false,
        };
        ports
            && match (&self.pattern, &other.pattern) {
                (Pattern::Any, Pattern::Block(..)) => false, // an address entry also lets special addresses through
                (Pattern::Any, _) => true,
                (Pattern::Exact(a), Pattern::Exact(b)) => a == b,
                (Pattern::Below(s), Pattern::Exact(b)) => is_below(b, s),
                (Pattern::Below(s), Pattern::Below(t)) => t == s || is_below(t, s),
                (Pattern::Block(net, p), Pattern::Block(ip, q)) => q >= p && in_block(*ip, *net, *p),
                _ => false,
            }
    }
}

/// `host` or `host:port` (`[v6]:port` for an IPv6 address).
fn split_port(text: &str) -> Result<(&str, Option<u16>), String> {
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .map(Some)
            .ok_or_else(|| format!("`{text}`: `{p}` is not a port (1 to 65535)"))
    };
    if text.starts_with('[') {
        return match text.rsplit_once("]:") {
            Some((host, p)) => Ok((&text[..host.len() + 1], port(p)?)),
            None => Ok((text, None)),
        };
    }
    match text.matches(':').count() {
        1 => {
            let (host, p) = text.split_once(':').expect("one colon");
            Ok((host, port(p)?))
        }
        _ => Ok((text, None)), // no port, or a bare IPv6 address
    }
}

fn is_below(name: &str, suffix: &str) -> bool {
    name.len() > suffix.len() + 1 && name.ends_with(suffix) && name.as_bytes()[name.len() - suffix.len() - 1] == b'.'
}

fn in_block(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => address::in_v4(ip, net, prefix),
        (IpAddr::V6(ip), IpAddr::V6(net)) => address::in_v6(ip, net, prefix),
        // An IPv4 address reached as an IPv6 one is the same host.
        (IpAddr::V6(ip), IpAddr::V4(net)) => address::embedded_v4(ip).is_some_and(|v4| address::in_v4(v4, net, prefix)),
        (IpAddr::V4(_), IpAddr::V6(_)) => false,
    }
}

/// An entry of a list as it was written, with the rules it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    text: String,
    rules: Vec<Rule>,
}

impl Entry {
    fn parse(text: &str) -> Result<Entry, String> {
        let text = text.trim();
        if text.starts_with('@') {
            let (_, hosts) = LISTS.iter().find(|(name, _)| *name == text).ok_or_else(|| {
                let names: Vec<&str> = LISTS.iter().map(|(name, _)| *name).collect();
                format!("`{text}` is not a built-in list (there is {})", names.join(", "))
            })?;
            let rules = hosts.iter().map(|h| Rule::parse(h)).collect::<Result<_, _>>()?;
            return Ok(Entry {
                text: text.to_owned(),
                rules,
            });
        }
        Ok(Entry {
            text: text.to_owned(),
            rules: vec![Rule::parse(text)?],
        })
    }
}

/// Why the policy refused a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A deny entry matched (as written).
    Denied(String),
    /// No allow entry matched.
    NotAllowed,
    /// The host resolved to (or is) a special-purpose address that no
    /// allow entry names.
    SpecialAddress { ip: IpAddr, kind: &'static str },
}

impl Refusal {
    /// The rule that refused, as a result's denial names it.
    pub fn rule(&self) -> String {
        match self {
            Refusal::Denied(entry) => format!("network.deny: {entry}"),
            Refusal::NotAllowed => "not in network.allow".into(),
            Refusal::SpecialAddress { ip, kind } => format!("special-purpose address {ip} ({kind})"),
        }
    }

    /// The short code a proxy's refusal carries in its `X-Proxy-Error` header.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Denied(_) => "blocked-by-denylist",
            Refusal::NotAllowed => "blocked-by-allowlist",
            Refusal::SpecialAddress { .. } => "blocked-special-address",
        }
    }
}

/// The `network` policy: `{"allow": [...], "deny": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetPolicy {
    allow: Vec<Entry>,
    deny: Vec<Entry>,
}

impl NetPolicy {
    /// The policy of these entries; `Err` names the first entry that is
    /// not one, and why.
    pub fn new<S: AsRef<str>>(allow: &[S], deny: &[S]) -> Result<NetPolicy, String> {
        let entries = |list: &[S], key: &str| {
            list.iter()
                .map(|e| Entry::parse(e.as_ref()).map_err(|why| format!("`network.{key}`: {why}")))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(NetPolicy {
            allow: entries(allow, "allow")?,
            deny: entries(deny, "deny")?,
        })
    }

    /// Whether the policy allows nothing at all.
    pub fn allows_nothing(&self) -> bool {
        self.allow.iter().all(|e| e.rules.is_empty())
    }

    /// The entries of `allow` as written.
    pub fn allow(&self) -> impl Iterator<Item = &str> {
        self.allow.iter().map(|e| e.text.as_str())
    }

    /// The entries of `deny` as written.
    pub fn deny(&self) -> impl Iterator<Item = &str> {
        self.deny.iter().map(|e| e.text.as_str())
    }

    /// The policy as configuration JSON.
    pub fn to_value(&self) -> Value {
        let texts = |list: &[Entry]| list.iter().map(|e| e.text.clone()).collect::<Vec<_>>();
        json!({"allow": texts(&self.allow), "deny": texts(&self.deny)})
    }

    /// Judges the host a connection names: a deny entry first, then an
    /// allow entry must match it. An address written as the host is
    /// judged as an address too (see [`NetPolicy::judge_address`]).
    pub fn judge_host(&self, host: &Host, port: u16) -> Result<(), Refusal> {
        if let Some(entry) = self
            .deny
            .iter()
            .find(|e| e.rules.iter().any(|r| r.matches_host(host, port)))
        {
            return Err(Refusal::Denied(entry.text.clone()));
        }
        if !self
            .allow
            .iter()
            .flat_map(|e| &e.rules)
            .any(|r| r.matches_host(host, port))
        {
            return Err(Refusal::NotAllowed);
        }
        match host {
            Host::Ip(ip) => self.judge_address(*ip, port),
            Host::Name(_) => Ok(()),
        }
    }

    /// Judges an address an allowed host resolved to: a deny block
    /// refuses it, and a special-purpose one needs an allow entry that
    /// names it by address.
    pub fn judge_address(&self, ip: IpAddr, port: u16) -> Result<(), Refusal> {
        if let Some(entry) = self
            .deny
            .iter()
            .find(|e| e.rules.iter().any(|r| r.matches_address(ip, port)))
        {
            return Err(Refusal::Denied(entry.text.clone()));
        }
        match address::special_purpose(ip) {
            Some(kind)
                if !self
                    .allow
                    .iter()
                    .flat_map(|e| &e.rules)
                    .any(|r| r.matches_address(ip, port)) =>
            {
                Err(Refusal::SpecialAddress { ip, kind })
            }
            _ => Ok(()),
        }
    }

    /// The policy a call asks for within this one: each of its allow
    /// entries must lie inside one of ours, and both deny lists apply.
    /// `Err` is the call's first entry that reaches further.
    pub fn narrowed_by(&self, call: &NetPolicy) -> Result<NetPolicy, String> {
        for entry in &call.allow {
            let inside = entry
                .rules
                .iter()
                .all(|rule| self.allow.iter().flat_map(|e| &e.rules).any(|ours| ours.covers(rule)));
            if !inside {
                return Err(entry.text.clone());
            }
        }
        let mut deny = self.deny.clone();
        deny.extend(call.deny.iter().filter(|e| !self.deny.contains(e)).cloned());
        Ok(NetPolicy {
            allow: call.allow.clone(),
            deny,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow: &[&str], deny: &[&str]) -> NetPolicy {
        NetPolicy::new(allow, deny).unwrap()
    }

    fn host(text: &str) -> Host {
        Host::parse(text).unwrap()
    }

    #[test]
    fn exact_names_and_wildcards_match_as_written() {
        let p = policy(&["pypi.org", "*.pythonhosted.org"], &[]);
        assert_eq!(p.judge_host(&host("pypi.org"), 443), Ok(()));
        assert_eq!(p.judge_host(&host("PyPI.org."), 443), Ok(()));
        assert_eq!(p.judge_host(&host("files.pythonhosted.org"), 443), Ok(()));
        assert_eq!(p.judge_host(&host("a.b.pythonhosted.org"), 80), Ok(()));
        for refused in [
            "pythonhosted.org",
            "evilpythonhosted.org",
            "www.pypi.org",
            "pypi.org.evil.com",
        ] {
            assert_eq!(p.judge_host(&host(refused), 443), Err(Refusal::NotAllowed), "{refused}");
        }
    }

    #[test]
    fn deny_comes_first_and_an_empty_allow_list_allows_nothing() {
        let p = policy(&["*"], &["*.evil.com", "10.0.0.0/8"]);
        assert_eq!(
            p.judge_host(&host("x.evil.com"), 443),
            Err(Refusal::Denied("*.evil.com".into()))
        );
        assert_eq!(p.judge_host(&host("example.com"), 443), Ok(()));
        assert_eq!(
            p.judge_address("10.2.3.4".parse().unwrap(), 443),
            Err(Refusal::Denied("10.0.0.0/8".into()))
        );
        let none = policy(&[], &[]);
        assert!(none.allows_nothing());
        assert_eq!(none.judge_host(&host("pypi.org"), 443), Err(Refusal::NotAllowed));
    }

    #[test]
    fn special_addresses_are_refused_unless_named_by_address_and_port() {
        let p = policy(&["localhost", "127.0.0.1:5432", "10.20.0.0/16"], &[]);
        let lo = "127.0.0.1".parse().unwrap();
        assert_eq!(p.judge_host(&host("localhost"), 8080), Ok(()), "the name is allowed");
        assert_eq!(
            p.judge_address(lo, 8080),
            Err(Refusal::SpecialAddress {
                ip: lo,
                kind: "loopback"
            }),
            "but not the loopback address it resolves to"
        );
        assert_eq!(p.judge_address(lo, 5432), Ok(()), "the operator listed this service");
        assert_eq!(p.judge_address("10.20.0.5".parse().unwrap(), 443), Ok(()));
        assert!(p.judge_address("10.21.0.5".parse().unwrap(), 443).is_err());
        assert_eq!(p.judge_address("::ffff:127.0.0.1".parse().unwrap(), 5432), Ok(()));
        assert!(p.judge_address("::1".parse().unwrap(), 5432).is_err());
        // `*` allows any name and any public address, never a special one.
        let any = policy(&["*"], &[]);
        assert_eq!(any.judge_host(&host("151.101.0.223"), 443), Ok(()));
        assert!(matches!(
            any.judge_host(&host("169.254.169.254"), 80),
            Err(Refusal::SpecialAddress { kind: "link-local", .. })
        ));
    }

    #[test]
    fn ports_limit_an_entry() {
        let p = policy(&["example.com:443", "[::1]:8080"], &[]);
        assert_eq!(p.judge_host(&host("example.com"), 443), Ok(()));
        assert_eq!(p.judge_host(&host("example.com"), 80), Err(Refusal::NotAllowed));
        assert_eq!(p.judge_host(&host("[::1]"), 8080), Ok(()));
    }

    #[test]
    fn the_built_in_list_expands_and_names_itself() {
        let p = policy(&["@package-registries"], &[]);
        for name in [
            "pypi.org",
            "files.pythonhosted.org",
            "static.crates.io",
            "registry.npmjs.org",
        ] {
            assert_eq!(p.judge_host(&host(name), 443), Ok(()), "{name}");
        }
        assert_eq!(p.judge_host(&host("github.com"), 443), Err(Refusal::NotAllowed));
        assert_eq!(p.to_value(), json!({"allow": ["@package-registries"], "deny": []}));
    }

    #[test]
    fn bad_entries_say_what_an_entry_may_be() {
        for (entry, says) in [
            ("@registries", "not a built-in list (there is @package-registries)"),
            ("exa mple.com", "is not a host name"),
            ("*.", "after `*.` is not a host name"),
            ("example.com:0", "is not a port"),
            ("example.com:http", "is not a port"),
            ("10.0.0.0/33", "prefix length must be 0 to 32"),
            ("bücher.de", "xn--"),
            ("127.1", "is not a host name"),
        ] {
            let e = NetPolicy::new(&[entry], &[]).unwrap_err();
            assert!(e.contains("network.allow") && e.contains(says), "{entry}: {e}");
        }
    }

    #[test]
    fn hosts_parse_names_and_addresses_and_nothing_else() {
        assert_eq!(Host::parse("[::1]"), Some(Host::Ip("::1".parse().unwrap())));
        assert_eq!(Host::parse("Example.com."), Some(Host::Name("example.com".into())));
        for junk in ["", "a b", "a/b", "x@y", "2130706433", "0x7f.1", "..", "a..b"] {
            assert_eq!(Host::parse(junk), None, "{junk:?}");
        }
        assert_eq!(Host::Ip("::1".parse().unwrap()).to_authority(), "[::1]");
    }

    #[test]
    fn a_call_narrows_within_the_configured_policy_and_never_past_it() {
        let ours = policy(
            &["@package-registries", "*.example.com", "10.0.0.0/8", "api.x.org:443"],
            &["bad.example.com"],
        );
        let call = policy(
            &[
                "pypi.org",
                "a.example.com",
                "*.b.example.com",
                "10.1.0.0/16",
                "api.x.org:443",
            ],
            &["x.y"],
        );
        let narrowed = ours.narrowed_by(&call).unwrap();
        assert_eq!(narrowed.judge_host(&host("pypi.org"), 443), Ok(()));
        assert_eq!(
            narrowed.judge_host(&host("registry.npmjs.org"), 443),
            Err(Refusal::NotAllowed),
            "only what the call asked for"
        );
        assert_eq!(
            narrowed.judge_host(&host("bad.example.com"), 443),
            Err(Refusal::Denied("bad.example.com".into())),
            "the configured deny list stays"
        );
        for (wider, named) in [
            (policy(&["github.com"], &[]), "github.com"),
            (policy(&["*"], &[]), "*"),
            (policy(&["example.com"], &[]), "example.com"),
            (policy(&["*.org"], &[]), "*.org"),
            (policy(&["10.0.0.0/7"], &[]), "10.0.0.0/7"),
            (policy(&["api.x.org"], &[]), "api.x.org"),
        ] {
            assert_eq!(ours.narrowed_by(&wider), Err(named.to_owned()));
        }
        // `*` covers any name, but not an address entry (which would let a
        // special-purpose address through).
        let any = policy(&["*"], &[]);
        assert!(any.narrowed_by(&policy(&["pypi.org", "*.a.b"], &[])).is_ok());
        assert_eq!(
            any.narrowed_by(&policy(&["127.0.0.1"], &[])),
            Err("127.0.0.1".to_owned())
        );
    }
}
