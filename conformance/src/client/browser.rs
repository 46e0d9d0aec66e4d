//! The conformance client's user agent: the suite's mock authorization
//! server redirects at once, so "the person" is one GET of the authorization
//! URL with redirects off, and the redirect's `Location` is the answer. The
//! OAuth flow around it is the library's, the same as `conduit-mcp login`.

use async_trait::async_trait;
use conduit_mcp::client::ClientError;
use conduit_mcp::client::oauth::Authorizer;

/// The redirect URI registered (never listened on: the answer is read from `Location`).
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// Follows the authorization URL one hop and hands back where it redirects.
#[derive(Debug, Default)]
pub(crate) struct Headless;

#[async_trait]
impl Authorizer for Headless {
    async fn redirect_uri(&self, _preferred: Option<&str>) -> Result<String, ClientError> {
        Ok(REDIRECT_URI.into())
    }

    async fn authorize(&self, authorization_url: &str) -> Result<String, ClientError> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ClientError::OAuth(e.to_string()))?;
        let resp = http.get(authorization_url).send().await.map_err(|e| ClientError::OAuth(e.to_string()))?;
        let location = resp.headers().get("location").and_then(|v| v.to_str().ok()).ok_or_else(|| {
            ClientError::OAuth(format!("the authorization endpoint answered {} without a redirect", resp.status()))
        })?;
        let base = reqwest::Url::parse(authorization_url).map_err(|e| ClientError::OAuth(e.to_string()))?;
        Ok(base.join(location).map_err(|e| ClientError::OAuth(e.to_string()))?.to_string())
    }
}
