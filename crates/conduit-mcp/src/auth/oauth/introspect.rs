//! Opaque tokens through RFC 7662 introspection, each issuer asked with its own
//! client credentials. Answers are cached by the token's SHA-256 (never the
//! token): active ones for `introspection_ttl`, refused ones for
//! `introspection_inactive_ttl`, each cache bounded in bytes. A token being
//! introspected is not asked about again meanwhile (one flight per token), and
//! each issuer's endpoint is behind its gate (a cap on questions at once, a
//! backoff after a failure), so neither a flood of made-up tokens nor a hung
//! endpoint holds requests: past the gate they get 503 at once, and a token
//! whose answer is cached never waits on the authorization server.

use super::access_token::audience_matches;
use super::issuer::IssuerState;
use super::single_flight::Flights;
use super::token_cache::{ByHash, REFUSED_ENTRY_BYTES, TokenHash, principal_bytes};
use super::{Shared, fetch};
use crate::auth::{AuthError, Principal};
use serde_json::{Map, Value};

/// What introspection keeps: the two caches and the flights in the air.
#[derive(Default)]
pub(super) struct Introspection {
    /// Active answers: the principal, until it would be asked again.
    active: ByHash<Principal>,
    /// Refused tokens (inactive, or active but unusable here): why, briefly.
    refused: ByHash<&'static str>,
    flights: Flights,
}

/// The principal of an opaque token: from the caches, or from the first issuer
/// holding credentials that calls it active.
pub(super) async fn introspect(sh: &Shared, token: &str, key: TokenHash) -> Result<Principal, AuthError> {
    let now = sh.cfg.clock.now_ms();
    if let Some(p) = sh.introspection.active.get(&key, now) {
        return Ok(p);
    }
    if let Some(why) = sh.introspection.refused.get(&key, now) {
        return Err(AuthError::Invalid(why.into()));
    }
    let flight = sh.introspection.flights.join(key);
    flight.outcome(|| ask_issuers(sh, token, key)).await
}

/// Asks each issuer with credentials, in order, until one calls the token active; caches the verdict.
async fn ask_issuers(sh: &Shared, token: &str, key: TokenHash) -> Result<Principal, AuthError> {
    let mut unavailable = None;
    let mut asked = false;
    for issuer in sh.issuers.iter().filter(|i| i.issuer.introspection_client.is_some()) {
        asked = true;
        match ask(sh, issuer, token).await {
            Ok(None) => {}
            Ok(Some(claims)) => {
                let verdict = principal_of(sh, &issuer.issuer.url, claims);
                return remember(sh, key, verdict);
            }
            Err(why) => unavailable = Some(why),
        }
    }
    match unavailable {
        // Nothing is cached: the token may be fine once the authorization server answers.
        Some(why) => Err(AuthError::Unavailable(why)),
        None if asked => remember(sh, key, Err("token is not active")),
        None => Err(AuthError::Invalid("opaque tokens are not accepted (no introspection configured)".into())),
    }
}

/// One issuer's answer: `Some(claims)` when active, `None` when not, `Err` when it cannot be had now.
async fn ask(sh: &Shared, issuer: &IssuerState, token: &str) -> Result<Option<Map<String, Value>>, String> {
    let Some(creds) = &issuer.issuer.introspection_client else { return Ok(None) };
    let backoff = u64::try_from(sh.cfg.introspection_backoff.as_millis()).unwrap_or(u64::MAX);
    let pass = issuer.introspection.enter(sh.cfg.clock.now_ms(), backoff).map_err(str::to_owned)?;
    let endpoint = issuer.metadata(sh).await?;
    let endpoint = endpoint
        .introspection_endpoint
        .ok_or_else(|| format!("{} has no introspection endpoint", issuer.issuer.url))?;
    let req = sh
        .http
        .post(&endpoint)
        .basic_auth(&creds.id, Some(creds.secret()))
        .header("accept", "application/json")
        .form(&[("token", token), ("token_type_hint", "access_token")]);
    let answer = match fetch::json(req).await {
        Ok(a) => {
            pass.succeeded();
            a
        }
        Err(e) => {
            pass.failed(sh.cfg.clock.now_ms());
            if let Some(suppressed) = crate::log_limit::admit(&format!("oauth introspection {endpoint}")) {
                tracing::warn!(%endpoint, error = %e, suppressed, "token introspection failed");
            }
            return Err(format!("introspection: {e}"));
        }
    };
    match answer {
        Value::Object(claims) if claims.get("active") == Some(&Value::Bool(true)) => Ok(Some(claims)),
        _ => Ok(None),
    }
}

