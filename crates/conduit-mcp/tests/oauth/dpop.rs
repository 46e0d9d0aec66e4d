//! DPoP-bound tokens on the resource server, against a real authorization
//! server (oidc-provider binds its tokens to the client's key): our client
//! calls on both eras with proofs; a replayed proof, a proof for another
//! method or URL, a stale one, an HMAC one, one without a token, a bound
//! token sent as Bearer, an unbound token sent as DPoP, a huge proof: each
//! gets 401 with a `DPoP` challenge (a 1 MiB one, 431 from the
//! HTTP layer before authentication); the server's nonce is asked for and
//! honoured; a server that requires DPoP refuses Bearer tokens.

use crate::common;
use crate::oauth_support;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::call;
use conduit_mcp::auth::oauth::DpopConfig;
use conduit_mcp::client::oauth::OAuth;
use conduit_mcp::client::{CallOutcome, Client, ClientBuilder, ToolOutcome};
use conduit_mcp::protocol::Era;
use conduit_mcp_test_oauth::{AuthorizationServer, SERVICE};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use oauth_support::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

async fn whoami(client: &Client) -> Value {
    // The server may answer with a task (already completed) where the client takes tasks.
    let result = match client.call_tool("whoami", json!({})).await.unwrap() {
        CallOutcome::Complete(r) => r,
        CallOutcome::Task(t) => match t.wait().await.unwrap() {
            ToolOutcome::Completed(r) => r,
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    result.structured_content.expect("structured")
}

/// A proof signed with the stored DPoP key `der`, with these claims over the defaults.
pub(crate) fn proof(der: &[u8], url: &str, token: Option<&str>, edit: impl FnOnce(&mut Value)) -> String {
    let key = EncodingKey::from_ec_der(der);
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("dpop+jwt".into());
    header.jwk = Some(Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap());
    let mut claims = json!({
        "jti": format!("{:x}", rand_id()), "htm": "POST", "htu": url, "iat": now_ms() / 1000,
    });
    if let Some(t) = token {
        claims["ath"] = json!(URL_SAFE_NO_PAD.encode(Sha256::digest(t.as_bytes())));
    }
    edit(&mut claims);
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

fn rand_id() -> u128 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    (u128::from(now_ms()) << 32) | u128::from(N.fetch_add(1, Ordering::Relaxed))
}

/// POSTs a whoami call with `authorization` and `dpop` headers.
async fn send(url: &str, authorization: &str, dpop: &[&str]) -> common::Resp {
    let body = call(1, "whoami", json!({}));
    let mut h = common::std_headers(&body);
    common::set(&mut h, "authorization", authorization);
    for p in dpop {
        h.append("dpop", p.parse().unwrap());
    }
    common::read(reqwest::Client::new().post(url).headers(h).body(body.to_string())).await
}

/// The response is a 401 with a `DPoP` challenge naming `error`.
fn refused(r: &common::Resp, error: &str) {
    assert_eq!(r.status, 401, "{}", r.text);
    let c = r.www_authenticate();
    assert!(c.starts_with("DPoP "), "{c}");
    assert_eq!(challenge_param(&c, "error").as_deref(), Some(error), "{c}");
    assert!(challenge_param(&c, "algs").is_some_and(|a| a.contains("ES256")), "{c}");
}

#[tokio::test]
async fn bound_tokens_on_both_eras_and_every_bad_proof_refused() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let rs = start(&[auth.issuer()], |c| c.dpop(DpopConfig::default())).await;
    // Without a token: the Bearer challenge, and a DPoP one naming the algorithms taken.
    let r = post(&rs.url, &call(0, "whoami", json!({})), None).await;
    let challenges: Vec<&str> = r.headers.get_all("www-authenticate").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(r.status, 401);
    assert!(challenges[0].starts_with("Bearer ") && challenges[0].contains("resource_metadata="), "{challenges:?}");
    assert!(challenges[1].starts_with("DPoP ") && challenges[1].contains("algs=\"ES256 "), "{challenges:?}");
    let oauth = OAuth::client_credentials(SERVICE.id, SERVICE.secret.unwrap()).dpop(true);
    for era in [Era::Modern, Era::Legacy] {
        let client = ClientBuilder::http(&rs.url).oauth(oauth.clone()).era(era).connect().await.unwrap();
        assert!(whoami(&client).await["id"].as_str().unwrap().starts_with(auth.issuer()));
    }
    let t = oauth.tokens(&rs.url).await.unwrap().expect("stored");
    assert!(t.dpop_bound);
    let der = URL_SAFE_NO_PAD.decode(t.dpop_key.as_deref().unwrap()).unwrap();
    let (token, url) = (t.access_token.as_str(), rs.url.as_str());
    let dpop_auth = format!("DPoP {token}");

    // A good proof passes once; the same proof again is a replay.
    let good = proof(&der, url, Some(token), |_| {});
    assert_eq!(send(url, &dpop_auth, &[&good]).await.status, 200);
    refused(&send(url, &dpop_auth, &[&good]).await, "invalid_dpop_proof");
    // Each bad proof: 401, the DPoP challenge, and it says why.
    let stale = now_ms() / 1000 - 3600;
    let hs256 = {
        let mut h = Header::new(Algorithm::HS256);
        h.typ = Some("dpop+jwt".into());
        jsonwebtoken::encode(
            &h,
            &json!({ "jti": "h", "htm": "POST", "htu": url }),
            &EncodingKey::from_secret(b"k").unwrap(),
        )
        .unwrap()
    };
    for bad in [
        proof(&der, url, Some(token), |c| c["htm"] = json!("GET")),
        proof(&der, url, Some(token), |c| c["htu"] = json!("http://127.0.0.1:1/mcp")),
        proof(&der, url, Some(token), |c| c["iat"] = json!(stale)),
        proof(&der, url, None, |_| {}),
        hs256,
        "x".repeat(16 * 1024),
    ] {
        let r = send(url, &dpop_auth, &[&bad]).await;
        refused(&r, "invalid_dpop_proof");
    }
    // A 1 MiB proof does not get past the HTTP layer's header limit (docs/auth.md: why 431);
    // nothing of it is kept, and the next good proof is taken as before.
    assert_eq!(send(url, &dpop_auth, &["x".repeat(1024 * 1024).as_str()]).await.status, 431);
    assert_eq!(send(url, &dpop_auth, &[&proof(&der, url, Some(token), |_| {})]).await.status, 200);
    // Two proofs, or none.
    let (a, b) = (proof(&der, url, Some(token), |_| {}), proof(&der, url, Some(token), |_| {}));
    refused(&send(url, &dpop_auth, &[&a, &b]).await, "invalid_dpop_proof");
    refused(&send(url, &dpop_auth, &[]).await, "invalid_dpop_proof");
    // The bound token as Bearer: refused, it needs its proof.
    refused(&send(url, &format!("Bearer {token}"), &[]).await, "invalid_token");
    // An unbound token with a good proof of some key: not bound to it.
    let plain = OAuth::client_credentials(SERVICE.id, SERVICE.secret.unwrap());
    let unbound = ClientBuilder::http(url).oauth(plain.clone()).login().await.unwrap().access_token;
    let p = proof(&der, url, Some(&unbound), |_| {});
    refused(&send(url, &format!("DPoP {unbound}"), &[&p]).await, "invalid_token");
    // ... and as Bearer it still works where DPoP is not required.
    assert_eq!(post(url, &call(2, "whoami", json!({})), Some(&unbound)).await.status, 200);
}

#[tokio::test]
async fn the_servers_nonce_is_asked_for_and_honoured_and_dpop_can_be_required() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let cfg = DpopConfig::default().nonce_secret([9; 32]);
    let rs = start(&[auth.issuer()], |c| c.dpop(cfg).require_dpop(true)).await;
    // Required: the one challenge is DPoP's, with the scopes and the algorithms.
    let r = post(&rs.url, &call(0, "whoami", json!({})), None).await;
    assert_eq!(r.headers.get_all("www-authenticate").iter().count(), 1);
    let c = r.www_authenticate();
    assert!(
        c.starts_with("DPoP ") && challenge_param(&c, "scope").is_some() && challenge_param(&c, "algs").is_some(),
        "{c}"
    );

    // Our client meets use_dpop_nonce and sends the proof again with it, on both eras.
    let oauth = OAuth::client_credentials(SERVICE.id, SERVICE.secret.unwrap()).dpop(true);
    for era in [Era::Modern, Era::Legacy] {
        let client = ClientBuilder::http(&rs.url).oauth(oauth.clone()).era(era).connect().await.unwrap();
        assert!(whoami(&client).await["id"].as_str().unwrap().starts_with(auth.issuer()));
    }
    // A proof without the nonce: 401 use_dpop_nonce, with the nonce to use.
    let t = oauth.tokens(&rs.url).await.unwrap().unwrap();
    let der = URL_SAFE_NO_PAD.decode(t.dpop_key.as_deref().unwrap()).unwrap();
    let r = send(&rs.url, &format!("DPoP {}", t.access_token), &[&proof(&der, &rs.url, Some(&t.access_token), |_| {})])
        .await;
    refused(&r, "use_dpop_nonce");
    let nonce = r.headers["dpop-nonce"].to_str().unwrap().to_owned();
    let with = proof(&der, &rs.url, Some(&t.access_token), |c| c["nonce"] = json!(nonce));
    assert_eq!(send(&rs.url, &format!("DPoP {}", t.access_token), &[&with]).await.status, 200);
    // A nonce of another server is not this one's.
    let other = proof(&der, &rs.url, Some(&t.access_token), |c| c["nonce"] = json!("bm90LW91cnM"));
    refused(&send(&rs.url, &format!("DPoP {}", t.access_token), &[&other]).await, "use_dpop_nonce");

    // Required: a Bearer token is refused with the DPoP challenge.
    let plain = OAuth::client_credentials(SERVICE.id, SERVICE.secret.unwrap());
    let bearer = ClientBuilder::http(&rs.url).oauth(plain).login().await.unwrap().access_token;
    let r = post(&rs.url, &call(3, "whoami", json!({})), Some(&bearer)).await;
    refused(&r, "invalid_token");
}
