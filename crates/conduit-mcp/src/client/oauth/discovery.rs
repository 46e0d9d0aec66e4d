//! Finding the authorization server: the protected resource metadata
//! (RFC 9728; from the challenge, else the path-inserted then the root
//! well-known URL), checked to describe this server, then the authorization
//! server's metadata (RFC 8414 and OpenID discovery, in the spec's order),
//! used only when its `issuer` is the one it was looked up by.

use super::fetch::Fetch;
use crate::client::error::ClientError;
use crate::client::http_options::parse_url;
use crate::client::sanitize::{quoted, shown};
use crate::protocol::oauth::challenge::Challenge;
use crate::protocol::oauth::well_known::{authorization_server_paths, protected_resource_paths};
use reqwest::Url;
use serde_json::Value;

/// What the MCP server says about itself as a protected resource.
#[derive(Debug, Clone)]
pub(crate) struct ResourceMetadata {
    /// Its canonical identifier: sent verbatim as `resource`.
    pub(crate) resource: String,
    /// The authorization servers (issuers) it trusts; the first is used.
    pub(crate) authorization_servers: Vec<String>,
    /// The scopes it says basic use needs.
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// An authorization server's metadata, its issuer verified.
#[derive(Debug, Clone)]
pub(crate) struct AuthServer {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Option<Url>,
    pub(crate) token_endpoint: Url,
    pub(crate) registration_endpoint: Option<Url>,
    pub(crate) revocation_endpoint: Option<Url>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) code_challenge_methods: Option<Vec<String>>,
    pub(crate) token_auth_methods: Option<Vec<String>>,
    /// `authorization_response_iss_parameter_supported` (RFC 9207).
    pub(crate) iss_parameter: bool,
    /// `client_id_metadata_document_supported`.
    pub(crate) metadata_documents: bool,
    /// `dpop_signing_alg_values_supported` (RFC 9449 §5.1): the proof algorithms it takes.
    pub(crate) dpop_algs: Option<Vec<String>>,
}

fn strings(v: &Value, key: &str) -> Option<Vec<String>> {
    v.get(key).and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
}

/// The URL at `path` on the origin of `url` (no query or fragment).
fn same_origin_at(url: &Url, path: &str) -> Url {
    let mut u = url.clone();
    u.set_path(path);
    u.set_query(None);
    u.set_fragment(None);
    u
}

/// Whether the metadata's `resource` describes `server`: the same origin,
/// and a path equal to the server's or a whole-segment prefix of it.
pub(crate) fn resource_covers(resource: &Url, server: &Url) -> bool {
    if resource.origin() != server.origin() || resource.query().is_some() || resource.fragment().is_some() {
        return false;
    }
    let r = resource.path().trim_end_matches('/');
    let s = server.path().trim_end_matches('/');
    s == r || s.starts_with(&format!("{r}/"))
}

/// The protected resource metadata of `server`: the URL the challenge names,
/// else `/.well-known/oauth-protected-resource/<path>`, else the root one.
pub(crate) async fn protected_resource(
    fetch: &Fetch,
    server: &Url,
    challenge: Option<&Challenge>,
) -> Result<ResourceMetadata, ClientError> {
    let mut candidates = Vec::new();
    if let Some(u) = challenge.and_then(|c| c.resource_metadata.as_deref()) {
        candidates.push(parse_url("resource_metadata", u).map_err(|e| ClientError::OAuth(e.to_string()))?);
    }
    for url in &candidates {
        // The https-or-loopback rule of every OAuth endpoint: this document picks the authorization server.
        fetch
            .opts
            .check_credentials_to(url, "a request for the protected resource metadata")
            .map_err(|e| ClientError::OAuth(e.to_string()))?;
    }
    candidates.extend(protected_resource_paths(server.path()).iter().map(|p| same_origin_at(server, p)));
    let mut last = String::new();
    for url in candidates {
        let (status, doc) = fetch.get(&url).await?;
        if !(200..300).contains(&status) || !doc.is_object() {
            last = format!("{} answered HTTP {status}", shown(url.as_str()));
            continue;
        }
        let resource = doc.get("resource").and_then(Value::as_str).unwrap_or_default().to_owned();
        let parsed = Url::parse(&resource).ok();
        if !parsed.as_ref().is_some_and(|r| resource_covers(r, server)) {
            return Err(ClientError::OAuth(format!(
                "the protected resource metadata names the resource {}, not this server ({server}): refusing to authorize for it",
                quoted(&resource)
            )));
        }
        let servers = strings(&doc, "authorization_servers").unwrap_or_default();
        if servers.is_empty() {
            return Err(ClientError::OAuth(format!(
                "{}: the metadata names no authorization server",
                shown(url.as_str())
            )));
        }
        return Ok(ResourceMetadata {
            resource,
            authorization_servers: servers,
            scopes_supported: strings(&doc, "scopes_supported"),
        });
    }
    Err(ClientError::OAuth(format!("no protected resource metadata for {server} ({last})")))
}

