//! `conduit-mcp login URL` and `conduit-mcp logout URL`: an OAuth 2.1 login
//! through the person's browser (or a command, or a printed URL) completed
//! on a loopback listener, or a client-credentials grant; the tokens are
//! stored for every later command and never printed.

use crate::client_secret::{self, SECRET_ENV};
use crate::enterprise_args::EnterpriseArgs;
use crate::remote::{Exit, Remote, fail, usage};
use crate::shell::quote;
use conduit_mcp::client::ClientError;
use conduit_mcp::client::oauth::{LoopbackBrowser, OAuth, is_scope_token};
use conduit_mcp::client::sanitize::{excerpt, one_line};
use std::path::PathBuf;

/// `login` arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct LoginArgs {
    /// The server's URL.
    #[arg(value_name = "URL")]
    url: String,
    /// Open the authorization page with CMD (run as `CMD URL`) instead of the system's browser.
    #[arg(long, value_name = "CMD", conflicts_with = "no_browser")]
    browser_command: Option<String>,
    /// Print the authorization URL instead of opening a browser.
    #[arg(long)]
    no_browser: bool,
    /// A client id registered at the authorization server (else a dynamic registration).
    #[arg(long, value_name = "ID")]
    client_id: Option<String>,
    /// The secret of `--client-id` (other users may see it in `ps`: prefer --client-secret-file, or
    /// $CONDUIT_MCP_CLIENT_SECRET, which is read when neither is given). It is bound to the authorization
    /// server it is first used with.
    #[arg(long, value_name = "SECRET", requires = "client_id", conflicts_with = "client_secret_file")]
    client_secret: Option<String>,
    /// Read the secret of `--client-id` from FILE (one trailing newline dropped).
    #[arg(long, value_name = "FILE", requires = "client_id")]
    client_secret_file: Option<PathBuf>,
    /// Log in only at this authorization server (its issuer URL, as the server's metadata names it;
    /// repeatable). A client secret goes to another issuer than the one it was first used with only when
    /// named here.
    #[arg(long, value_name = "ISSUER")]
    issuer: Vec<String>,
    /// The scopes to ask for, space-separated (default: what the server asks for).
    #[arg(long, value_name = "SCOPE")]
    scope: Option<String>,
    /// A machine login: the client credentials grant with `--client-id` and its secret.
    #[arg(long, requires = "client_id")]
    client_credentials: bool,
    /// Seconds to wait for the browser to come back to the loopback listener with this login's answer
    /// (other requests to the listener are answered 400 or 404 and do not end the wait).
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    login_timeout: u64,
    #[command(flatten)]
    enterprise: EnterpriseArgs,
    #[command(flatten)]
    remote: Remote,
}

/// `logout` arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct LogoutArgs {
    /// The server's URL.
    #[arg(value_name = "URL")]
    url: String,
    #[command(flatten)]
    remote: Remote,
}

/// Opens `url` in the system's browser, or says where to go.
fn system_browser(url: &str) -> Result<(), ClientError> {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    eprintln!("Opening the authorization page in your browser. If it does not open, visit:\n  {}", one_line(url));
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if spawned.is_err() {
        eprintln!("(could not run {opener}: open the URL yourself)");
    }
    Ok(())
}

fn browser(a: &LoginArgs) -> LoopbackBrowser {
    let b = match (&a.browser_command, a.no_browser) {
        (Some(cmd), _) => LoopbackBrowser::command(cmd.clone()),
        (None, true) => LoopbackBrowser::new(|url| {
            eprintln!("Open this URL in a browser to log in:\n  {}", one_line(url));
            Ok(())
        }),
        (None, false) => LoopbackBrowser::new(system_browser),
    };
    b.timeout(std::time::Duration::from_secs(a.login_timeout))
}

