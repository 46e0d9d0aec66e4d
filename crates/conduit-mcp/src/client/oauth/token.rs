//! The token endpoint: the authorization code (with its PKCE verifier), a
//! refresh, client credentials or a JWT bearer grant; `resource` on every
//! request; the client authenticated as it registered (`client_secret_basic`,
//! `client_secret_post`, `private_key_jwt` or `none`); a DPoP proof when the
//! tokens are to be bound to a key, sent again once with the server's nonce
//! when it asks for one (RFC 9449 §8).

use super::assertion::ClientAssertionKey;
use super::dpop::{DpopKey, Nonce};
use super::fetch::{Answer, Fetch, client_auth, oauth_error};
use super::scope;
use super::store::ClientRegistration;
use crate::client::error::ClientError;
use crate::client::sanitize::quoted;
use crate::protocol::oauth::dpop::{SCHEME as DPOP_SCHEME, USE_DPOP_NONCE};
use crate::protocol::oauth::grants::{JWT_BEARER_GRANT, PRIVATE_KEY_JWT};
use reqwest::Url;
use serde_json::Value;

/// Where a token request goes, and how this client proves itself there.
pub(crate) struct TokenEndpoint<'a> {
    pub(crate) fetch: &'a Fetch,
    pub(crate) url: &'a Url,
    /// The authorization server's issuer: the audience of a client assertion.
    pub(crate) issuer: &'a str,
    pub(crate) client: &'a ClientRegistration,
    /// The key of `private_key_jwt`.
    pub(crate) signer: Option<ClientAssertionKey>,
    /// The key to bind the tokens to, and the authorization server's last nonce.
    pub(crate) dpop: Option<(&'a DpopKey, &'a Nonce)>,
    /// Now, in seconds since the epoch.
    pub(crate) now_s: i64,
}

/// What is traded for a token.
pub(crate) enum Grant<'a> {
    /// An authorization code and the PKCE verifier of its request.
    Code { code: &'a str, redirect_uri: &'a str, verifier: &'a str },
    /// A refresh token (sent with the scopes first granted).
    Refresh(&'a str),
    /// The client's own credentials.
    ClientCredentials,
    /// A JWT as the grant (RFC 7523 §2.1): a workload's token, or an ID-JAG.
    JwtBearer(&'a str),
}

impl Grant<'_> {
    fn name(&self) -> &'static str {
        match self {
            Grant::Code { .. } => "authorization_code",
            Grant::Refresh(_) => "refresh_token",
            Grant::ClientCredentials => "client_credentials",
            Grant::JwtBearer(_) => JWT_BEARER_GRANT,
        }
    }
}

/// A successful token response.
#[derive(Debug)]
pub(crate) struct Tokens {
    pub(crate) access_token: String,
    pub(crate) refresh_token: Option<String>,
    pub(crate) expires_in: Option<i64>,
    /// The scope granted, when the answer names it (RFC 6749 §5.1: else the one requested).
    pub(crate) scope: Option<Vec<String>>,
    /// Whether the access token is bound to the DPoP key (`token_type` `DPoP`).
    pub(crate) dpop_bound: bool,
}

/// Whether `token` can be sent as it is: visible ASCII, no space (RFC 6749
/// `VSCHAR`s, which every `Authorization: Bearer` header and form can carry).
fn sendable(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic())
}

/// One token request. A refresh sends the scopes first requested, so the
/// new token has the same; an authorization server that answers
/// `invalid_scope` to that (it kept resource scopes out of the refresh
/// token's own) is asked once more without `scope`, which means "as
/// originally granted" (RFC 6749 §6).
pub(crate) async fn request(
    ep: &TokenEndpoint<'_>,
    grant: Grant<'_>,
    resource: &str,
    scopes: &[String],
) -> Result<Tokens, ClientError> {
    let answer = send(ep, &grant, resource, scopes).await?;
    let answer = match (&grant, &answer) {
        (Grant::Refresh(_), (400, body))
            if !scopes.is_empty() && body.get("error") == Some(&Value::from("invalid_scope")) =>
        {
            send(ep, &grant, resource, &[]).await?
        }
        _ => answer,
    };
    read(&grant, answer, ep.dpop.is_some())
}

/// One token request; with DPoP, sent once more when the server answers
/// `use_dpop_nonce` with a new nonce (each time a new proof and assertion).
async fn send(
    ep: &TokenEndpoint<'_>,
    grant: &Grant<'_>,
    resource: &str,
    scopes: &[String],
) -> Result<Answer, ClientError> {
    let mut nonce_retry = true;
    loop {
        let proof = match ep.dpop {
            Some((key, nonce)) => Some(key.proof("POST", ep.url.as_str(), None, nonce.get().as_deref(), ep.now_s)?),
            None => None,
        };
        let (answer, headers) = send_once(ep, grant, resource, scopes, proof.as_deref()).await?;
        let Some((_, nonce)) = ep.dpop else { return Ok(answer) };
        let fresh = nonce.keep(&headers);
        let asks = answer.0 == 400 && answer.1.get("error").and_then(Value::as_str) == Some(USE_DPOP_NONCE);
        if !(asks && fresh && nonce_retry) {
            return Ok(answer);
        }
        nonce_retry = false;
    }
}

