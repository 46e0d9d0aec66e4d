//! The client's enterprise flows against a real authorization server
//! (oidc-provider): `private_key_jwt` client credentials whose token our
//! resource server takes, a refused key, and DPoP-bound tokens (with the
//! AS's nonce required) whose `cnf.jkt` is the stored key's thumbprint.

use crate::oauth_support;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use conduit_mcp::client::oauth::{ClientAssertionKey, OAuth};
use conduit_mcp::client::{CallOutcome, ClientBuilder, ClientError};
use conduit_mcp_test_oauth::{AuthorizationServer, Options, SERVICE};
use jsonwebtoken::jwk::{Jwk, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey};
use oauth_support::*;
use serde_json::{Value, json};

/// The key registered for the client `keyed` (a throwaway P-256 key, used only here).
const KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgaJ4CCYHoSD3i98ZI
O1hkAUWWQj+v4qmVrH0p/AYcPXqhRANCAATxDD3GYVyFw+GbiUdWoXo93X3ZQSnj
2D9zAMKk5t0TWZq1M9L3FlVmQrF++ge88jatfxvVX2B6bBXgqImotw6T
-----END PRIVATE KEY-----
";

/// Another key, registered nowhere.
const OTHER_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgph6DAE8PMomq6e0/
o6wN98sHMkjXOztRnRk9YNNxTxChRANCAAQopKZmQoo9Pxr9X1UhElouljIHUU9O
kiwhCn1+TBIMuaX560VkKK/NfYVAvWRjA4V1yzqcmOWuDtj5Uuu7adcQ
-----END PRIVATE KEY-----
";

/// The public JWK of a PEM private key.
fn public_jwk(pem: &str) -> Value {
    let key = EncodingKey::from_ec_pem(pem.as_bytes()).unwrap();
    serde_json::to_value(Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap()).unwrap()
}

/// A client that authenticates with `private_key_jwt` only, for client credentials.
fn keyed_client() -> Value {
    json!({
        "client_id": "keyed",
        "token_endpoint_auth_method": "private_key_jwt",
        "token_endpoint_auth_signing_alg": "ES256",
        "jwks": { "keys": [public_jwk(KEY)] },
        "grant_types": ["client_credentials"],
        "response_types": [],
        "redirect_uris": [],
        "scope": "mcp:read mcp:write",
    })
}

/// The claims of a JWT, unverified (the test reads what the AS put in its own token).
fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).expect("a JWT");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).expect("base64url")).expect("JSON")
}

#[tokio::test]
async fn private_key_jwt_client_credentials_get_a_token_our_server_takes() {
    let Some(auth) = AuthorizationServer::start_with(Options::default().client(keyed_client())).await else { return };
    let rs = start(&[auth.issuer()], |c| c).await;

    let key = ClientAssertionKey::from_pem(KEY.as_bytes()).unwrap();
    assert_eq!(key.algorithm(), "ES256");
    let client =
        ClientBuilder::http(&rs.url).oauth(OAuth::client_credentials_jwt("keyed", key)).connect().await.unwrap();
    let CallOutcome::Complete(r) = client.call_tool("whoami", json!({})).await.unwrap() else { panic!("inline") };
    let who = r.structured_content.expect("structured");
    assert!(who["id"].as_str().unwrap().starts_with(auth.issuer()), "{who}");
    assert_eq!(who["scopes"], json!([READ]));

    // A key the AS does not know for the client: the token request is refused, nothing is stored.
    let other = ClientAssertionKey::from_pem(OTHER_KEY.as_bytes()).unwrap();
    let oauth = OAuth::client_credentials_jwt("keyed", other);
    let e = ClientBuilder::http(&rs.url).oauth(oauth.clone()).login().await.unwrap_err();
    assert!(matches!(&e, ClientError::OAuth(m) if m.contains("invalid_client")), "{e}");
    assert!(oauth.tokens(&rs.url).await.unwrap().is_none());
}

#[tokio::test]
async fn dpop_binds_the_token_to_the_stored_key_with_the_authorization_servers_nonce() {
    let Some(auth) = AuthorizationServer::start_with(Options::default().dpop_nonce()).await else { return };
    let rs = start(&[auth.issuer()], |c| c).await;
    let secret = SERVICE.secret.unwrap();

    let oauth = OAuth::client_credentials(SERVICE.id, secret).dpop(true);
    let t = ClientBuilder::http(&rs.url).oauth(oauth.clone()).login().await.unwrap();
    assert!(t.dpop_bound, "{t:?}");
    let stored = t.dpop_key.as_deref().expect("the key is kept with the tokens");
    let der = URL_SAFE_NO_PAD.decode(stored).unwrap();
    let jwk = Jwk::from_encoding_key(&EncodingKey::from_ec_der(&der), Algorithm::ES256).unwrap();
    let jkt = jwk.thumbprint(ThumbprintHash::SHA256).unwrap();
    assert_eq!(claims(&t.access_token)["cnf"]["jkt"], jkt, "the token is bound to the stored key");
    assert!(!format!("{t:?}").contains(stored), "the key is not printed");

    // Without DPoP the same client gets a Bearer token, unbound.
    let plain = OAuth::client_credentials(SERVICE.id, secret);
    let t = ClientBuilder::http(&rs.url).oauth(plain).login().await.unwrap();
    assert!(!t.dpop_bound && t.dpop_key.is_none());
    assert!(claims(&t.access_token).get("cnf").is_none());
}
