//! [`LoopbackBrowser`]: the authorization of a native application (RFC
//! 8252): the person's browser is sent to the authorization server, which
//! redirects back to `http://127.0.0.1:PORT/callback`, where a one-request
//! listener of ours waits.

use super::authorize::Authorizer;
use crate::client::ClientError;
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Mutex;

/// How the authorization URL reaches the person.
pub type OpenUrl = Arc<dyn Fn(&str) -> Result<(), ClientError> + Send + Sync>;

/// The callback path on the loopback listener.
const CALLBACK_PATH: &str = "/callback";
/// The largest request head the listener reads.
const MAX_HEAD: usize = 16 * 1024;

/// An [`Authorizer`] for programs on the person's own machine: opens the
/// authorization URL (how is up to the `open` function: a browser, a
/// command, a printed line) and waits for the redirect on a loopback
/// listener, for at most the [`timeout`](Self::timeout) (default 5 minutes).
pub struct LoopbackBrowser {
    open: OpenUrl,
    timeout: Duration,
    listener: Mutex<Option<(TcpListener, String)>>,
}

impl std::fmt::Debug for LoopbackBrowser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackBrowser").field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

impl LoopbackBrowser {
    /// Sends the person to the URL with `open`.
    pub fn new(open: impl Fn(&str) -> Result<(), ClientError> + Send + Sync + 'static) -> Self {
        Self { open: Arc::new(open), timeout: Duration::from_secs(300), listener: Mutex::new(None) }
    }

    /// Runs `command URL` (through `sh -c`, the URL passed as an argument,
    /// never spliced into the command line).
    pub fn command(command: impl Into<String>) -> Self {
        let command = command.into();
        Self::new(move |url| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("{command} \"$1\""))
                .arg("sh")
                .arg(url)
                .stdin(std::process::Stdio::null())
                .spawn()
                .map(drop)
                .map_err(|e| ClientError::OAuth(format!("cannot run the browser command: {e}")))
        })
    }

    /// How long to wait for the redirect.
    #[must_use]
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d;
        self
    }
}

/// The port of a loopback redirect URI of ours.
fn preferred_port(uri: &str) -> Option<u16> {
    let u = reqwest::Url::parse(uri).ok()?;
    (u.scheme() == "http" && u.host_str() == Some("127.0.0.1") && u.path() == CALLBACK_PATH).then(|| u.port())?
}

#[async_trait]
impl Authorizer for LoopbackBrowser {
    async fn redirect_uri(&self, preferred: Option<&str>) -> Result<String, ClientError> {
        let mut slot = self.listener.lock().await;
        if let Some((_, uri)) = slot.as_ref() {
            return Ok(uri.clone());
        }
        let mut bound = None;
        if let Some(p) = preferred.and_then(preferred_port) {
            bound = TcpListener::bind(("127.0.0.1", p)).await.ok();
        }
        let bound = match bound {
            Some(l) => l,
            None => TcpListener::bind(("127.0.0.1", 0))
                .await
                .map_err(|e| ClientError::OAuth(format!("cannot listen for the redirect: {e}")))?,
        };
        let port = bound.local_addr().map_err(|e| ClientError::OAuth(e.to_string()))?.port();
        let uri = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");
        *slot = Some((bound, uri.clone()));
        Ok(uri)
    }

    async fn authorize(&self, authorization_url: &str) -> Result<String, ClientError> {
        let slot = self.listener.lock().await;
        let Some((listener, uri)) = slot.as_ref() else {
            return Err(ClientError::OAuth("authorize before redirect_uri".into()));
        };
        (self.open)(authorization_url)?;
        let wait = async {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else { continue };
                if let Some(target) = read_target(&mut sock).await {
                    let callback = target.starts_with(CALLBACK_PATH)
                        && matches!(target.as_bytes().get(CALLBACK_PATH.len()), None | Some(b'?'));
                    let (status, text) = if callback {
                        ("200 OK", "Authorization received: you can close this window and return to the terminal.")
                    } else {
                        ("404 Not Found", "Not found.")
                    };
                    let page = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                        text.len()
                    );
                    let _ = sock.write_all(page.as_bytes()).await;
                    if callback {
                        let origin = uri.trim_end_matches(CALLBACK_PATH);
                        return format!("{origin}{target}");
                    }
                }
            }
        };
        tokio::time::timeout(self.timeout, wait)
            .await
            .map_err(|_| ClientError::OAuth(format!("no authorization arrived within {} s", self.timeout.as_secs())))
    }
}

/// The request target of a `GET` on the socket, if it sends one in time.
async fn read_target(sock: &mut tokio::net::TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 2048];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
            let n = sock.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            head.extend_from_slice(&chunk[..n]);
        }
        Some(())
    };
    tokio::time::timeout(Duration::from_secs(10), read).await.ok()??;
    let line = head.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut parts = line.split(' ');
    (parts.next()? == "GET").then_some(())?;
    let target = parts.next()?;
    target.starts_with('/').then(|| target.to_owned())
}
