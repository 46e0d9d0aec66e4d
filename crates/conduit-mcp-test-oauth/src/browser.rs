//! A scripted browser: follows an authorization server's redirects with its
//! cookies, as a user's browser would, until a redirect leaves the server.

use crate::error::{Error, Result};
use reqwest::Url;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use std::sync::Mutex;

/// Redirects one authorization may take before the browser gives up.
const MAX_REDIRECTS: usize = 20;

/// One cookie the browser holds.
#[derive(Debug, Clone)]
struct Cookie {
    name: String,
    value: String,
    path: String,
}

/// A cookie-keeping HTTP client that does not follow redirects by itself.
///
/// Keep one per user: its cookies are that user's session at the AS, so a
/// second authorization with the same browser signs in without a login step.
#[derive(Debug)]
pub struct Browser {
    http: reqwest::Client,
    cookies: Mutex<Vec<Cookie>>,
}

/// Where the authorization server sent the browser back: the client's
/// redirect URI with `code`, `state` and `iss` (or `error`).
#[derive(Debug, Clone)]
pub struct Callback {
    /// The full URL.
    pub url: Url,
}

impl Callback {
    /// A query parameter of the callback.
    pub fn param(&self, name: &str) -> Option<String> {
        self.url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
    }

    /// The authorization code, or the error the AS answered with.
    pub fn code(&self) -> Result<String> {
        if let Some(e) = self.param("error") {
            let why = self.param("error_description").unwrap_or_default();
            return Err(Error(format!("authorization refused: {e} {why}").trim_end().to_owned()));
        }
        self.param("code").ok_or_else(|| Error(format!("no code in the callback {}", self.url)))
    }
}

impl Default for Browser {
    fn default() -> Self {
        Self::new()
    }
}

impl Browser {
    /// A browser with no cookies.
    pub fn new() -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client without TLS always builds");
        Self { http, cookies: Mutex::new(Vec::new()) }
    }

    /// Opens `authorization_url` and follows redirects while they stay on its
    /// origin; returns the first redirect that leaves it (the client's
    /// callback), without opening it.
    pub async fn authorize(&self, authorization_url: &str) -> Result<Callback> {
        let mut url = Url::parse(authorization_url).map_err(|e| Error(format!("{authorization_url}: {e}")))?;
        let origin = url.origin();
        for _ in 0..MAX_REDIRECTS {
            let resp = self.http.get(url.clone()).header(COOKIE, self.cookie_header(&url)).send().await?;
            self.keep_cookies(&resp);
            let status = resp.status();
            if !status.is_redirection() {
                let body = resp.text().await.unwrap_or_default();
                let excerpt: String = body.chars().take(300).collect();
                return Err(Error(format!("{url} answered {status} instead of a redirect: {excerpt}")));
            }
            let location = resp
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| Error(format!("{url} redirected without a Location")))?;
            let next = url.join(location).map_err(|e| Error(format!("bad Location {location:?}: {e}")))?;
            if next.origin() != origin {
                return Ok(Callback { url: next });
            }
            url = next;
        }
        Err(Error(format!("more than {MAX_REDIRECTS} redirects from {authorization_url}")))
    }

    /// Like [`authorize`](Self::authorize), then opens the callback (a
    /// client's loopback listener) and returns its status.
    pub async fn open(&self, authorization_url: &str) -> Result<(Callback, reqwest::StatusCode)> {
        let callback = self.authorize(authorization_url).await?;
        let status = self.http.get(callback.url.clone()).send().await?.status();
        Ok((callback, status))
    }

    fn cookie_header(&self, url: &Url) -> String {
        let jar = self.cookies.lock().expect("cookie jar");
        jar.iter()
            .filter(|c| path_matches(&c.path, url.path()))
            .map(|c| format!("{}={}", c.name, c.value))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn keep_cookies(&self, resp: &reqwest::Response) {
        let mut jar = self.cookies.lock().expect("cookie jar");
        for v in resp.headers().get_all(SET_COOKIE).iter().filter_map(|v| v.to_str().ok()) {
            let mut attrs = v.split(';').map(str::trim);
            let Some((name, value)) = attrs.next().and_then(|nv| nv.split_once('=')) else { continue };
            let mut path = "/".to_owned();
            let mut expired = value.is_empty();
            for a in attrs {
                let (k, val) = a.split_once('=').unwrap_or((a, ""));
                if k.eq_ignore_ascii_case("path") {
                    path = val.to_owned();
                } else if k.eq_ignore_ascii_case("max-age") && val.trim_start_matches('-').parse::<u64>().is_ok() {
                    expired |= val.starts_with('-') || val == "0";
                } else if k.eq_ignore_ascii_case("expires") && val.contains("1970") {
                    expired = true;
                }
            }
            jar.retain(|c| !(c.name == name && c.path == path));
            if !expired {
                jar.push(Cookie { name: name.to_owned(), value: value.to_owned(), path });
            }
        }
    }
}

/// RFC 6265 §5.1.4 path matching.
fn path_matches(cookie_path: &str, request_path: &str) -> bool {
    request_path == cookie_path
        || (request_path.starts_with(cookie_path)
            && (cookie_path.ends_with('/') || request_path[cookie_path.len()..].starts_with('/')))
}

#[cfg(test)]
mod tests {
    use super::path_matches;

    #[test]
    fn cookie_paths() {
        assert!(path_matches("/", "/auth/x"));
        assert!(path_matches("/auth/x", "/auth/x"));
        assert!(path_matches("/auth", "/auth/x"));
        assert!(!path_matches("/auth/x", "/auth/xy"));
        assert!(!path_matches("/interaction/a", "/auth/a"));
    }
}
