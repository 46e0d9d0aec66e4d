//! The examples that need nothing outside themselves, run end to end as a
//! user runs them: `stdio_client` (a client starting its stdio server as a
//! child) and `client_task` (a client following a task and answering its
//! question, against its stand-in server). Each is built with cargo, run,
//! and judged by what it prints.

use std::process::Stdio;
use std::time::Duration;

/// How long one example may run before the test fails (a guard, never a delay).
const GUARD: Duration = Duration::from_secs(60);

/// Runs example `name` to its end; returns what it printed on stdout.
async fn run(name: &str) -> String {
    let bin = crate::examples::example_binary(name);
    let child = tokio::process::Command::new(bin)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example starts");
    let out = tokio::time::timeout(GUARD, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{name} did not finish"))
        .expect("its output");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{name} failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[tokio::test]
async fn stdio_client_starts_its_server_and_calls_a_tool() {
    let out = run("stdio_client").await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, ["tools: greet", "greet: Hello, stdio!"], "{out}");
}

#[tokio::test]
async fn client_task_follows_a_task_and_answers_its_question() {
    let out = run("client_task").await;
    assert!(out.lines().any(|l| l.starts_with("task ")), "a task was made: {out}");
    assert!(out.contains("asked (confirm): Switch over? -> yes"), "the question reached the handler: {out}");
    assert_eq!(out.lines().last(), Some("result: deployed"), "the answer reached the work: {out}");
}
