//! The `[oauth]` TOML table; an error names the table and the key.
//!
//! ```toml
//! [oauth]
//! issuer = "https://auth.example.com"          # or issuers = ["…", "…"]
//! resource = "https://mcp.example.com/mcp"     # the canonical URI clients connect to
//! scopes = ["mcp:read"]                        # needed by every request; advertised
//! introspection_client_id = "mcp-server"       # for opaque tokens (RFC 7662)
//! introspection_client_secret_env = "MCP_INTROSPECTION_SECRET"   # or introspection_client_secret
//! leeway_s = 60
//! keys_ttl_s = 600
//! refetch_interval_s = 30
//! introspection_ttl_s = 60
//! fetch_timeout_ms = 5000
//!
//! [oauth.tool_scopes]
//! deploy = ["mcp:deploy"]
//!
//! [oauth.scope_hierarchy]
//! "mcp:admin" = ["mcp:deploy", "mcp:read"]
//! ```

use super::config::OAuthConfig;
use std::collections::BTreeMap;
use std::time::Duration;

/// Why an OAuth configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid configuration [oauth] {key}: {message}")]
#[non_exhaustive]
pub struct OAuthConfigError {
    /// The key at fault (`oauth` for the table itself).
    pub key: String,
    /// What is wrong.
    pub message: String,
}

fn err(key: &str, message: impl Into<String>) -> OAuthConfigError {
    OAuthConfigError { key: key.to_owned(), message: message.into() }
}

fn string(key: &str, v: &toml::Value) -> Result<String, OAuthConfigError> {
    v.as_str().map(str::to_owned).ok_or_else(|| err(key, "must be a string"))
}

/// A list of strings: an array, or one space-separated string.
fn strings(key: &str, v: &toml::Value) -> Result<Vec<String>, OAuthConfigError> {
    match v {
        toml::Value::String(s) => Ok(s.split_whitespace().map(str::to_owned).collect()),
        toml::Value::Array(a) => a.iter().map(|x| string(key, x)).collect(),
        _ => Err(err(key, "must be an array of strings")),
    }
}

fn seconds(key: &str, v: &toml::Value, unit_ms: bool) -> Result<Duration, OAuthConfigError> {
    let n = v.as_integer().filter(|n| *n >= 0).ok_or_else(|| err(key, "must be a non-negative integer"))? as u64;
    Ok(if unit_ms { Duration::from_millis(n) } else { Duration::from_secs(n) })
}

fn map(key: &str, v: &toml::Value) -> Result<BTreeMap<String, Vec<String>>, OAuthConfigError> {
    let t = v.as_table().ok_or_else(|| err(key, "must be a table"))?;
    t.iter().map(|(k, v)| Ok((k.clone(), strings(&format!("{key}.{k}"), v)?))).collect()
}

