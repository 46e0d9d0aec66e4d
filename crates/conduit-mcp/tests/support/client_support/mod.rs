//! What the client tests share: a server with inline, MRTR and task tools
//! (external tasks driven by the test through the `Tasks` handle), and an
//! input handler that counts what it was asked; and the library-client
//! helpers the server tests use to create tasks and listen to them.

use async_trait::async_trait;
use conduit_mcp::client::{
    Ask, CallOutcome, Client, ClientBuilder, ClientError, InputHandler, InputSupport, ListenEvent, ListenStream,
    elicit_accept,
};
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Answers every form with `{"name": NAME, "confirm": true}` and records each key asked.
#[derive(Clone, Default)]
pub struct Recorder {
    /// The name it answers with.
    pub name: String,
    /// The keys of every form it was asked, in order.
    pub asked: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    /// A recorder that answers with `name`.
    pub fn new(name: &str) -> Self {
        Self { name: name.into(), asked: Arc::default() }
    }
    /// The keys asked so far.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl InputHandler for Recorder {
    fn support(&self) -> InputSupport {
        InputSupport::ALL
    }
    async fn answer(&self, key: &str, ask: Ask<'_>) -> Result<Value, ClientError> {
        self.asked.lock().unwrap().push(key.to_owned());
        Ok(match ask {
            Ask::Form { .. } | Ask::Url { .. } => elicit_accept(json!({ "name": self.name, "confirm": true })),
            Ask::Sample(_) => {
                json!({ "role": "assistant", "content": { "type": "text", "text": "sampled" }, "model": "test" })
            }
            Ask::Roots => json!({ "roots": [{ "uri": "file:///tmp", "name": "tmp" }] }),
            _ => return Err(ClientError::Input("unexpected".into())),
        })
    }
}

fn form(message: &str) -> conduit_mcp::protocol::mrtr::InputRequest {
    mrtr::elicit(
        message,
        json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] }),
    )
}

/// The test server: `tasks` is the handle the test drives external tasks with.
pub fn server(tasks: &Tasks) -> Server {
    Server::builder("client-test", "1.0.0")
        .extension(tasks.clone())
        .tool(
            Tool::new("echo", "Echoes the text back").param("text", Param::string("What to echo").required()).handle(
                |_ctx, args| async move { Ok(CallToolResult::text(args["text"].as_str().unwrap_or_default())) },
            ),
        )
        .tool(
            Tool::new("refuse", "Always a tool error")
                .handle(|_ctx, _args| async move { Ok(CallToolResult::error("no such thing")) }),
        )
        .tool(
            Tool::new("region", "Mirrors its argument in Mcp-Param-Region")
                .param("region", Param::string("Where").required().header("Region"))
                .param("n", Param::integer("How many").header("N"))
                .handle(|_ctx, args| async move {
                    Ok(CallToolResult::text(format!("{} x{}", args["region"].as_str().unwrap_or("?"), args["n"])))
                }),
        )
        .tool(Tool::new("login", "Two MRTR rounds, state sealed in between").handle(|ctx, _args| async move {
            let out: ToolOutput = match (ctx.request_state(), ctx.input_response("first"), ctx.input_response("second"))
            {
                (Some(state), _, Some(second)) => CallToolResult::text(format!(
                    "{} then {}",
                    state["first"].as_str().unwrap_or("?"),
                    second["content"]["name"].as_str().unwrap_or("?")
                ))
                .into(),
                (_, Some(first), _) => InputRequired::new()
                    .request("second", form("Second?"))
                    .state(json!({ "first": first["content"]["name"] }))
                    .into(),
                _ => InputRequired::new().request("first", form("First?")).into(),
            };
            Ok(out)
        }))
        .tool(Tool::new("job", "An external task the test drives").task_support(TaskSupport::Required).handle(
            |_ctx, _args| async move {
                Ok(TaskSpec::new().status_message("Queued").poll_interval(Duration::from_millis(20)))
            },
        ))
        .tool(Tool::new("ask", "A task that asks who").task_support(TaskSupport::Required).handle(
            |_ctx, _args| async move {
                Ok(TaskSpec::new().poll_interval(Duration::from_millis(20)).spawn(|task| async move {
                    let a = task.input("who", form("Who?")).await.map_err(|e| RpcError::internal(e.to_string()))?;
                    Ok(CallToolResult::text(format!("hello {}", a["content"]["name"].as_str().unwrap_or("?"))))
                }))
            },
        ))
        .tool(Tool::new("boom", "A task that fails").task_support(TaskSupport::Required).handle(
            |_ctx, _args| async move {
                Ok(TaskSpec::new()
                    .poll_interval(Duration::from_millis(20))
                    .spawn(|_task| async move { Err(RpcError::new(ErrorCode::Other(-1), "boom")) }))
            },
        ))
        .tool(Tool::new("forever", "A task that waits until cancelled").task_support(TaskSupport::Required).handle(
            |_ctx, _args| async move {
                Ok(TaskSpec::new().poll_interval(Duration::from_millis(20)).spawn(|task| async move {
                    task.cancelled().await;
                    Err(RpcError::internal("cancelled"))
                }))
            },
        ))
        .tool(Tool::new("short", "An external task with a 1 s TTL").task_support(TaskSupport::Required).handle(
            |_ctx, _args| async move {
                Ok(TaskSpec::new().ttl(Duration::from_secs(1)).poll_interval(Duration::from_millis(20)))
            },
        ))
        .build()
        .expect("a valid server")
}

