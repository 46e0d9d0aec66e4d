//! The audience rules of the suite's server-side authorization scenario (not
//! released in the suite yet), on both eras against a real authorization
//! server: no token, a valid one, another audience, no audience, an expired
//! token, a token signed by a key the issuer never published. The first is
//! 401 without an error, the valid one passes, every other is 401
//! `invalid_token`, the same on `2026-07-28` (`tools/call`) and on
//! `2025-11-25` (`initialize`).

use crate::common;
use crate::legacy_common;
use crate::oauth_support;

use common::call;
use conduit_mcp::clock::Clock;
use conduit_mcp_test_oauth::{AuthorizationServer, Key};
use legacy_common::{Legacy, rpc};
use oauth_support::*;
use serde_json::{Value, json};

/// The status and challenge of one request of `era` with `token`.
async fn ask(rs: &Rs, legacy: bool, token: Option<&str>) -> (u16, String) {
    if legacy {
        let mut l = Legacy::new(&rs.url);
        l.token = token.map(str::to_owned);
        let init = json!({ "protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": { "name": "t", "version": "1" } });
        let r = l.post(&rpc(0, "initialize", init)).await;
        let c = r.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        (r.status().as_u16(), c)
    } else {
        let r = post(&rs.url, &call(1, "whoami", json!({})), token).await;
        (r.status.as_u16(), r.www_authenticate())
    }
}

#[tokio::test]
async fn the_audience_rules_on_both_eras() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let rs = start(&[auth.issuer()], |c| c).await;
    let now = rs.clock.now_ms() / 1000;
    let claims = |edit: Value| {
        let mut c = json!({ "iss": auth.issuer(), "sub": "eve", "aud": rs.url, "scope": READ,
                            "iat": now, "exp": now + 300 });
        for (k, v) in edit.as_object().unwrap() {
            if v.is_null() {
                c.as_object_mut().unwrap().remove(k);
            } else {
                c[k] = v.clone();
            }
        }
        c
    };
    let valid = auth.mint(claims(json!({})), Key::Current).await;
    let refused = [
        ("another audience", auth.mint(claims(json!({ "aud": "https://other.example/mcp" })), Key::Current).await),
        ("no audience", auth.mint(claims(json!({ "aud": null })), Key::Current).await),
        ("expired", auth.mint(claims(json!({ "exp": now - 3600 })), Key::Current).await),
        ("an untrusted key", auth.mint(claims(json!({})), Key::Unknown).await),
    ];
    for legacy in [false, true] {
        let era = if legacy { "2025-11-25" } else { "2026-07-28" };
        let (status, c) = ask(&rs, legacy, None).await;
        assert_eq!(status, 401, "{era}: no token");
        assert!(c.starts_with("Bearer ") && !c.contains("error="), "{era}: no token: {c}");
        assert_eq!(ask(&rs, legacy, Some(&valid)).await.0, 200, "{era}: a valid token");
        for (why, token) in &refused {
            let (status, c) = ask(&rs, legacy, Some(token)).await;
            assert_eq!(status, 401, "{era}: {why}");
            assert_eq!(challenge_param(&c, "error").as_deref(), Some("invalid_token"), "{era}: {why}: {c}");
        }
    }
}
