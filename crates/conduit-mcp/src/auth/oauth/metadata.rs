//! Authorization-server metadata: RFC 8414 and OpenID discovery, in the order
//! MCP clients try them, with the `issuer` echo check.

use super::fetch;
use crate::protocol::oauth::well_known::authorization_server_paths;
use serde_json::Value;

/// What the resource server needs from an authorization server's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AsMetadata {
    /// Where its signing keys are.
    pub(super) jwks_uri: Option<String>,
    /// RFC 7662 introspection.
    pub(super) introspection_endpoint: Option<String>,
}

/// The discovery URLs of `issuer`, in the order MCP clients try them
/// ([`authorization_server_paths`]).
fn discovery_urls(issuer: &str) -> Vec<String> {
    let trimmed = issuer.trim_end_matches('/');
    let (origin, path) = match trimmed.find("://").and_then(|i| trimmed[i + 3..].find('/').map(|j| i + 3 + j)) {
        Some(at) => (&trimmed[..at], &trimmed[at..]),
        None => (trimmed, ""),
    };
    authorization_server_paths(path).into_iter().map(|p| format!("{origin}{p}")).collect()
}

/// Fetches the metadata of `issuer`: the first document that exists and names
/// exactly this issuer. A document naming another issuer is never used.
pub(super) async fn discover(http: &reqwest::Client, issuer: &str) -> Result<AsMetadata, String> {
    let mut failures = Vec::new();
    for url in discovery_urls(issuer) {
        let doc = match fetch::json(http.get(&url).header("accept", "application/json")).await {
            Ok(d) => d,
            Err(e) => {
                failures.push(format!("{url}: {e}"));
                continue;
            }
        };
        if doc.get("issuer").and_then(Value::as_str) != Some(issuer) {
            failures.push(format!("{url}: names issuer {}, not {issuer}", doc.get("issuer").unwrap_or(&Value::Null)));
            continue;
        }
        let endpoint = |key: &str| -> Result<Option<String>, String> {
            match doc.get(key).and_then(Value::as_str) {
                Some(u) => fetch::check_url(key, u).map(|_| Some(u.to_owned())),
                None => Ok(None),
            }
        };
        return Ok(AsMetadata {
            jwks_uri: endpoint("jwks_uri")?,
            introspection_endpoint: endpoint("introspection_endpoint")?,
        });
    }
    Err(format!("no usable metadata for issuer {issuer} ({})", failures.join("; ")))
}