/// Runs `login`.
pub(crate) async fn login(a: LoginArgs) -> Exit {
    if a.remote.token.is_some() || a.remote.stdio {
        return usage("login takes a server URL, without --token or --stdio");
    }
    let store = match Remote::credentials() {
        Ok(s) => s,
        Err(e) => return e,
    };
    let secret = match &a.client_id {
        Some(_) => match client_secret::resolve(a.client_secret.as_deref(), a.client_secret_file.as_deref()) {
            Ok(s) => s,
            Err(e) => return usage(e),
        },
        None => None,
    };
    let machine = match a.enterprise.grant(a.client_id.as_deref(), secret.as_deref()) {
        Ok(m) => m,
        Err(e) => return usage(e),
    };
    let key = match a.enterprise.key() {
        Ok(k) => k,
        Err(e) => return usage(e),
    };
    let mut oauth = if let Some(m) = machine {
        m
    } else if a.client_credentials {
        match (&a.client_id, &secret, &key) {
            (Some(id), _, Some(key)) => OAuth::client_credentials_jwt(id, key.clone()),
            (Some(id), Some(secret), None) => OAuth::client_credentials(id, secret),
            _ => {
                return usage(format!(
                    "--client-credentials needs --client-id and its secret (--client-secret, --client-secret-file or \
                     ${SECRET_ENV}) or key (--client-assertion-key)"
                ));
            }
        }
    } else {
        let mut o = OAuth::new().authorizer(browser(&a));
        if let Some(id) = &a.client_id {
            o = o.client_id(id);
        }
        if let Some(secret) = &secret {
            o = o.client_secret(secret);
        }
        o
    };
    // Where the secret may go: the issuers named, else those it is bound to (none yet: the first use binds it).
    let bound = match (&a.client_id, &secret) {
        (Some(id), Some(secret)) if a.issuer.is_empty() => match client_secret::bound_issuers(&store, id, secret) {
            Ok(b) => b,
            Err(e) => return fail(&e),
        },
        _ => Vec::new(),
    };
    for issuer in a.issuer.iter().chain(&bound) {
        oauth = oauth.issuer(issuer);
    }
    oauth = a.enterprise.apply(oauth, key);
    oauth = match Remote::oauth(oauth) {
        Ok(o) => o,
        Err(e) => return e,
    };
    if let Some(scope) = &a.scope {
        if let Some(bad) = scope.split_whitespace().find(|s| !is_scope_token(s)) {
            return usage(format!(
                "--scope: {bad:?} is not a valid scope (RFC 6749: printable ASCII other than space, '\"' and '\\')"
            ));
        }
        oauth = oauth.scopes(scope.split_whitespace());
    }
    let builder = match a.remote.http_builder(&a.url) {
        Ok(b) => b.oauth(oauth),
        Err(e) => return e,
    };
    match builder.login().await {
        Err(ClientError::IssuerNotAllowed { server, issuer, allowed }) if a.issuer.is_empty() => {
            let (server, issuer) = (one_line(&server), excerpt(&issuer, 200));
            eprintln!(
                "error: {server} sends its login to the authorization server {issuer}, but this client secret was \
                 first used with {}: nothing was sent there. If {issuer} is meant to have it, run the login again \
                 with --issuer {}",
                excerpt(&allowed.join(" and "), 400),
                quote(&issuer)
            );
            Exit::Usage
        }
        Err(e) => fail(&e),
        Ok(t) => {
            // The scope granted (the token response's `scope`), else the one asked for.
            let scopes = if t.scopes.is_empty() { "none".into() } else { t.scopes.join(" ") };
            eprintln!(
                "logged in to {} (authorization server {}, scopes: {})",
                one_line(&a.url),
                one_line(&t.issuer),
                one_line(&scopes)
            );
            Exit::Ok
        }
    }
}

/// Runs `logout`.
pub(crate) async fn logout(a: LogoutArgs) -> Exit {
    let oauth = match Remote::oauth(OAuth::new()) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let builder = match a.remote.http_builder(&a.url) {
        Ok(b) => b.oauth(oauth),
        Err(e) => return e,
    };
    match builder.logout().await {
        Ok(true) => {
            eprintln!("logged out of {}", one_line(&a.url));
            Exit::Ok
        }
        Ok(false) => {
            eprintln!("not logged in to {}", one_line(&a.url));
            Exit::Ok
        }
        Err(e) => fail(&e),
    }
}