async fn send_once(
    ep: &TokenEndpoint<'_>,
    grant: &Grant<'_>,
    resource: &str,
    scopes: &[String],
    proof: Option<&str>,
) -> Result<(Answer, reqwest::header::HeaderMap), ClientError> {
    let client = ep.client;
    let assertion = match (client.token_endpoint_auth_method.as_str(), &ep.signer) {
        (PRIVATE_KEY_JWT, Some(key)) => Some(key.client_assertion(&client.client_id, ep.issuer, ep.now_s)?),
        (PRIVATE_KEY_JWT, None) => {
            return Err(ClientError::OAuth(
                "the client authenticates with private_key_jwt but no client assertion key was given".into(),
            ));
        }
        _ => None,
    };
    let scope = scopes.join(" ");
    let mut form: Vec<(&str, &str)> = vec![("grant_type", grant.name())];
    match grant {
        Grant::Code { code, redirect_uri, verifier } => {
            form.extend([("code", *code), ("redirect_uri", *redirect_uri), ("code_verifier", *verifier)]);
        }
        Grant::Refresh(token) => form.push(("refresh_token", token)),
        Grant::ClientCredentials => {}
        Grant::JwtBearer(assertion) => form.push(("assertion", assertion)),
    }
    if !scope.is_empty() && !matches!(grant, Grant::Code { .. }) {
        form.push(("scope", &scope));
    }
    form.push(("resource", resource));
    let basic = client_auth(&mut form, client, assertion.as_deref());
    ep.fetch.post_token_form(ep.url, &form, basic, proof).await
}

fn read(grant: &Grant<'_>, answer: Answer, dpop_sent: bool) -> Result<Tokens, ClientError> {
    let (status, body) = &answer;
    let access = body.get("access_token").and_then(Value::as_str).filter(|t| !t.is_empty());
    let (200..=299, Some(access)) = (status, access) else {
        return Err(oauth_error(&format!("the token request ({})", grant.name()), &answer));
    };
    let token_type = body.get("token_type").and_then(Value::as_str).unwrap_or("Bearer");
    let dpop_bound = dpop_sent && token_type.eq_ignore_ascii_case(DPOP_SCHEME);
    if !token_type.eq_ignore_ascii_case("bearer") && !dpop_bound {
        return Err(ClientError::OAuth(format!(
            "the authorization server issued a {} token; only Bearer tokens (and DPoP ones, when asked for) \
             are supported",
            quoted(token_type)
        )));
    }
    let refresh_token = body.get("refresh_token").and_then(Value::as_str);
    // Refused before anything is stored: a token with CR/LF would break every later request.
    for (what, t) in [("an access token", Some(access)), ("a refresh token", refresh_token)] {
        if t.is_some_and(|t| !sendable(t)) {
            return Err(ClientError::OAuth(format!(
                "the authorization server issued {what} with characters that cannot be sent in a header \
                 (only visible ASCII is allowed): refused, nothing stored"
            )));
        }
    }
    let scope = match body.get("scope").and_then(Value::as_str) {
        Some(s) => {
            let granted: Vec<String> = s.split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect();
            scope::check("the token response", &granted)?;
            Some(granted)
        }
        None => None,
    };
    Ok(Tokens {
        access_token: access.to_owned(),
        refresh_token: refresh_token.map(str::to_owned),
        expires_in: body.get("expires_in").and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse().ok())),
        scope,
        dpop_bound,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(body: Value) -> Result<Tokens, ClientError> {
        read(&Grant::ClientCredentials, (200, body), false)
    }

    #[test]
    fn what_a_token_response_may_hold() {
        let t = answer(json!({ "access_token": "at", "refresh_token": "rt", "scope": "a  b", "expires_in": "60" }));
        let t = t.unwrap();
        assert_eq!((t.scope.unwrap(), t.expires_in), (vec!["a".to_owned(), "b".to_owned()], Some(60)));
        assert!(answer(json!({ "access_token": "at" })).unwrap().scope.is_none());
        for bad in ["at\r\nX: y", "a t", "caf\u{e9}"] {
            let e = answer(json!({ "access_token": bad })).unwrap_err().to_string();
            assert!(e.contains("cannot be sent in a header"), "{e}");
        }
        assert!(answer(json!({ "access_token": "at", "refresh_token": "r\nt" })).is_err());
        assert!(answer(json!({ "access_token": "at", "scope": "ok bad\"" })).is_err());
        let e = answer(json!({ "access_token": "at", "token_type": "\u{1b}MAC" })).unwrap_err().to_string();
        assert!(e.contains(r#"issued a "\x1bMAC" token"#), "{e}");
        // A DPoP-bound token only when a proof was sent for one.
        assert!(answer(json!({ "access_token": "at", "token_type": "DPoP" })).is_err());
        let bound = read(&Grant::ClientCredentials, (200, json!({ "access_token": "at", "token_type": "dpop" })), true);
        assert!(bound.unwrap().dpop_bound);
        let plain = read(&Grant::ClientCredentials, (200, json!({ "access_token": "at" })), true);
        assert!(!plain.unwrap().dpop_bound);
    }
}
