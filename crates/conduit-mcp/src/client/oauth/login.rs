//! A login without an MCP connection: the steps of the [module docs](super)
//! run from the server's URL alone, and the tokens are stored.
//!
//! The protected resource metadata is found the way a refusal would lead to
//! it: one GET of the endpoint without credentials, whose 401 challenge may
//! name the metadata (and the scopes to ask for); any other answer (a server
//! that lets some requests through without a token) leaves the well-known
//! URLs. Nothing stored is used: a login always gets new tokens.

use super::OAuth;
use super::fetch::Fetch;
use super::session::Session;
use super::store::StoredTokens;
use crate::client::error::ClientError;
use crate::client::http_options::{HttpOptions, parse_url};
use crate::protocol::oauth::challenge;

/// Logs in to the server at `server_url`: discovery, registration,
/// authorization (or client credentials), token; the tokens are stored and returned.
pub(crate) async fn login(oauth: &OAuth, server_url: &str, opts: HttpOptions) -> Result<StoredTokens, ClientError> {
    let server = parse_url("the server URL", server_url)?;
    let fetch = Fetch::new(opts.clone())?;
    let challenge = fetch.challenge(&server).await?.and_then(|h| challenge::parse(&h));
    Session::new(oauth.clone(), server, opts)?.login(challenge.as_ref()).await
}
