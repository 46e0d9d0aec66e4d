//! [`ClientKey`]: who a per-client limit counts against.

use crate::auth::Principal;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

/// Who a per-client limit (sessions, waiting requests, streams, request and
/// task-creation rates) counts against: the authenticated principal, or
/// without authentication the client's address.
///
/// An IPv6 address counts by its /64 network (one host usually holds a whole
/// /64). Its text form ([`Display`](fmt::Display)) is what session stores keep.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ClientKey {
    /// An authenticated principal, by its id.
    Principal(Arc<str>),
    /// An unauthenticated client, by its address (IPv6: the /64 network).
    Address(IpAddr),
    /// The one client of a stdio process.
    #[default]
    Local,
    /// An unauthenticated HTTP client whose address the transport does not know
    /// (a router mounted without connection info): all of them count as one.
    Unknown,
}

impl ClientKey {
    /// The key of an HTTP request: its principal, else its peer's address, else `Unknown`.
    pub fn of(principal: Option<&Principal>, peer: Option<IpAddr>) -> Self {
        match (principal, peer) {
            (Some(p), _) => ClientKey::Principal(p.id.clone()),
            (None, Some(ip)) => ClientKey::Address(network(ip)),
            (None, None) => ClientKey::Unknown,
        }
    }

    /// The key of a request without a transport address: its principal, else `Local`.
    pub fn local(principal: Option<&Principal>) -> Self {
        match principal {
            Some(p) => ClientKey::Principal(p.id.clone()),
            None => ClientKey::Local,
        }
    }
}

/// The address a limit counts: IPv4 as is (an IPv4-mapped IPv6 address too), IPv6 by its /64.
fn network(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

impl fmt::Display for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientKey::Principal(id) => write!(f, "principal:{id}"),
            ClientKey::Address(IpAddr::V6(ip)) => write!(f, "ip:{ip}/64"),
            ClientKey::Address(ip) => write!(f, "ip:{ip}"),
            ClientKey::Local => f.write_str("local"),
            ClientKey::Unknown => f.write_str("unknown"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_win_and_ipv6_counts_by_its_network() {
        let alice = Principal::new("alice");
        let v4: IpAddr = "203.0.113.7".parse().expect("ip");
        assert_eq!(ClientKey::of(Some(&alice), Some(v4)).to_string(), "principal:alice");
        assert_eq!(ClientKey::of(None, Some(v4)).to_string(), "ip:203.0.113.7");
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().expect("ip");
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().expect("ip");
        assert_eq!(ClientKey::of(None, Some(a)), ClientKey::of(None, Some(b)), "one /64, one client");
        assert_eq!(ClientKey::of(None, Some(a)).to_string(), "ip:2001:db8:1:2::/64");
        let mapped: IpAddr = "::ffff:203.0.113.7".parse().expect("ip");
        assert_eq!(ClientKey::of(None, Some(mapped)), ClientKey::of(None, Some(v4)));
        assert_eq!(ClientKey::of(None, None), ClientKey::Unknown);
        assert_eq!(ClientKey::local(None), ClientKey::Local);
    }
}
