//! Two servers on one PostgreSQL schema, no sticky routing: a legacy client
//! opens its session on node A, calls a tool that asks for elicitation there,
//! and POSTs its answer to node B; B forwards it on the notifier channel
//! (`PgNotifier` as the session relay) and the call on A completes. A
//! forwarded response naming another principal is dropped by A, one too large
//! for `NOTIFY` is refused with 413 (and the call told why), and a response
//! for an id nobody waits on is still 400. Messages are validated against the
//! official 2025-11-25 schema. Needs `DATABASE_URL`.

use crate::support;

use support::assert_legacy_schema as assert_schema;

use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::clock::{Clock, SystemClock};
use conduit_mcp::prelude::*;
use conduit_mcp::session::{SessionConfig, session_key};
use conduit_mcp_sql::{PgNotifier, PostgresStore};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

const LV: &str = "2025-11-25";

/// Fails the test instead of hanging when `what` never happens.
async fn within<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), fut).await.unwrap_or_else(|_| panic!("timed out: {what}"))
}

struct Node {
    url: String,
    notifier: PgNotifier,
    stop: Arc<Notify>,
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop.notify_one();
        self.notifier.stop();
    }
}

async fn node(url: &str, schema: &str, channel: &str) -> Node {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let store = PostgresStore::with_schema(url, schema, clock.clone()).await.expect("connect");
    let notifier = PgNotifier::connect(url, channel).await.expect("notifier");
    let server = Server::builder("forwarding", "1.0.0")
        .clock(clock)
        .sessions(SessionConfig::default().store(store.sessions()).relay(notifier.clone()))
        .tool(Tool::new("ask", "Asks the user's name").handle(|ctx, _args| async move {
            if let Some(a) = ctx.input_response("name") {
                let name = a["content"]["name"].as_str().unwrap_or("?");
                return Ok(CallToolResult::text(format!("Hello, {name}!")).into());
            }
            let schema =
                json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] });
            Ok(ToolOutput::from(InputRequired::new().request("name", mrtr::elicit("Your name?", schema))))
        }))
        .build()
        .expect("server");
    let tokens = BearerTokens::new().token("alice", Principal::new("alice")).token("bob", Principal::new("bob"));
    let bound = conduit_mcp::transport::http::bind("127.0.0.1:0".parse().expect("addr")).await.expect("bind");
    let url = format!("http://{}/mcp", bound.local_addr());
    let stop = Arc::new(Notify::new());
    let stopped = stop.clone();
    tokio::spawn(async move {
        bound.serve(server, HttpConfig::default().auth(tokens), async move { stopped.notified().await }).await
    });
    Node { url, notifier, stop }
}

fn post(url: &str, token: &str, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    let mut r = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", LV)
        .body(body.to_string());
    if let Some(s) = session {
        r = r.header("mcp-session-id", s);
    }
    r
}

/// Opens a session as `token`'s principal with the elicitation capability; returns its id.
async fn initialize(url: &str, token: &str) -> String {
    let body = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LV, "capabilities": { "elicitation": {} },
        "clientInfo": { "name": "forwarding", "version": "1" } } });
    let r = post(url, token, None, &body).send().await.expect("sent");
    let session = r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).expect("a session").to_owned();
    let m: Value = r.json().await.expect("JSON");
    assert_schema("InitializeResult", &m["result"]);
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let r = post(url, token, Some(&session), &note).send().await.expect("sent");
    assert_eq!(r.status(), 202);
    session
}

/// The messages of one call's SSE stream, read as they arrive.
struct Stream {
    resp: reqwest::Response,
    buf: String,
}

impl Stream {
    async fn open(url: &str, token: &str, session: &str, id: u64, tool: &str) -> Self {
        let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool } });
        let resp = post(url, token, Some(session), &call).send().await.expect("sent");
        assert_eq!(resp.status(), 200);
        Self { resp, buf: String::new() }
    }

    /// The next message (priming events and keep-alives skipped).
    async fn next(&mut self) -> Value {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let data: Vec<&str> = block.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).collect();
                let data = data.join("\n");
                if !data.is_empty() {
                    return serde_json::from_str(&data).expect("SSE data is JSON");
                }
                continue;
            }
            let chunk = within("the next SSE chunk", self.resp.chunk()).await.expect("read");
            let chunk = chunk.expect("the stream ended early");
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

