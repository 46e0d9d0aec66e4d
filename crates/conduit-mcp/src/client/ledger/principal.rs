//! Who the client was at a server, as the ledger names it: never a
//! credential, only what identifies its holder.
//!
//! | Credential | Principal |
//! |---|---|
//! | none | `anonymous` |
//! | a static bearer token | `token:sha256:` and the first 16 bytes of its SHA-256, in hex |
//! | OAuth tokens | `oauth:ISSUER#SUBJECT`: the access token's `sub` when it is a JWT, else `client:CLIENT_ID` |
//!
//! The OAuth subject is read from the token without checking its signature:
//! the name only matches the client's own entries to the tokens it holds,
//! and the server decides whose a task is.

use base64::Engine;
use sha2::{Digest, Sha256};

/// The principal of a client that sends no credential.
pub const ANONYMOUS: &str = "anonymous";

/// The principal of a static bearer token: a fingerprint, not the token.
pub fn of_token(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    let mut out = String::from("token:sha256:");
    for b in &digest[..16] {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The principal of OAuth tokens from `issuer`, issued to `client_id`.
pub fn of_oauth(issuer: &str, client_id: &str, access_token: &str) -> String {
    match jwt_subject(access_token) {
        Some(sub) => format!("oauth:{issuer}#{sub}"),
        None => format!("oauth:{issuer}#client:{client_id}"),
    }
}

/// The `sub` claim of a JWT's payload, unverified; `None` for any other token.
fn jwt_subject(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || payload.len() > 16 * 1024 {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("sub")?.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principal_never_holds_the_credential() {
        let p = of_token("s3cret-token");
        assert!(p.starts_with("token:sha256:") && !p.contains("s3cret"), "{p}");
        assert_eq!(p, of_token("s3cret-token"));
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"sub":"alice","scope":"x"}"#);
        let jwt = format!("eyJhbGciOiJIUzI1NiJ9.{payload}.c2ln");
        assert_eq!(of_oauth("https://as.test", "cid", &jwt), "oauth:https://as.test#alice");
        assert_eq!(of_oauth("https://as.test", "cid", "opaque"), "oauth:https://as.test#client:cid");
    }
}
