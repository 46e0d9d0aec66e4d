//! Issue 34, client findings 2 and 7: what the CLI suggests or warns about
//! is decided safely. Server text in a suggested command line is
//! shell-quoted (and scopes RFC 6749 does not allow are refused), and the
//! `--allow-insecure-http` warning goes by the parsed address.

use crate::hostile_support::{Reply, cli_in, config_dir, hostile_http};
use std::time::Duration;

/// A server that answers everything `403 insufficient_scope` asking for `scope` (as the header carries it).
async fn asks_for_scope(scope: &'static str) -> String {
    let header = format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\"");
    let h = hostile_http(move |_| Reply::Raw {
        status: 403,
        headers: vec![("www-authenticate".into(), header.clone())],
        body: String::new(),
    })
    .await;
    h.url
}

/// Finding 2: the scope the server names is shell-quoted in the suggested
/// `conduit-mcp login`: pasted into a shell, the line runs nothing and gives
/// the scope back as one argument, byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scope_from_the_server_is_quoted_in_the_suggested_login() {
    let marker = std::env::temp_dir().join(format!("conduit-pwned-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let scope: &'static str = Box::leak(format!("'$(touch {})'", marker.display()).into_boxed_str());
    let url = asks_for_scope(scope).await;
    let dir = config_dir("quote");
    let o = cli_in(&dir, &["tools", &url], &[], Duration::from_secs(20)).await.expect("exits");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let line = stderr.lines().find(|l| l.starts_with("error:")).expect("an error line");
    let command = line.split('`').nth(1).unwrap_or_else(|| panic!("no command in {line:?}"));
    let args = command.strip_prefix("conduit-mcp ").unwrap_or_else(|| panic!("{command:?}"));
    // The shell reads the suggested arguments: printf shows each one on a line.
    let shell = std::process::Command::new("sh").arg("-c").arg(format!("printf '%s\\n' {args}")).output().unwrap();
    assert!(shell.status.success(), "{command}: {}", String::from_utf8_lossy(&shell.stderr));
    assert!(!marker.exists(), "pasting the suggested command ran the server's command: {command}");
    let words: Vec<String> = String::from_utf8_lossy(&shell.stdout).lines().map(str::to_owned).collect();
    assert_eq!(words, ["login", url.as_str(), "--scope", scope], "{command}");
}

/// Finding 2: a scope with characters outside RFC 6749's `scope-token`
/// (`"`, `\`, controls, non-ASCII) is refused with a clear error, not suggested.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scope_outside_the_rfc_6749_characters_is_refused() {
    let url = asks_for_scope(r#"mcp:read \"quoted"#).await;
    let o = cli_in(&config_dir("badscope"), &["tools", &url], &[], Duration::from_secs(20)).await.expect("exits");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a valid scope"), "{stderr}");
    assert!(!stderr.contains("conduit-mcp login"), "no command is suggested for it: {stderr}");
}

/// Finding 7: the warning of `--allow-insecure-http` goes by the address
/// the URL names (the library's rule), not by a `127.` prefix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_insecure_http_warning_decides_by_the_parsed_address() {
    let dir = config_dir("warn");
    for (url, warned) in [
        ("http://127.attacker.test:9/mcp", true),
        ("http://127.0.0.1.attacker.test:9/mcp", true),
        ("http://127.0.0.1:9/mcp", false),
        ("http://127.1:9/mcp", false),
        ("http://[::1]:9/mcp", false),
        ("http://localhost:9/mcp", false),
    ] {
        let args = ["tools", url, "--token", "t", "--allow-insecure-http", "--timeout", "2"];
        let o = cli_in(&dir, &args, &[], Duration::from_secs(30)).await.expect("exits");
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(stderr.starts_with("warning: --allow-insecure-http"), warned, "{url}: {stderr}");
    }
}
