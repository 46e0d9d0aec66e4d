//! The CLI client through a pseudo-terminal against `conduit-mcp serve`:
//! `deploy` answers its confirmation prompt, `build` shows progress, Ctrl-C
//! on `sleep` cancels the task, `--detach` then `task wait` resumes.

use crate::cli_support;
use crate::common;

use cli_support::*;
use common::{Node, get};

fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> tokio::task::JoinHandle<T> {
    tokio::task::spawn_blocking(f)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_deploy_answers_the_confirmation_prompt() {
    let node = Node::start(&[]).await;
    let url = node.url.clone();
    let code = blocking(move || {
        let mut p = pty(&["call", &url, "deploy", "environment=staging"]);
        p.exp_string("Deploy to staging?").unwrap();
        p.exp_string("fill in the form").unwrap();
        p.send("\r").unwrap();
        p.flush().unwrap();
        p.exp_string("confirm *").unwrap();
        p.send("y").unwrap();
        p.flush().unwrap();
        p.exp_string("deployed to staging").unwrap();
        exit_code(&mut p)
    })
    .await
    .unwrap();
    assert_eq!(code, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declining_the_prompt_ends_as_a_tool_error() {
    let node = Node::start(&[]).await;
    let url = node.url.clone();
    let code = blocking(move || {
        let mut p = pty(&["call", &url, "deploy", "environment=prod"]);
        p.exp_string("fill in the form").unwrap();
        p.send("\x1b[B").unwrap(); // arrow down: "decline"
        p.flush().unwrap();
        p.send("\r").unwrap();
        p.flush().unwrap();
        p.exp_string("was not confirmed").unwrap();
        exit_code(&mut p)
    })
    .await
    .unwrap();
    assert_eq!(code, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_shows_progress_then_the_result() {
    let node = Node::start(&[]).await;
    let url = node.url.clone();
    let code = blocking(move || {
        let mut p = pty(&["call", &url, "build", "ref=main", "steps=2"]);
        p.exp_string("Building main: step 1/2").unwrap();
        p.exp_string("built main in 2 steps").unwrap();
        exit_code(&mut p)
    })
    .await
    .unwrap();
    assert_eq!(code, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_on_sleep_cancels_the_task() {
    let node = Node::start(&[]).await;
    let url = node.url.clone();
    let (code, id) = blocking(move || {
        let mut p = pty(&["call", &url, "sleep"]);
        p.exp_string("working").unwrap();
        p.send_control('c').unwrap();
        let (_, m) = p.exp_regex("cancelling task [A-Za-z0-9_-]+").unwrap();
        let id = m.rsplit(' ').next().unwrap().to_owned();
        (exit_code(&mut p), id)
    })
    .await
    .unwrap();
    assert_eq!(code, 130);
    let t = get(&node, None, &id).await;
    assert_eq!(t["status"], "cancelled", "{t}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detach_then_task_wait_resumes() {
    let node = Node::start(&[]).await;
    let out = run(&["call", &node.url, "build", "ref=later", "steps=2", "--detach"]);
    assert_eq!(out.status.code(), Some(0));
    let id = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(!id.is_empty());
    let url = node.url.clone();
    let code = blocking(move || {
        let mut p = pty(&["task", "wait", &url, &id]);
        p.exp_string("built later in 2 steps").unwrap();
        exit_code(&mut p)
    })
    .await
    .unwrap();
    assert_eq!(code, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_the_terminal_cannot_render_is_a_clean_error() {
    let url = mock(|req| match req["method"].as_str().unwrap_or("") {
        "server/discover" => result(req, discover()),
        "tools/list" => result(req, one_tool()),
        "tools/call" => result(
            req,
            serde_json::json!({ "resultType": "input_required",
            "inputRequests": { "k": { "method": "elicitation/create", "params": { "message": "Shape?",
                "requestedSchema": { "type": "object", "properties": { "nested": { "type": "object" } } } } } } }),
        ),
        _ => error(req, -32601, "no"),
    })
    .await;
    let (code, out) = blocking(move || {
        let mut p = pty(&["call", &url, "t"]);
        let out = p.exp_eof().unwrap();
        (exit_code(&mut p), out)
    })
    .await
    .unwrap();
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("cannot render form field \"nested\""), "{out}");
}
