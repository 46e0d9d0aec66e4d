//! A hand-rolled authorization server for the introspection tests: RFC 8414
//! metadata naming an introspection endpoint (no keys), and that endpoint
//! answering what the test says — a JSON answer per token, an error, or
//! nothing until released — while counting and recording every POST (the
//! token and the `Authorization` header it came with).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// What the endpoint does with one POST.
pub enum Answer {
    /// `200` with this JSON body.
    Json(Value),
    /// `500`.
    Fail,
    /// Nothing until [`IntrospectionAs::release`], then `500`.
    Hang,
}

type Rule = Arc<dyn Fn(&str) -> Answer + Send + Sync>;

/// One introspection POST the AS got.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The `token` form field.
    pub token: String,
    /// The `Authorization` header (`Basic …`), empty when absent.
    pub authorization: String,
}

struct St {
    issuer: String,
    rule: Mutex<Rule>,
    seen: Mutex<Vec<Seen>>,
    /// How many POSTs arrived (a channel, so a test can wait for a count).
    calls: watch::Sender<usize>,
    /// Bumped by `release`: hung POSTs answer then.
    released: watch::Sender<u64>,
}

/// A running authorization server on `127.0.0.1:0`; stops on drop.
pub struct IntrospectionAs {
    /// `http://127.0.0.1:PORT`, its issuer identifier.
    pub issuer: String,
    st: Arc<St>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for IntrospectionAs {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The value of a form field (`a=b&c=d`), percent- and plus-decoded.
fn form_field(body: &[u8], name: &str) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let raw = text.split('&').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))?;
    let bytes = raw.as_bytes();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                out.push(u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

async fn metadata(State(st): State<Arc<St>>) -> Response {
    let body = json!({ "issuer": st.issuer, "introspection_endpoint": format!("{}/introspect", st.issuer) });
    axum::Json(body).into_response()
}

async fn introspect(State(st): State<Arc<St>>, headers: HeaderMap, body: Bytes) -> Response {
    let token = form_field(&body, "token").unwrap_or_default();
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let mut released = st.released.subscribe();
    released.borrow_and_update();
    st.seen.lock().unwrap().push(Seen { token: token.clone(), authorization });
    st.calls.send_modify(|n| *n += 1);
    let rule = st.rule.lock().unwrap().clone();
    match rule(&token) {
        Answer::Json(v) => axum::Json(v).into_response(),
        Answer::Fail => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        Answer::Hang => {
            let _ = released.changed().await;
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

impl IntrospectionAs {
    /// Starts one that calls every token inactive.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let issuer = format!("http://{}", listener.local_addr().expect("address"));
        let st = Arc::new(St {
            issuer: issuer.clone(),
            rule: Mutex::new(Arc::new(|_: &str| Answer::Json(json!({ "active": false })))),
            seen: Mutex::default(),
            calls: watch::channel(0).0,
            released: watch::channel(0).0,
        });
        let app = axum::Router::new()
            .route("/.well-known/oauth-authorization-server", get(metadata))
            .route("/introspect", post(introspect))
            .with_state(st.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { issuer, st, task }
    }

    /// Answers each later POST by `rule` (given the token).
    pub fn answer(&self, rule: impl Fn(&str) -> Answer + Send + Sync + 'static) {
        *self.st.rule.lock().unwrap() = Arc::new(rule);
    }

    /// Ends every hung POST (each gets a 500).
    pub fn release(&self) {
        self.st.released.send_modify(|g| *g += 1);
    }

    /// How many introspection POSTs arrived so far.
    pub fn calls(&self) -> usize {
        *self.st.calls.borrow()
    }

    /// Every POST so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.st.seen.lock().unwrap().clone()
    }

    /// Waits until at least `n` POSTs have arrived (failing the test after 10 s).
    pub async fn until_calls(&self, n: usize) {
        let mut rx = self.st.calls.subscribe();
        let waited = tokio::time::timeout(std::time::Duration::from_secs(10), rx.wait_for(|c| *c >= n)).await;
        assert!(waited.is_ok(), "the AS got {} introspection POSTs, not {n}", self.calls());
    }
}

/// An active answer for `sub` at `issuer`, for resource `aud`, with `scope`.
pub fn active(issuer: &str, aud: &str, sub: &str, scope: &str) -> Value {
    json!({ "active": true, "iss": issuer, "aud": aud, "sub": sub, "scope": scope, "token_type": "Bearer" })
}

/// `Basic base64(id:secret)`, as a client authenticates with `client_secret_basic`.
pub fn basic(id: &str, secret: &str) -> String {
    use base64::Engine;
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}")))
}
