//! The DNS-rebinding guard: which `Host` and `Origin` values may reach the endpoint.

/// Which hosts may reach the endpoint (DNS-rebinding defence).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostPolicy {
    /// Only `localhost`, `127.0.0.1` and `[::1]`, any port (the default).
    Localhost,
    /// These host names (without port), plus the localhost names.
    AllowList(Vec<String>),
    /// Any host (put your own guard in front).
    Any,
}

/// Whether `host` (a `Host` header value, or the host part of an `Origin`) passes `policy`.
pub(super) fn host_allowed(policy: &HostPolicy, host: &str) -> bool {
    // The host name without its port, borrowed from `host`: for `[v6]:port`, the
    // text inside the brackets, compared as `[v6]`.
    let (inner, bracketed) = match host.strip_prefix('[') {
        Some(rest) => (rest.split(']').next().unwrap_or(rest), true),
        None => (host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host), false),
    };
    let is = |candidate: &str| {
        if bracketed {
            candidate.len() == inner.len() + 2
                && candidate.starts_with('[')
                && candidate.ends_with(']')
                && candidate[1..candidate.len() - 1].eq_ignore_ascii_case(inner)
        } else {
            candidate.eq_ignore_ascii_case(inner)
        }
    };
    let local = ["localhost", "127.0.0.1", "[::1]"].into_iter().any(is);
    match policy {
        HostPolicy::Any => true,
        HostPolicy::Localhost => local,
        HostPolicy::AllowList(list) => local || list.iter().any(|h| is(h)),
    }
}

/// The `host[:port]` part of an `Origin` value.
pub(super) fn origin_host(origin: &str) -> Option<&str> {
    let rest = origin.split_once("://").map(|(_, r)| r)?;
    Some(rest.split('/').next().unwrap_or(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_policy() {
        let p = HostPolicy::Localhost;
        for h in ["localhost", "localhost:8080", "127.0.0.1:1", "[::1]:3000", "[::1]", "LOCALHOST"] {
            assert!(host_allowed(&p, h), "{h}");
        }
        for h in ["evil.example.com", "evil.example.com:80", "127.0.0.2", "localhost.evil.com"] {
            assert!(!host_allowed(&p, h), "{h}");
        }
        assert!(host_allowed(&HostPolicy::AllowList(vec!["mcp.example.com".into()]), "mcp.example.com:443"));
        assert_eq!(origin_host("http://localhost:3000/x"), Some("localhost:3000"));
        let v6 = HostPolicy::AllowList(vec!["[2001:DB8::1]".into()]);
        assert!(host_allowed(&v6, "[2001:db8::1]:443"));
        assert!(host_allowed(&v6, "[2001:db8::1"));
        assert!(!host_allowed(&v6, "[2001:db8::2]:443"));
        assert!(!host_allowed(&v6, "2001:db8::1"));
    }
}
