//! Which addresses a webhook may be delivered to (events.md §4): none of the
//! special-purpose ranges of the IANA IPv4 and IPv6 registries (private,
//! shared, link-local, documentation, benchmarking, multicast, reserved,
//! translation and tunnelling prefixes), and loopback only where the
//! operator allows it (tests, a local relay). An IPv4 address written as
//! IPv6 (`::ffff:a.b.c.d`) is judged as the IPv4 address it carries.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddressRefusal {
    /// A loopback address, and loopback is not allowed.
    Loopback,
    /// An address of a special-purpose range (not globally routable).
    SpecialPurpose,
}

impl std::fmt::Display for AddressRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Loopback => "a loopback address (not allowed)",
            Self::SpecialPurpose => "an address that is not globally routable",
        })
    }
}

/// IPv4 special-purpose prefixes (address, prefix length), loopback apart.
const V4_SPECIAL: [([u8; 4], u8); 16] = [
    ([0, 0, 0, 0], 8),       // "this network"
    ([10, 0, 0, 0], 8),      // private
    ([100, 64, 0, 0], 10),   // shared address space (CGN)
    ([169, 254, 0, 0], 16),  // link-local
    ([172, 16, 0, 0], 12),   // private
    ([192, 0, 0, 0], 24),    // IETF protocol assignments
    ([192, 0, 2, 0], 24),    // documentation
    ([192, 31, 196, 0], 24), // AS112
    ([192, 52, 193, 0], 24), // AMT
    ([192, 88, 99, 0], 24),  // 6to4 relay anycast (deprecated)
    ([192, 168, 0, 0], 16),  // private
    ([192, 175, 48, 0], 24), // direct delegation AS112
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation
    ([203, 0, 113, 0], 24),  // documentation
    ([224, 0, 0, 0], 3),     // multicast, reserved and broadcast (224/4, 240/4)
];

/// IPv6 special-purpose prefixes (address, prefix length), loopback and
/// IPv4-mapped apart.
const V6_SPECIAL: [(u128, u8); 14] = [
    (0, 96),                                         // unspecified and IPv4-compatible (deprecated)
    (0x0064_ff9b_0000_0000_0000_0000_0000_0000, 96), // NAT64
    (0x0064_ff9b_0001_0000_0000_0000_0000_0000, 48), // local NAT64
    (0x0100_0000_0000_0000_0000_0000_0000_0000, 64), // discard-only
    (0x2001_0000_0000_0000_0000_0000_0000_0000, 23), // IETF protocol assignments (Teredo, ORCHID, ...)
    (0x2001_0db8_0000_0000_0000_0000_0000_0000, 32), // documentation
    (0x2002_0000_0000_0000_0000_0000_0000_0000, 16), // 6to4
    (0x3fff_0000_0000_0000_0000_0000_0000_0000, 20), // documentation
    (0x5f00_0000_0000_0000_0000_0000_0000_0000, 16), // segment routing SIDs
    (0xfc00_0000_0000_0000_0000_0000_0000_0000, 7),  // unique local
    (0xfe80_0000_0000_0000_0000_0000_0000_0000, 10), // link-local
    (0xfec0_0000_0000_0000_0000_0000_0000_0000, 10), // site-local (deprecated)
    (0xff00_0000_0000_0000_0000_0000_0000_0000, 8),  // multicast
    (0x0000_0000_0000_0000_0000_ffff_0000_0000, 96), // IPv4-mapped (judged as IPv4 before this)
];

fn in_v4(ip: Ipv4Addr, (net, len): ([u8; 4], u8)) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn in_v6(ip: Ipv6Addr, (net, len): (u128, u8)) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
    u128::from(ip) & mask == net & mask
}

/// Whether a webhook may be delivered to `ip` (`allow_loopback`: the
/// operator allows loopback addresses).
pub fn check_address(ip: IpAddr, allow_loopback: bool) -> Result<(), AddressRefusal> {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    let (loopback, special) = match ip {
        IpAddr::V4(v4) => (v4.is_loopback(), V4_SPECIAL.iter().any(|&p| in_v4(v4, p))),
        IpAddr::V6(v6) => (v6.is_loopback(), V6_SPECIAL.iter().any(|&p| in_v6(v6, p))),
    };
    match (loopback, special) {
        (true, _) if allow_loopback => Ok(()),
        (true, _) => Err(AddressRefusal::Loopback),
        (false, true) => Err(AddressRefusal::SpecialPurpose),
        (false, false) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn special_purpose_addresses_are_refused_and_public_ones_pass() {
        for bad in [
            "0.0.0.0",
            "10.1.2.3",
            "100.64.0.1",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::a00:1",
            "64:ff9b::a00:1",
            "100::1",
            "2001::1",
            "2001:db8::1",
            "2002:a00:1::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "3fff::1",
            "5f00::1",
        ] {
            assert_eq!(check_address(ip(bad), true), Err(AddressRefusal::SpecialPurpose), "{bad}");
        }
        for good in ["1.1.1.1", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert_eq!(check_address(ip(good), false), Ok(()), "{good}");
        }
    }

    #[test]
    fn loopback_passes_only_when_the_operator_allows_it() {
        for lo in ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"] {
            assert_eq!(check_address(ip(lo), false), Err(AddressRefusal::Loopback), "{lo}");
            assert_eq!(check_address(ip(lo), true), Ok(()), "{lo}");
        }
    }
}
