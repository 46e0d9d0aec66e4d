//! Opaque tokens through RFC 7662 introspection, authenticated with the
//! resource server's client credentials, and a short cache of active answers
//! keyed by the token's SHA-256 (never the token), bounded in bytes.

use super::access_token::audience_matches;
use super::{Shared, fetch};
use crate::auth::{AuthError, Principal};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

type TokenHash = [u8; 32];

struct Entry {
    principal: Principal,
    expires_ms: u64,
    bytes: usize,
}

/// Active introspection answers, oldest first out when over the byte budget.
#[derive(Default)]
pub(super) struct IntrospectionCache {
    inner: Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    entries: HashMap<TokenHash, Entry>,
    order: VecDeque<TokenHash>,
    bytes: usize,
}

impl IntrospectionCache {
    fn get(&self, key: &TokenHash, now: u64) -> Option<Principal> {
        let st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        st.entries.get(key).filter(|e| e.expires_ms > now).map(|e| e.principal.clone())
    }

    fn put(&self, key: TokenHash, principal: Principal, expires_ms: u64, budget: usize) {
        let bytes = 64 + principal.id.len() + Value::Object(principal.claims.clone()).to_string().len();
        if bytes > budget / 16 {
            return; // one answer may not crowd out the rest
        }
        let mut st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = st.entries.insert(key, Entry { principal, expires_ms, bytes }) {
            st.bytes -= old.bytes;
        } else {
            st.order.push_back(key);
        }
        st.bytes += bytes;
        while st.bytes > budget {
            let Some(oldest) = st.order.pop_front() else { break };
            if let Some(e) = st.entries.remove(&oldest) {
                st.bytes -= e.bytes;
            }
        }
    }
}

/// The principal of an opaque token, from the cache or the first issuer that calls it active.
pub(super) async fn introspect(sh: &Shared, token: &str) -> Result<Principal, AuthError> {
    let key: TokenHash = Sha256::digest(token.as_bytes()).into();
    let now = sh.cfg.clock.now_ms();
    if let Some(p) = sh.introspection.get(&key, now) {
        return Ok(p);
    }
    let mut unavailable = None;
    let mut asked = false;
    for issuer in &sh.issuers {
        let Some(creds) = &issuer.issuer.introspection_client else { continue };
        asked = true;
        let endpoint = match issuer.metadata(sh).await {
            Ok(m) => m.introspection_endpoint,
            Err(e) => {
                unavailable = Some(e);
                continue;
            }
        };
        let Some(endpoint) = endpoint else {
            unavailable = Some(format!("{} has no introspection endpoint", issuer.issuer.url));
            continue;
        };
        let req = sh
            .http
            .post(&endpoint)
            .basic_auth(&creds.id, Some(creds.secret()))
            .header("accept", "application/json")
            .form(&[("token", token), ("token_type_hint", "access_token")]);
        let answer = match fetch::json(req).await {
            Ok(a) => a,
            Err(e) => {
                if let Some(suppressed) = crate::log_limit::admit(&format!("oauth introspection {endpoint}")) {
                    tracing::warn!(%endpoint, error = %e, suppressed, "token introspection failed");
                }
                unavailable = Some(format!("introspection: {e}"));
                continue;
            }
        };
        let Value::Object(claims) = answer else { continue };
        if claims.get("active") != Some(&Value::Bool(true)) {
            continue;
        }
        let mut principal = principal_of(sh, &issuer.issuer.url, claims)?;
        let exp_ms = principal.claims.get("exp").and_then(Value::as_u64).map_or(u64::MAX, |e| e.saturating_mul(1000));
        let ttl = u64::try_from(sh.cfg.introspection_ttl.as_millis()).unwrap_or(u64::MAX);
        let reuse_until = exp_ms.min(now.saturating_add(ttl));
        // The answer proves the principal until it would be asked again.
        principal.valid_until_ms = Some(reuse_until);
        sh.introspection.put(key, principal.clone(), reuse_until, sh.cfg.introspection_cache_bytes);
        return Ok(principal);
    }
    match unavailable {
        Some(why) => Err(AuthError::Unavailable(why)),
        None if asked => Err(AuthError::Invalid("token is not active".into())),
        None => Err(AuthError::Invalid("opaque tokens are not accepted (no introspection configured)".into())),
    }
}

/// An active answer's principal, after its `iss`, `aud` and `exp` are checked.
fn principal_of(sh: &Shared, issuer: &str, claims: Map<String, Value>) -> Result<Principal, AuthError> {
    if claims.get("iss").and_then(Value::as_str).is_some_and(|i| i != issuer) {
        return Err(AuthError::Invalid("token from an untrusted issuer".into()));
    }
    if !audience_matches(sh, claims.get("aud")) {
        return Err(AuthError::Invalid("token is for another audience".into()));
    }
    let now = sh.cfg.clock.now_ms() / 1000;
    if claims.get("exp").and_then(Value::as_u64).is_some_and(|e| now > e.saturating_add(sh.cfg.leeway.as_secs())) {
        return Err(AuthError::Invalid("token expired".into()));
    }
    let subject = match (claims.get("sub").and_then(Value::as_str), claims.get("client_id").and_then(Value::as_str)) {
        (Some(sub), _) if !sub.is_empty() => sub.to_owned(),
        (_, Some(client)) => format!("client:{client}"),
        _ => return Err(AuthError::Invalid("token has no subject".into())),
    };
    let mut p = Principal::new(format!("{issuer}#{subject}"));
    if let Some(s) = claims.get("scope").and_then(Value::as_str) {
        p.scopes.extend(s.split_whitespace().map(str::to_owned));
    }
    p.claims = claims;
    Ok(p)
}
