//! Requests to an authorization server: HTTPS (plain HTTP on loopback only),
//! no redirects, a timeout, and a bounded body parsed as JSON.

use crate::protocol::oauth::endpoint::keeps_credentials_private;
use reqwest::Url;
use serde_json::Value;
use std::time::Duration;

/// The largest metadata, JWKS or introspection answer read (bytes).
pub(super) const MAX_BODY: usize = 256 * 1024;

/// The HTTP client used for every request to authorization servers.
pub(super) fn client(timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("conduit-mcp/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// Whether `url` may be used to reach an authorization server: `https`, or
/// `http` to a loopback host (OAuth 2.1 §1.5).
pub(super) fn check_url(what: &str, url: &str) -> Result<Url, String> {
    let u = Url::parse(url).map_err(|e| format!("{what} {url:?} is not a URL: {e}"))?;
    match u.scheme() {
        _ if keeps_credentials_private(u.scheme(), u.host_str().unwrap_or_default()) => Ok(u),
        "http" => Err(format!("{what} {url:?} must use https (plain http only to a loopback host)")),
        _ => Err(format!("{what} {url:?} must be an https URL")),
    }
}

/// Sends `req` and reads a JSON object of at most [`MAX_BODY`] bytes from a 200 answer.
pub(super) async fn json(req: reqwest::RequestBuilder) -> Result<Value, String> {
    let mut resp = req.send().await.map_err(|e| describe(&e))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("answered HTTP {}", status.as_u16()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| describe(&e))? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(format!("answer larger than {MAX_BODY} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    match crate::protocol::peer_json::from_slice(&body) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("answer is not a JSON object".into()),
        Err(e) => Err(format!("answer is not JSON: {e}")),
    }
}

/// A transport error in words, without the URL's query (never a token).
fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "unreachable".into()
    } else {
        let s = e.to_string();
        match e.url() {
            Some(u) => s.replace(u.as_str(), u.path()),
            None => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check_url;

    #[test]
    fn https_or_loopback_http_only() {
        assert!(check_url("issuer", "https://auth.example.com").is_ok());
        assert!(check_url("issuer", "http://127.0.0.1:8080").is_ok());
        assert!(check_url("issuer", "http://[::1]:8080/t").is_ok());
        assert!(check_url("issuer", "http://localhost").is_ok());
        assert!(check_url("issuer", "http://auth.example.com").is_err());
        assert!(check_url("issuer", "ftp://auth.example.com").is_err());
        assert!(check_url("issuer", "not a url").is_err());
    }
}
