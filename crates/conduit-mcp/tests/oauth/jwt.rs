//! JWT (HS256, RS256, ES256) and API-key authentication over a real socket.
//!
//! The key pairs in `tests/fixtures/` are test-only; tokens are signed here with `jsonwebtoken`.

use crate::common;

use common::*;
use conduit_mcp::auth::{ApiKeys, AuthError, Authenticate, Jwt, JwtAlgorithm};
use conduit_mcp::prelude::*;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode, get_current_timestamp};
use serde_json::{Value, json};

const ISS: &str = "https://auth.example.com";
const AUD: &str = "https://mcp.example.com";
const SECRET: &[u8] = b"a-test-secret-of-reasonable-length!";

const RSA_PRIVATE: &[u8] = include_bytes!("../fixtures/rsa_private.pem");
const RSA_PUBLIC: &[u8] = include_bytes!("../fixtures/rsa_public.pem");
const EC_PRIVATE: &[u8] = include_bytes!("../fixtures/ec_private.pem");
const EC_PUBLIC: &[u8] = include_bytes!("../fixtures/ec_public.pem");

fn server() -> Server {
    Server::builder("auth", "1.0.0")
        .tool(Tool::new("whoami", "Who is calling").handle(|ctx, _args| async move {
            let p = ctx.principal().cloned();
            Ok(CallToolResult::structured(json!({
                "id": p.as_ref().map(|p| p.id().to_owned()),
                "scopes": p.as_ref().map(|p| p.scopes.iter().cloned().collect::<Vec<_>>()).unwrap_or_default(),
            })))
        }))
        .tool(
            Tool::new("admin", "Needs the admin scope")
                .scopes(["admin"])
                .handle(|_ctx, _args| async { Ok(CallToolResult::text("admin ok")) }),
        )
        .build()
        .expect("valid server")
}

fn hmac_key() -> EncodingKey {
    EncodingKey::from_secret(SECRET).expect("HMAC key")
}

fn claims(extra: Value) -> Value {
    let mut c = json!({ "sub": "user-1", "iss": ISS, "aud": AUD, "exp": get_current_timestamp() + 600 });
    if let (Value::Object(c), Value::Object(e)) = (&mut c, extra) {
        c.extend(e);
    }
    c
}

fn sign(alg: Algorithm, key: &EncodingKey, claims: &Value) -> String {
    encode(&Header::new(alg), claims, key).expect("token signed")
}

fn with_bearer(token: String) -> impl FnOnce(&mut reqwest::header::HeaderMap) {
    move |hd| set(hd, "authorization", &format!("Bearer {token}"))
}

async fn whoami(h: &Harness, token: String) -> Resp {
    h.send_with(&call("who", "whoami", json!({})), with_bearer(token)).await
}

#[track_caller]
fn assert_unauthorized(r: &Resp, why: &str) {
    assert_eq!(r.status.as_u16(), 401, "{why}: {}", r.text);
    let c = r.www_authenticate();
    assert!(c.starts_with("Bearer") && c.contains("error=\"invalid_token\""), "{why}: {c}");
    assert!(r.body.get("result").is_none(), "{why}");
}

/// Each algorithm: a good token authenticates with its claims; bad ones get 401.
async fn check_algorithm(validator: Jwt, alg: Algorithm, key: EncodingKey) {
    let h = start_with(server(), HttpConfig::default().auth(validator)).await;

    let r = whoami(&h, sign(alg, &key, &claims(json!({ "scope": "read write" })))).await;
    let result = r.assert_ok(&json!("who"));
    assert_eq!(result["structuredContent"], json!({ "id": "user-1", "scopes": ["read", "write"] }), "{alg:?}");

    assert_unauthorized(
        &whoami(&h, sign(alg, &key, &claims(json!({ "iss": "https://evil.example.com" })))).await,
        "wrong issuer",
    );
    assert_unauthorized(
        &whoami(&h, sign(alg, &key, &claims(json!({ "aud": "https://other.example.com" })))).await,
        "wrong audience",
    );
    let expired = claims(json!({ "exp": get_current_timestamp() - 3600 }));
    assert_unauthorized(&whoami(&h, sign(alg, &key, &expired)).await, "expired");
    let no_exp = json!({ "sub": "user-1", "iss": ISS, "aud": AUD });
    assert_unauthorized(&whoami(&h, sign(alg, &key, &no_exp)).await, "no exp claim");
    let good = sign(alg, &key, &claims(json!({})));
    let at = good.rfind('.').expect("three segments") + 5;
    let flipped = if &good[at..=at] == "A" { "B" } else { "A" };
    let tampered = format!("{}{flipped}{}", &good[..at], &good[at + 1..]);
    assert_unauthorized(&whoami(&h, tampered).await, "bad signature");
    assert_unauthorized(&whoami(&h, "not.a.jwt".to_owned()).await, "not a JWT");
    // A token signed with another algorithm (and key) is refused.
    let other = if alg == Algorithm::HS256 {
        sign(Algorithm::ES256, &EncodingKey::from_ec_pem(EC_PRIVATE).expect("EC key"), &claims(json!({})))
    } else {
        sign(Algorithm::HS256, &hmac_key(), &claims(json!({})))
    };
    assert_unauthorized(&whoami(&h, other).await, "other algorithm");

    let missing = h.send(&call("who", "whoami", json!({}))).await;
    assert_eq!(missing.status.as_u16(), 401);
    assert!(missing.www_authenticate().starts_with("Bearer"));
}