/// Caches a verdict (an active principal until it would be asked again, a refusal
/// briefly) and returns it.
fn remember(sh: &Shared, key: TokenHash, verdict: Result<Principal, &'static str>) -> Result<Principal, AuthError> {
    let now = sh.cfg.clock.now_ms();
    let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    match verdict {
        Ok(mut principal) => {
            let exp_ms =
                principal.claims.get("exp").and_then(Value::as_u64).map_or(u64::MAX, |e| e.saturating_mul(1000));
            let reuse_until = exp_ms.min(now.saturating_add(ms(sh.cfg.introspection_ttl)));
            // The answer proves the principal until it would be asked again.
            principal.valid_until_ms = Some(reuse_until);
            let bytes = principal_bytes(&principal);
            let budget = sh.cfg.introspection_cache_bytes;
            sh.introspection.active.put(key, principal.clone(), reuse_until, bytes, budget);
            Ok(principal)
        }
        Err(why) => {
            let until = now.saturating_add(ms(sh.cfg.introspection_inactive_ttl));
            let budget = sh.cfg.introspection_inactive_cache_bytes;
            sh.introspection.refused.put(key, why, until, REFUSED_ENTRY_BYTES, budget);
            Err(AuthError::Invalid(why.into()))
        }
    }
}

/// `token_type` values of a refresh token (RFC 7662 §2.2 names the type; some servers say `refresh`).
fn is_refresh_token(claims: &Map<String, Value>) -> bool {
    let kind = claims.get("token_type").and_then(Value::as_str).unwrap_or_default();
    ["refresh_token", "refresh"].iter().any(|r| kind.eq_ignore_ascii_case(r))
}

/// An active answer's principal, after its `token_type`, `iss`, `aud` and `exp` are checked.
fn principal_of(sh: &Shared, issuer: &str, claims: Map<String, Value>) -> Result<Principal, &'static str> {
    if is_refresh_token(&claims) {
        return Err("a refresh token is not an access token");
    }
    if claims.get("iss").and_then(Value::as_str).is_some_and(|i| i != issuer) {
        return Err("token from an untrusted issuer");
    }
    if !audience_matches(sh, claims.get("aud")) {
        return Err("token is for another audience");
    }
    let now = sh.cfg.clock.now_ms() / 1000;
    if claims.get("exp").and_then(Value::as_u64).is_some_and(|e| now > e.saturating_add(sh.cfg.leeway.as_secs())) {
        return Err("token expired");
    }
    let subject = match (claims.get("sub").and_then(Value::as_str), claims.get("client_id").and_then(Value::as_str)) {
        (Some(sub), _) if !sub.is_empty() => sub.to_owned(),
        (_, Some(client)) => format!("client:{client}"),
        _ => return Err("token has no subject"),
    };
    let mut scopes = std::collections::BTreeSet::new();
    if let Some(s) = claims.get("scope").and_then(Value::as_str) {
        scopes.extend(s.split_whitespace().map(str::to_owned));
    }
    sh.hierarchy.expand(&mut scopes);
    Ok(Principal::new(format!("{issuer}#{subject}")).scopes(scopes).claims(claims))
}
