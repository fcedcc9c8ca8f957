//! Addresses no allowed name may lead to: the special-purpose blocks of
//! IANA's registries that reach a host's own or its network's internal
//! services (loopback, private, link-local, shared, "this network",
//! multicast, broadcast, reserved, benchmarking ...), and IPv6 forms that
//! embed an IPv4 address (mapped, compatible, NAT64, 6to4), judged by the
//! address they embed. A name that resolves to one is refused: the proxy
//! would otherwise carry a command to the host's own services or its
//! private network (DNS rebinding).
//!
//! The documentation blocks (192.0.2.0/24, 198.51.100.0/24,
//! 203.0.113.0/24, 2001:db8::/32, 3fff::/20) are not refused: no router on
//! the internet carries them, so no internal service lives there, and
//! egress gateways and test networks answer on them (a registry name that
//! resolves to one leads to such a gateway).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IPv4 blocks refused, with what each is.
const V4: &[([u8; 4], u8, &str)] = &[
    ([0, 0, 0, 0], 8, "\"this network\""),
    ([10, 0, 0, 0], 8, "private"),
    ([100, 64, 0, 0], 10, "shared (carrier-grade NAT)"),
    ([127, 0, 0, 0], 8, "loopback"),
    ([169, 254, 0, 0], 16, "link-local"),
    ([172, 16, 0, 0], 12, "private"),
    ([192, 0, 0, 0], 24, "IETF protocol assignments"),
    ([192, 88, 99, 0], 24, "deprecated 6to4 relay"),
    ([192, 168, 0, 0], 16, "private"),
    ([198, 18, 0, 0], 15, "benchmarking"),
    ([224, 0, 0, 0], 4, "multicast"),
    ([255, 255, 255, 255], 32, "broadcast"),
    ([240, 0, 0, 0], 4, "reserved"),
];

/// IPv6 blocks refused, with what each is.
const V6: &[([u16; 8], u8, &str)] = &[
    ([0, 0, 0, 0, 0, 0, 0, 0], 128, "unspecified"),
    ([0, 0, 0, 0, 0, 0, 0, 1], 128, "loopback"),
    ([0, 0, 0, 0, 0, 0, 0, 0], 96, "IPv4-compatible (deprecated)"),
    ([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "local-use NAT64"),
    ([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "discard-only"),
    ([0x2001, 0, 0, 0, 0, 0, 0, 0], 23, "IETF protocol assignments"),
    ([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16, "segment routing"),
    ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "unique local (private)"),
    ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "link-local"),
    ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "site-local (deprecated)"),
    ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "multicast"),
];

/// What kind of special-purpose address `ip` is, or `None` for an address
/// that is globally reachable.
pub fn special_purpose(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => special_v4(v4),
            None => V6
                .iter()
                .find(|(net, prefix, _)| in_v6(v6, Ipv6Addr::from(*net), *prefix))
                .map(|(_, _, kind)| *kind),
        },
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    V4.iter()
        .find(|(net, prefix, _)| in_v4(ip, Ipv4Addr::from(*net), *prefix))
        .map(|(_, _, kind)| *kind)
}

/// The IPv4 address an IPv6 one carries to an IPv4 host: mapped
/// (`::ffff:a.b.c.d`), well-known NAT64 (`64:ff9b::a.b.c.d`), 6to4
/// (`2002:aabb:ccdd::`).
pub fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..5] == [0, 0, 0, 0, 0] && s[5] == 0xffff {
        return Some(low);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low);
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    None
}

/// Whether `ip` lies in `net/prefix`.
pub fn in_v4(ip: Ipv4Addr, net: Ipv4Addr, prefix: u8) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    };
    u32::from(ip) & mask == u32::from(net) & mask
}

/// Whether `ip` lies in `net/prefix`.
pub fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, prefix: u8) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(prefix))
    };
    u128::from(ip) & mask == u128::from(net) & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Option<&'static str> {
        special_purpose(text.parse().unwrap())
    }

    #[test]
    fn loopback_private_link_local_and_the_rest_are_special() {
        for (ip, expected) in [
            ("127.0.0.1", "loopback"),
            ("127.255.1.2", "loopback"),
            ("0.0.0.0", "\"this network\""),
            ("10.1.2.3", "private"),
            ("172.31.255.255", "private"),
            ("192.168.0.1", "private"),
            ("169.254.169.254", "link-local"),
            ("100.100.100.200", "shared (carrier-grade NAT)"),
            ("198.18.0.1", "benchmarking"),
            ("224.0.0.251", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("240.0.0.1", "reserved"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fd00::2", "unique local (private)"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("fec0::1", "site-local (deprecated)"),
        ] {
            assert_eq!(kind(ip), Some(expected), "{ip}");
        }
    }

    #[test]
    fn ipv6_forms_of_an_ipv4_address_are_judged_by_it() {
        assert_eq!(kind("::ffff:127.0.0.1"), Some("loopback"));
        assert_eq!(kind("::ffff:10.0.0.1"), Some("private"));
        assert_eq!(kind("64:ff9b::a9fe:a9fe"), Some("link-local"));
        assert_eq!(kind("2002:7f00:1::"), Some("loopback"));
        // IPv4-compatible forms are refused whatever they carry.
        assert_eq!(kind("::7f00:1"), Some("IPv4-compatible (deprecated)"));
        assert_eq!(kind("::cb00:7150"), Some("IPv4-compatible (deprecated)"));
        assert_eq!(kind("::ffff:100.64.0.1"), Some("shared (carrier-grade NAT)"));
        assert_eq!(kind("::ffff:151.101.0.223"), None);
        assert_eq!(kind("64:ff9b::9765:df"), None);
    }

    #[test]
    fn documentation_blocks_are_not_refused() {
        // Never routed on the internet, so no internal service lives there;
        // egress gateways answer there (registries resolve to 203.0.113.80
        // behind one).
        for ip in [
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.80",
            "2001:db8::1",
            "3fff::1",
            "::ffff:203.0.113.80",
            "64:ff9b::c000:201",
        ] {
            assert_eq!(kind(ip), None, "{ip}");
        }
    }

    #[test]
    fn public_addresses_are_not_special() {
        for ip in [
            "151.101.0.223",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "2a04:4e42::223",
        ] {
            assert_eq!(kind(ip), None, "{ip}");
        }
    }
}
