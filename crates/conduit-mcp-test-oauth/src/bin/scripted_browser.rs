//! `scripted-browser URL`: what a user's browser does with an authorization
//! URL, without a user. Follows the authorization server's redirects with its
//! cookies (login and consent are automatic at the test AS), then opens the
//! redirect that leaves the AS — the client's loopback callback — and exits 0
//! when that answered with a success status.
//!
//! For commands that open a browser, e.g. `conduit-mcp login --browser-command scripted-browser`.

use conduit_mcp_test_oauth::Browser;
use std::process::ExitCode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: scripted-browser AUTHORIZATION_URL");
        return ExitCode::from(2);
    };
    match Browser::new().open(&url).await {
        Ok((_, status)) if status.is_success() => ExitCode::SUCCESS,
        Ok((callback, status)) => {
            eprintln!("scripted-browser: the callback {} answered {status}", callback.url.path());
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("scripted-browser: {e}");
            ExitCode::FAILURE
        }
    }
}
