//! The token endpoint: the authorization code (with its PKCE verifier), a
//! refresh, or client credentials; `resource` on every request; the client
//! authenticated as it registered (`client_secret_basic`,
//! `client_secret_post` or `none`).

use super::fetch::{Answer, Fetch, client_auth, oauth_error};
use super::store::ClientRegistration;
use crate::client::ClientError;
use reqwest::Url;
use serde_json::Value;

/// What is traded for a token.
pub(crate) enum Grant<'a> {
    /// An authorization code and the PKCE verifier of its request.
    Code { code: &'a str, redirect_uri: &'a str, verifier: &'a str },
    /// A refresh token (sent with the scopes first granted).
    Refresh(&'a str),
    /// The client's own credentials.
    ClientCredentials,
}

impl Grant<'_> {
    fn name(&self) -> &'static str {
        match self {
            Grant::Code { .. } => "authorization_code",
            Grant::Refresh(_) => "refresh_token",
            Grant::ClientCredentials => "client_credentials",
        }
    }
}

/// A successful token response.
#[derive(Debug)]
pub(crate) struct Tokens {
    pub(crate) access_token: String,
    pub(crate) refresh_token: Option<String>,
    pub(crate) expires_in: Option<i64>,
}

/// One token request. A refresh sends the scopes first requested, so the
/// new token has the same; an authorization server that answers
/// `invalid_scope` to that (it kept resource scopes out of the refresh
/// token's own) is asked once more without `scope`, which means "as
/// originally granted" (RFC 6749 §6).
pub(crate) async fn request(
    fetch: &Fetch,
    endpoint: &Url,
    client: &ClientRegistration,
    grant: Grant<'_>,
    resource: &str,
    scopes: &[String],
) -> Result<Tokens, ClientError> {
    let answer = send(fetch, endpoint, client, &grant, resource, scopes).await?;
    let answer = match (&grant, &answer) {
        (Grant::Refresh(_), (400, body))
            if !scopes.is_empty() && body.get("error") == Some(&Value::from("invalid_scope")) =>
        {
            send(fetch, endpoint, client, &grant, resource, &[]).await?
        }
        _ => answer,
    };
    read(&grant, answer)
}

async fn send(
    fetch: &Fetch,
    endpoint: &Url,
    client: &ClientRegistration,
    grant: &Grant<'_>,
    resource: &str,
    scopes: &[String],
) -> Result<Answer, ClientError> {
    let scope = scopes.join(" ");
    let mut form: Vec<(&str, &str)> = vec![("grant_type", grant.name())];
    match grant {
        Grant::Code { code, redirect_uri, verifier } => {
            form.extend([("code", *code), ("redirect_uri", *redirect_uri), ("code_verifier", *verifier)]);
        }
        Grant::Refresh(token) => form.push(("refresh_token", token)),
        Grant::ClientCredentials => {}
    }
    if !scope.is_empty() && !matches!(grant, Grant::Code { .. }) {
        form.push(("scope", &scope));
    }
    form.push(("resource", resource));
    let basic = client_auth(&mut form, client);
    fetch.post_form(endpoint, &form, basic).await
}

fn read(grant: &Grant<'_>, answer: Answer) -> Result<Tokens, ClientError> {
    let (status, body) = &answer;
    let access = body.get("access_token").and_then(Value::as_str).filter(|t| !t.is_empty());
    let (200..=299, Some(access)) = (status, access) else {
        return Err(oauth_error(&format!("the token request ({})", grant.name()), &answer));
    };
    let token_type = body.get("token_type").and_then(Value::as_str).unwrap_or("Bearer");
    if !token_type.eq_ignore_ascii_case("bearer") {
        return Err(ClientError::OAuth(format!(
            "the authorization server issued a {:?} token; only Bearer tokens are supported",
            crate::client::sanitize::one_line(token_type)
        )));
    }
    Ok(Tokens {
        access_token: access.to_owned(),
        refresh_token: body.get("refresh_token").and_then(Value::as_str).map(str::to_owned),
        expires_in: body.get("expires_in").and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse().ok())),
    })
}
