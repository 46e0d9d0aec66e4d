//! The reference server's command line and configuration say what they do:
//! nothing is silently ignored or misattributed, the printed example works,
//! and the log is readable. Each case was a finding of the hardening pass.

use crate::common;

use common::*;
use serde_json::json;
use std::io::{Read, Write};

fn temp_config(text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("conduit-rules-{:016x}.toml", rand::random::<u64>()));
    std::fs::write(&path, text).expect("write config");
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_padded_base64_token_authenticates() {
    let node = Node::start(&["--token", "dGVzdA===alice"]).await;
    let id = create(&node, Some("dGVzdA=="), "job", json!({ "name": "padded" })).await;
    let g = get(&node, Some("dGVzdA=="), &id).await;
    assert_eq!(g["status"], "working", "{g}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_flags_with_stdio_are_refused() {
    let (code, stderr) = Node::refused(&["--stdio", "--token", "t=alice"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--token has no effect with --stdio"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_misspelt_table_is_an_error_and_a_file_without_one_keeps_tasks_on() {
    let bad = temp_config("[ext_task]\nmax_rows = 5\n");
    let (code, stderr) = Node::refused(&["--config", &bad.display().to_string()]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("[ext_task]: unknown table `ext_task`, expected one of `ext_tasks`,"), "{stderr}");
    let empty = temp_config("# nothing\n");
    let node = Node::start(&["--config", &empty.display().to_string()]).await;
    let id = create(&node, None, "job", json!({})).await;
    assert_eq!(get(&node, None, &id).await["status"], "working");
    let _ = (std::fs::remove_file(bad), std::fs::remove_file(empty));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_store_in_the_file_is_blamed_on_the_file() {
    let cfg = temp_config("[ext_tasks]\nstore = \"sqlite:\"\n");
    let (code, stderr) = Node::refused(&["--config", &cfg.display().to_string()]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("ext_tasks") && stderr.contains("store"), "{stderr}");
    assert!(!stderr.contains("--store"), "{stderr}");
    let _ = std::fs::remove_file(cfg);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_creates_do_not_flood_the_log_and_it_has_no_colour() {
    let cfg = temp_config("[ext_tasks]\nmax_rows = 1\n");
    let node = Node::start(&["--config", &cfg.display().to_string()]).await;
    create(&node, None, "job", json!({})).await;
    for _ in 0..50 {
        let e = call_refused(&node, None, "job", json!({})).await;
        assert_eq!(e.message, "Task limit reached", "{e:?}");
    }
    // Wait for the line (the log is read by another thread), then count.
    let warned = |log: &[String]| log.iter().filter(|l| l.contains("Task limit reached")).count();
    node.until_log("a warning at all", |log, _| warned(log) > 0).await;
    let log = node.log.lock().unwrap().clone();
    let warned = warned(&log);
    assert_eq!(warned, 1, "one line for 50 refusals: {log:#?}");
    assert!(log.iter().all(|l| !l.contains('\u{1b}')), "no ANSI escapes on a pipe: {log:#?}");
    let _ = std::fs::remove_file(cfg);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_is_printed_after_the_bind_with_the_real_address_and_auth() {
    let node = Node::start_exactly(&["--listen", "localhost:0", "--token", "t0k=alice"]).await;
    let log = node.log.lock().unwrap().clone();
    let text = log.join("\n");
    let endpoint = node.url.trim_start_matches("http://");
    assert!(text.contains(&format!("curl -s http://{endpoint}")), "the bound address: {text}");
    assert!(text.contains("Authorization: Bearer"), "{text}");
    let id = create(&node, Some("t0k"), "job", json!({})).await;
    assert!(!id.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_host_extends_the_host_guard() {
    let node = Node::start(&["--allow-host", "mcp.example.com"]).await;
    let addr = node.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let status = |host: &str| {
        let body = treq(1, "tools/list", json!({})).to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut s = std::net::TcpStream::connect(&addr).expect("connect");
        s.write_all(head.as_bytes()).expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        out.split_whitespace().nth(1).unwrap_or_default().to_owned()
    };
    assert_eq!(status("mcp.example.com:443"), "200");
    assert_eq!(status("localhost"), "200");
    assert_eq!(status("evil.example.com"), "403");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_without_elicitation_is_refused_before_a_task_exists() {
    let node = Node::start(&[]).await;
    // A client that declares no input capability (only the Tasks extension).
    let bare = conduit_mcp::client::ClientBuilder::http(&node.url).connect().await.expect("connect");
    let r = bare.call_tool("deploy", json!({ "environment": "prod" })).await;
    let e = r.as_ref().err().and_then(|e| e.rpc()).unwrap_or_else(|| panic!("not refused: {r:?}"));
    assert_eq!(e.code, -32021, "{e:?}");
    assert_eq!(e.data.as_ref().map(|d| &d["requiredCapabilities"]), Some(&json!({ "elicitation": {} })), "{e:?}");
    let ok = create(&node, None, "deploy", json!({ "environment": "prod" })).await;
    assert!(!ok.is_empty(), "with elicitation declared it becomes a task");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_pg_schema_is_refused_before_anything_is_created() {
    let Some(url) = database_url() else { return };
    let bad = format!("bad-{:08x}", rand::random::<u32>());
    let store = format!("postgres:{url}");
    let (code, stderr) = Node::refused(&["--store", &store, "--pg-schema", &bad]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--pg-schema"), "{stderr}");
    use sqlx::Connection;
    let mut c = sqlx::PgConnection::connect(&url).await.expect("connect");
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1")
        .bind(&bad)
        .fetch_one(&mut c)
        .await
        .expect("query");
    assert_eq!(n, 0, "the refused schema was not created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pg_schema_without_a_postgres_store_is_refused() {
    for store in ["memory", "sqlite::memory:"] {
        let (code, stderr) = Node::refused(&["--store", store, "--pg-schema", "mcp"]).await;
        assert_eq!(code, Some(2), "{store}: {stderr}");
        assert!(stderr.contains("--pg-schema \"mcp\" applies to a postgres: store only"), "{store}: {stderr}");
    }
    let (code, stderr) = Node::refused(&["--pg-schema", "mcp"]).await;
    assert_eq!(code, Some(2), "the default store: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_not_toml_is_reported_as_such_with_its_line_and_column() {
    let bad = temp_config("[ext_tasks]\nmax_rows = = 3\n");
    let (code, stderr) = Node::refused(&["--config", &bad.display().to_string()]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("not valid TOML: line 2, column 12"), "{stderr}");
    assert!(!stderr.contains("invalid configuration"), "a syntax error is no setting's fault: {stderr}");
    let _ = std::fs::remove_file(bad);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undocumented_aliases_are_refused() {
    for (text, key) in [
        ("[ext_tasks]\njanitor = { interval = 1000 }\n", "janitor.interval"),
        ("[ext_tasks]\njanitor = { interval_ms = 1000, ttl = 5000 }\n", "janitor.ttl"),
    ] {
        let cfg = temp_config(text);
        let (code, stderr) = Node::refused(&["--config", &cfg.display().to_string()]).await;
        assert_eq!(code, Some(2), "{text}: {stderr}");
        assert!(stderr.contains(&format!("{key}: unknown key")), "{text}: {stderr}");
        let _ = std::fs::remove_file(cfg);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_key_names_its_table_and_lists_the_allowed_keys() {
    let oauth = "[oauth]\nissuer = \"https://as.example\"\nresource = \"https://r.example/mcp\"\nscope = \"x\"\n";
    for (text, table, key, allowed) in [
        ("[ext_tasks]\nmax_row = 5\n", "ext_tasks", "max_row", "`max_rows`, `max_rows_per_principal`"),
        ("[sessions]\nmax_session = 5\n", "sessions", "max_session", "`max_sessions`, `max_sessions_per_client`"),
        ("[http]\nrequest_rates = \"5/s\"\n", "http", "request_rates", "`request_rate`, `auth_failure_rate`"),
        (oauth, "oauth", "scope", "`resource`, `scopes`"),
    ] {
        let cfg = temp_config(text);
        let (code, stderr) = Node::refused(&["--config", &cfg.display().to_string()]).await;
        assert_eq!(code, Some(2), "{text}: {stderr}");
        let said = format!("invalid configuration [{table}] {key}: unknown key `{key}`, expected one of ");
        assert!(stderr.contains(&said) && stderr.contains(allowed), "{text}: {stderr}");
        let _ = std::fs::remove_file(cfg);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_tasks_disabled_task_only_tools_are_not_listed() {
    let cfg = temp_config("ext_tasks = false\n");
    let node = Node::start(&["--config", &cfg.display().to_string()]).await;
    let tools = node.client(None).await.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"echo") && names.contains(&"build"), "{names:?}");
    for task_only in ["deploy", "sleep", "job", "complete_job", "countdown"] {
        assert!(!names.contains(&task_only), "{task_only} can never run without tasks: {names:?}");
    }
    let _ = std::fs::remove_file(cfg);
}

/// Opens a listen stream with raw bytes and returns the status line's code and what came first.
fn open_listen(addr: &str, id: &str) -> (std::net::TcpStream, String, String) {
    let body = treq(id, "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } })).to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(20))).expect("timeout");
    s.write_all(head.as_bytes()).expect("write");
    let mut buf = [0u8; 4096];
    let n = s.read(&mut buf).expect("read the answer");
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    (s, text.split_whitespace().nth(1).unwrap_or_default().to_owned(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_stream_caps_come_from_the_flags_and_the_http_table() {
    let node = Node::start(&["--max-listen-streams-per-client", "1"]).await;
    let addr = node.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let (_first, status, text) = open_listen(&addr, "a");
    assert_eq!(status, "200", "{text}");
    let (_, status, text) = open_listen(&addr, "b");
    assert_eq!(status, "429", "{text}");
    drop(node);
    let cfg = temp_config("[http]\nmax_listen_streams_per_client = 2\n");
    let node = Node::start(&["--config", &cfg.display().to_string()]).await;
    let addr = node.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let held: Vec<_> = ["a", "b"].iter().map(|id| open_listen(&addr, id)).collect();
    assert!(held.iter().all(|(_, s, _)| s == "200"), "two fit");
    let (_, status, _) = open_listen(&addr, "c");
    assert_eq!(status, "429", "the third does not");
    let bad = temp_config("[http]\nmax_listen_streams = 0\n");
    let (code, stderr) = Node::refused(&["--config", &bad.display().to_string()]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("[http] max_listen_streams"), "{stderr}");
    let (code, stderr) = Node::refused(&["--stdio", "--require-task-name"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("has no effect with --stdio"), "{stderr}");
    let _ = (std::fs::remove_file(cfg), std::fs::remove_file(bad));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_and_task_creation_rates_come_from_the_flags() {
    let node = Node::start(&["--request-rate", "2/min", "--task-create-rate", "1/min"]).await;
    let addr = node.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let post = |id: i64, tool: &str| {
        let body =
            treq(id, "tools/call", json!({ "name": tool, "arguments": { "text": "x", "name": "n" } })).to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut s = std::net::TcpStream::connect(&addr).expect("connect");
        s.write_all(head.as_bytes()).expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        out
    };
    let first = post(1, "job");
    assert!(first.starts_with("HTTP/1.1 200") && first.contains("taskId"), "{first}");
    let second = post(2, "job");
    assert!(second.starts_with("HTTP/1.1 429") && second.contains("Too many tasks created"), "{second}");
    let third = post(3, "echo");
    assert!(third.starts_with("HTTP/1.1 429") && third.contains("Too many requests"), "{third}");
    assert!(third.to_ascii_lowercase().contains("retry-after: "), "{third}");
    let (code, stderr) = Node::refused(&["--request-rate", "10/day"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--request-rate"), "{stderr}");
}
