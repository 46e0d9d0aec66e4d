//! [`RequestLog`] (features `testing` and `http`): what a server saw, by the
//! `Mcp-Method` header of each request, for tests that prove a client sends
//! what it should and no more (one `events/stream` for many tasks, no
//! polling while events arrive).

use axum::extract::Request;
use axum::middleware::Next;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::watch;

/// The requests a server saw so far: how many of each method, and the
/// `Mcp-Name` of the last request of each method that carried one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeenRequests {
    counts: HashMap<String, usize>,
    last_names: HashMap<String, String>,
}

impl SeenRequests {
    /// Requests of `method` seen.
    pub fn count(&self, method: &str) -> usize {
        self.counts.get(method).copied().unwrap_or(0)
    }

    /// Requests of `method` seen since `before` (an earlier copy of this log).
    pub fn since(&self, before: &SeenRequests, method: &str) -> usize {
        self.count(method).saturating_sub(before.count(method))
    }

    /// The `Mcp-Name` of the last `method` request that had one (the task id
    /// of a `tasks/get`, the tool of a `tools/call`).
    pub fn last_name(&self, method: &str) -> Option<&str> {
        self.last_names.get(method).map(String::as_str)
    }
}

/// Counts the requests of an axum app by their `Mcp-Method` header
/// ([`wrap`](Self::wrap)); tests read the counts or wait for one
/// ([`watch`](Self::watch)) instead of sleeping.
///
/// Requests without the header (a legacy client's, a GET) are not counted.
#[derive(Debug, Clone)]
pub struct RequestLog {
    seen: Arc<watch::Sender<SeenRequests>>,
}

impl Default for RequestLog {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestLog {
    /// An empty log.
    pub fn new() -> Self {
        Self { seen: Arc::new(watch::Sender::new(SeenRequests::default())) }
    }

    /// `app` with every request counted before it is handled.
    pub fn wrap(&self, app: axum::Router) -> axum::Router {
        let seen = self.seen.clone();
        app.layer(axum::middleware::from_fn(move |req: Request, next: Next| {
            note(&seen, &req);
            next.run(req)
        }))
    }

    /// What was seen so far.
    pub fn seen(&self) -> SeenRequests {
        self.seen.borrow().clone()
    }

    /// A receiver told of each request counted (`wait_for` a count).
    pub fn watch(&self) -> watch::Receiver<SeenRequests> {
        self.seen.subscribe()
    }
}

fn note(seen: &watch::Sender<SeenRequests>, req: &Request) {
    let header = |n: &str| req.headers().get(n).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let Some(method) = header("mcp-method") else { return };
    let name = header("mcp-name");
    seen.send_modify(|s| {
        if let Some(name) = name {
            s.last_names.insert(method.clone(), name);
        }
        *s.counts.entry(method).or_default() += 1;
    });
}
