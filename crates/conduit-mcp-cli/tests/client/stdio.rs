//! The client library over stdio against `conduit-mcp serve --stdio` (a
//! real child process): era probe, inline call, a task followed by push on
//! the stdio listen stream, input answered, cancel, resume by id; a line
//! longer than the configured cap ends the connection.

use async_trait::async_trait;
use conduit_mcp::client::{
    Ask, CallOutcome, Client, ClientBuilder, ClientError, InputHandler, InputSupport, TaskEvent, ToolOutcome,
    elicit_accept,
};
use conduit_mcp::protocol::Era;
use conduit_mcp::protocol::content::Content;
use conduit_mcp::protocol::tasks::TaskStatus;
use serde_json::{Value, json};
use std::time::Duration;

struct Yes;

#[async_trait]
impl InputHandler for Yes {
    fn support(&self) -> InputSupport {
        InputSupport::ALL
    }
    async fn answer(&self, _key: &str, _ask: Ask<'_>) -> Result<Value, ClientError> {
        Ok(elicit_accept(json!({ "confirm": true })))
    }
}

async fn connect() -> Client {
    let c = ClientBuilder::stdio(env!("CARGO_BIN_EXE_conduit-mcp"), ["serve", "--stdio"])
        .input_handler(Yes)
        .poll_interval(Duration::from_millis(50));
    tokio::time::timeout(Duration::from_secs(30), c.connect()).await.expect("in time").expect("connect")
}

fn text(o: &ToolOutcome) -> String {
    match o {
        ToolOutcome::Completed(r) => match &r.content[0] {
            Content::Text { text, .. } => text.clone(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), f).await.expect("in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_over_stdio_push_input_cancel_resume() {
    let c = connect().await;
    assert_eq!(c.server().era, Some(Era::Modern));
    match within(c.call_tool("echo", json!({ "text": "over a pipe" }))).await.unwrap() {
        CallOutcome::Complete(r) => {
            assert!(matches!(&r.content[0], Content::Text { text, .. } if text == "over a pipe"))
        }
        other => panic!("{other:?}"),
    }
    // A task followed to the end: status messages arrive, by push on the stdio listen stream.
    let CallOutcome::Task(t) = within(c.call_tool("build", json!({ "ref": "pipe", "steps": 2 }))).await.unwrap() else {
        panic!("build is a task")
    };
    let mut events = t.follow();
    let mut messages = Vec::new();
    let mut last = None;
    while let Some(ev) = within(events.next()).await {
        match ev.unwrap() {
            TaskEvent::Status(s) => messages.push(s.status_message.unwrap_or_default()),
            TaskEvent::Finished(o) => last = Some(o),
            _ => {}
        }
    }
    assert!(messages.iter().any(|m| m.contains("step 2/2")), "{messages:?}");
    assert_eq!(text(&last.unwrap()), "built pipe in 2 steps");
    assert_eq!(c.listen_streams_opened(), 1);
    // Input asked mid-task, answered by the handler.
    let out = within(c.call_tool_to_end("deploy", json!({ "environment": "pipe" }))).await.unwrap();
    assert_eq!(text(&out), "deployed to pipe");
    // Cancel, and resume following from the bare id.
    let CallOutcome::Task(t) = within(c.call_tool("sleep", json!({}))).await.unwrap() else { panic!("a task") };
    let again = c.task(t.id().to_owned());
    within(t.cancel()).await.unwrap();
    assert!(matches!(within(again.wait()).await.unwrap(), ToolOutcome::Cancelled(_)));
    assert_eq!(within(again.get()).await.unwrap().task.status, TaskStatus::Cancelled);
}

/// A child that writes a line past `max_message_bytes` (and keeps its
/// stdout open) is stopped there: connecting fails at once, naming the cap,
/// instead of waiting for a newline that never comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_past_the_cap_ends_the_connection() {
    let long_line = "head -c 100000 /dev/zero | tr '\\0' x; echo; exec sleep 600";
    let c = ClientBuilder::stdio("sh", ["-c", long_line]).max_message_bytes(64 * 1024);
    let Err(e) = within(c.connect()).await else { panic!("connected to a server that wrote 100 000 bytes on a line") };
    assert!(matches!(e, ClientError::Transport(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        "connection: the server wrote a line longer than the limit of 65536 bytes (answering server/discover)"
    );
}
