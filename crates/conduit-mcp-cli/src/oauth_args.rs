//! `serve`'s OAuth flags (`--oauth-issuer`, `--resource`, `--oauth-scope`,
//! `--tool-scope`, `--oauth-scope-implies`, `--oauth-introspection-client`)
//! and how they combine with the `[oauth]` TOML table: a flag overrides the
//! table's value, repeatable flags add to it.

use conduit_mcp::auth::oauth::{Issuer, OAuthConfig};

/// The environment variable read for the introspection secret when
/// `--oauth-introspection-client` names only the client id.
pub(crate) const INTROSPECTION_SECRET_ENV: &str = "CONDUIT_MCP_INTROSPECTION_SECRET";

#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "OAuth 2.1 (HTTP)")]
pub(crate) struct OAuthArgs {
    /// Require access tokens from this authorization server (its issuer URL; repeatable).
    #[arg(long = "oauth-issuer", value_name = "ISSUER_URL")]
    pub(crate) issuers: Vec<String>,
    /// The URL clients connect to, exactly (the token audience and the metadata's `resource`),
    /// e.g. `https://mcp.example.com/mcp`.
    #[arg(long, value_name = "RESOURCE_URL")]
    pub(crate) resource: Option<String>,
    /// A scope every request needs (repeatable); advertised in the metadata and challenges.
    #[arg(long = "oauth-scope", value_name = "SCOPE")]
    pub(crate) scopes: Vec<String>,
    /// A scope the tool needs besides those (repeatable), e.g. `deploy=mcp:deploy`.
    #[arg(long = "tool-scope", value_name = "TOOL=SCOPE")]
    pub(crate) tool_scopes: Vec<String>,
    /// A broader scope that implies a narrower one (repeatable), e.g. `mcp:admin=mcp:deploy`.
    #[arg(long = "oauth-scope-implies", value_name = "BROAD=NARROW")]
    pub(crate) implies: Vec<String>,
    /// Introspect opaque tokens as this client of the authorization server: `ID:SECRET`, or `ID`
    /// with the secret in CONDUIT_MCP_INTROSPECTION_SECRET.
    #[arg(long = "oauth-introspection-client", value_name = "ID:SECRET")]
    pub(crate) introspection_client: Option<String>,
}

/// The `[oauth]` table of the `--config` file, if there is one.
pub(crate) fn read_table(path: Option<&std::path::PathBuf>) -> Result<Option<OAuthConfig>, String> {
    let Some(path) = path else { return Ok(None) };
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    OAuthConfig::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn pair<'a>(flag: &str, v: &'a str, sep: char, shape: &str) -> Result<(&'a str, &'a str), String> {
    v.split_once(sep)
        .map(|(a, b)| (a.trim(), b.trim()))
        .filter(|(a, b)| !a.is_empty() && !b.is_empty())
        .ok_or_else(|| format!("{flag} {v:?}: expected {shape}"))
}

impl OAuthArgs {
    /// Whether any OAuth flag is set.
    pub(crate) fn any(&self) -> bool {
        !self.issuers.is_empty()
            || self.resource.is_some()
            || !self.scopes.is_empty()
            || !self.tool_scopes.is_empty()
            || !self.implies.is_empty()
            || self.introspection_client.is_some()
    }

    /// The first OAuth flag set, to name in an error.
    pub(crate) fn first_flag(&self) -> &'static str {
        if !self.issuers.is_empty() {
            "--oauth-issuer"
        } else if self.resource.is_some() {
            "--resource"
        } else {
            "--oauth-scope"
        }
    }

    /// The OAuth configuration: the `[oauth]` table (if any) with the flags applied.
    pub(crate) fn config(&self, table: Option<OAuthConfig>) -> Result<Option<OAuthConfig>, String> {
        let mut cfg = match (table, self.issuers.first(), &self.resource) {
            (Some(mut t), _, resource) => {
                if let Some(r) = resource {
                    t.resource = r.clone();
                }
                if !self.issuers.is_empty() {
                    t.issuers = self.issuers.iter().map(Issuer::new).collect();
                }
                t
            }
            (None, Some(first), Some(resource)) => {
                self.issuers.iter().skip(1).fold(OAuthConfig::new(first, resource), |c, i| c.issuer(i))
            }
            (None, None, None) if !self.any() => return Ok(None),
            (None, Some(_), None) => return Err("--oauth-issuer needs --resource (the URL clients connect to)".into()),
            (None, None, _) => return Err(format!("{} needs --oauth-issuer", self.first_flag())),
        };
        if !self.scopes.is_empty() {
            cfg.scopes = self.scopes.clone();
        }
        for t in &self.tool_scopes {
            let (tool, scope) = pair("--tool-scope", t, '=', "TOOL=SCOPE")?;
            cfg = cfg.tool_scope(tool, scope);
        }
        for i in &self.implies {
            let (broad, narrow) = pair("--oauth-scope-implies", i, '=', "BROAD=NARROW")?;
            cfg = cfg.implies(broad, [narrow]);
        }
        if let Some(c) = &self.introspection_client {
            let (id, secret) = match c.split_once(':') {
                Some(_) => pair("--oauth-introspection-client", c, ':', "ID:SECRET")?,
                None => (c.as_str(), ""),
            };
            let secret = if secret.is_empty() {
                std::env::var(INTROSPECTION_SECRET_ENV).map_err(|_| {
                    format!("--oauth-introspection-client {id}: give ID:SECRET or set {INTROSPECTION_SECRET_ENV}")
                })?
            } else {
                secret.to_owned()
            };
            cfg = cfg.introspection_client(id, secret);
        }
        Ok(Some(cfg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(issuers: &[&str], resource: Option<&str>) -> OAuthArgs {
        OAuthArgs {
            issuers: issuers.iter().map(|s| s.to_string()).collect(),
            resource: resource.map(str::to_owned),
            ..OAuthArgs::default()
        }
    }

    #[test]
    fn flags_build_or_override_the_table() {
        assert!(args(&[], None).config(None).unwrap().is_none());
        let mut a = args(&["https://as.example"], Some("https://mcp.example/mcp"));
        a.scopes = vec!["mcp:read".into()];
        a.tool_scopes = vec!["deploy=mcp:deploy".into()];
        a.introspection_client = Some("rs:s3cret".into());
        let c = a.config(None).unwrap().unwrap();
        assert_eq!(c.scopes, ["mcp:read"]);
        assert_eq!(c.scopes_of_tool("deploy"), ["mcp:deploy"]);
        assert_eq!(c.issuers[0].introspection_client.as_ref().map(|c| c.id.as_str()), Some("rs"));
        let table = OAuthConfig::new("https://old.example", "https://old.example/mcp").scope("x");
        let c = args(&[], Some("https://new.example/mcp")).config(Some(table)).unwrap().unwrap();
        assert_eq!(
            (c.resource.as_str(), c.issuers[0].url.as_str()),
            ("https://new.example/mcp", "https://old.example")
        );
        assert_eq!(c.scopes, ["x"]);
        assert!(args(&["https://as.example"], None).config(None).unwrap_err().contains("--resource"));
        assert!(args(&[], Some("https://r")).config(None).unwrap_err().contains("--oauth-issuer"));
        let mut bad = args(&["https://as.example"], Some("https://r"));
        bad.tool_scopes = vec!["deploy".into()];
        assert!(bad.config(None).unwrap_err().contains("TOOL=SCOPE"));
    }
}
