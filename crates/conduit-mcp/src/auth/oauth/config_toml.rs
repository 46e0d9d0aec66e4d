//! The `[oauth]` TOML table; an error names the table and the key.
//!
//! ```toml
//! [oauth]
//! issuer = "https://auth.example.com"          # or issuers = ["…", "…"]
//! resource = "https://mcp.example.com/mcp"     # the canonical URI clients connect to
//! scopes = ["mcp:read"]                        # needed by every request; advertised
//! introspection_client_id = "mcp-server"       # for opaque tokens (RFC 7662), with one issuer only
//! introspection_client_secret_env = "MCP_INTROSPECTION_SECRET"   # or introspection_client_secret
//! leeway_s = 60
//! keys_ttl_s = 600
//! refetch_interval_s = 30
//! introspection_ttl_s = 60
//! introspection_inactive_ttl_s = 10
//! introspection_inactive_cache_bytes = 262144
//! max_concurrent_introspections = 8
//! introspection_backoff_ms = 5000
//! fetch_timeout_ms = 5000
//!
//! [[oauth.introspection]]                      # one table per issuer that introspects
//! issuer = "https://auth.example.com"          # a trusted issuer; its credentials go to it alone
//! client_id = "mcp-server"
//! client_secret_env = "MCP_INTROSPECTION_SECRET"   # or client_secret
//!
//! [oauth.tool_scopes]
//! deploy = ["mcp:deploy"]
//!
//! [oauth.scope_hierarchy]
//! "mcp:admin" = ["mcp:deploy", "mcp:read"]
//! ```

use super::config::{ClientCredentials, OAuthConfig};
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

fn count(key: &str, v: &toml::Value) -> Result<usize, OAuthConfigError> {
    v.as_integer().filter(|n| *n > 0).map(|n| n as usize).ok_or_else(|| err(key, "must be a positive integer"))
}

/// A secret given in place (`…secret`) or named by an environment variable (`…secret_env`).
fn secret(key: &str, v: &toml::Value, from_env: bool) -> Result<String, OAuthConfigError> {
    let value = string(key, v)?;
    if !from_env {
        return Ok(value);
    }
    std::env::var(&value).map_err(|_| err(key, format!("environment variable {value} is not set")))
}

