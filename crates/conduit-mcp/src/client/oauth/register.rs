//! Who the client is at an authorization server, in the spec's order:
//! pre-registered credentials, then a Client ID Metadata Document URL when
//! the server accepts them, then dynamic registration (RFC 7591, with
//! `application_type`). A registration is kept per issuer and never used at
//! another.

use super::assertion::ClientAssertionKey;
use super::discovery::AuthServer;
use super::fetch::{Fetch, oauth_error};
use super::store::{ClientRegistration, CredentialStore};
use crate::client::error::ClientError;
use crate::client::http_options::parse_url;
use crate::client::sanitize::shown;
use crate::protocol::oauth::endpoint::is_loopback_host;
use crate::protocol::oauth::grants::PRIVATE_KEY_JWT;
use serde_json::{Value, json};

/// What the application says about its own client identity.
#[derive(Debug, Clone, Default)]
pub(crate) struct Identity {
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    pub(crate) auth_method: Option<String>,
    pub(crate) metadata_url: Option<String>,
    pub(crate) client_name: String,
    /// The key of `private_key_jwt`.
    pub(crate) assertion_key: Option<ClientAssertionKey>,
}

impl Identity {
    /// The token endpoint authentication method of the pre-registered client at `server`.
    pub(crate) fn pre_registered_method(&self, server: Option<&AuthServer>) -> String {
        if let Some(m) = &self.auth_method {
            return m.clone();
        }
        if self.assertion_key.is_some() {
            return PRIVATE_KEY_JWT.to_owned();
        }
        match server {
            Some(s) => choose_method(s, self.client_secret.is_some(), false),
            None if self.client_secret.is_some() => "client_secret_basic".into(),
            None => "none".into(),
        }
    }
}

/// The token endpoint authentication method to use at `server`.
fn choose_method(server: &AuthServer, has_secret: bool, registering: bool) -> String {
    // RFC 8414 §2: absent means client_secret_basic.
    let supported = server.token_auth_methods.clone().unwrap_or_else(|| vec!["client_secret_basic".into()]);
    let order: &[&str] = if registering {
        &["none", "client_secret_basic", "client_secret_post"]
    } else if has_secret {
        &["client_secret_basic", "client_secret_post"]
    } else {
        &["none"]
    };
    order.iter().find(|m| supported.iter().any(|s| s == *m)).map_or_else(|| order[0].to_owned(), |m| (*m).to_owned())
}

/// The client to use at `server` for the authorization code grant (with
/// `redirect_uri`) or for client credentials (`redirect_uri` is `None`).
pub(crate) async fn client_for(
    fetch: &Fetch,
    store: &dyn CredentialStore,
    me: &Identity,
    server: &AuthServer,
    redirect_uri: Option<&str>,
) -> Result<ClientRegistration, ClientError> {
    if let Some(id) = &me.client_id {
        let method = me.pre_registered_method(Some(server));
        let mut reg = ClientRegistration::new(&server.issuer, id, me.client_secret.clone(), method, "pre-registered");
        reg.assertion_key_file =
            me.assertion_key.as_ref().and_then(|k| k.path()).map(|p| p.to_string_lossy().into_owned());
        // Kept under this issuer, so a later run can refresh without the flags.
        store.save_registration(&server.issuer, &reg).await?;
        return Ok(reg);
    }
    if let Some(stored) = store.registration(&server.issuer).await?
        && stored.issuer == server.issuer
        && (stored.kind != "dynamic" || redirect_uri.is_none_or(|r| stored.redirect_uris.iter().any(|u| u == r)))
    {
        return Ok(stored);
    }
    let Some(redirect_uri) = redirect_uri else {
        return Err(ClientError::OAuth(format!(
            "client credentials need a client id registered at {} (and its secret)",
            shown(&server.issuer)
        )));
    };
    if server.metadata_documents
        && let Some(url) = &me.metadata_url
    {
        return Ok(ClientRegistration::new(&server.issuer, url, None, "none", "metadata-document"));
    }
    let Some(endpoint) = &server.registration_endpoint else {
        return Err(ClientError::OAuth(format!(
            "the authorization server {} offers no dynamic registration{}: give a pre-registered client id",
            shown(&server.issuer),
            if server.metadata_documents { " and no client metadata document URL was configured" } else { "" }
        )));
    };
    let method = choose_method(server, false, true);
    let redirect = parse_url("redirect URI", redirect_uri)?;
    let native =
        is_loopback_host(redirect.host_str().unwrap_or_default()) || !matches!(redirect.scheme(), "http" | "https");
    let body = json!({
        "client_name": me.client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": if native { "native" } else { "web" },
    });
    let answer = fetch.post_json(endpoint, &body).await?;
    let (status, doc) = &answer;
    let Some(client_id) = doc.get("client_id").and_then(Value::as_str).filter(|_| (200..300).contains(status)) else {
        return Err(oauth_error("dynamic client registration", &answer));
    };
    let method = doc.get("token_endpoint_auth_method").and_then(Value::as_str).unwrap_or(&method).to_owned();
    let secret = doc.get("client_secret").and_then(Value::as_str).filter(|_| method != "none").map(str::to_owned);
    let mut reg = ClientRegistration::new(&server.issuer, client_id, secret, method, "dynamic");
    reg.redirect_uris = vec![redirect_uri.to_owned()];
    store.save_registration(&server.issuer, &reg).await?;
    Ok(reg)
}
