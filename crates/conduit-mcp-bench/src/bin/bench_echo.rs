//! The ceiling: a bare axum handler that parses the JSON body and answers a
//! fixed-size JSON-RPC result (the size conduit-mcp answers the same request with).
//!
//! ```text
//! bench-echo [--listen 127.0.0.1:PORT] [--sizes GREET,GET,CREATE]
//! ```
//!
//! `--sizes` are the body lengths for `tools/call greet`, `tasks/get` and any other
//! `tools/call` (a task creation). Prints `listening on http://ADDR/mcp` to stderr.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use serde_json::Value;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

const USAGE: &str = "usage: bench-echo [--listen 127.0.0.1:PORT] [--sizes GREET,GET,CREATE]";

/// Body lengths by request kind.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    greet: usize,
    get: usize,
    create: usize,
}

/// Answers `{"jsonrpc":"2.0","id":ID,"result":{"resultType":"complete","pad":"xxx…"}}`, padded to the size.
async fn echo(State(sizes): State<Arc<Sizes>>, body: Bytes) -> Response {
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "bad JSON").into_response();
    };
    let size = match (v["method"].as_str(), v["params"]["name"].as_str()) {
        (Some("tools/call"), Some("greet")) => sizes.greet,
        (Some("tasks/get"), _) => sizes.get,
        _ => sizes.create,
    };
    let id = v.get("id").map_or_else(|| "null".to_owned(), Value::to_string);
    let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"resultType":"complete","pad":""#);
    let tail = r#""}}"#;
    let pad = size.saturating_sub(head.len() + tail.len());
    let mut out = String::with_capacity(size);
    out.push_str(&head);
    out.extend(std::iter::repeat_n('x', pad));
    out.push_str(tail);
    ([(header::CONTENT_TYPE, "application/json")], out).into_response()
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Option<(SocketAddr, Sizes)>, String> {
    let mut listen = "127.0.0.1:0".to_owned();
    let mut sizes = Sizes { greet: 128, get: 300, create: 300 };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--listen" => listen = args.next().ok_or("--listen needs an address")?,
            "--sizes" => {
                let v = args.next().ok_or("--sizes needs GREET,GET,CREATE")?;
                let n: Vec<usize> =
                    v.split(',').map(str::parse).collect::<Result<_, _>>().map_err(|e| format!("--sizes: {e}"))?;
                let [greet, get, create] = n[..] else { return Err("--sizes needs three numbers".into()) };
                sizes = Sizes { greet, get, create };
            }
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    let addr: SocketAddr = listen.parse().map_err(|e| format!("invalid --listen address {listen:?}: {e}"))?;
    if !addr.ip().is_loopback() {
        return Err(format!("refusing to bind {addr}: the benchmark servers bind loopback addresses only"));
    }
    Ok(Some((addr, sizes)))
}

#[tokio::main]
async fn main() -> ExitCode {
    let (addr, sizes) = match parse_args(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let app = axum::Router::new().route("/mcp", post(echo)).with_state(Arc::new(sizes));
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot bind {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let local = listener.local_addr().unwrap_or(addr);
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    eprintln!("listening on http://{local}/mcp");
    match axum::serve(listener, app).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
