//! The authorization request and its answer: PKCE (S256), `state`,
//! `resource` and `scope` on the way out; on the way back the RFC 9207
//! `iss` check (before anything else in the answer is believed), `state`,
//! then `error` or `code`.

use super::discovery::AuthServer;
use crate::client::error::ClientError;
use crate::client::sanitize::{quoted, shown};
use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use reqwest::Url;
use sha2::{Digest, Sha256};

/// The person's side of an authorization: takes them to the authorization
/// server's page and brings back where it redirected.
///
/// [`LoopbackBrowser`](super::LoopbackBrowser) opens a browser (or runs a
/// command, or prints the URL) and receives the redirect on a loopback
/// listener. A program with its own user agent implements this.
#[async_trait]
pub trait Authorizer: Send + Sync + std::fmt::Debug {
    /// The redirect URI to register and send. `preferred` is the one a
    /// stored registration has, kept when it can still be served.
    async fn redirect_uri(&self, preferred: Option<&str>) -> Result<String, ClientError>;
    /// Takes the person to `authorization_url`; returns the full URL the
    /// authorization server redirected back to (with `code`, `state`, `iss`).
    async fn authorize(&self, authorization_url: &str) -> Result<String, ClientError>;
}

/// The secrets of one authorization request, kept until its answer.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) verifier: String,
    pub(crate) state: String,
    /// The validated issuer the request went to (RFC 9207).
    pub(crate) issuer: String,
    pub(crate) iss_parameter: bool,
}

fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// `BASE64URL(SHA256(verifier))` (RFC 7636 §4.2).
pub(crate) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// What goes into one authorization request.
pub(crate) struct Request<'a> {
    pub(crate) client_id: &'a str,
    pub(crate) redirect_uri: &'a str,
    pub(crate) scopes: &'a [String],
    pub(crate) resource: &'a str,
}

/// The authorization URL and the secrets to keep for its answer.
pub(crate) fn start(server: &AuthServer, req: &Request<'_>) -> Result<(Url, Pending), ClientError> {
    let mut url = server
        .authorization_endpoint
        .clone()
        .ok_or_else(|| ClientError::OAuth(format!("{} has no authorization_endpoint", shown(&server.issuer))))?;
    if !server.code_challenge_methods.as_ref().is_some_and(|m| m.iter().any(|m| m == "S256")) {
        return Err(ClientError::OAuth(format!(
            "{} does not advertise PKCE with S256 (code_challenge_methods_supported): refusing to authorize",
            shown(&server.issuer)
        )));
    }
    let pending = Pending {
        verifier: random_token(),
        state: random_token(),
        issuer: server.issuer.clone(),
        iss_parameter: server.iss_parameter,
    };
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", req.client_id)
            .append_pair("redirect_uri", req.redirect_uri)
            .append_pair("code_challenge", &s256(&pending.verifier))
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &pending.state)
            .append_pair("resource", req.resource);
        if !req.scopes.is_empty() {
            q.append_pair("scope", &req.scopes.join(" "));
        }
    }
    Ok((url, pending))
}

/// Reads the redirect back: the authorization code, or why there is none.
pub(crate) fn finish(pending: &Pending, callback: &str) -> Result<String, ClientError> {
    let url = Url::parse(callback).map_err(|e| ClientError::OAuth(format!("the redirect is not a URL: {e}")))?;
    let get = |k: &str| url.query_pairs().find(|(n, _)| n == k).map(|(_, v)| v.into_owned());
    // RFC 9207 §2.4: a simple string comparison, before acting on anything else.
    match get("iss") {
        Some(iss) if iss != pending.issuer => {
            return Err(ClientError::OAuth(format!(
                "the authorization response comes from issuer {}, not {}: rejected",
                quoted(&iss),
                quoted(&pending.issuer)
            )));
        }
        None if pending.iss_parameter => {
            return Err(ClientError::OAuth(format!(
                "the authorization response has no iss parameter although {} promises one: rejected",
                shown(&pending.issuer)
            )));
        }
        _ => {}
    }
    if get("state").as_deref() != Some(pending.state.as_str()) {
        return Err(ClientError::OAuth("the authorization response's state does not match the request".into()));
    }
    if let Some(error) = get("error") {
        let desc = get("error_description").map(|d| format!(": {}", shown(&d))).unwrap_or_default();
        return Err(ClientError::OAuth(format!("authorization refused: {}{desc}", shown(&error))));
    }
    get("code")
        .filter(|c| !c.is_empty())
        .ok_or_else(|| ClientError::OAuth("the authorization response has no code".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(iss_parameter: bool) -> Pending {
        Pending { verifier: "v".into(), state: "s".into(), issuer: "https://as.example".into(), iss_parameter }
    }

    #[test]
    fn pkce_s256_vector() {
        // RFC 7636 Appendix B.
        assert_eq!(s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    }

    #[test]
    fn rfc9207_table() {
        let cb = |q: &str| format!("http://127.0.0.1/cb?{q}");
        assert_eq!(finish(&pending(true), &cb("code=c&state=s&iss=https%3A%2F%2Fas.example")).unwrap(), "c");
        assert!(finish(&pending(true), &cb("code=c&state=s")).is_err());
        assert_eq!(finish(&pending(false), &cb("code=c&state=s")).unwrap(), "c");
        assert!(finish(&pending(false), &cb("code=c&state=s&iss=https%3A%2F%2Fevil.example")).is_err());
        assert!(finish(&pending(true), &cb("code=c&state=s&iss=https%3A%2F%2Fas.example%2F")).is_err());
        let e = finish(&pending(false), &cb("state=s&iss=https%3A%2F%2Fevil&error=access_denied")).unwrap_err();
        assert!(!e.to_string().contains("access_denied"), "{e}");
        assert!(finish(&pending(false), &cb("code=c&state=x")).is_err());
    }
}
