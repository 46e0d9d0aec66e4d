//! The OAuth side's HTTP: small JSON documents and form posts, read with a
//! size cap and the transport's timeouts. Requests that carry a client
//! secret, a code or a token follow no redirect at all; metadata reads
//! follow same-origin redirects only.

use crate::client::error::ClientError;
use crate::client::http_options::{self, HttpOptions};
use crate::client::sanitize::shown;
use crate::protocol::oauth::grants::{JWT_CLIENT_ASSERTION, PRIVATE_KEY_JWT};
use reqwest::Url;
use reqwest::header::HeaderMap;
use serde_json::Value;

/// The largest OAuth document or token response read.
const MAX_DOCUMENT: usize = 1024 * 1024;

/// An HTTP status and the JSON body (`Null` when the body is not JSON).
pub(crate) type Answer = (u16, Value);

/// The clients the OAuth flow uses.
#[derive(Debug, Clone)]
pub(crate) struct Fetch {
    documents: reqwest::Client,
    secrets: reqwest::Client,
    pub(crate) opts: HttpOptions,
}

impl Fetch {
    pub(crate) fn new(opts: HttpOptions) -> Result<Self, ClientError> {
        Ok(Self { documents: opts.client(true)?, secrets: opts.client(false)?, opts })
    }

    async fn answer(&self, rb: reqwest::RequestBuilder) -> Result<Answer, ClientError> {
        Ok(self.answer_with_headers(rb).await?.0)
    }

    async fn answer_with_headers(&self, rb: reqwest::RequestBuilder) -> Result<(Answer, HeaderMap), ClientError> {
        let resp = http_options::send(rb.header("accept", "application/json"), self.opts.timeout).await?;
        if resp.status().is_redirection() {
            return Err(http_options::redirect_refused(&resp));
        }
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = http_options::read_body(resp, MAX_DOCUMENT, self.opts.timeout).await?;
        Ok(((status, crate::protocol::peer_json::from_slice(&body).unwrap_or(Value::Null)), headers))
    }

    /// GET a metadata document.
    pub(crate) async fn get(&self, url: &Url) -> Result<Answer, ClientError> {
        self.answer(
            self.documents.get(url.clone()).header("MCP-Protocol-Version", crate::protocol::LATEST_PROTOCOL_VERSION),
        )
        .await
    }

    /// The `WWW-Authenticate` values of a 401 to a GET of `url` without
    /// credentials (joined with `, `); `None` for any other answer. No
    /// redirect is followed and the body is not read.
    pub(crate) async fn challenge(&self, url: &Url) -> Result<Option<String>, ClientError> {
        let resp = http_options::send(
            self.secrets.get(url.clone()).header("accept", "application/json, text/event-stream"),
            self.opts.timeout,
        )
        .await?;
        if resp.status().as_u16() != 401 {
            return Ok(None);
        }
        Ok(Some(http_options::www_authenticate(&resp)))
    }

    /// POST a form (a token request), with HTTP Basic client authentication when given.
    pub(crate) async fn post_form(
        &self,
        url: &Url,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> Result<Answer, ClientError> {
        Ok(self.post_token_form(url, form, basic, None).await?.0)
    }

    /// POST a form to a token endpoint, with a DPoP proof when given; the
    /// response's headers come back too (its `DPoP-Nonce`).
    pub(crate) async fn post_token_form(
        &self,
        url: &Url,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
        dpop: Option<&str>,
    ) -> Result<(Answer, HeaderMap), ClientError> {
        let what = if basic.is_some() || form.iter().any(|(k, _)| *k == "client_secret") {
            "a client secret"
        } else {
            "a code or token"
        };
        self.opts.check_credentials_to(url, what)?;
        let mut rb = self.secrets.post(url.clone()).form(form);
        if let Some((id, secret)) = basic {
            // RFC 6749 §2.3.1: both parts form-urlencoded before Base64.
            rb = rb.basic_auth(form_encode(id), Some(form_encode(secret)));
        }
        if let Some(proof) = dpop {
            rb = rb.header(crate::protocol::oauth::dpop::DPOP_HEADER, proof);
        }
        self.answer_with_headers(rb).await
    }

    /// POST a JSON document (dynamic client registration).
    pub(crate) async fn post_json(&self, url: &Url, body: &Value) -> Result<Answer, ClientError> {
        self.opts.check_credentials_to(url, "a client registration")?;
        self.answer(self.secrets.post(url.clone()).json(body)).await
    }
}

/// Authenticates `client` on a form post as it registered: returns the HTTP
/// Basic credentials (`client_secret_basic`), or adds `client_id` (and
/// `client_secret` for `client_secret_post`, the signed `assertion` for
/// `private_key_jwt`) to the form.
pub(crate) fn client_auth<'a>(
    form: &mut Vec<(&'a str, &'a str)>,
    client: &'a super::store::ClientRegistration,
    assertion: Option<&'a str>,
) -> Option<(&'a str, &'a str)> {
    let secret = client.client_secret.as_deref();
    if let (PRIVATE_KEY_JWT, Some(a)) = (client.token_endpoint_auth_method.as_str(), assertion) {
        form.extend([
            ("client_id", client.client_id.as_str()),
            ("client_assertion_type", JWT_CLIENT_ASSERTION),
            ("client_assertion", a),
        ]);
        return None;
    }
    match (client.token_endpoint_auth_method.as_str(), secret) {
        ("client_secret_basic", Some(s)) => Some((client.client_id.as_str(), s)),
        ("client_secret_post", Some(s)) => {
            form.extend([("client_id", client.client_id.as_str()), ("client_secret", s)]);
            None
        }
        _ => {
            form.push(("client_id", client.client_id.as_str()));
            None
        }
    }
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// An OAuth error response (`error`, `error_description`) as one line.
pub(crate) fn oauth_error(what: &str, (status, body): &Answer) -> ClientError {
    let error = shown(body.get("error").and_then(Value::as_str).unwrap_or("no error code"));
    let desc =
        body.get("error_description").and_then(Value::as_str).map(|d| format!(": {}", shown(d))).unwrap_or_default();
    ClientError::OAuth(format!("{what} failed (HTTP {status}): {error}{desc}"))
}
