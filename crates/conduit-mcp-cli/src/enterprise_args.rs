//! `login`'s enterprise flags: DPoP-bound tokens (`--dpop`), a client that
//! proves itself with its own key (`--client-assertion-key FILE`,
//! `private_key_jwt`), a workload's identity token as the grant
//! (`--workload-token-file FILE` or `--workload-token-env VAR`), and
//! enterprise-managed authorization (`--id-jag-token-endpoint URL` with the
//! person's ID token from `--id-token-file FILE` or `--id-token-env VAR`).
//! Keys, tokens and secrets come from files or the environment only, never
//! from the command line (which other users may see in `ps`); the stored
//! login keeps where they are read (absolute paths, variable names), so a
//! later command renews it without being told again, and never their values.

use conduit_mcp::client::oauth::{ClientAssertionKey, EnterpriseIdp, JwtSource, OAuth};
use std::path::PathBuf;

/// The environment variable read for the identity provider's client secret.
pub(crate) const ID_JAG_SECRET_ENV: &str = "CONDUIT_MCP_ID_JAG_CLIENT_SECRET";

#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Enterprise OAuth")]
pub(crate) struct EnterpriseArgs {
    /// Bind the tokens to a key of their own (DPoP, RFC 9449) where the authorization server offers it:
    /// the key is stored with the tokens, and every request carries a fresh proof.
    #[arg(long)]
    pub(crate) dpop: bool,
    /// Authenticate `--client-id` with a JWT signed by the private key in FILE (PEM: EC P-256/P-384 or
    /// RSA; `private_key_jwt`) instead of a secret.
    #[arg(long, value_name = "FILE", requires = "client_id")]
    pub(crate) client_assertion_key: Option<PathBuf>,
    /// A workload's login: the JWT bearer grant with the identity token in FILE (read again at each
    /// renewal, so a rotated token is used), as `--client-id`.
    #[arg(long, value_name = "FILE", requires = "client_id", conflicts_with = "workload_token_env")]
    pub(crate) workload_token_file: Option<PathBuf>,
    /// As `--workload-token-file`, the token in the environment variable VAR.
    #[arg(long, value_name = "VAR", requires = "client_id")]
    pub(crate) workload_token_env: Option<String>,
    /// Enterprise-managed authorization: exchange the person's ID token at this token endpoint of the
    /// enterprise identity provider for an ID-JAG, then trade that at the server's authorization server
    /// (as `--client-id`, with its secret).
    #[arg(long, value_name = "URL", requires_all = ["id_jag_client_id", "client_id"])]
    pub(crate) id_jag_token_endpoint: Option<String>,
    /// This client's id at the identity provider (its secret, if any, from --id-jag-client-secret-file or
    /// $CONDUIT_MCP_ID_JAG_CLIENT_SECRET).
    #[arg(long, value_name = "ID", requires = "id_jag_token_endpoint")]
    pub(crate) id_jag_client_id: Option<String>,
    /// Read the identity provider's client secret from FILE.
    #[arg(long, value_name = "FILE", requires = "id_jag_token_endpoint")]
    pub(crate) id_jag_client_secret_file: Option<PathBuf>,
    /// The person's ID token (from the identity provider) is in FILE.
    #[arg(long, value_name = "FILE", requires = "id_jag_token_endpoint", conflicts_with = "id_token_env")]
    pub(crate) id_token_file: Option<PathBuf>,
    /// The person's ID token is in the environment variable VAR.
    #[arg(long, value_name = "VAR", requires = "id_jag_token_endpoint")]
    pub(crate) id_token_env: Option<String>,
}

impl EnterpriseArgs {
    /// The grant these flags choose, if one: a workload's or enterprise-managed
    /// login as `client_id` (with `secret`, the one at the authorization server).
    pub(crate) fn grant(&self, client_id: Option<&str>, secret: Option<&str>) -> Result<Option<OAuth>, String> {
        let workload = match (&self.workload_token_file, &self.workload_token_env) {
            (Some(f), _) => Some(JwtSource::file(absolute(f)?)),
            (None, Some(v)) => Some(JwtSource::env(v)),
            (None, None) => None,
        };
        if let (Some(source), Some(id)) = (workload, client_id) {
            if self.id_jag_token_endpoint.is_some() {
                return Err("--workload-token-file/--workload-token-env and --id-jag-token-endpoint are two grants: \
                            give one"
                    .into());
            }
            return Ok(Some(with_secret(OAuth::workload_identity(id, source), secret)));
        }
        let (Some(endpoint), Some(idp_client)) = (&self.id_jag_token_endpoint, &self.id_jag_client_id) else {
            return Ok(None);
        };
        let id_token = match (&self.id_token_file, &self.id_token_env) {
            (Some(f), _) => JwtSource::file(absolute(f)?),
            (None, Some(v)) => JwtSource::env(v),
            (None, None) => {
                return Err("--id-jag-token-endpoint needs the ID token: --id-token-file or --id-token-env".into());
            }
        };
        let mut idp = EnterpriseIdp::new(endpoint, idp_client, id_token);
        // Read now, so a bad file is a usage error before anything is sent; what is kept
        // with the tokens for their renewal is where it was read, never the secret.
        let idp_secret = crate::client_secret::read_file_or_env(
            "--id-jag-client-secret-file",
            self.id_jag_client_secret_file.as_deref(),
            ID_JAG_SECRET_ENV,
        )?;
        match (&self.id_jag_client_secret_file, idp_secret) {
            (Some(f), Some(_)) => idp = idp.client_secret_from(JwtSource::file(absolute(f)?)),
            (None, Some(_)) => idp = idp.client_secret_from(JwtSource::env(ID_JAG_SECRET_ENV)),
            (_, None) => {}
        }
        let mut o = OAuth::enterprise(idp);
        if let Some(id) = client_id {
            o = o.client_id(id);
        }
        Ok(Some(with_secret(o, secret)))
    }

    /// The key of `--client-assertion-key`, read.
    pub(crate) fn key(&self) -> Result<Option<ClientAssertionKey>, String> {
        let Some(path) = &self.client_assertion_key else { return Ok(None) };
        ClientAssertionKey::from_pem_file(path)
            .map(Some)
            .map_err(|e| format!("--client-assertion-key {}: {e}", path.display()))
    }

    /// `oauth` with the client assertion `key` and the DPoP flag applied.
    pub(crate) fn apply(&self, oauth: OAuth, key: Option<ClientAssertionKey>) -> OAuth {
        let oauth = match key {
            Some(k) => oauth.client_assertion_key(k),
            None => oauth,
        };
        oauth.dpop(self.dpop)
    }
}

/// `path` made absolute, so a later run started elsewhere reads the same file.
fn absolute(path: &std::path::Path) -> Result<PathBuf, String> {
    std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn with_secret(o: OAuth, secret: Option<&str>) -> OAuth {
    match secret {
        Some(s) => o.client_secret(s),
        None => o,
    }
}
