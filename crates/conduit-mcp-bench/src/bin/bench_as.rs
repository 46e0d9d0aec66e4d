//! A minimal authorization server for the OAuth benchmark: its RFC 8414 metadata and
//! a JWKS with one ES256 key made at start, and one access token signed with it.
//!
//! ```text
//! bench-as --resource URL [--listen 127.0.0.1:PORT] [--scope S] [--ttl-s N]
//! ```
//!
//! Prints `listening on http://ADDR` to stderr, then `token TOKEN` on stdout: a JWT
//! (`typ` `at+jwt`) for `--resource` with `sub` `bench`, the scope, and `exp` `--ttl-s`
//! from now. Then `dpop-key KEY` and `dpop-token TOKEN`: a second P-256 key made at
//! start (its PKCS#8 document, base64url) and the same token bound to it by `cnf.jkt`
//! (RFC 9449 §6), for the load generator to sign a DPoP proof per request with
//! (`conduit-mcp-bench caps --only dpop`). It is not an authorization server anyone logs in to: it exists so the
//! resource server's whole JWT path (metadata, key fetch, signature, claims) runs
//! against a real HTTP peer while `scripts/bench_auth.sh` measures W1 with and
//! without it.

use axum::Json;
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

const USAGE: &str = "usage: bench-as --resource URL [--listen 127.0.0.1:PORT] [--scope S] [--ttl-s N]";
const KID: &str = "bench-1";

struct Options {
    listen: SocketAddr,
    resource: String,
    scope: String,
    ttl_s: u64,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        resource: String::new(),
        scope: "mcp:read".into(),
        ttl_s: 3600,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value\n{USAGE}"));
        match a.as_str() {
            "--listen" => o.listen = value()?.parse().map_err(|e| format!("--listen: {e}"))?,
            "--resource" => o.resource = value()?,
            "--scope" => o.scope = value()?,
            "--ttl-s" => o.ttl_s = value()?.parse().map_err(|e| format!("--ttl-s: {e}"))?,
            _ => return Err(format!("unknown argument {a}\n{USAGE}")),
        }
    }
    if o.resource.is_empty() {
        return Err(format!("--resource is required\n{USAGE}"));
    }
    if !o.listen.ip().is_loopback() {
        return Err(format!("refusing to bind {}: the benchmark servers bind loopback addresses only", o.listen));
    }
    Ok(o)
}

/// The RFC 7638 SHA-256 thumbprint of a P-256 public JWK (base64url): the hash of
/// its required members in lexicographic order, no whitespace.
fn thumbprint(jwk: &Value) -> String {
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":{},"y":{}}}"#, jwk["x"], jwk["y"]);
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, canonical.as_bytes()))
}

/// A new P-256 key: its PKCS#8 document (to sign) and its public JWK.
fn new_key() -> Result<(Vec<u8>, Value), String> {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).map_err(|e| e.to_string())?;
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).map_err(|e| e.to_string())?;
    // An uncompressed point: 0x04, then x and y, 32 bytes each.
    let point = pair.public_key().as_ref();
    let (x, y) = (&point[1..33], &point[33..65]);
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": KID,
        "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y),
    });
    Ok((pkcs8.as_ref().to_vec(), jwk))
}

async fn run(o: Options) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(o.listen).await.map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let issuer = format!("http://{addr}");
    let (pkcs8, jwk) = new_key()?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_err(|e| e.to_string())?.as_secs();
    let claims = json!({
        "iss": issuer, "sub": "bench", "aud": o.resource, "scope": o.scope,
        "iat": now, "exp": now + o.ttl_s, "client_id": "bench",
    });
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("at+jwt".into());
    header.kid = Some(KID.into());
    let key = EncodingKey::from_ec_der(&pkcs8);
    let token = encode(&header, &claims, &key).map_err(|e| e.to_string())?;
    let (dpop_pkcs8, dpop_jwk) = new_key()?;
    let mut bound = claims.clone();
    bound["cnf"] = json!({ "jkt": thumbprint(&dpop_jwk) });
    let dpop_token = encode(&header, &bound, &key).map_err(|e| e.to_string())?;

    let metadata = json!({
        "issuer": issuer,
        "jwks_uri": format!("{issuer}/jwks"),
        "token_endpoint": format!("{issuer}/token"),
        "response_types_supported": ["code"],
    });
    let jwks = json!({ "keys": [jwk] });
    let app = axum::Router::new()
        .route("/.well-known/oauth-authorization-server", get(move || async move { Json(metadata) }))
        .route("/jwks", get(move || async move { Json(jwks) }));
    eprintln!("listening on {issuer}");
    println!("token {token}");
    println!("dpop-key {}", URL_SAFE_NO_PAD.encode(&dpop_pkcs8));
    println!("dpop-token {dpop_token}");
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}

#[tokio::main]
async fn main() -> ExitCode {
    let outcome = match options() {
        Ok(o) => run(o).await,
        Err(e) => Err(e),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
