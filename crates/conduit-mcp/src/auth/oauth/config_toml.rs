//! The `[oauth]` TOML table ([`ConfigFile`](crate::config_file::ConfigFile)
//! reads it) and its validation into an [`OAuthConfig`]; an error names the
//! table and the key.
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
use crate::config::ConfigError;
use crate::config::shape::{NonNegative, Positive, Words};
use std::collections::BTreeMap;
use std::time::Duration;

/// The `[oauth]` table as written.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OAuthTable {
    issuer: Option<String>,
    issuers: Option<Words>,
    resource: Option<String>,
    scopes: Option<Words>,
    resource_metadata_url: Option<String>,
    resource_name: Option<String>,
    introspection_client_id: Option<String>,
    introspection_client_secret: Option<String>,
    introspection_client_secret_env: Option<String>,
    introspection: Option<Vec<IntrospectionTable>>,
    leeway_s: Option<NonNegative>,
    keys_ttl_s: Option<NonNegative>,
    refetch_interval_s: Option<NonNegative>,
    introspection_ttl_s: Option<NonNegative>,
    introspection_inactive_ttl_s: Option<NonNegative>,
    introspection_inactive_cache_bytes: Option<Positive>,
    max_concurrent_introspections: Option<Positive>,
    introspection_backoff_ms: Option<NonNegative>,
    fetch_timeout_ms: Option<NonNegative>,
    tool_scopes: Option<BTreeMap<String, Words>>,
    scope_hierarchy: Option<BTreeMap<String, Words>>,
}

/// One `[[oauth.introspection]]` table: a trusted issuer and its credentials.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct IntrospectionTable {
    issuer: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    client_secret_env: Option<String>,
}

fn err(key: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::new("oauth", key, reason)
}

/// A secret named by an environment variable (`…_env`, which wins) or given in place.
fn secret(key: &str, given: &Option<String>, env: &Option<String>) -> Result<Option<String>, ConfigError> {
    match env {
        Some(var) => std::env::var(var)
            .map(Some)
            .map_err(|_| err(&format!("{key}_env"), format!("environment variable {var} is not set"))),
        None => Ok(given.clone()),
    }
}

fn seconds(slot: &mut Duration, value: Option<NonNegative>) {
    if let Some(n) = value {
        *slot = Duration::from_secs(n.0);
    }
}

fn millis(slot: &mut Duration, value: Option<NonNegative>) {
    if let Some(n) = value {
        *slot = Duration::from_millis(n.0);
    }
}

fn words(map: &Option<BTreeMap<String, Words>>) -> Option<BTreeMap<String, Vec<String>>> {
    map.as_ref().map(|m| m.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect())
}

impl IntrospectionTable {
    /// The issuer and its credentials, each required.
    fn credentials(&self) -> Result<(String, ClientCredentials), ConfigError> {
        let secret_value = secret("introspection.client_secret", &self.client_secret, &self.client_secret_env)?;
        let need = |what: &str| err(&format!("introspection.{what}"), "is required");
        let issuer = self.issuer.clone().ok_or_else(|| need("issuer"))?;
        let id = self.client_id.clone().ok_or_else(|| need("client_id"))?;
        let secret_value = secret_value.ok_or_else(|| need("client_secret"))?;
        Ok((issuer, ClientCredentials::new(id, secret_value)))
    }
}

impl OAuthTable {
    /// The table validated into an [`OAuthConfig`].
    pub(crate) fn config(&self) -> Result<OAuthConfig, ConfigError> {
        let resource = self.resource.clone().ok_or_else(|| err("resource", "is required"))?;
        let issuers = match (&self.issuer, &self.issuers) {
            (Some(i), None) => vec![i.clone()],
            (None, Some(list)) => list.0.clone(),
            (Some(_), Some(_)) => return Err(err("issuers", "give issuer or issuers, not both")),
            (None, None) => return Err(err("issuer", "is required")),
        };
        let (first, rest) = issuers.split_first().ok_or_else(|| err("issuers", "must name at least one issuer"))?;
        let mut cfg = rest.iter().fold(OAuthConfig::new(first.clone(), resource), |c, i| c.issuer(i.clone()));
        if let Some(s) = &self.scopes {
            cfg.scopes = s.0.clone();
        }
        cfg.resource_metadata_url = self.resource_metadata_url.clone().or(cfg.resource_metadata_url);
        cfg.resource_name = self.resource_name.clone().or(cfg.resource_name);
        seconds(&mut cfg.leeway, self.leeway_s);
        seconds(&mut cfg.keys_ttl, self.keys_ttl_s);
        seconds(&mut cfg.refetch_interval, self.refetch_interval_s);
        seconds(&mut cfg.introspection_ttl, self.introspection_ttl_s);
        seconds(&mut cfg.introspection_inactive_ttl, self.introspection_inactive_ttl_s);
        millis(&mut cfg.introspection_backoff, self.introspection_backoff_ms);
        millis(&mut cfg.fetch_timeout, self.fetch_timeout_ms);
        if let Some(n) = self.introspection_inactive_cache_bytes {
            cfg.introspection_inactive_cache_bytes = n.count();
        }
        if let Some(n) = self.max_concurrent_introspections {
            cfg.max_concurrent_introspections = n.count();
        }
        if let Some(m) = words(&self.tool_scopes) {
            cfg.tool_scopes = m;
        }
        if let Some(m) = words(&self.scope_hierarchy) {
            cfg.scope_hierarchy = m;
        }
        let flat_secret = secret(
            "introspection_client_secret",
            &self.introspection_client_secret,
            &self.introspection_client_secret_env,
        )?;
        let per_issuer = self.introspection.iter().flatten().map(IntrospectionTable::credentials);
        let per_issuer = per_issuer.collect::<Result<Vec<_>, _>>()?;
        match (self.introspection_client_id.clone(), flat_secret) {
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
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::read::one_table;

    fn from_toml(text: &str) -> Result<Option<OAuthConfig>, ConfigError> {
        let table = one_table::<Option<OAuthTable>>("oauth", text)?;
        table.map(|t| t.config()).transpose()
    }

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
        let c = from_toml(doc).expect("valid").expect("present");
        assert_eq!(c.scopes, ["mcp:read"]);
        assert_eq!(c.issuers[0].introspection_client.as_ref().map(|c| c.id.as_str()), Some("rs"));
        assert_eq!(c.leeway, Duration::from_secs(30));
        assert_eq!(c.scopes_of_tool("deploy"), ["mcp:deploy"]);
        assert_eq!(c.scope_hierarchy["mcp:admin"], ["mcp:deploy", "mcp:read"]);
        assert!(from_toml("").expect("absent").is_none());
        let e = |d: &str| from_toml(d).expect_err(d).key().to_owned();
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
        let c = from_toml(&doc).expect("valid").expect("present");
        let ids: Vec<_> = c.issuers.iter().map(|i| i.introspection_client.as_ref().map(|c| c.id.as_str())).collect();
        assert_eq!(ids, [None, Some("rs-b")], "only b's, and only at b");
        assert_eq!((c.max_concurrent_introspections, c.introspection_backoff), (3, Duration::from_millis(250)));
        let e = |d: &str| from_toml(d).expect_err(d).key().to_owned();
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