/// One `[[oauth.introspection]]` table: the issuer and its credentials.
fn introspection_table(key: &str, v: &toml::Value) -> Result<(String, ClientCredentials), OAuthConfigError> {
    let t = v.as_table().ok_or_else(|| err(key, "must be a table with issuer, client_id and a secret"))?;
    let (mut issuer, mut id, mut secret_value) = (None, None, None);
    for (k, v) in t {
        let at = format!("{key}.{k}");
        match k.as_str() {
            "issuer" => issuer = Some(string(&at, v)?),
            "client_id" => id = Some(string(&at, v)?),
            "client_secret" => secret_value = Some(secret(&at, v, false)?),
            "client_secret_env" => secret_value = Some(secret(&at, v, true)?),
            _ => return Err(err(&at, "unknown key (expected issuer, client_id, client_secret, client_secret_env)")),
        }
    }
    let need = |what: &str| err(&format!("{key}.{what}"), "is required");
    let issuer = issuer.ok_or_else(|| need("issuer"))?;
    let id = id.ok_or_else(|| need("client_id"))?;
    let secret_value = secret_value.ok_or_else(|| need("client_secret"))?;
    Ok((issuer, ClientCredentials::new(id, secret_value)))
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
        let (mut client_id, mut flat_secret) = (None, None);
        let mut per_issuer = Vec::new();
        for (k, v) in t {
            match k.as_str() {
                "resource" | "issuer" | "issuers" => {}
                "scopes" => cfg.scopes = strings(k, v)?,
                "resource_metadata_url" => cfg.resource_metadata_url = Some(string(k, v)?),
                "resource_name" => cfg.resource_name = Some(string(k, v)?),
                "introspection_client_id" => client_id = Some(string(k, v)?),
                "introspection_client_secret" => flat_secret = Some(secret(k, v, false)?),
                "introspection_client_secret_env" => flat_secret = Some(secret(k, v, true)?),
                "introspection" => {
                    let tables = v.as_array().ok_or_else(|| err(k, "must be [[oauth.introspection]] tables"))?;
                    for t in tables {
                        per_issuer.push(introspection_table(k, t)?);
                    }
                }
                "introspection_inactive_ttl_s" => cfg.introspection_inactive_ttl = seconds(k, v, false)?,
                "introspection_inactive_cache_bytes" => cfg.introspection_inactive_cache_bytes = count(k, v)?,
                "max_concurrent_introspections" => cfg.max_concurrent_introspections = count(k, v)?,
                "introspection_backoff_ms" => cfg.introspection_backoff = seconds(k, v, true)?,
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
                         introspection_client_secret_env, introspection, leeway_s, keys_ttl_s, \
                         refetch_interval_s, introspection_ttl_s, introspection_inactive_ttl_s, \
                         introspection_inactive_cache_bytes, max_concurrent_introspections, \
                         introspection_backoff_ms, fetch_timeout_ms, tool_scopes, scope_hierarchy)",
                    ));
                }
            }
        }
        match (client_id, flat_secret) {
            (Some(_), Some(_)) if cfg.issuers.len() > 1 => {
                return Err(err(
                    "introspection_client_id",
                    "with several issuers, give each one's credentials in an [[oauth.introspection]] table",
                ));
            }
            (Some(id), Some(secret)) => cfg = cfg.introspection_client(id, secret),
            (None, None) => {}
            (Some(_), None) => {
                return Err(err("introspection_client_secret", "is required with introspection_client_id"));
            }
            (None, Some(_)) => return Err(err("introspection_client_id", "is required with a secret")),
        }
        for (issuer, creds) in per_issuer {
            let Some(i) = cfg.issuers.iter_mut().find(|i| i.url == issuer) else {
                return Err(err("introspection.issuer", format!("{issuer:?} is not a trusted issuer")));
            };
            if i.introspection_client.is_some() {
                return Err(err("introspection.issuer", format!("{issuer:?} has credentials twice")));
            }
            i.introspection_client = Some(creds);
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

    #[test]
    fn introspection_credentials_belong_to_one_issuer() {
        let two = "[oauth]\nresource = \"https://r\"\nissuers = [\"https://a\", \"https://b\"]\n";
        let doc = format!(
            "{two}max_concurrent_introspections = 3\nintrospection_backoff_ms = 250\n\
             [[oauth.introspection]]\nissuer = \"https://b\"\nclient_id = \"rs-b\"\nclient_secret = \"sb\"\n"
        );
        let c = OAuthConfig::from_toml(&doc).expect("valid").expect("present");
        let ids: Vec<_> = c.issuers.iter().map(|i| i.introspection_client.as_ref().map(|c| c.id.as_str())).collect();
        assert_eq!(ids, [None, Some("rs-b")], "only b's, and only at b");
        assert_eq!((c.max_concurrent_introspections, c.introspection_backoff), (3, Duration::from_millis(250)));
        let e = |d: &str| OAuthConfig::from_toml(d).expect_err(d).key;
        let flat = format!("{two}introspection_client_id = \"rs\"\nintrospection_client_secret = \"s\"\n");
        assert_eq!(e(&flat), "introspection_client_id", "one secret for two issuers");
        let table = |body: &str| format!("{two}[[oauth.introspection]]\n{body}");
        assert_eq!(
            e(&table("issuer = \"https://c\"\nclient_id = \"x\"\nclient_secret = \"s\"\n")),
            "introspection.issuer"
        );
        assert_eq!(e(&table("issuer = \"https://a\"\nclient_secret = \"s\"\n")), "introspection.client_id");
        assert_eq!(e(&table("issuer = \"https://a\"\nclient_id = \"x\"\n")), "introspection.client_secret");
        assert_eq!(e(&table("issuer = \"https://a\"\nclient_id = \"x\"\nsecret = \"s\"\n")), "introspection.secret");
        assert_eq!(e(&format!("{two}max_concurrent_introspections = 0\n")), "max_concurrent_introspections");
    }
}
