//! `serve`'s OAuth flags (`--oauth-issuer`, `--resource`, `--oauth-scope`,
//! `--tool-scope`, `--oauth-scope-implies`, `--oauth-introspection-client`,
//! `--oauth-dpop`, `--oauth-require-dpop`)
//! and how they combine with the `[oauth]` TOML table: a flag overrides the
//! table's value, repeatable flags add to it.

use conduit_mcp::auth::oauth::{DpopConfig, Issuer, OAuthConfig};

/// The environment variable read for the introspection secret when
/// `--oauth-introspection-client` names only the client id (once at most).
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
    /// Introspect opaque tokens at ISSUER as this client of it (repeatable, one per issuer; its
    /// credentials go to it alone): `ISSUER=ID:SECRET`, or `ISSUER=ID` with the secret in
    /// CONDUIT_MCP_INTROSPECTION_SECRET. Without `ISSUER=` only when one issuer is trusted.
    #[arg(long = "oauth-introspection-client", value_name = "ISSUER=ID:SECRET")]
    pub(crate) introspection_clients: Vec<String>,
    /// Take DPoP-bound tokens (RFC 9449): `Authorization: DPoP` with a proof for each request; Bearer
    /// tokens keep working, a bound token sent as Bearer is refused.
    #[arg(long = "oauth-dpop")]
    pub(crate) dpop: bool,
    /// Take DPoP-bound tokens only: a Bearer token is refused.
    #[arg(long = "oauth-require-dpop")]
    pub(crate) require_dpop: bool,
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
            || !self.introspection_clients.is_empty()
            || self.dpop
            || self.require_dpop
    }

    /// The first OAuth flag set, to name in an error.
    pub(crate) fn first_flag(&self) -> &'static str {
        if !self.issuers.is_empty() {
            "--oauth-issuer"
        } else if self.resource.is_some() {
            "--resource"
        } else if self.dpop {
            "--oauth-dpop"
        } else if self.require_dpop {
            "--oauth-require-dpop"
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
                    // The table's credentials stay with their issuer, if it is still trusted.
                    let known = std::mem::take(&mut t.issuers);
                    t.issuers = self
                        .issuers
                        .iter()
                        .map(|url| known.iter().find(|i| i.url == *url).cloned().unwrap_or_else(|| Issuer::new(url)))
                        .collect();
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
        if self.dpop && cfg.dpop.is_none() {
            cfg = cfg.dpop(DpopConfig::default());
        }
        if self.require_dpop {
            cfg = cfg.require_dpop(true);
        }
        let mut from_env = false;
        let mut given = Vec::new();
        for value in &self.introspection_clients {
            let (issuer, id, secret) = introspection_client(value, &cfg)?;
            if given.contains(&issuer) {
                return Err(format!("--oauth-introspection-client: credentials for {issuer} given twice"));
            }
            let secret = match secret {
                Some(s) => s.to_owned(),
                None if from_env => {
                    return Err(format!(
                        "--oauth-introspection-client {issuer}={id}: {INTROSPECTION_SECRET_ENV} holds one secret, \
                         already used; give ISSUER=ID:SECRET"
                    ));
                }
                None => {
                    from_env = true;
                    std::env::var(INTROSPECTION_SECRET_ENV).map_err(|_| {
                        format!("--oauth-introspection-client {issuer}={id}: give ID:SECRET or set {INTROSPECTION_SECRET_ENV}")
                    })?
                }
            };
            cfg = cfg.introspection_client_for(&issuer, id, secret);
            given.push(issuer);
        }
        Ok(Some(cfg))
    }
}

/// One `--oauth-introspection-client` value: the issuer its credentials belong to (named, or
/// the only one trusted), the client id, and the secret when given. Errors never repeat the value
/// (it holds a secret).
fn introspection_client<'a>(value: &'a str, cfg: &OAuthConfig) -> Result<(String, &'a str, Option<&'a str>), String> {
    const FLAG: &str = "--oauth-introspection-client";
    // `ISSUER=` is matched against the trusted issuers: a URL's path may hold `=` or `:`.
    let named =
        cfg.issuers.iter().find_map(|i| Some((i.url.clone(), value.strip_prefix(i.url.as_str())?.strip_prefix('=')?)));
    let (issuer, rest) = match named {
        Some(found) => found,
        None if value.starts_with("https://") || value.starts_with("http://") => {
            let trusted: Vec<&str> = cfg.issuers.iter().map(|i| i.url.as_str()).collect();
            return Err(format!("{FLAG}: ISSUER= must be a trusted issuer ({})", trusted.join(", ")));
        }
        None => match cfg.issuers.as_slice() {
            [only] => (only.url.clone(), value),
            several => {
                return Err(format!(
                    "{FLAG}: {} issuers are trusted; credentials belong to one of them, name it: {FLAG} ISSUER=ID:SECRET",
                    several.len()
                ));
            }
        },
    };
    let (id, secret) = match rest.split_once(':') {
        Some((id, secret)) => (id.trim(), Some(secret.trim())),
        None => (rest.trim(), None),
    };
    if id.is_empty() || secret == Some("") {
        return Err(format!(
            "{FLAG} for {issuer}: expected ISSUER=ID:SECRET, or ISSUER=ID with {INTROSPECTION_SECRET_ENV}"
        ));
    }
    Ok((issuer, id, secret))
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
        a.introspection_clients = vec!["rs:s3cret".into()];
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
        let mut dpop = args(&["https://as.example"], Some("https://r"));
        dpop.dpop = true;
        let c = dpop.config(None).unwrap().unwrap();
        assert!(c.dpop.is_some() && !c.require_dpop);
        dpop.require_dpop = true;
        assert!(dpop.config(None).unwrap().unwrap().require_dpop);
    }

    #[test]
    fn introspection_credentials_name_their_issuer() {
        let creds = |c: &OAuthConfig| -> Vec<Option<String>> {
            c.issuers.iter().map(|i| i.introspection_client.as_ref().map(|c| c.id.clone())).collect()
        };
        let mut two = args(&["https://a.example", "https://b.example/t=1"], Some("https://r"));
        two.introspection_clients = vec!["https://b.example/t=1=rs-b:sb".into()];
        assert_eq!(creds(&two.config(None).unwrap().unwrap()), [None, Some("rs-b".into())]);
        two.introspection_clients.push("https://a.example=rs-a:sa".into());
        assert_eq!(creds(&two.config(None).unwrap().unwrap()), [Some("rs-a".into()), Some("rs-b".into())]);
        for (values, expected) in [
            (vec!["rs:secret"], "name it"),
            (vec!["https://c.example=rs:secret"], "trusted issuer"),
            (vec!["https://a.example=rs:s", "https://a.example=rs:t"], "twice"),
            (vec!["https://a.example=:secret"], "expected ISSUER=ID:SECRET"),
        ] {
            two.introspection_clients = values.iter().map(|v| v.to_string()).collect();
            let e = two.config(None).unwrap_err();
            assert!(e.contains(expected) && !e.contains(":secret"), "{values:?}: {e}");
        }
        // The table's credentials stay with their issuer when the flags list the issuers again.
        let table = OAuthConfig::new("https://a.example", "https://r").introspection_client("rs-a", "sa");
        let again = args(&["https://b.example", "https://a.example"], None);
        assert_eq!(creds(&again.config(Some(table)).unwrap().unwrap()), [None, Some("rs-a".into())]);
    }
}
