//! The client driving a task: call a tool, get a task back, follow it to the
//! end (pushed on a listen stream where the server offers one, polled
//! otherwise), and answer its question on the way.
//!
//! ```text
//! cargo run -p conduit-mcp --features client --example client_task                         # a stand-in server
//! cargo run -p conduit-mcp --features client --example client_task -- http://HOST:PORT/mcp  # e.g. task_progress_input
//! ```

use async_trait::async_trait;
use conduit_mcp::client::{
    Ask, CallOutcome, ClientBuilder, ClientError, InputHandler, InputSupport, TaskEvent, ToolOutcome, elicit_accept,
};
use conduit_mcp::prelude::*;
use serde_json::{Value, json};

/// Answers the server's questions: here, yes to every confirmation. The
/// client declares only what the handler supports (form elicitation), so a
/// server never asks it for anything else.
struct Confirm;

#[async_trait]
impl InputHandler for Confirm {
    fn support(&self) -> InputSupport {
        let mut support = InputSupport::NONE;
        support.form = true;
        support
    }

    async fn answer(&self, key: &str, ask: Ask<'_>) -> Result<Value, ClientError> {
        if let Ask::Form { message, .. } = ask {
            println!("asked ({key}): {message} -> yes");
        }
        Ok(elicit_accept(json!({ "confirm": true })))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = match std::env::args().nth(1) {
        Some(url) => url,
        None => stand_in().await?,
    };
    let client = ClientBuilder::http(&url).input_handler(Confirm).connect().await?;
    let CallOutcome::Task(task) = client.call_tool("deploy", json!({ "service": "billing" })).await? else {
        return Err("the server answered inline: it does not offer tasks".into());
    };
    println!("task {}", task.id());
    let mut events = task.follow();
    while let Some(event) = events.next().await {
        match event? {
            TaskEvent::Status(t) => println!("  {}: {}", t.status.as_str(), t.status_message.unwrap_or_default()),
            TaskEvent::Finished(ToolOutcome::Completed(result)) => {
                if let Some(Content::Text { text, .. }) = result.content.first() {
                    println!("result: {text}");
                }
            }
            TaskEvent::Finished(other) => println!("ended: {other:?}"),
            _ => {}
        }
    }
    Ok(())
}

/// A server to talk to when none is given: a `deploy` task that reports two
/// steps and asks for confirmation (`task_progress_input` is the full one).
async fn stand_in() -> std::io::Result<String> {
    let deploy = Tool::new("deploy", "Deploys a service").param("service", Param::string("What")).handle(
        |_ctx, args| async move {
            let service = args["service"].as_str().unwrap_or("app").to_owned();
            Ok(TaskSpec::new().spawn(move |task| async move {
                task.progress(format!("{service}: building")).await.ok();
                let schema = json!({ "type": "object", "properties": { "confirm": { "type": "boolean" } } });
                let answer = task.input("confirm", mrtr::elicit("Switch over?", schema)).await;
                let confirmed = answer.is_ok_and(|a| a["content"]["confirm"] == true);
                Ok(CallToolResult::text(if confirmed { "deployed" } else { "left as it was" }))
            }))
        },
    );
    let tasks = Tasks::new(TasksConfig::enabled()).expect("a valid configuration");
    let server = Server::builder("stand-in", "1.0.0").extension(tasks).tool(deploy).build().expect("a valid server");
    let bound = http::bind("127.0.0.1:0".parse().expect("an address")).await?;
    let url = format!("http://{}/mcp", bound.local_addr());
    println!("stand-in server on {url}");
    tokio::spawn(bound.serve(server, HttpConfig::default(), std::future::pending()));
    Ok(url)
}