#[tokio::test]
async fn hs256() {
    let v = Jwt::hs256(SECRET, ISS, AUD).expect("HS256 validator");
    assert_eq!(v.algorithm(), JwtAlgorithm::Hs256);
    check_algorithm(v, Algorithm::HS256, hmac_key()).await;
}

#[tokio::test]
async fn rs256() {
    let v = Jwt::rs256_pem(RSA_PUBLIC, ISS, AUD).expect("RS256 validator");
    assert_eq!(v.algorithm(), JwtAlgorithm::Rs256);
    check_algorithm(v, Algorithm::RS256, EncodingKey::from_rsa_pem(RSA_PRIVATE).expect("RSA key")).await;
}

#[tokio::test]
async fn es256() {
    let v = Jwt::es256_pem(EC_PUBLIC, ISS, AUD).expect("ES256 validator");
    assert_eq!(v.algorithm(), JwtAlgorithm::Es256);
    check_algorithm(v, Algorithm::ES256, EncodingKey::from_ec_pem(EC_PRIVATE).expect("EC key")).await;
}

#[tokio::test]
async fn invalid_keys_are_refused_at_construction() {
    assert!(Jwt::rs256_pem(b"not a pem", ISS, AUD).is_err());
    assert!(Jwt::es256_pem(RSA_PUBLIC, ISS, AUD).is_err(), "an RSA key is not an EC key");
}

#[tokio::test]
async fn scope_claims_become_principal_scopes() {
    let key = hmac_key();
    let h = start_with(server(), HttpConfig::default().auth(Jwt::hs256(SECRET, ISS, AUD).expect("validator"))).await;

    // `scp` (an array) counts as well as `scope` (space-separated).
    let r = whoami(&h, sign(Algorithm::HS256, &key, &claims(json!({ "scope": "read", "scp": ["admin"] })))).await;
    assert_eq!(r.assert_ok(&json!("who"))["structuredContent"]["scopes"], json!(["admin", "read"]));

    let admin = call("adm", "admin", json!({}));
    let r = h.send_with(&admin, with_bearer(sign(Algorithm::HS256, &key, &claims(json!({ "scope": "admin" }))))).await;
    assert_eq!(first_text(&r.assert_ok(&json!("adm"))), "admin ok");

    let r =
        h.send_with(&admin, with_bearer(sign(Algorithm::HS256, &key, &claims(json!({ "scope": "read write" }))))).await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.text);
    let c = r.www_authenticate();
    assert!(c.contains("error=\"insufficient_scope\"") && c.contains("scope=\"admin\""), "{c}");
    assert_eq!(r.body["id"], "adm");
}

#[tokio::test]
async fn api_keys_over_http() {
    let keys = ApiKeys::new().key("k-123", Principal::new("service-a").scopes(["admin"])).key_with_digest_id("k-456");
    assert_eq!(keys.scheme(), "ApiKey");
    let h = start_with(server(), HttpConfig::default().auth(keys)).await;
    let body = call("who", "whoami", json!({}));

    let r = h.send_with(&body, |hd| set(hd, "x-api-key", "k-123")).await;
    assert_eq!(r.assert_ok(&json!("who"))["structuredContent"], json!({ "id": "service-a", "scopes": ["admin"] }));

    let r = h.send_with(&body, |hd| set(hd, "x-api-key", "k-456")).await;
    let id = r.assert_ok(&json!("who"))["structuredContent"]["id"].as_str().expect("an id").to_owned();
    assert!(id.starts_with("token:") && !id.contains("k-456"), "a digest id never reveals the key: {id}");

    let missing = h.send(&body).await;
    assert_eq!(missing.status.as_u16(), 401);
    assert!(missing.www_authenticate().starts_with("ApiKey"), "{}", missing.www_authenticate());
    assert!(!missing.www_authenticate().contains("error="));

    let wrong = h.send_with(&body, |hd| set(hd, "x-api-key", "k-999")).await;
    assert_eq!(wrong.status.as_u16(), 401);
    assert!(wrong.www_authenticate().contains("error=\"invalid_token\""), "{}", wrong.www_authenticate());

    // A bearer token is not an API key.
    let bearer = h.send_with(&body, |hd| set(hd, "authorization", "Bearer k-123")).await;
    assert_eq!(bearer.status.as_u16(), 401);
}

