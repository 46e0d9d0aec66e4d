//! How the client treats an HTTP server it does not trust: which
//! certificates it accepts, how long it waits, how much it reads, where it
//! lets a redirect take a request, and where it refuses to send a credential.

use super::error::{ClientError, TransportError};
use super::sanitize::{quoted, shown};
use crate::protocol::oauth::endpoint::keeps_credentials_private;
use reqwest::Url;
use std::time::Duration;

/// The default time to connect (TCP and TLS).
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default time a server has to start answering (the response head), and
/// to finish a JSON body once it has started.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The default cap of one message: a JSON body, or the data of one SSE event.
pub(crate) const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;
/// The default cap of one SSE line (a message's JSON is usually one `data:` line).
pub(crate) const DEFAULT_MAX_LINE: usize = 16 * 1024 * 1024;
/// The most redirects followed (same origin only).
const MAX_REDIRECTS: usize = 5;

/// The transport's limits and trust; set through [`ClientBuilder`](super::ClientBuilder).
#[derive(Debug, Clone)]
pub(crate) struct HttpOptions {
    pub(crate) connect_timeout: Duration,
    pub(crate) timeout: Duration,
    pub(crate) max_message: usize,
    pub(crate) max_line: usize,
    /// Extra trusted roots (PEM), besides the webpki roots.
    pub(crate) ca_pem: Vec<Vec<u8>>,
    /// Send credentials over plain `http://` to a host that is not loopback.
    pub(crate) allow_insecure_http: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            timeout: DEFAULT_TIMEOUT,
            max_message: DEFAULT_MAX_MESSAGE,
            max_line: DEFAULT_MAX_LINE,
            ca_pem: Vec::new(),
            allow_insecure_http: false,
        }
    }
}

/// Whether a credential sent to `url` stays off the network in clear text
/// (`https`, or `http` to this machine: [`keeps_credentials_private`]).
pub(crate) fn private_to(url: &Url) -> bool {
    keeps_credentials_private(url.scheme(), url.host_str().unwrap_or_default())
}

/// Parses an `http(s)` URL.
pub(crate) fn parse_url(what: &str, s: &str) -> Result<Url, ClientError> {
    let url = Url::parse(s).map_err(|e| {
        ClientError::Transport(TransportError::new(format!("{what} {} is not a URL: {e}", quoted(s))).caused_by(e))
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(ClientError::transport(format!("{what} {} is not an http(s) URL", quoted(s))));
    }
    Ok(url)
}

impl HttpOptions {
    /// Refuses to send a credential to `url` in clear text, unless it is
    /// loopback or insecure HTTP was allowed.
    pub(crate) fn check_credentials_to(&self, url: &Url, what: &str) -> Result<(), ClientError> {
        if private_to(url) || self.allow_insecure_http {
            return Ok(());
        }
        Err(ClientError::Insecure(format!(
            "refusing to send {what} over plain http:// to {}: use https:// (or allow it explicitly)",
            shown(url.host_str().unwrap_or("?"))
        )))
    }

    /// A reqwest client with these settings. `redirects`: follow redirects
    /// that stay on the origin of the first request (never another origin:
    /// the request would carry its headers and session there); otherwise none.
    pub(crate) fn client(&self, redirects: bool) -> Result<reqwest::Client, ClientError> {
        let policy = if redirects {
            reqwest::redirect::Policy::custom(|attempt| {
                let first = attempt.previous().first().map(Url::origin);
                if attempt.previous().len() > MAX_REDIRECTS || first.as_ref() != Some(&attempt.url().origin()) {
                    attempt.stop()
                } else {
                    attempt.follow()
                }
            })
        } else {
            reqwest::redirect::Policy::none()
        };
        let mut b = reqwest::Client::builder()
            .tcp_nodelay(true)
            .connect_timeout(self.connect_timeout)
            .redirect(policy)
            .https_only(false);
        for pem in &self.ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(|e| {
                ClientError::Transport(TransportError::new(format!("CA certificate: {e}")).caused_by(e))
            })?;
            if certs.is_empty() {
                return Err(ClientError::transport("CA certificate: no certificate in the PEM data"));
            }
            for c in certs {
                b = b.add_root_certificate(c);
            }
        }
        b.build().map_err(transport)
    }
}

/// Reads a whole body, at most `max` bytes, within `timeout`.
pub(crate) async fn read_body(
    mut resp: reqwest::Response,
    max: usize,
    timeout: Duration,
) -> Result<Vec<u8>, ClientError> {
    if resp.content_length().is_some_and(|n| n > max as u64) {
        return Err(too_big(max));
    }
    let read = async {
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(transport)? {
            if body.len() + chunk.len() > max {
                return Err(too_big(max));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    tokio::time::timeout(timeout, read).await.map_err(|_| timed_out(timeout))?
}

fn too_big(max: usize) -> ClientError {
    ClientError::transport(format!("the response is larger than the limit of {max} bytes"))
}

/// The error of a server that did not answer in time.
pub(crate) fn timed_out(d: Duration) -> ClientError {
    ClientError::Transport(TransportError::timeout(format!("the server did not answer within {} s", d.as_secs_f64())))
}

/// A reqwest error as a transport error (kept as its source).
pub(crate) fn transport(e: reqwest::Error) -> ClientError {
    let error = if e.is_connect() {
        let mut why = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            why = format!("{why}: {s}");
            src = s.source();
        }
        TransportError::new(format!("cannot connect: {why}"))
    } else if e.is_timeout() {
        TransportError::timeout(format!("timed out: {e}"))
    } else {
        TransportError::new(e.to_string())
    };
    ClientError::Transport(error.caused_by(e))
}

/// Sends `rb`, waiting at most `timeout` for the response head.
pub(crate) async fn send(rb: reqwest::RequestBuilder, timeout: Duration) -> Result<reqwest::Response, ClientError> {
    tokio::time::timeout(timeout, rb.send()).await.map_err(|_| timed_out(timeout))?.map_err(transport)
}

/// A response's `WWW-Authenticate` values, joined with `, ` (one header value list).
pub(crate) fn www_authenticate(resp: &reqwest::Response) -> String {
    resp.headers().get_all("www-authenticate").iter().filter_map(|v| v.to_str().ok()).collect::<Vec<_>>().join(", ")
}

/// The error for a redirect that was not followed.
pub(crate) fn redirect_refused(resp: &reqwest::Response) -> ClientError {
    let to = resp.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or("?");
    let to = Url::parse(to).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_else(|| "elsewhere".into());
    // No status kept: a redirect is an answer, not a server of the other era.
    ClientError::transport(format!(
        "the server redirected the request (HTTP {}) to another origin ({}); not followed",
        resp.status().as_u16(),
        shown(&to)
    ))
}
