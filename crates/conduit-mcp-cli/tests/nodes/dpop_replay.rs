//! Two `serve --oauth-dpop` nodes on one PostgreSQL behind one public URL,
//! against a real authorization server (oidc-provider binds its tokens to the
//! client's DPoP key): a request node A took, captured and sent to node B
//! with the same proof, is refused with a `DPoP` challenge
//! (`invalid_dpop_proof`); the same token with a fresh proof passes on B.

use crate::common;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::*;
use conduit_mcp::client::ClientBuilder;
use conduit_mcp::client::oauth::OAuth;
use conduit_mcp_test_oauth::{AuthorizationServer, SERVICE};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::time::{SystemTime, UNIX_EPOCH};

/// A proof for `POST url` with `token`, signed with the stored DPoP key `der`.
fn proof(der: &[u8], url: &str, token: &str, jti: &str) -> String {
    let key = EncodingKey::from_ec_der(der);
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("dpop+jwt".into());
    header.jwk = Some(Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap());
    let now_s = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let claims = json!({
        "jti": jti, "htm": "POST", "htu": url, "iat": now_s,
        "ath": URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())),
    });
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

/// POSTs `server/discover` to `node_url` with `Authorization: DPoP token` and `proof`.
async fn discover(node_url: &str, token: &str, proof: &str) -> reqwest::Response {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": { "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} } } });
    reqwest::Client::new()
        .post(node_url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "server/discover")
        .header("authorization", format!("DPoP {token}"))
        .header("dpop", proof)
        .body(body.to_string())
        .send()
        .await
        .expect("an answer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proof_taken_by_one_node_is_refused_by_the_other() {
    let Some(url) = database_url() else { return };
    let Some(auth) = AuthorizationServer::start().await else { return };
    let schema = Schema::new(&url);
    let store = format!("postgres:{url}");
    // Both nodes serve one public URL (node A's address stands in for the load balancer's).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let node = |listen: String, id: &'static str| {
        let (store, schema, resource, issuer) = (store.clone(), schema.name.clone(), resource.clone(), auth.issuer());
        let issuer = issuer.to_owned();
        async move {
            let args = ["--listen", &listen, "--store", &store, "--pg-schema", &schema, "--node-id", id];
            let oauth = ["--oauth-issuer", &issuer, "--resource", &resource, "--oauth-dpop"];
            Node::start_exactly(&[&args[..], &oauth[..]].concat()).await
        }
    };
    let a = node(format!("127.0.0.1:{port}"), "a").await;
    let b = node("127.0.0.1:0".into(), "b").await;

    let oauth = OAuth::client_credentials(SERVICE.id, SERVICE.secret.unwrap()).dpop(true);
    ClientBuilder::http(&resource).oauth(oauth.clone()).login().await.unwrap();
    let t = oauth.tokens(&resource).await.unwrap().expect("stored");
    assert!(t.dpop_bound, "the authorization server bound the token to the client's key");
    let der = URL_SAFE_NO_PAD.decode(t.dpop_key.as_deref().unwrap()).unwrap();
    let token = t.access_token.as_str();

    let captured = proof(&der, &resource, token, "captured-once");
    assert_eq!(discover(&a.url, token, &captured).await.status(), 200, "node A takes the proof");
    // The same request, replayed to node B within the proof's window.
    let r = discover(&b.url, token, &captured).await;
    assert_eq!(r.status(), 401);
    let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(challenge.starts_with("DPoP "), "{challenge}");
    assert!(challenge.contains("error=\"invalid_dpop_proof\""), "{challenge}");
    assert!(challenge.contains("used already"), "{challenge}");
    assert!(challenge.contains("algs=\"") && challenge.contains("ES256"), "{challenge}");
    // And back to node A: refused there too.
    assert_eq!(discover(&a.url, token, &captured).await.status(), 401);
    // The token itself is fine on node B with a proof of its own.
    assert_eq!(discover(&b.url, token, &proof(&der, &resource, token, "fresh-for-b")).await.status(), 200);
    drop((a, b));
    schema.drop_now().await;
}