/// Two `Authorization` headers (or two of an API-key header) are a malformed request, whichever
/// comes first: 400 with `error="invalid_request"` (RFC 6750 §3.1), never the first one's principal
/// (finding 6 of issue 34).
#[tokio::test]
async fn two_credential_headers_are_a_bad_request() {
    let h = start_with(server(), HttpConfig::default().auth(Jwt::hs256(SECRET, ISS, AUD).expect("validator"))).await;
    let body = call("who", "whoami", json!({}));
    let good = format!("Bearer {}", sign(Algorithm::HS256, &hmac_key(), &claims(json!({}))));
    for pair in [[good.as_str(), "Bearer junk"], ["Bearer junk", good.as_str()], [good.as_str(), good.as_str()]] {
        let r = h
            .send_with(&body, |hd| {
                for v in pair {
                    hd.append("authorization", v.parse().expect("header value"));
                }
            })
            .await;
        assert_eq!(r.status.as_u16(), 400, "{pair:?}: {}", r.text);
        let c = r.www_authenticate();
        assert!(c.starts_with("Bearer") && c.contains("error=\"invalid_request\""), "{c}");
        assert!(r.body.get("result").is_none());
    }
    whoami(&h, good.trim_start_matches("Bearer ").to_owned()).await.assert_ok(&json!("who"));

    let keys = ApiKeys::new().key("k-123", Principal::new("service-a"));
    let h = start_with(server(), HttpConfig::default().auth(keys)).await;
    let r = h
        .send_with(&body, |hd| {
            hd.append("x-api-key", "k-123".parse().expect("value"));
            hd.append("x-api-key", "junk".parse().expect("value"));
        })
        .await;
    assert_eq!(r.status.as_u16(), 400, "{}", r.text);
    assert!(r.www_authenticate().starts_with("ApiKey") && r.www_authenticate().contains("invalid_request"));
}

/// An authenticator that counts its calls, reads a manual clock, and lets a connection
/// reuse its answer for a second.
struct Counting {
    calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    clock: conduit_mcp::clock::ManualClock,
}

#[async_trait::async_trait]
impl Authenticate for Counting {
    async fn authenticate(&self, headers: &reqwest::header::HeaderMap) -> Result<Principal, AuthError> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let token = headers.get("authorization").and_then(|v| v.to_str().ok()).ok_or(AuthError::Missing)?;
        match token.strip_prefix("Bearer ") {
            Some(who @ ("alice" | "bob")) => {
                Ok(Principal::new(who).valid_until_ms(conduit_mcp::clock::Clock::now_ms(&self.clock) + 60_000))
            }
            _ => Err(AuthError::Invalid("unknown token".into())),
        }
    }

    fn now_ms(&self) -> u64 {
        conduit_mcp::clock::Clock::now_ms(&self.clock)
    }

    fn reuse_on_connection(&self, _p: &Principal) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(1))
    }
}

/// A keep-alive connection that sends the same token again is answered with the principal it
/// proved, without asking the authenticator, for as long as the authenticator allows and never
/// past the principal's limit; another token on the connection is asked about, and credentials
/// given twice are still a bad request.
#[tokio::test]
async fn a_connection_reuses_the_principal_its_token_proved() {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let clock = conduit_mcp::clock::ManualClock::new(1_000_000);
    let auth = Counting { calls: calls.clone(), clock: clock.clone() };
    let h = serve_with(server(), HttpConfig::default().auth(auth)).await;
    // One connection: reqwest keeps it alive between these sequential requests.
    let one = h.clone_with(reqwest::Client::builder().pool_max_idle_per_host(1).build().expect("client"));
    let count = || calls.load(std::sync::atomic::Ordering::SeqCst);
    let who = |r: &Resp| r.body["result"]["structuredContent"]["id"].clone();
    for _ in 0..20 {
        let r = whoami(&one, "alice".into()).await;
        assert_eq!(who(&r), json!("alice"), "{}", r.text);
    }
    assert_eq!(count(), 1, "one check for twenty requests on one connection");
    // Another token on the same connection is checked, and becomes the one remembered.
    assert_eq!(who(&whoami(&one, "bob".into()).await), json!("bob"));
    assert_eq!(who(&whoami(&one, "bob".into()).await), json!("bob"));
    assert_eq!(count(), 2);
    assert_eq!(whoami(&one, "mallory".into()).await.status.as_u16(), 401);
    assert_eq!(count(), 3);
    assert_eq!(who(&whoami(&one, "alice".into()).await), json!("alice"));
    assert_eq!(count(), 4);
    // A second later by the authenticator's clock, it is asked again.
    clock.advance(1_000);
    assert_eq!(who(&whoami(&one, "alice".into()).await), json!("alice"));
    assert_eq!(count(), 5);
    // Two Authorization headers are refused before anything is reused.
    let r = one
        .send_with(&call("who", "whoami", json!({})), |hd| {
            hd.append("authorization", "Bearer alice".parse().expect("value"));
            hd.append("authorization", "Bearer mallory".parse().expect("value"));
        })
        .await;
    assert_eq!(r.status.as_u16(), 400, "{}", r.text);
}
