//! A callback URL's origin (`scheme://host:port`, lower-cased, the port
//! spelled out) and the
//! subscribe-time check of `delivery.url` (events.md §2.7 W3, §4 F6, F7):
//! `https://` with a host, or plain `http://` only at an origin the operator
//! allows. The address it resolves to is the egress's to check, at every
//! attempt.

use crate::protocol::RpcError;

/// The origin of `url` (`None` when it is not an absolute http(s) URL with a
/// host, or carries user information).
pub(crate) fn origin_of(url: &str) -> Option<String> {
    let uri: http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    if scheme != "https" && scheme != "http" {
        return None;
    }
    let authority = uri.authority()?;
    if authority.as_str().contains('@') || uri.host().is_none_or(str::is_empty) {
        return None;
    }
    let host = authority.host().to_ascii_lowercase();
    let port = uri.port_u16().unwrap_or(if scheme == "https" { 443 } else { 80 });
    Some(format!("{scheme}://{host}:{port}"))
}

/// An operator's origin entry as [`origin_of`] writes origins (a trailing
/// `/` tolerated; a path, query or fragment refused).
pub(crate) fn normalise_origin(entry: &str) -> Option<String> {
    let bare = entry.trim_end_matches('/');
    let after_scheme = bare.split_once("://")?.1;
    if after_scheme.contains(['/', '?', '#']) {
        return None;
    }
    origin_of(bare)
}

/// Whether `url`'s origin is one of `origins`.
pub(crate) fn origin_listed(url: &str, origins: &[String]) -> bool {
    origin_of(url).is_some_and(|o| origins.iter().any(|e| normalise_origin(e).as_deref() == Some(o.as_str())))
}

/// `delivery.url`: https with a host, or http at an allowed origin (`-32602` otherwise).
pub(crate) fn check_callback(url: &str, allow_origins: &[String]) -> Result<(), RpcError> {
    let Some(origin) = origin_of(url) else {
        return Err(RpcError::invalid_params("delivery.url must be an absolute https:// URL with a host"));
    };
    if origin.starts_with("https://") || origin_listed(url, allow_origins) {
        Ok(())
    } else {
        Err(RpcError::invalid_params("delivery.url must be an https:// URL"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_passes_http_only_at_an_allowed_origin() {
        let allowed = vec!["http://127.0.0.1:8080/".to_owned()];
        assert!(check_callback("https://hooks.example/h", &[]).is_ok());
        assert!(check_callback("http://127.0.0.1:8080/h", &allowed).is_ok());
        assert!(check_callback("HTTP://127.0.0.1:8080/x?y", &allowed).is_ok());
        for bad in [
            "http://127.0.0.1:8081/h",
            "http://hooks.example/h",
            "https://u:p@hooks.example/h",
            "ftp://hooks.example/h",
            "hooks.example/h",
            "https:///h",
            "",
        ] {
            assert!(check_callback(bad, &allowed).is_err(), "{bad}");
        }
        assert_eq!(normalise_origin("https://Hooks.Example"), Some("https://hooks.example:443".into()));
        assert_eq!(normalise_origin("http://127.0.0.1:8080/"), Some("http://127.0.0.1:8080".into()));
        assert_eq!(normalise_origin("https://hooks.example/path"), None, "an origin has no path");
    }
}
