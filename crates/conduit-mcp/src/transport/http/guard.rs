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

/// The host name of a `host[:port]` value (`[v6]` keeps its brackets off,
/// flagged), or `None` when it is not one: a port must be 1 to 5 digits, and
/// nothing may follow it (`localhost:80.evil.example`, `localhost:evil`).
fn host_name(host: &str) -> Option<(&str, bool)> {
    let (name, rest, bracketed) = match host.strip_prefix('[') {
        Some(v6) => {
            let (inner, rest) = v6.split_once(']')?;
            (inner, rest, true)
        }
        None => match host.split_once(':') {
            Some((name, _)) => (name, &host[name.len()..], false),
            None => (host, "", false),
        },
    };
    let port_ok = match rest.strip_prefix(':') {
        None => rest.is_empty(),
        Some(port) => (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit()),
    };
    // A fully qualified name may end in its root's dot (`localhost.`): the same host.
    let name = if bracketed { name } else { name.strip_suffix('.').unwrap_or(name) };
    (port_ok && !name.is_empty() && !name.ends_with('.')).then_some((name, bracketed))
}

/// Whether `host` (a `Host` header value, or the host part of an `Origin`) passes `policy`.
pub(super) fn host_allowed(policy: &HostPolicy, host: &str) -> bool {
    if let HostPolicy::Any = policy {
        return true;
    }
    let Some((inner, bracketed)) = host_name(host) else { return false };
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

/// The `host[:port]` part of an `Origin` value (`scheme://host[:port]`, nothing after it but a path).
pub(super) fn origin_host(origin: &str) -> Option<&str> {
    let rest = origin.split_once("://").map(|(_, r)| r)?;
    Some(rest.split('/').next().unwrap_or(rest))
}

/// Why a request failed the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// More than one `Host` header: 400 (which one would a proxy have routed by?).
    DuplicateHost,
    /// No `Host` header and no authority in the request target: 400 (RFC 9112 §3.2),
    /// unless the policy is [`HostPolicy::Any`].
    MissingHost,
    /// An `Origin` (one, valid, allowed) is required when present: 403.
    Origin,
    /// The `Host` is not allowed, or not a `host[:port]`: 403.
    Host,
}

/// The DNS-rebinding guard on a request's headers: `Origin` (when present)
/// and `Host` (exactly once; without one, the request target's authority, as
/// HTTP/2 sends it) must pass `policy`.
pub(super) fn check(
    headers: &axum::http::HeaderMap,
    authority: Option<&str>,
    policy: &HostPolicy,
) -> Result<(), Refusal> {
    use axum::http::header::{HOST, ORIGIN};
    let mut origins = headers.get_all(ORIGIN).iter();
    if let Some(origin) = origins.next() {
        let ok = origins.next().is_none()
            && origin.to_str().ok().and_then(origin_host).is_some_and(|h| host_allowed(policy, h));
        if !ok {
            return Err(Refusal::Origin);
        }
    }
    let mut hosts = headers.get_all(HOST).iter();
    let host = match (hosts.next(), authority) {
        (Some(host), _) => {
            if hosts.next().is_some() {
                return Err(Refusal::DuplicateHost);
            }
            host.to_str().ok()
        }
        (None, Some(authority)) => Some(authority),
        (None, None) if *policy == HostPolicy::Any => return Ok(()),
        (None, None) => return Err(Refusal::MissingHost),
    };
    if !host.is_some_and(|h| host_allowed(policy, h)) {
        return Err(Refusal::Host);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_policy() {
        let p = HostPolicy::Localhost;
        for h in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "[::1]:3000",
            "[::1]",
            "LOCALHOST",
            "localhost.",
            "localhost.:80",
        ] {
            assert!(host_allowed(&p, h), "{h}");
        }
        for h in [
            "evil.example.com",
            "evil.example.com:80",
            "127.0.0.2",
            "localhost.evil.com",
            "localhost:80.evil.example",
            "localhost:evil",
            "localhost:",
            "localhost:123456",
            "[::1]x",
            "[::1]:80:1",
            ":80",
            "",
            ".",
            "localhost..",
            "[::1].",
        ] {
            assert!(!host_allowed(&p, h), "{h}");
        }
        assert!(host_allowed(&HostPolicy::AllowList(vec!["mcp.example.com".into()]), "mcp.example.com:443"));
        assert!(host_allowed(&HostPolicy::AllowList(vec!["mcp.example.com".into()]), "mcp.example.com.:443"));
        assert_eq!(origin_host("http://localhost:3000/x"), Some("localhost:3000"));
        let v6 = HostPolicy::AllowList(vec!["[2001:DB8::1]".into()]);
        assert!(host_allowed(&v6, "[2001:db8::1]:443"));
        assert!(!host_allowed(&v6, "[2001:db8::1"), "an unclosed bracket is no host");
        assert!(!host_allowed(&v6, "[2001:db8::2]:443"));
        assert!(!host_allowed(&v6, "2001:db8::1"));
    }
}
