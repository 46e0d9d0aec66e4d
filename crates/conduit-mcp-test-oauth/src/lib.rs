//! A real authorization server for tests: [oidc-provider] (a certified OpenID
//! provider, pinned in `tests/oauth/package-lock.json`) on Node 22, started on a free
//! loopback port, plus a scripted browser that logs in through it.
//!
//! Both the library's tests and the CLI's and conformance tests use this one
//! piece; add it as a dev-dependency:
//!
//! ```toml
//! [dev-dependencies]
//! conduit-mcp-test-oauth = { path = "../conduit-mcp-test-oauth" }
//! ```
//!
//! # Starting it
//!
//! [`AuthorizationServer::start`] installs the npm packages on first use
//! (`npm ci` in `tests/oauth/`, under a file lock, through `npx -y -p node@22`;
//! `scripts/oauth_as.sh` does the same ahead of time), starts `tests/oauth/as.mjs`
//! and waits until it listens. It returns `None` — the test should return early
//! — only when `npx` is missing and nothing requires the server: with `CI`,
//! `CONDUIT_REQUIRE_POSTGRES=1` or `CONDUIT_REQUIRE_OAUTH=1` set, a missing Node
//! fails the test instead. `CONDUIT_NODE22=/path/to/node` skips the npx lookup.
//! The process is killed when the value is dropped.
//!
//! ```no_run
//! use conduit_mcp_test_oauth::{AuthorizationServer, Login, APP};
//!
//! # async fn example() {
//! let Some(auth) = AuthorizationServer::start().await else { return };
//! let resource = "http://127.0.0.1:8080/mcp";
//!
//! // A machine token (client_credentials) for the resource: a JWT signed by the AS's key.
//! let token = auth.client_credentials("mcp:read", resource).await.expect("token");
//!
//! // A user's login: authorization code + PKCE + `resource`, through the scripted browser.
//! let tokens = auth.login(&Login::new(&APP, resource).scope("mcp:read mcp:write").account("bob")).await.expect("login");
//! assert!(!tokens.access_token.is_empty());
//!
//! // Key rotation while everything runs, and tokens with any claims signed by its keys.
//! let kid = auth.rotate_keys(true).await;
//! let expired = auth.mint(serde_json::json!({ "sub": "alice", "exp": 1 }), conduit_mcp_test_oauth::Key::Current).await;
//! # let _ = (token, kid, expired);
//! # }
//! ```
//!
//! # What the server offers
//!
//! - Issuer `http://127.0.0.1:PORT` ([`AuthorizationServer::issuer`]); discovery at both
//!   `/.well-known/oauth-authorization-server` and `/.well-known/openid-configuration`;
//!   JWKS at `/jwks`; RFC 9207 `iss` in authorization responses; PKCE (S256) required.
//! - Resource indicators (RFC 8707): an access token for resource `R` has `aud = R` and is a
//!   JWT (`typ: at+jwt`) unless [`AuthorizationServer::set_resource`] says opaque; scopes
//!   `mcp:read mcp:write mcp:deploy mcp:admin` (plus `openid`, `offline_access`); a request for
//!   `mcp:refused` is refused with `invalid_scope`. Every client allowed the `refresh_token` grant gets a refresh token.
//! - Static clients: [`RESOURCE_SERVER`] (`rs`, for introspection), [`SERVICE`] (`svc`,
//!   client_credentials), [`APP`] (`app`, public, native: any loopback port on
//!   `http://127.0.0.1/callback` or `http://localhost/callback`), [`WEB`] (`web`, confidential,
//!   same redirect URIs). Dynamic client registration is open at `/reg`.
//! - Login signs in as the request's `login_hint`, else the configured default account
//!   (`alice`), and consents to what was asked: no page, no form.
//! - Test controls: [`rotate_keys`](AuthorizationServer::rotate_keys), [`mint`](AuthorizationServer::mint)
//!   (tokens with any claims, signed by the current, previous or an unknown key, or `alg: none`,
//!   or HS256 with the public key as secret), [`set_faults`](AuthorizationServer::set_faults)
//!   (JWKS, metadata or introspection down, slow, garbage, or naming the wrong issuer) and
//!   [`stats`](AuthorizationServer::stats) (requests per endpoint family).
//! - The enterprise grants: the JWT bearer grant ([`JWT_BEARER_GRANT`], for clients registered
//!   with it) takes a workload token ([`workload_token`](AuthorizationServer::workload_token))
//!   or an ID-JAG from the identity provider beside the AS, whose token exchange
//!   ([`idp_token_endpoint`](AuthorizationServer::idp_token_endpoint), client [`IDP_CLIENT`])
//!   turns the person's ID token ([`id_token`](AuthorizationServer::id_token)) into one for
//!   the client `ent` (or `Options::id_jag_client`).
//!
//! The [`Browser`] follows the AS's redirects with cookies until a redirect leaves the AS's
//! origin, like a user's browser would; the `scripted-browser URL` binary does the same and then
//! opens that last URL (a CLI's loopback callback), for commands that take a browser command;
//! [`scripted_browser`] finds that binary.
//!
//! [oidc-provider]: https://github.com/panva/node-oidc-provider

mod browser;
mod error;
mod node;
mod options;
mod pkce;
mod scripted;
mod server;

pub use browser::{Browser, Callback};
pub use error::{Error, Result};
pub use options::{
    APP, Fault, Faults, IDP_CLIENT, JWT_BEARER_GRANT, Key, Options, RESOURCE_SERVER, ResourceSettings, SERVICE,
    StaticClient, Stats, TokenResponse, WEB,
};
pub use pkce::Pkce;
pub use scripted::{SCRIPTED_BROWSER_ENV, scripted_browser};
pub use server::{AuthorizationServer, Login};