/// The node tag in a server→client request id (`conduit-<node>-<n>`).
fn node_tag(id: &Value) -> String {
    let s = id.as_str().expect("a string id");
    let rest = s.strip_prefix("conduit-").expect("a conduit id");
    rest.rsplit_once('-').expect("node and sequence").0.to_owned()
}

async fn two_nodes(test: &str) -> Option<(support::Schemas, String, String, Node, Node)> {
    let url = support::pg_url(test)?;
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let channel = format!("conduit_lgcy_fwd_{:08x}", rand::random::<u32>());
    let a = node(&url, &schema, &channel).await;
    let b = node(&url, &schema, &channel).await;
    // A session opened on a is served by b from the shared store; both must hear the channel.
    let probe = initialize(&a.url, "alice").await;
    let ping = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" });
    let r = post(&b.url, "alice", Some(&probe), &ping).send().await.expect("sent");
    assert_eq!(r.status(), 200, "the shared session store serves b");
    within("a listens", a.notifier.listening()).await;
    within("b listens", b.notifier.listening()).await;
    Some((schemas, url, channel, a, b))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_posted_to_another_node_reaches_the_waiting_call() {
    let Some((_schemas, _url, _channel, a, b)) =
        two_nodes("a_response_posted_to_another_node_reaches_the_waiting_call").await
    else {
        return;
    };
    let session = initialize(&a.url, "alice").await;
    let mut call = Stream::open(&a.url, "alice", &session, 1, "ask").await;
    let ask = call.next().await;
    assert_eq!(ask["method"], "elicitation/create");
    assert_schema("ElicitRequest", &ask);

    // Bad input on b is still bad input: an id no server sent, and no forwarding for it.
    let stray = json!({ "jsonrpc": "2.0", "id": "nobody", "result": { "action": "cancel" } });
    assert_eq!(post(&b.url, "alice", Some(&session), &stray).send().await.expect("sent").status(), 400);

    let answer =
        json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "accept", "content": { "name": "Ada" } } });
    assert_schema("ElicitResult", &answer["result"]);
    assert_eq!(post(&b.url, "alice", Some(&session), &answer).send().await.expect("sent").status(), 202);
    let done = call.next().await;
    assert_eq!(done["id"], 1, "{done}");
    assert_schema("CallToolResult", &done["result"]);
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada!");

    // On the node that sent the request, an answer nobody waits on any more is a 400 at once.
    assert_eq!(post(&a.url, "alice", Some(&session), &answer).send().await.expect("sent").status(), 400);

    // A response too large for NOTIFY: 413 on b, and the call on a fails now, saying why.
    let mut call = Stream::open(&a.url, "alice", &session, 2, "ask").await;
    let ask = call.next().await;
    let big = json!({ "jsonrpc": "2.0", "id": ask["id"],
        "result": { "action": "accept", "content": { "name": "x".repeat(10_000) } } });
    assert_eq!(post(&b.url, "alice", Some(&session), &big).send().await.expect("sent").status(), 413);
    let failed = call.next().await;
    assert_eq!(failed["id"], 2, "{failed}");
    assert_schema("JSONRPCErrorResponse", &failed);
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("larger than"), "{failed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarded_response_from_another_principal_is_refused() {
    let Some((_schemas, url, channel, a, b)) =
        two_nodes("a_forwarded_response_from_another_principal_is_refused").await
    else {
        return;
    };
    let session = initialize(&a.url, "alice").await;
    let mut call = Stream::open(&a.url, "alice", &session, 1, "ask").await;
    let ask = call.next().await;
    assert_eq!(ask["method"], "elicitation/create");

    // Bob presenting alice's session on b is refused there, like an unknown session.
    let mallory =
        json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "accept", "content": { "name": "Bob" } } });
    assert_eq!(post(&b.url, "bob", Some(&session), &mallory).send().await.expect("sent").status(), 404);

    // A forwarded message on the channel that names bob as the principal: a drops it.
    let forged = json!({ "fwd": { "n": node_tag(&ask["id"]), "s": session_key(&session), "o": "bob",
        "id": ask["id"], "r": { "result": mallory["result"] } } });
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(&channel)
        .bind(forged.to_string())
        .execute(&pool)
        .await
        .expect("notify");

    // Alice's own answer, through b, arrives after the forged one (one channel, in order).
    let answer =
        json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "accept", "content": { "name": "Ada" } } });
    assert_eq!(post(&b.url, "alice", Some(&session), &answer).send().await.expect("sent").status(), 202);
    let done = call.next().await;
    assert_schema("CallToolResult", &done["result"]);
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada!", "the forged answer was not delivered");
}
