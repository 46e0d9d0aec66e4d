//! A real third-party client logs in to `conduit-mcp serve --oauth-issuer …`
//! and calls a tool: the official Python MCP SDK's OAuth client
//! (`scripts/oauth_client.py`), in the venv `scripts/legacy_client.sh` uses
//! (made here when missing), against oidc-provider.
//!
//! Without python3 the test is skipped, unless CI or `CONDUIT_REQUIRE_POSTGRES=1`
//! / `CONDUIT_REQUIRE_OAUTH=1` require it.

use crate::common;

use common::Node;
use conduit_mcp_test_oauth::AuthorizationServer;
use std::path::{Path, PathBuf};
use std::process::Command;

fn required() -> bool {
    let set = |n: &str| std::env::var(n).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    set("CI") || set("CONDUIT_REQUIRE_POSTGRES") || set("CONDUIT_REQUIRE_OAUTH")
}

/// The venv's python with the SDK installed (the same venv and SDK range as legacy_client.sh).
fn python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../legacy-client-venv");
    let py = venv.join("bin/python");
    let has_sdk = |py: &Path| Command::new(py).args(["-c", "import mcp"]).status().is_ok_and(|s| s.success());
    if py.is_file() && has_sdk(&py) {
        return Some(py);
    }
    if Command::new("python3").arg("--version").status().is_err() {
        assert!(!required(), "python3 is required for the Python SDK's OAuth client test");
        eprintln!("skipped: no python3");
        return None;
    }
    let ok = Command::new("python3").args(["-m", "venv"]).arg(&venv).status().is_ok_and(|s| s.success());
    assert!(ok, "python3 -m venv {}", venv.display());
    let spec = std::env::var("CONDUIT_PY_MCP").unwrap_or_else(|_| "mcp>=1.20,<2".into());
    let ok = Command::new(venv.join("bin/pip")).args(["install", "-q", &spec]).status().is_ok_and(|s| s.success());
    assert!(ok && has_sdk(&py), "pip install {spec}");
    Some(py)
}

#[tokio::test]
async fn the_python_sdk_logs_in_and_calls_a_tool() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let Some(python) = tokio::task::spawn_blocking(python).await.unwrap() else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("127.0.0.1:{port}");
    let resource = format!("http://{listen}/mcp");
    let node = Node::start_exactly(&[
        "--listen",
        &listen,
        "--oauth-issuer",
        auth.issuer(),
        "--resource",
        &resource,
        "--oauth-scope",
        "mcp:read",
    ])
    .await;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/oauth_client.py");
    let out =
        tokio::process::Command::new(python).arg(script).arg(&node.url).arg(auth.issuer()).kill_on_drop(true).output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(120), out).await.expect("in time").expect("ran");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.trim() == "ok", "python: {stdout}\n{stderr}");
}