impl OAuthConfig {
    /// Reads the `[oauth]` table of a TOML document; `None` when there is none.
    pub fn from_toml(doc: &str) -> Result<Option<Self>, OAuthConfigError> {
        let root: toml::Table = doc.parse().map_err(|e: toml::de::Error| err("oauth", e.message()))?;
        let Some(v) = root.get("oauth") else { return Ok(None) };
        let t = v.as_table().ok_or_else(|| err("oauth", "must be a table"))?;
        let resource = string("resource", t.get("resource").ok_or_else(|| err("resource", "is required"))?)?;
        let issuers = match (t.get("issuer"), t.get("issuers")) {
            (Some(i), None) => vec![string("issuer", i)?],
            (None, Some(list)) => strings("issuers", list)?,
            (Some(_), Some(_)) => return Err(err("issuers", "give issuer or issuers, not both")),
            (None, None) => return Err(err("issuer", "is required")),
        };
        let (first, rest) = issuers.split_first().ok_or_else(|| err("issuers", "must name at least one issuer"))?;
        let mut cfg = rest.iter().fold(Self::new(first.clone(), resource), |c, i| c.issuer(i.clone()));
        let (mut client_id, mut secret) = (None, None);
        for (k, v) in t {
            match k.as_str() {
                "resource" | "issuer" | "issuers" => {}
                "scopes" => cfg.scopes = strings(k, v)?,
                "resource_metadata_url" => cfg.resource_metadata_url = Some(string(k, v)?),
                "resource_name" => cfg.resource_name = Some(string(k, v)?),
                "introspection_client_id" => client_id = Some(string(k, v)?),
                "introspection_client_secret" => secret = Some(string(k, v)?),
                "introspection_client_secret_env" => {
                    let name = string(k, v)?;
                    let value =
                        std::env::var(&name).map_err(|_| err(k, format!("environment variable {name} is not set")))?;
                    secret = Some(value);
                }
                "leeway_s" => cfg.leeway = seconds(k, v, false)?,
                "keys_ttl_s" => cfg.keys_ttl = seconds(k, v, false)?,
                "refetch_interval_s" => cfg.refetch_interval = seconds(k, v, false)?,
                "introspection_ttl_s" => cfg.introspection_ttl = seconds(k, v, false)?,
                "fetch_timeout_ms" => cfg.fetch_timeout = seconds(k, v, true)?,
                "tool_scopes" => cfg.tool_scopes = map(k, v)?,
                "scope_hierarchy" => cfg.scope_hierarchy = map(k, v)?,
                _ => {
                    return Err(err(
                        k,
                        "unknown key (expected issuer, issuers, resource, scopes, resource_metadata_url, \
                         resource_name, introspection_client_id, introspection_client_secret, \
                         introspection_client_secret_env, leeway_s, keys_ttl_s, refetch_interval_s, \
                         introspection_ttl_s, fetch_timeout_ms, tool_scopes, scope_hierarchy)",
                    ));
                }
            }
        }
        match (client_id, secret) {
            (Some(id), Some(secret)) => cfg = cfg.introspection_client(id, secret),
            (None, None) => {}
            (Some(_), None) => {
                return Err(err("introspection_client_secret", "is required with introspection_client_id"));
            }
            (None, Some(_)) => return Err(err("introspection_client_id", "is required with a secret")),
        }
        Ok(Some(cfg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_validates_the_table() {
        let doc = r#"
[oauth]
issuer = "https://as.example"
resource = "https://mcp.example/mcp"
scopes = "mcp:read"
introspection_client_id = "rs"
introspection_client_secret = "s"
leeway_s = 30
[oauth.tool_scopes]
deploy = ["mcp:deploy"]
[oauth.scope_hierarchy]
"mcp:admin" = "mcp:deploy mcp:read"
"#;
        let c = OAuthConfig::from_toml(doc).expect("valid").expect("present");
        assert_eq!(c.scopes, ["mcp:read"]);
        assert_eq!(c.issuers[0].introspection_client.as_ref().map(|c| c.id.as_str()), Some("rs"));
        assert_eq!(c.leeway, Duration::from_secs(30));
        assert_eq!(c.scopes_of_tool("deploy"), ["mcp:deploy"]);
        assert_eq!(c.scope_hierarchy["mcp:admin"], ["mcp:deploy", "mcp:read"]);
        assert!(OAuthConfig::from_toml("").expect("absent").is_none());
        let e = |d: &str| OAuthConfig::from_toml(d).expect_err(d).key;
        assert_eq!(e("[oauth]\nissuer = \"https://a\"\n"), "resource");
        assert_eq!(e("[oauth]\nresource = \"https://r\"\n"), "issuer");
        assert_eq!(e("[oauth]\nresource = \"https://r\"\nissuer = \"https://a\"\nbogus = 1\n"), "bogus");
        assert_eq!(e("[oauth]\nresource = \"https://r\"\nissuer = \"https://a\"\nleeway_s = -1\n"), "leeway_s");
        assert_eq!(
            e("[oauth]\nresource = \"https://r\"\nissuer = \"https://a\"\nintrospection_client_id = \"x\"\n"),
            "introspection_client_secret"
        );
    }
}
