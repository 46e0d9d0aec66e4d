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
//! dpop = true                                  # take DPoP-bound tokens (RFC 9449)
//! require_dpop = false                         # true: nothing else
//! dpop_algs = ["ES256", "RS256"]               # default ES256 ES384 RS256 PS256 EdDSA
//! dpop_iat_window_s = 60
//! dpop_replay_bytes = 16777216
//! dpop_nonce_secret_env = "MCP_DPOP_NONCE_SECRET"   # nonces, the same on every node given it
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

use super::DpopConfig;
use super::config::{ClientCredentials, OAuthConfig};
use crate::config::ConfigError;
use crate::config::shape::{NonNegative, Positive, Words};
use sha2::{Digest, Sha256};
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
    dpop: Option<bool>,
    require_dpop: Option<bool>,
    dpop_algs: Option<Words>,
    dpop_iat_window_s: Option<NonNegative>,
    dpop_replay_bytes: Option<Positive>,
    dpop_nonce_secret_env: Option<String>,
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
    /// `cfg` with the DPoP keys applied: any `dpop_*` key, or `require_dpop`, takes DPoP-bound tokens.
    fn dpop_config(&self, mut cfg: OAuthConfig) -> Result<OAuthConfig, ConfigError> {
        let tuned = self.dpop_algs.is_some()
            || self.dpop_iat_window_s.is_some()
            || self.dpop_replay_bytes.is_some()
            || self.dpop_nonce_secret_env.is_some();
        if self.dpop == Some(false) && (tuned || self.require_dpop == Some(true)) {
            return Err(err("dpop", "is false, but other dpop keys are set"));
        }
        if !(self.dpop == Some(true) || tuned || self.require_dpop == Some(true)) {
            return Ok(cfg);
        }
        let mut d = DpopConfig::default();
        if let Some(a) = &self.dpop_algs {
            d = d.algs(a.0.iter().cloned());
        }
        seconds(&mut d.iat_window, self.dpop_iat_window_s);
        if let Some(n) = self.dpop_replay_bytes {
            d = d.replay_bytes(n.count());
        }
        if let Some(var) = &self.dpop_nonce_secret_env {
            let value = std::env::var(var)
                .ok()
                .filter(|v| v.len() >= 16)
                .ok_or_else(|| err("dpop_nonce_secret_env", format!("{var} must hold a secret of 16 bytes or more")))?;
            d = d.nonce_secret(Sha256::digest(value.as_bytes()).into());
        }
        cfg = cfg.dpop(d);
        if self.require_dpop == Some(true) {
            cfg = cfg.require_dpop(true);
        }
        Ok(cfg)
    }

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
        cfg = self.dpop_config(cfg)?;
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
    fn the_dpop_keys() {
        let base = "[oauth]\nresource = \"https://r\"\nissuer = \"https://a\"\n";
        let c = |extra: &str| from_toml(&format!("{base}{extra}"));
        assert!(c("").unwrap().unwrap().dpop.is_none());
        let on = c("dpop = true\ndpop_algs = [\"ES256\"]\ndpop_iat_window_s = 30\n").unwrap().unwrap();
        let d = on.dpop.expect("dpop");
        assert_eq!((d.algs, d.iat_window, on.require_dpop), (vec!["ES256".to_owned()], Duration::from_secs(30), false));
        let required = c("require_dpop = true\n").unwrap().unwrap();
        assert!(required.require_dpop && required.dpop.is_some());
        assert_eq!(c("dpop = false\nrequire_dpop = true\n").unwrap_err().key(), "dpop");
        let missing = c("dpop_nonce_secret_env = \"CONDUIT_TEST_NO_SUCH_VARIABLE_SET\"\n").unwrap_err();
        assert_eq!(missing.key(), "dpop_nonce_secret_env");
        assert_eq!(c("dpop_replay_bytes = 0\n").unwrap_err().key(), "dpop_replay_bytes");
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
