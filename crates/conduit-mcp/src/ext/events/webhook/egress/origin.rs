//! Callback URLs taken apart once ([`Destination`]) and origins written one
//! way (`scheme://host:port`, the port always spelled), so that an operator's
//! allowlist entry and a URL's origin compare as plain strings.

use reqwest::Url;
use std::net::IpAddr;

/// Why a callback URL is refused before anything is resolved or dialled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlRefusal {
    /// Not an absolute URL.
    NotAUrl,
    /// Not `https://`, and its origin is not on the operator's `allow_origins`.
    NotHttps,
    /// No host, or a user name or password in it.
    Authority,
    /// A literal IP address that deliveries may not reach.
    Address(super::super::AddressRefusal),
}

impl std::fmt::Display for UrlRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotAUrl => f.write_str("the callback is not an absolute URL"),
            Self::NotHttps => f.write_str("the callback URL must be https://"),
            Self::Authority => f.write_str("the callback URL needs a host and carries no user name or password"),
            Self::Address(why) => write!(f, "the callback URL's host is {why}"),
        }
    }
}

impl std::error::Error for UrlRefusal {}

/// A callback URL's host: a name to resolve, or an address to check as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    Name(String),
    Ip(IpAddr),
}

/// A callback URL with its host, port and origin.
#[derive(Debug, Clone)]
pub(crate) struct Destination {
    pub(crate) url: Url,
    pub(crate) host: Host,
    pub(crate) port: u16,
    /// `scheme://host:port`.
    pub(crate) origin: String,
}

impl Destination {
    /// Parses `text`: http or https, a host, no credentials (the scheme
    /// rule and the address rules are the policy's).
    pub(crate) fn parse(text: &str) -> Result<Self, UrlRefusal> {
        let url = Url::parse(text).map_err(|_| UrlRefusal::NotAUrl)?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(UrlRefusal::NotHttps);
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(UrlRefusal::Authority);
        }
        // The URL parser has already turned every IPv4 spelling (`0x7f.1`)
        // into dotted decimal and put IPv6 in brackets.
        let name = url.host_str().ok_or(UrlRefusal::Authority)?;
        let host = match name.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            Ok(ip) => Host::Ip(ip),
            Err(_) => Host::Name(name.to_owned()),
        };
        let origin = origin_of(&url).ok_or(UrlRefusal::Authority)?;
        let port = url.port_or_known_default().ok_or(UrlRefusal::Authority)?;
        Ok(Self { url, host, port, origin })
    }

    /// Whether the scheme is `https`.
    pub(crate) fn is_https(&self) -> bool {
        self.url.scheme() == "https"
    }
}

/// `scheme://host:port` of `url` (IPv6 hosts in brackets, the default port spelled).
fn origin_of(url: &Url) -> Option<String> {
    Some(format!("{}://{}:{}", url.scheme(), url.host_str()?, url.port_or_known_default()?))
}

/// An operator's origin entry written the one way: `http` or `https`, a
/// host, an optional port, nothing else (a lone `/` path is allowed).
pub(crate) fn normalise_origin(entry: &str) -> Result<String, String> {
    let bad = || format!("{entry:?} is not an origin (scheme://host:port)");
    let url = Url::parse(entry).map_err(|_| bad())?;
    let bare = matches!(url.scheme(), "http" | "https")
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none()
        && !entry.ends_with('?')
        && !entry.ends_with('#');
    if !bare {
        return Err(bad());
    }
    origin_of(&url).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_taken_apart_with_their_origin() {
        let d = Destination::parse("https://Hook.Test/h?x=1").unwrap();
        assert_eq!((d.host, d.port, d.origin.as_str()), (Host::Name("hook.test".into()), 443, "https://hook.test:443"));
        let d = Destination::parse("http://0x7f.1:8080/h").unwrap();
        assert_eq!((d.host, d.origin.as_str()), (Host::Ip("127.0.0.1".parse().unwrap()), "http://127.0.0.1:8080"));
        let d = Destination::parse("http://[::1]:8080/h").unwrap();
        assert_eq!((&d.host, d.origin.as_str()), (&Host::Ip("::1".parse().unwrap()), "http://[::1]:8080"));
        assert!(!d.is_https());
        assert_eq!(Destination::parse("ftp://x.test/").unwrap_err(), UrlRefusal::NotHttps);
        assert_eq!(Destination::parse("/relative").unwrap_err(), UrlRefusal::NotAUrl);
        assert_eq!(Destination::parse("https://u:p@x.test/").unwrap_err(), UrlRefusal::Authority);
    }

    #[test]
    fn origins_are_written_one_way_and_anything_more_is_refused() {
        assert_eq!(normalise_origin("HTTP://127.0.0.1:9000").unwrap(), "http://127.0.0.1:9000");
        assert_eq!(normalise_origin("https://hook.test/").unwrap(), "https://hook.test:443");
        assert_eq!(normalise_origin("http://[::1]:80").unwrap(), "http://[::1]:80");
        for bad in ["https://hook.test/h", "https://a@hook.test", "hook.test:443", "https://hook.test/?", "ws://x.test"]
        {
            assert!(normalise_origin(bad).is_err(), "{bad}");
        }
    }
}
