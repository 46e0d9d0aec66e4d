//! `serve --metrics ADDR` exposes the server's counters in Prometheus text
//! format: a scrape after some traffic shows requests by method and outcome,
//! their latency, tasks created and finished, and open listen streams.

use crate::common;

use common::*;
use serde_json::json;
use std::time::Duration;

/// The value of the sample `name{labels}` (labels exactly as rendered), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series).and_then(|rest| rest.trim().parse().ok()))
}

async fn scrape(url: &str) -> String {
    let r = reqwest::get(url).await.expect("scrape");
    assert_eq!(r.status(), 200);
    r.text().await.expect("body")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_shows_requests_tasks_and_streams() {
    // A free port for the exporter (it does not report the one it bound).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let node = Node::start(&["--metrics", &addr]).await;
    let id = create(&node, None, "job", json!({ "name": "m" })).await;
    let done = call(&node, None, "complete_job", json!({ "taskId": id })).await;
    assert_eq!(first_text(&done), "completed", "{done:?}");
    let missing = get_refused(&node, None, &"x".repeat(43)).await;
    assert_eq!(missing.code, -32602);
    let other = create(&node, None, "job", json!({ "name": "open" })).await;
    let mut stream = Events::listen(&node, None, std::slice::from_ref(&other)).await;
    stream.ack(Duration::from_secs(10)).await;

    let text = scrape(&format!("http://{addr}/metrics")).await;
    for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {line}"));
        assert!(series.starts_with("conduit_"), "{line}");
        assert!(value.parse::<f64>().is_ok(), "{line}");
    }
    assert_eq!(sample(&text, r#"conduit_requests_total{method="tools/call",outcome="ok"}"#), Some(3.0), "{text}");
    assert_eq!(sample(&text, r#"conduit_requests_total{method="tasks/get",outcome="-32602"}"#), Some(1.0), "{text}");
    assert_eq!(sample(&text, "conduit_tasks_created_total"), Some(2.0), "{text}");
    assert_eq!(sample(&text, r#"conduit_tasks_finished_total{status="completed"}"#), Some(1.0), "{text}");
    assert_eq!(sample(&text, "conduit_tasks_live"), Some(1.0), "{text}");
    assert_eq!(sample(&text, "conduit_listen_streams"), Some(1.0), "{text}");
    assert!(text.contains(r#"conduit_request_duration_seconds{method="tools/call",quantile="0.5"}"#), "{text}");
    assert!(text.contains("# TYPE conduit_requests_total counter"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_by_a_rate_are_counted() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let node = Node::start(&["--metrics", &addr, "--task-create-rate", "1/min", "--request-rate", "4/min"]).await;
    create(&node, None, "job", json!({ "name": "first" })).await;
    let refused = call_refused(&node, None, "job", json!({ "name": "second" })).await;
    assert_eq!(refused.code, -32000, "{refused:?}");
    // Calls until the request rate refuses one (the client's connect used some of it too).
    let client = node.client(None).await;
    let mut refused_at = None;
    for i in 0..5 {
        if let Err(e) = client.call_tool("echo", json!({ "text": "x" })).await {
            assert!(e.to_string().contains("Too many requests"), "{e}");
            refused_at = Some(i);
            break;
        }
    }
    assert!(refused_at.is_some(), "4/min lets no more than four through");
    let text = scrape(&format!("http://{addr}/metrics")).await;
    assert_eq!(sample(&text, r#"conduit_limited_total{what="task_creates"}"#), Some(1.0), "{text}");
    assert_eq!(sample(&text, r#"conduit_limited_total{what="requests"}"#), Some(1.0), "{text}");
}
