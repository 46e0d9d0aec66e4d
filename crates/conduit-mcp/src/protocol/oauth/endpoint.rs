//! Where a credential may be sent (OAuth 2.1 §1.5): over `https`, or over
//! plain `http` to this machine only. Every OAuth endpoint, both sides, and
//! the client's MCP requests carrying a token are judged by these two functions.

/// Whether `host` (as a URL prints it: a name, an IPv4 address, or an IPv6
/// address in brackets) names this machine: `localhost`, `127.0.0.0/8`, `::1`.
/// The host is judged by its parsed address, never by how its name begins.
pub fn is_loopback_host(host: &str) -> bool {
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    host.eq_ignore_ascii_case("localhost") || bare.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
}

/// Whether a credential may go to a URL of `scheme` and `host` without
/// crossing the network in clear text: `https`, or `http` to a loopback host.
pub fn keeps_credentials_private(scheme: &str, host: &str) -> bool {
    scheme.eq_ignore_ascii_case("https") || (scheme.eq_ignore_ascii_case("http") && is_loopback_host(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_or_loopback_http_only() {
        for (scheme, host) in [("https", "auth.example.com"), ("http", "127.0.0.1"), ("http", "127.9.9.9")] {
            assert!(keeps_credentials_private(scheme, host), "{scheme}://{host}");
        }
        for (scheme, host) in [("http", "[::1]"), ("http", "localhost"), ("http", "LOCALHOST")] {
            assert!(keeps_credentials_private(scheme, host), "{scheme}://{host}");
        }
        for (scheme, host) in
            [("http", "auth.example.com"), ("http", "localhost.evil.example"), ("http", "127.0.0.1.nip.io")]
        {
            assert!(!keeps_credentials_private(scheme, host), "{scheme}://{host}");
        }
        assert!(!keeps_credentials_private("ftp", "localhost"));
        assert!(!is_loopback_host("[::2]") && !is_loopback_host("10.0.0.1") && !is_loopback_host(""));
    }
}