/// Where to look for the metadata of `issuer`, in the order MCP clients try them.
fn metadata_urls(issuer: &Url) -> Vec<Url> {
    authorization_server_paths(issuer.path()).iter().map(|p| same_origin_at(issuer, p)).collect()
}

fn endpoint(doc: &Value, key: &str) -> Result<Option<Url>, ClientError> {
    match doc.get(key).and_then(Value::as_str) {
        None => Ok(None),
        Some(s) => parse_url(key, s).map(Some).map_err(|e| ClientError::OAuth(e.to_string())),
    }
}

/// The metadata of the authorization server `issuer`, from the first
/// well-known URL that answers with a document whose `issuer` is exactly it.
pub(crate) async fn authorization_server(fetch: &Fetch, issuer: &str) -> Result<AuthServer, ClientError> {
    let url = parse_url("the authorization server", issuer).map_err(|e| ClientError::OAuth(e.to_string()))?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ClientError::OAuth(format!("the issuer {} has a query or fragment", quoted(issuer))));
    }
    fetch.opts.check_credentials_to(&url, "OAuth credentials").map_err(|e| ClientError::OAuth(e.to_string()))?;
    let mut last = String::new();
    for candidate in metadata_urls(&url) {
        let (status, doc) = fetch.get(&candidate).await?;
        if !(200..300).contains(&status) || !doc.is_object() {
            last = format!("{} answered HTTP {status}", shown(candidate.as_str()));
            continue;
        }
        // RFC 8414 §3.3, SEP-2468: a document for another issuer is not used at all.
        if doc.get("issuer").and_then(Value::as_str) != Some(issuer) {
            last = format!("{} describes another issuer", shown(candidate.as_str()));
            continue;
        }
        let token_endpoint = endpoint(&doc, "token_endpoint")?
            .ok_or_else(|| ClientError::OAuth(format!("{}: no token_endpoint", shown(candidate.as_str()))))?;
        return Ok(AuthServer {
            issuer: issuer.to_owned(),
            authorization_endpoint: endpoint(&doc, "authorization_endpoint")?,
            token_endpoint,
            registration_endpoint: endpoint(&doc, "registration_endpoint")?,
            revocation_endpoint: endpoint(&doc, "revocation_endpoint")?,
            scopes_supported: strings(&doc, "scopes_supported"),
            code_challenge_methods: strings(&doc, "code_challenge_methods_supported"),
            token_auth_methods: strings(&doc, "token_endpoint_auth_methods_supported"),
            iss_parameter: doc.get("authorization_response_iss_parameter_supported") == Some(&Value::Bool(true)),
            metadata_documents: doc.get("client_id_metadata_document_supported") == Some(&Value::Bool(true)),
            dpop_algs: strings(&doc, "dpop_signing_alg_values_supported"),
        });
    }
    Err(ClientError::OAuth(format!("no usable metadata for the authorization server {} ({last})", shown(issuer))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_must_describe_the_server() {
        let server = Url::parse("http://Localhost:80/mcp").unwrap();
        for ok in ["http://localhost/mcp", "http://localhost/", "http://localhost/mcp/"] {
            assert!(resource_covers(&Url::parse(ok).unwrap(), &server), "{ok}");
        }
        for bad in
            ["https://evil.example.com/mcp", "http://localhost/mc", "http://localhost:81/mcp", "http://localhost/mcp/x"]
        {
            assert!(!resource_covers(&Url::parse(bad).unwrap(), &server), "{bad}");
        }
    }
}
