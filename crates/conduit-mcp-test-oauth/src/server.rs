//! The authorization server process: start, wait, control, stop.

use crate::browser::{Browser, Callback};
use crate::error::{Error, Result};
use crate::node::{Unavailable, package_dir, prepared, required};
use crate::options::{Faults, Key, Options, ResourceSettings, SERVICE, StaticClient, Stats, TokenResponse};
use crate::pkce::{Pkce, random_token};
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long the server may take to start listening (Node's start, not a delay).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// One authorization-code login.
#[derive(Debug, Clone)]
#[must_use]
pub struct Login {
    client: StaticClient,
    resource: String,
    scope: String,
    account: Option<String>,
    redirect_uri: String,
}

impl Login {
    /// A login of `client` for `resource`, no scope, the default account,
    /// redirect URI `http://127.0.0.1/callback` (never opened).
    pub fn new(client: &StaticClient, resource: &str) -> Self {
        Self {
            client: *client,
            resource: resource.to_owned(),
            scope: String::new(),
            account: None,
            redirect_uri: "http://127.0.0.1/callback".into(),
        }
    }

    /// Space-separated scopes to ask for.
    pub fn scope(mut self, scope: &str) -> Self {
        self.scope = scope.to_owned();
        self
    }

    /// Signs in as this account (`login_hint`).
    pub fn account(mut self, account: &str) -> Self {
        self.account = Some(account.to_owned());
        self
    }

    /// Another registered redirect URI.
    pub fn redirect_uri(mut self, uri: &str) -> Self {
        self.redirect_uri = uri.to_owned();
        self
    }
}

/// Copies the server's output lines to the test's stderr (captured per test).
async fn forward<R: tokio::io::AsyncBufRead + Unpin>(mut lines: tokio::io::Lines<R>) {
    while let Ok(Some(line)) = lines.next_line().await {
        // The in-memory store is what a test wants; its warning is noise.
        if !line.contains("in-memory adapter") {
            eprintln!("as.mjs: {line}");
        }
    }
}

/// A running oidc-provider on `127.0.0.1`; killed on drop.
#[derive(Debug)]
pub struct AuthorizationServer {
    issuer: String,
    http: reqwest::Client,
    _child: Child,
}

impl AuthorizationServer {
    /// Starts one with the default [`Options`]; `None` when Node is missing
    /// and not required (see the crate docs). Panics if it cannot start.
    pub async fn start() -> Option<Self> {
        Self::start_with(Options::default()).await
    }

    /// Starts one with `options`; `None` when Node is missing and not required.
    pub async fn start_with(options: Options) -> Option<Self> {
        match tokio::task::spawn_blocking(prepared).await.expect("the Node lookup does not panic") {
            Ok(node) => Some(Self::spawn(&node, &options).await.unwrap_or_else(|e| panic!("{e}"))),
            Err(Unavailable::NoNode(why)) if !required() => {
                eprintln!("skipped: no authorization server ({why})");
                None
            }
            Err(Unavailable::NoNode(why) | Unavailable::Broken(why)) => {
                panic!("the test authorization server cannot start: {why}")
            }
        }
    }

    async fn spawn(node: &std::path::Path, options: &Options) -> Result<Self> {
        let config = serde_json::to_string(options).map_err(|e| Error(e.to_string()))?;
        let mut child = Command::new(node)
            .arg("as.mjs")
            .arg(config)
            .current_dir(package_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| Error(format!("cannot start {}: {e}", node.display())))?;
        tokio::spawn(forward(BufReader::new(child.stderr.take().expect("piped")).lines()));
        let mut stdout = BufReader::new(child.stdout.take().expect("piped")).lines();
        let first = tokio::time::timeout(START_TIMEOUT, stdout.next_line())
            .await
            .map_err(|_| Error("the authorization server did not start in time".into()))?
            .map_err(|e| Error(format!("reading the authorization server: {e}")))?
            .ok_or_else(|| Error("the authorization server exited before listening".into()))?;
        // oidc-provider writes notices to stdout too: keep reading, or it fails on a closed pipe.
        tokio::spawn(forward(stdout));
        let ready: Value = serde_json::from_str(&first).map_err(|e| Error(format!("{first:?}: {e}")))?;
        let issuer = ready["issuer"].as_str().ok_or_else(|| Error(format!("no issuer in {first}")))?.to_owned();
        Ok(Self { issuer, http: reqwest::Client::new(), _child: child })
    }

    /// The issuer, `http://127.0.0.1:PORT` (no trailing slash).
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// `issuer + path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.issuer)
    }

    async fn control(&self, path: &str, body: Value) -> Value {
        let resp = self.http.post(self.url(path)).json(&body).send().await.expect("the AS answers its controls");
        assert!(resp.status().is_success(), "{path}: {}", resp.status());
        resp.json().await.expect("a JSON control answer")
    }

    /// How the AS treats `resource` from now on.
    pub async fn set_resource(&self, resource: &str, settings: ResourceSettings) {
        let mut body = serde_json::to_value(settings).expect("serialisable");
        body["resource"] = json!(resource);
        self.control("/__test/resource", body).await;
    }

    /// Rotates the signing key while the server runs: the new key signs from
    /// now on and is published first; the old one stays published when
    /// `keep_old`. Returns the new `kid`.
    pub async fn rotate_keys(&self, keep_old: bool) -> String {
        let r = self.control("/__test/rotate", json!({ "keep_old": keep_old })).await;
        r["kid"].as_str().expect("a kid").to_owned()
    }

    /// A JWT with exactly these `claims`, signed as `key` says (header `typ: at+jwt`).
    pub async fn mint(&self, claims: Value, key: Key) -> String {
        let key = match key {
            Key::Current => "current",
            Key::Previous => "previous",
            Key::Unknown => "unknown",
            Key::None => "none",
            Key::Hs256 => "hs256",
        };
        let r = self.control("/__test/mint", json!({ "claims": claims, "key": key })).await;
        r["token"].as_str().expect("a token").to_owned()
    }

    /// A workload identity token for `sub` from the workload issuer the AS trusts
    /// (`ISSUER/workload`, ES256, `aud` the AS's issuer, five minutes): the assertion
    /// of a JWT bearer grant.
    pub async fn workload_token(&self, sub: &str) -> String {
        let r = self.control("/__test/workload_token", json!({ "sub": sub })).await;
        r["token"].as_str().expect("a token").to_owned()
    }

    /// The person `sub`'s ID token from the identity provider beside the AS
    /// (`ISSUER/idp`, for [`IDP_CLIENT`](crate::IDP_CLIENT)), for its token exchange.
    pub async fn id_token(&self, sub: &str) -> String {
        let r = self.control("/__test/id_token", json!({ "sub": sub })).await;
        r["token"].as_str().expect("a token").to_owned()
    }

    /// The identity provider's token endpoint (RFC 8693 token exchange for an ID-JAG).
    pub fn idp_token_endpoint(&self) -> String {
        self.url("/idp/token")
    }

    /// Makes endpoints misbehave (or behave again).
    pub async fn set_faults(&self, faults: Faults) {
        let body = json!({
            "jwks": faults.jwks.wire(),
            "metadata": faults.metadata.wire(),
            "introspection": faults.introspection.wire(),
        });
        self.control("/__test/faults", body).await;
    }

    /// Requests served per endpoint family.
    pub async fn stats(&self) -> Stats {
        let resp = self.http.get(self.url("/__test/stats")).send().await.expect("the AS answers");
        resp.json().await.expect("stats")
    }

    /// Sets every count back to zero.
    pub async fn reset_stats(&self) {
        self.control("/__test/stats/reset", json!({})).await;
    }

    /// A fresh [`Browser`] (no session at the AS yet).
    pub fn browser(&self) -> Browser {
        Browser::new()
    }

    /// The authorization URL for `login` with this PKCE challenge and `state`.
    pub fn authorization_url(&self, login: &Login, pkce: &Pkce, state: &str) -> String {
        let mut url = reqwest::Url::parse(&self.url("/auth")).expect("issuer is a URL");
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", login.client.id)
                .append_pair("redirect_uri", &login.redirect_uri)
                .append_pair("resource", &login.resource)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", state);
            if !login.scope.is_empty() {
                q.append_pair("scope", &login.scope);
            }
            if let Some(a) = &login.account {
                q.append_pair("login_hint", a);
            }
        }
        url.into()
    }

    /// Logs in with a fresh browser: authorization code + PKCE + `resource`,
    /// then the code redeemed at the token endpoint. Checks `state` and `iss`.
    pub async fn login(&self, login: &Login) -> Result<TokenResponse> {
        self.login_in(&Browser::new(), login).await
    }

    /// [`login`](Self::login) in this browser (its AS session carries over).
    pub async fn login_in(&self, browser: &Browser, login: &Login) -> Result<TokenResponse> {
        let pkce = Pkce::new();
        let state = random_token(16);
        let callback: Callback = browser.authorize(&self.authorization_url(login, &pkce, &state)).await?;
        let code = callback.code()?;
        if callback.param("state").as_deref() != Some(state.as_str()) {
            return Err(Error(format!("state mismatch in {}", callback.url)));
        }
        if callback.param("iss").as_deref() != Some(self.issuer.as_str()) {
            return Err(Error(format!("iss mismatch in {}", callback.url)));
        }
        let form = [
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", &login.redirect_uri),
            ("code_verifier", &pkce.verifier),
            ("resource", &login.resource),
        ];
        self.token(&login.client, &form).await
    }

    /// A client_credentials token of [`SERVICE`] for `resource` with `scope`.
    pub async fn client_credentials(&self, scope: &str, resource: &str) -> Result<TokenResponse> {
        let form = [("grant_type", "client_credentials"), ("scope", scope), ("resource", resource)];
        self.token(&SERVICE, &form).await
    }

    /// A refresh-token grant.
    pub async fn refresh(&self, client: &StaticClient, refresh_token: &str) -> Result<TokenResponse> {
        self.token(client, &[("grant_type", "refresh_token"), ("refresh_token", refresh_token)]).await
    }

    /// POSTs `form` to the token endpoint as `client` (basic auth when it has a secret).
    pub async fn token(&self, client: &StaticClient, form: &[(&str, &str)]) -> Result<TokenResponse> {
        let mut req = self.http.post(self.url("/token"));
        let mut fields: Vec<(&str, &str)> = form.to_vec();
        match client.secret {
            Some(secret) => req = req.basic_auth(client.id, Some(secret)),
            None => fields.push(("client_id", client.id)),
        }
        let resp = req.form(&fields).send().await?;
        let status = resp.status();
        let body = resp.text().await?;
        if !status.is_success() {
            return Err(Error(format!("token endpoint answered {status}: {body}")));
        }
        serde_json::from_str(&body).map_err(|e| Error(format!("token response {body}: {e}")))
    }
}
