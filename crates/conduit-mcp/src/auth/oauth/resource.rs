//! Protected Resource Metadata (RFC 9728): the document, the well-known paths
//! it is served at, and the URL challenges name — all built once from
//! configuration, never from a request.

use super::config::OAuthConfig;
use crate::protocol::oauth::well_known::protected_resource_paths;
use reqwest::Url;

/// The protected-resource metadata of one endpoint, ready to serve.
#[derive(Debug, Clone)]
pub struct ProtectedResource {
    resource: String,
    document: bytes::Bytes,
    paths: Vec<String>,
    metadata_url: String,
    scope: Option<String>,
}

impl ProtectedResource {
    /// Builds the document and paths from `cfg` (the resource is checked first).
    pub(super) fn new(cfg: &OAuthConfig) -> Result<Self, String> {
        let url = check_resource(&cfg.resource)?;
        let origin = url.origin().ascii_serialization();
        let paths = protected_resource_paths(url.path());
        let metadata_url = cfg.resource_metadata_url.clone().unwrap_or_else(|| format!("{origin}{}", paths[0]));
        let mut doc = serde_json::json!({
            "resource": cfg.resource,
            "authorization_servers": cfg.issuers.iter().map(|i| i.url.as_str()).collect::<Vec<_>>(),
            "bearer_methods_supported": ["header"],
        });
        if !cfg.scopes.is_empty() {
            doc["scopes_supported"] = serde_json::json!(cfg.scopes);
        }
        if let Some(name) = &cfg.resource_name {
            doc["resource_name"] = serde_json::json!(name);
        }
        let scope = (!cfg.scopes.is_empty()).then(|| cfg.scopes.join(" "));
        let document = bytes::Bytes::from(serde_json::to_vec(&doc).map_err(|e| e.to_string())?);
        Ok(Self { resource: cfg.resource.clone(), document, paths, metadata_url, scope })
    }

    /// The canonical resource URI.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The JSON document.
    pub fn document(&self) -> &bytes::Bytes {
        &self.document
    }

    /// The paths it is served at on the resource's origin: path-inserted first, then the root.
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    /// Whether `path` is one of [`paths`](Self::paths).
    pub fn is_metadata_path(&self, path: &str) -> bool {
        self.paths.iter().any(|p| p == path)
    }

    /// The URL named in `resource_metadata="…"` of every challenge.
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// The scopes every request needs, space-separated (the challenge's `scope`).
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }
}

/// A resource URI must be absolute http(s), without fragment (RFC 8707 §2).
fn check_resource(resource: &str) -> Result<Url, String> {
    let u = Url::parse(resource).map_err(|e| format!("resource {resource:?} is not an absolute URL: {e}"))?;
    if !matches!(u.scheme(), "https" | "http") {
        return Err(format!("resource {resource:?} must be an https URL"));
    }
    if u.fragment().is_some() {
        return Err(format!("resource {resource:?} must not have a fragment"));
    }
    Ok(u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_document_come_from_the_configured_resource() {
        let cfg = OAuthConfig::new("https://as.example", "https://mcp.example/api/mcp").scope("mcp:read");
        let p = ProtectedResource::new(&cfg).expect("valid");
        assert_eq!(
            p.paths(),
            ["/.well-known/oauth-protected-resource/api/mcp", "/.well-known/oauth-protected-resource"]
        );
        assert_eq!(p.metadata_url(), "https://mcp.example/.well-known/oauth-protected-resource/api/mcp");
        let doc: serde_json::Value = serde_json::from_slice(p.document()).expect("JSON");
        assert_eq!(doc["resource"], "https://mcp.example/api/mcp");
        assert_eq!(doc["authorization_servers"], serde_json::json!(["https://as.example"]));
        assert_eq!(doc["scopes_supported"], serde_json::json!(["mcp:read"]));
        assert_eq!(p.scope(), Some("mcp:read"));

        let root = ProtectedResource::new(&OAuthConfig::new("https://as.example", "https://mcp.example")).unwrap();
        assert_eq!(root.paths(), ["/.well-known/oauth-protected-resource"]);
        assert_eq!(root.scope(), None);
        assert!(ProtectedResource::new(&OAuthConfig::new("https://as.example", "/mcp")).is_err());
        assert!(ProtectedResource::new(&OAuthConfig::new("https://as.example", "https://m.example/mcp#x")).is_err());
    }
}
