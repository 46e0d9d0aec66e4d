//! `http::serve` routes its one path by hand: over a real socket, `/mcp` (with or
//! without a trailing slash) answers as the router does, other methods there get
//! 405, other paths 404, and `serve_with` hands those paths to the application's
//! own routes on the same listener.

use crate::common;

use common::*;
use conduit_mcp::prelude::*;
use conduit_mcp::transport::http::{self, HttpConfig};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Serves the echo tool on a free port, with `routes` beside it when given; returns the base URL.
async fn serve(routes: Option<axum::Router>) -> String {
    let server = Server::builder("routes", "1.0.0").tool(echo_tool()).build().expect("server");
    let bound = http::bind("127.0.0.1:0".parse().expect("addr")).await.expect("bind");
    let base = format!("http://{}", bound.local_addr());
    let forever = std::future::pending::<()>();
    match routes {
        Some(r) => drop(tokio::spawn(bound.serve_with(server, HttpConfig::default(), r, forever))),
        None => drop(tokio::spawn(bound.serve(server, HttpConfig::default(), forever))),
    }
    base
}

async fn echo(url: &str) -> (StatusCode, Value) {
    let body = call(7, "echo", json!({ "text": "hi" })).to_string();
    let r = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", V)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
        .body(body)
        .send()
        .await
        .expect("sent");
    let status = r.status();
    (status, serde_json::from_str(&r.text().await.expect("body")).expect("JSON"))
}

#[tokio::test]
async fn the_endpoint_answers_at_mcp_and_nowhere_else() {
    let base = serve(None).await;
    for path in ["/mcp", "/mcp/"] {
        let (status, m) = echo(&format!("{base}{path}")).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(m["id"], 7);
        assert!(m["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("hi")), "{m}");
    }
    let c = reqwest::Client::new();
    let put = c.put(format!("{base}/mcp")).send().await.expect("sent");
    assert_eq!(put.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(put.headers().get("allow").and_then(|v| v.to_str().ok()), Some("POST"));
    // GET and DELETE outside a legacy session: 405, as the router answers them.
    for r in [c.get(format!("{base}/mcp")), c.delete(format!("{base}/mcp"))] {
        assert_eq!(r.send().await.expect("sent").status(), StatusCode::METHOD_NOT_ALLOWED);
    }
    for path in ["/", "/mcpx", "/mcp/x", "/healthz"] {
        let r = c.get(format!("{base}{path}")).send().await.expect("sent");
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
    }
}

#[tokio::test]
async fn serve_with_hands_other_paths_to_the_applications_routes() {
    let routes = axum::Router::new().route("/healthz", axum::routing::get(|| async { "ok" }));
    let base = serve(Some(routes)).await;
    let r = reqwest::get(format!("{base}/healthz")).await.expect("sent");
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.text().await.expect("body"), "ok");
    let (status, m) = echo(&format!("{base}/mcp")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(m["id"], 7);
    let r = reqwest::get(format!("{base}/elsewhere")).await.expect("sent");
    assert_eq!(r.status(), StatusCode::NOT_FOUND, "the application's router answers its own 404");
}