/// A Tasks handle with the defaults.
pub fn tasks() -> Tasks {
    Tasks::new(TasksConfig::enabled()).expect("tasks")
}

/// A client of `url` answering with `handler`.
pub fn client(url: &str, handler: Recorder) -> ClientBuilder {
    ClientBuilder::http(url).input_handler(handler).poll_interval(Duration::from_millis(20))
}

/// What a mock server answers to one request.
pub enum Reply {
    /// `200 application/json` with this JSON-RPC result for the request's id.
    Result(Value),
    /// A raw HTTP answer: status, content type, body.
    Raw(u16, &'static str, String),
}

/// A misbehaving server on `127.0.0.1:0`: `f` sees each request body and says what to send.
/// Returns the endpoint URL; the server lives as long as the runtime.
pub async fn mock(f: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> String {
    use axum::response::IntoResponse;
    let f = Arc::new(f);
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |body: String| {
            let f = f.clone();
            async move {
                let req: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                match f(&req) {
                    Reply::Result(r) => {
                        let body = json!({ "jsonrpc": "2.0", "id": req["id"], "result": r }).to_string();
                        ([("content-type", "application/json")], body).into_response()
                    }
                    Reply::Raw(status, ct, body) => {
                        (axum::http::StatusCode::from_u16(status).unwrap(), [("content-type", ct)], body)
                            .into_response()
                    }
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// The discover result of a modern mock.
pub fn discover() -> Value {
    json!({ "resultType": "complete", "supportedVersions": ["2026-07-28"], "ttlMs": 0, "cacheScope": "private",
            "capabilities": { "tools": {}, "extensions": { "io.modelcontextprotocol/tasks": {} } } })
}

/// A task object as a mock sends it.
pub fn mock_task(status: &str) -> Value {
    json!({ "taskId": "t-1", "status": status, "createdAt": "2026-08-01T10:30:00Z",
            "lastUpdatedAt": "2026-08-01T10:30:00Z", "ttlMs": null, "pollIntervalMs": 10 })
}

/// The library client on `url`, for the server tests that speak MCP as such
/// (it declares the Tasks extension on every request). Tests whose point is
/// the bytes, headers or status codes on the wire use `common`'s raw harness.
pub async fn connect(url: &str) -> Client {
    ClientBuilder::http(url).connect().await.expect("connect")
}

/// Calls `tool` without arguments and returns the id of the task it made.
pub async fn create_task(c: &Client, tool: &str) -> String {
    match c.call_tool(tool, json!({})).await.expect("tools/call") {
        CallOutcome::Task(t) => t.id().to_owned(),
        other => panic!("{tool}: no task: {other:?}"),
    }
}

/// Opens a listen stream for `ids`; returns it and the ids the server acknowledged.
pub async fn listen_tasks(c: &Client, ids: &[&str]) -> (ListenStream, Value) {
    let mut s = c.listen(json!({ "taskIds": ids })).await.expect("listen");
    match s.next().await {
        Some(ListenEvent::Notification { method, params }) if method == "notifications/subscriptions/acknowledged" => {
            let acked = params["notifications"]["taskIds"].clone();
            (s, acked)
        }
        other => panic!("no acknowledgment: {other:?}"),
    }
}

/// The `params` of the stream's next notification (failing if it ends instead).
pub async fn next_notification(s: &mut ListenStream) -> Value {
    match s.next().await {
        Some(ListenEvent::Notification { params, .. }) => params,
        other => panic!("not a notification: {other:?}"),
    }
}
