//! [`LoopbackBrowser`]: the authorization of a native application (RFC
//! 8252): the person's browser is sent to the authorization server, which
//! redirects back to `http://127.0.0.1:PORT/callback`, where a listener of
//! ours waits for the answer to this login (its `state`). Any local process
//! can connect to that port: each connection is served on its own with its
//! own deadline, and a request that is not this login's answer gets 400 (a
//! callback with another `state`) or 404, without ending the wait.

use super::authorize::Authorizer;
use crate::client::error::ClientError;
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Mutex, Semaphore, mpsc};

/// How the authorization URL reaches the person.
pub type OpenUrl = Arc<dyn Fn(&str) -> Result<(), ClientError> + Send + Sync>;

/// The callback path on the loopback listener.
const CALLBACK_PATH: &str = "/callback";
/// The largest request head the listener reads.
const MAX_HEAD: usize = 16 * 1024;
/// How long one connection to the listener may take to send its request.
const CONNECTION_DEADLINE: Duration = Duration::from_secs(10);
/// Connections served at once (more wait in the backlog until one ends).
const MAX_CONNECTIONS: usize = 64;

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
        // The answer to this login carries its `state`; anything else reaching the listener is not it.
        let state = reqwest::Url::parse(authorization_url)
            .ok()
            .and_then(|u| u.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()));
        let origin: Arc<str> = Arc::from(uri.trim_end_matches(CALLBACK_PATH));
        (self.open)(authorization_url)?;
        let (tx, mut rx) = mpsc::channel::<String>(1);
        let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        let state: Arc<Option<String>> = Arc::new(state);
        let wait = async {
            loop {
                let permit = tokio::select! {
                    Some(callback) = rx.recv() => return callback,
                    permit = connections.clone().acquire_owned() => permit,
                };
                let Ok(permit) = permit else { continue };
                let accepted = tokio::select! {
                    Some(callback) = rx.recv() => return callback,
                    accepted = listener.accept() => accepted,
                };
                let Ok((sock, _)) = accepted else {
                    // Out of descriptors, most likely: give the open connections a moment to end.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let (tx, state, origin) = (tx.clone(), state.clone(), origin.clone());
                // Each connection on its own, with its own deadline: an idle one stalls nothing.
                tokio::spawn(async move {
                    let _permit = permit;
                    let _ = tokio::time::timeout(CONNECTION_DEADLINE, serve(sock, &state, &origin, &tx)).await;
                });
            }
        };
        tokio::time::timeout(self.timeout, wait)
            .await
            .map_err(|_| ClientError::OAuth(format!("no authorization arrived within {} s", self.timeout.as_secs())))
    }
}

/// Answers one connection to the listener: the callback of this login
/// (`state` matches) is passed on through `tx`; another callback is 400, any
/// other path 404.
async fn serve(mut sock: TcpStream, state: &Option<String>, origin: &str, tx: &mpsc::Sender<String>) {
    let Some(target) = read_target(&mut sock).await else { return };
    let callback =
        target.starts_with(CALLBACK_PATH) && matches!(target.as_bytes().get(CALLBACK_PATH.len()), None | Some(b'?'));
    let url = reqwest::Url::parse(&format!("{origin}{target}")).ok();
    let param = |k: &str| url.as_ref()?.query_pairs().find(|(n, _)| n == k).map(|(_, v)| v.into_owned());
    let ours = callback && (state.is_none() || param("state") == *state);
    let (status, text) = match (callback, ours, param("error").is_some()) {
        (false, ..) => ("404 Not Found", "Not found."),
        (true, false, _) => ("400 Bad Request", "This is not the answer to the login under way."),
        (true, true, true) => ("200 OK", "Authorization refused: you can close this window; the terminal says why."),
        (true, true, false) => {
            ("200 OK", "Authorization received: you can close this window and return to the terminal.")
        }
    };
    let page = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = sock.write_all(page.as_bytes()).await;
    if ours {
        let _ = tx.send(format!("{origin}{target}")).await;
    }
}

/// The request target of a `GET` on the socket (the caller bounds the wait).
async fn read_target(sock: &mut TcpStream) -> Option<String> {
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
    read.await?;
    let line = head.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut parts = line.split(' ');
    (parts.next()? == "GET").then_some(())?;
    let target = parts.next()?;
    target.starts_with('/').then(|| target.to_owned())
}
