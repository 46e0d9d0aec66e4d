//! A JWT access token checked against its issuer's published keys: the
//! algorithm only as the key allows (never `none`, never HMAC), then `iss`,
//! `exp`/`nbf` with leeway, `aud` and `sub` against the injected clock.

use super::Shared;
use super::issuer::Found;
use super::token_cache::{TokenHash, principal_bytes};
use crate::auth::{AuthError, Principal};
use jsonwebtoken::{Algorithm, Validation, decode, decode_header};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// `typ` values of a token that may be an access token (RFC 9068, or none at all).
const ACCEPTED_TYP: [&str; 4] = ["at+jwt", "application/at+jwt", "jwt", "application/jwt"];

fn invalid(why: &str) -> AuthError {
    AuthError::Invalid(why.to_owned())
}

/// Whether `token` has the shape of a JWS (three base64url parts).
pub(super) fn looks_like_jwt(token: &str) -> bool {
    token.bytes().filter(|b| *b == b'.').count() == 2
}

/// Validates a JWT access token not in the cache (`key` is its hash); the principal
/// is `iss#sub` with its scopes, and is cached until its own limit.
pub(super) async fn validate(sh: &Shared, token: &str, key: TokenHash) -> Result<Principal, AuthError> {
    let now = sh.cfg.clock.now_ms();
    let (p, keys_fresh_until) = verify(sh, token).await?;
    // Believed no longer than the token lives, nor than the keys that verified it are fresh.
    let until = p.valid_until_ms.unwrap_or(0).min(keys_fresh_until);
    if until > now {
        sh.verified.put(key, p.clone(), until, principal_bytes(&p), sh.cfg.jwt_cache_bytes);
    }
    Ok(p)
}

/// Checks a JWT's signature and claims (see the module docs); also says until when
/// the key set that verified it is fresh.
async fn verify(sh: &Shared, token: &str) -> Result<(Principal, u64), AuthError> {
    let header = decode_header(token).map_err(|_| invalid("malformed token or unsupported algorithm"))?;
    if matches!(header.alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
        return Err(invalid("symmetric signatures are not accepted"));
    }
    if header.typ.as_deref().is_some_and(|t| !ACCEPTED_TYP.iter().any(|a| t.eq_ignore_ascii_case(a))) {
        return Err(invalid("not an access token (typ)"));
    }
    // The unverified `iss` only picks whose keys to verify with.
    let unverified: Map<String, Value> =
        jsonwebtoken::dangerous::insecure_decode_claims(token).map_err(|_| invalid("malformed token claims"))?;
    let iss = unverified.get("iss").and_then(Value::as_str).ok_or_else(|| invalid("token has no issuer"))?;
    let issuer =
        sh.issuers.iter().find(|i| i.issuer.url == iss).ok_or_else(|| invalid("token from an untrusted issuer"))?;
    let (keys, keys_fresh_until) = match issuer.find(sh, header.kid.as_deref(), header.alg).await {
        Found::Keys(k, fresh_until) => (k, fresh_until),
        Found::Unknown => return Err(invalid("token signed by an unknown key")),
        Found::Unavailable(why) => return Err(AuthError::Unavailable(format!("the authorization server: {why}"))),
    };
    let mut validation = Validation::new(header.alg);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    let claims = keys
        .iter()
        .find_map(|k| decode::<Map<String, Value>>(token, &k.key, &validation).ok())
        .map(|d| d.claims)
        .ok_or_else(|| invalid("bad signature"))?;
    check_claims(sh, iss, &claims)?;
    let sub = claims.get("sub").and_then(Value::as_str).filter(|s| !s.is_empty());
    let sub = sub.ok_or_else(|| invalid("token has no subject"))?;
    let mut scopes = BTreeSet::new();
    if let Some(s) = claims.get("scope").and_then(Value::as_str) {
        scopes.extend(s.split_whitespace().map(str::to_owned));
    }
    match claims.get("scp") {
        Some(Value::Array(a)) => scopes.extend(a.iter().filter_map(Value::as_str).map(str::to_owned)),
        Some(Value::String(s)) => scopes.extend(s.split_whitespace().map(str::to_owned)),
        _ => {}
    }
    sh.hierarchy.expand(&mut scopes);
    // check_claims made sure `exp` is there.
    let exp = claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
    let p = Principal::new(format!("{iss}#{sub}"))
        .scopes(scopes)
        .valid_until_ms(exp.saturating_add(sh.cfg.leeway.as_secs()).saturating_mul(1000))
        .claims(claims);
    Ok((p, keys_fresh_until))
}

/// `iss` (exact), `exp` (required) and `nbf` with leeway, `aud` naming our resource.
fn check_claims(sh: &Shared, iss: &str, claims: &Map<String, Value>) -> Result<(), AuthError> {
    if claims.get("iss").and_then(Value::as_str) != Some(iss) {
        return Err(invalid("token from an untrusted issuer"));
    }
    let now = sh.cfg.clock.now_ms() / 1000;
    let leeway = sh.cfg.leeway.as_secs();
    let exp = claims.get("exp").and_then(Value::as_u64).ok_or_else(|| invalid("token has no expiry"))?;
    if now > exp.saturating_add(leeway) {
        return Err(invalid("token expired"));
    }
    if let Some(nbf) = claims.get("nbf") {
        let nbf = nbf.as_u64().ok_or_else(|| invalid("malformed nbf"))?;
        if now.saturating_add(leeway) < nbf {
            return Err(invalid("token not valid yet"));
        }
    }
    if !audience_matches(sh, claims.get("aud")) {
        return Err(invalid("token is for another audience"));
    }
    Ok(())
}

/// Whether `aud` (a string or an array) names our resource, byte-equal or
/// equal as a URL (scheme and host case, default port).
pub(super) fn audience_matches(sh: &Shared, aud: Option<&Value>) -> bool {
    let is_ours = |a: &str| a == sh.cfg.resource || reqwest::Url::parse(a).is_ok_and(|u| u == sh.resource_url);
    match aud {
        Some(Value::String(a)) => is_ours(a),
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).any(is_ours),
        _ => false,
    }
}
