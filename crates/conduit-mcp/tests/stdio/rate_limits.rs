//! The task-creation rate on stdio (issue 20, "Rate limiting"): the process is
//! one client; a create past the rate is answered `-32000` with
//! `data.retryAfterMs`, over a real byte stream (`serve_io` on a duplex pipe).

use crate::common;

use common::{guard, meta_with, req};
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use conduit_mcp::quota::RateLimit;
use conduit_mcp::transport::stdio::serve_io;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test]
async fn a_create_past_the_rate_is_refused_with_retry_after_ms() {
    let tasks = Tasks::new(TasksConfig::enabled().create_rate(RateLimit::per_minute(1))).expect("tasks");
    let job =
        Tool::new("job", "a task").task_support(TaskSupport::Required).handle(|_c, _a| async { Ok(TaskSpec::new()) });
    let server = Server::builder("stdio-rates", "1").extension(tasks).tool(job).build().expect("server");
    let (client, process) = tokio::io::duplex(64 * 1024);
    let (from_server, mut to_server) = tokio::io::split(client);
    let (input, output) = tokio::io::split(process);
    let served = tokio::spawn(serve_io(server, input, output));
    let mut lines = BufReader::new(from_server).lines();
    let mut answers = Vec::new();
    for id in 1..=2 {
        let meta = meta_with(json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } }));
        let body = req(id, "tools/call", json!({ "name": "job", "_meta": meta }));
        to_server.write_all(format!("{body}\n").as_bytes()).await.expect("write");
        let line = guard("the answer", lines.next_line()).await.expect("read").expect("a line");
        answers.push(serde_json::from_str::<Value>(&line).expect("JSON"));
    }
    assert!(answers[0]["result"]["taskId"].is_string(), "{}", answers[0]);
    let e = &answers[1]["error"];
    assert_eq!(answers[1]["id"], 2, "{}", answers[1]);
    assert_eq!(e["code"], -32000, "{e}");
    assert!(e["data"]["retryAfterMs"].as_u64().is_some_and(|ms| ms > 0 && ms <= 60_000), "{e}");
    served.abort();
}
