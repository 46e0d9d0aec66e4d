//! The secret of a pre-registered client for `login`, and where it may go.
//!
//! It comes from `--client-secret`, `--client-secret-file FILE` or
//! `$CONDUIT_MCP_CLIENT_SECRET` (the last two keep it out of `ps` and the
//! shell's history). It is bound to the authorization server it was first
//! used with: the library stores the client's registration, secret included,
//! under that issuer before the secret is sent, and a later login with the
//! same id and secret goes only to the issuers holding it, unless the person
//! names another with `--issuer`.

use crate::credentials::FileCredentials;
use conduit_mcp::client::ClientError;
use std::io::Read;
use std::path::Path;

/// The environment variable `login` reads a client secret from.
pub(crate) const SECRET_ENV: &str = "CONDUIT_MCP_CLIENT_SECRET";
/// The largest secret file read.
const MAX_SECRET_FILE: u64 = 64 * 1024;

/// The secret of `--client-id`: the flag, else the file, else the environment.
pub(crate) fn resolve(flag: Option<&str>, file: Option<&Path>) -> Result<Option<String>, String> {
    if let Some(s) = flag {
        return Ok(Some(s.to_owned()));
    }
    read_file_or_env("--client-secret-file", file, SECRET_ENV)
}

/// A secret from `file` (named by the flag `flag` in errors), else from the environment variable `env`.
pub(crate) fn read_file_or_env(flag: &str, file: Option<&Path>, env: &str) -> Result<Option<String>, String> {
    let Some(path) = file else {
        return Ok(std::env::var(env).ok().filter(|s| !s.is_empty()));
    };
    let what = |e: &dyn std::fmt::Display| format!("{flag} {}: {e}", path.display());
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_SECRET_FILE + 1).read_to_string(&mut text))
        .map_err(|e| what(&e))?;
    if text.len() as u64 > MAX_SECRET_FILE {
        return Err(what(&"larger than 64 KiB: not a client secret"));
    }
    let secret = text.strip_suffix('\n').map_or(text.as_str(), |t| t.strip_suffix('\r').unwrap_or(t));
    if secret.is_empty() {
        return Err(what(&"the file is empty"));
    }
    Ok(Some(secret.to_owned()))
}

/// The issuers the client `id` with `secret` is bound to: those whose stored
/// registration holds that very secret.
pub(crate) fn bound_issuers(store: &FileCredentials, id: &str, secret: &str) -> Result<Vec<String>, ClientError> {
    Ok(store
        .registrations()?
        .into_iter()
        .filter(|r| r.client_id == id && r.client_secret.as_deref() == Some(secret))
        .map(|r| r.issuer)
        .collect())
}
