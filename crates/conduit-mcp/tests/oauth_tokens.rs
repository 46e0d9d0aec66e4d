//! Token validation against a real authorization server: key rotation while
//! serving, the rate-limited refetch, known keys while the AS is down, the
//! keys' TTL, every
//! refusal of the bad-input table, introspection of opaque tokens and its
//! cache — and no token in any log line.

mod common;
mod legacy_common;
mod oauth_support;

use common::call;
use conduit_mcp::clock::Clock;
use conduit_mcp_test_oauth::{APP, AuthorizationServer, Fault, Faults, Key, Login, Options, ResourceSettings};
use oauth_support::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

async fn whoami(rs: &Rs, token: &str) -> common::Resp {
    post(&rs.url, &call(1, "whoami", json!({})), Some(token)).await
}

#[track_caller]
fn assert_refused(r: &common::Resp, why: &str) {
    assert_eq!(r.status, 401, "{why}: {}", r.text);
    let c = r.www_authenticate();
    assert_eq!(challenge_param(&c, "error").as_deref(), Some("invalid_token"), "{why}: {c}");
    assert!(challenge_param(&c, "resource_metadata").is_some(), "{why}: {c}");
    assert!(r.body.get("result").is_none(), "{why}");
}

/// Claims of a well-formed access token for `rs`, changed by `edit`.
fn claims(auth: &AuthorizationServer, rs: &Rs, edit: Value) -> Value {
    let now = rs.clock.now_ms() / 1000;
    let mut c = json!({ "iss": auth.issuer(), "sub": "mallory", "aud": rs.url, "scope": READ,
                        "iat": now, "exp": now + 300 });
    for (k, v) in edit.as_object().unwrap() {
        if v.is_null() {
            c.as_object_mut().unwrap().remove(k);
        } else {
            c[k] = v.clone();
        }
    }
    c
}

/// Collects every log line of the process.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn keys_rotate_refetches_are_rate_limited_and_bad_tokens_are_refused() {
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber =
        tracing_subscriber::fmt().with_max_level(tracing::Level::TRACE).with_writer(move || writer.clone()).finish();
    // Global: the server's tasks run on any thread (only this test installs one).
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber of this binary");

    let Some(auth) = AuthorizationServer::start().await else { return };
    let rs = start(&[auth.issuer()], |c| c.keys_ttl(Duration::from_secs(600))).await;
    let mut tokens = Vec::new();
    let login = Login::new(&APP, &rs.url).scope(READ);
    let first = auth.login(&login).await.unwrap().access_token;
    whoami(&rs, &first).await.assert_ok(&json!(1));
    tokens.push(first.clone());
    assert_eq!(auth.stats().await.jwks, 1);

    // Rotation: the new key is unknown until a refetch is allowed (one per interval).
    auth.rotate_keys(true).await;
    let rotated = auth.login(&login).await.unwrap().access_token;
    tokens.push(rotated.clone());
    assert_refused(&whoami(&rs, &rotated).await, "a new kid within the refetch interval");
    rs.clock.advance(30_000);
    whoami(&rs, &rotated).await.assert_ok(&json!(1));
    whoami(&rs, &first).await.assert_ok(&json!(1));
    assert_eq!(auth.stats().await.jwks, 2);

    // A flood of made-up kids costs the AS at most one fetch per interval.
    for _ in 0..20 {
        let forged = auth.mint(claims(&auth, &rs, json!({})), Key::Unknown).await;
        assert_refused(&whoami(&rs, &forged).await, "signed by an unknown key");
    }
    rs.clock.advance(30_000);
    for _ in 0..20 {
        let forged = auth.mint(claims(&auth, &rs, json!({})), Key::Unknown).await;
        assert_refused(&whoami(&rs, &forged).await, "signed by an unknown key");
    }
    assert_eq!(auth.stats().await.jwks, 3, "one refetch per interval");

    // The bad-input table.
    let now = rs.clock.now_ms() / 1000;
    let cases = [
        (json!({ "aud": "http://127.0.0.1:9/other" }), Key::Current, "another audience"),
        (json!({ "aud": ["http://127.0.0.1:9/other"] }), Key::Current, "another audience (array)"),
        (json!({ "exp": now - 120 }), Key::Current, "expired beyond the leeway"),
        (json!({ "exp": null }), Key::Current, "no expiry"),
        (json!({ "nbf": now + 120 }), Key::Current, "not valid yet"),
        (json!({ "iss": "https://other-issuer.example" }), Key::Current, "another issuer"),
        (json!({ "sub": null }), Key::Current, "no subject"),
        (json!({}), Key::None, "alg none"),
        (json!({}), Key::Hs256, "HS256 with the public key as secret"),
    ];
    for (edit, key, why) in cases {
        let t = auth.mint(claims(&auth, &rs, edit), key).await;
        tokens.push(t.clone());
        assert_refused(&whoami(&rs, &t).await, why);
    }
    for (edit, why) in [
        (json!({ "aud": ["http://127.0.0.1:9/other", rs.url] }), "an audience array naming us"),
        (json!({ "exp": now - 30 }), "expired within the leeway"),
    ] {
        let t = auth.mint(claims(&auth, &rs, edit), Key::Current).await;
        assert_eq!(whoami(&rs, &t).await.status, 200, "{why}");
    }
    let elsewhere = auth.client_credentials(READ, "http://127.0.0.1:9/other").await.unwrap().access_token;
    assert_refused(&whoami(&rs, &elsewhere).await, "a real token for another resource");
    assert_refused(&whoami(&rs, "not-a-jwt-and-no-introspection").await, "opaque without introspection");

    // Expiry by the clock: a real token stops working once its exp (+ leeway) passes.
    let t = auth.login(&login).await.unwrap().access_token;
    whoami(&rs, &t).await.assert_ok(&json!(1));
    rs.clock.advance((600 + 61) * 1000);
    assert_refused(&whoami(&rs, &t).await, "expired by the clock");

    // Known keys keep working while the AS is down; unknown ones are refused, not fatal.
    let long = rs.clock.now_ms() / 1000 + 3600;
    let fresh = auth.mint(claims(&auth, &rs, json!({ "exp": long })), Key::Current).await;
    auth.set_faults(Faults::none().jwks(Fault::Down).metadata(Fault::Down)).await;
    rs.clock.advance(700_000);
    whoami(&rs, &fresh).await.assert_ok(&json!(1));
    assert_refused(&whoami(&rs, &auth.mint(claims(&auth, &rs, json!({})), Key::Unknown).await).await, "AS down");
    auth.set_faults(Faults::none()).await;

    // Keys past keys_ttl are fetched again on use (once the refetch interval allows), then cached.
    rs.clock.advance(30_000);
    let before = auth.stats().await.jwks;
    whoami(&rs, &fresh).await.assert_ok(&json!(1));
    whoami(&rs, &fresh).await.assert_ok(&json!(1));
    assert_eq!(auth.stats().await.jwks, before + 1, "stale keys are fetched once, then used from the cache");
    rs.clock.advance(601_000);
    whoami(&rs, &fresh).await.assert_ok(&json!(1));
    assert_eq!(auth.stats().await.jwks, before + 2, "fetched again after keys_ttl");

    // Nothing above put a token in a log line.
    let logged = String::from_utf8_lossy(&lines.0.lock().unwrap()).into_owned();
    assert!(logged.contains("authentication failed"), "the refusals were logged (at debug)");
    for t in &tokens {
        let signature = t.rsplit('.').next().unwrap();
        assert!(signature.is_empty() || !logged.contains(signature), "a token was logged");
    }
}

#[tokio::test]
async fn an_unusable_authorization_server_is_503_until_it_recovers() {
    let Some(auth) = AuthorizationServer::start_with(Options::default().slow_ms(10_000)).await else { return };
    let token_for = |rs: &Rs| {
        let now = rs.clock.now_ms() / 1000;
        json!({ "iss": auth.issuer(), "sub": "alice", "aud": rs.url, "scope": READ, "exp": now + 300 })
    };
    for (faults, why) in [
        (Faults::none().metadata(Fault::WrongIssuer), "metadata naming another issuer"),
        (Faults::none().jwks(Fault::Garbage), "a JWKS that is not JSON"),
        (Faults::none().jwks(Fault::Slow), "a JWKS that does not answer in time"),
        (Faults::none().jwks(Fault::Down), "a JWKS that is down"),
    ] {
        let rs = start(&[auth.issuer()], |c| c.fetch_timeout(Duration::from_millis(300))).await;
        auth.set_faults(faults).await;
        let t = auth.mint(token_for(&rs), Key::Current).await;
        let r = whoami(&rs, &t).await;
        assert_eq!(r.status, 503, "{why}: {}", r.text);
        assert!(r.headers.contains_key("retry-after"), "{why}");
        // Recovers once the AS does and the refetch interval has passed.
        auth.set_faults(Faults::none()).await;
        rs.clock.advance(30_000);
        whoami(&rs, &t).await.assert_ok(&json!(1));
    }
}

#[tokio::test]
async fn opaque_tokens_are_introspected_and_cached_briefly() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let rs = start(&[auth.issuer()], |c| {
        c.introspection_client("rs", "rs-secret").introspection_ttl(Duration::from_secs(60))
    })
    .await;
    auth.set_resource(&rs.url, ResourceSettings::opaque()).await;
    let token = auth.login(&Login::new(&APP, &rs.url).scope(READ).account("olga")).await.unwrap().access_token;
    assert_eq!(token.split('.').count(), 1, "opaque");
    auth.reset_stats().await;

    let who = whoami(&rs, &token).await.assert_ok(&json!(1))["structuredContent"].clone();
    assert_eq!(who["id"], format!("{}#olga", auth.issuer()));
    whoami(&rs, &token).await.assert_ok(&json!(1));
    assert_eq!(auth.stats().await.introspection, 1, "the second call used the cache");
    rs.clock.advance(61_000);
    whoami(&rs, &token).await.assert_ok(&json!(1));
    assert_eq!(auth.stats().await.introspection, 2, "asked again after the cache time");

    // Introspection down: a cached answer still serves; an uncached token is 503.
    auth.set_faults(Faults::none().introspection(Fault::Down)).await;
    whoami(&rs, &token).await.assert_ok(&json!(1));
    let other = auth.login(&Login::new(&APP, &rs.url).scope(READ)).await.unwrap().access_token;
    assert_eq!(whoami(&rs, &other).await.status, 503);
    auth.set_faults(Faults::none()).await;
    whoami(&rs, &other).await.assert_ok(&json!(1));

    // An unknown opaque token is not active: 401, and not cached.
    assert_refused(&whoami(&rs, "no-such-token").await, "inactive");
    let before = auth.stats().await.introspection;
    assert_refused(&whoami(&rs, "no-such-token").await, "inactive again");
    assert_eq!(auth.stats().await.introspection, before + 1, "an inactive answer is not cached");
}

/// A `subscriptions/listen` stream asking for list changes, opened with `token` and past
/// its acknowledgment.
async fn listen_with(rs: &Rs, token: &str) -> common::SseStream {
    let body = common::req("l", "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } }));
    let mut h = common::std_headers(&body);
    common::set(&mut h, "authorization", &format!("Bearer {token}"));
    let sent = reqwest::Client::new().post(&rs.url).headers(h).body(body.to_string()).send();
    let mut s = common::SseStream::new(common::guard("the listen stream", sent).await.expect("sent"));
    assert_eq!(s.status, 200);
    assert_eq!(s.next().await.expect("the acknowledgment")["method"], "notifications/subscriptions/acknowledged");
    s
}

/// A 2025-11-25 session's GET stream, opened with `token` and past its priming event.
async fn get_with(rs: &Rs, token: &str) -> legacy_common::Events {
    let mut c = legacy_common::Legacy::new(&rs.url).with_token(token);
    c.initialize(json!({})).await;
    c.get_stream().await
}

/// A JWT for `rs` of `sub` that expires `secs` from the resource server's now.
async fn expiring(auth: &AuthorizationServer, rs: &Rs, sub: &str, secs: u64) -> String {
    let now = rs.clock.now_ms() / 1000;
    let claims =
        json!({ "iss": auth.issuer(), "sub": sub, "aud": rs.url, "scope": READ, "iat": now, "exp": now + secs });
    auth.mint(claims, Key::Current).await
}

/// Reads a listen stream to its end; fails if a list change comes first.
async fn ends_without_a_list_change(s: &mut common::SseStream, why: &str) {
    while let Some(m) = common::guard("the stream to end", s.next()).await {
        assert_ne!(m["method"], "notifications/tools/list_changed", "{why}: delivered after the token expired");
    }
}

/// Finding 8 of issue 34: a listen stream and a legacy GET stream opened with a JWT end at
/// its `exp` (plus the leeway): the next event they would carry is not delivered.
#[tokio::test]
async fn streams_end_when_their_token_expires() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    // The default keep-alive (15 s) never fires here: only the event can show the expiry.
    let rs = start(&[auth.issuer()], |c| c).await;
    let token = expiring(&auth, &rs, "alice", 60).await;
    let mut listen = listen_with(&rs, &token).await;
    let mut get = get_with(&rs, &token).await;
    rs.server.notify_tools_list_changed();
    assert_eq!(listen.next().await.expect("carried")["method"], "notifications/tools/list_changed");
    assert_eq!(get.next_msg().await.expect("carried").1["method"], "notifications/tools/list_changed");
    // Past `exp` and the default leeway of 60 s.
    rs.clock.advance(121_000);
    assert_refused(&whoami(&rs, &token).await, "expired");
    rs.server.notify_tools_list_changed();
    ends_without_a_list_change(&mut listen, "listen").await;
    let after = common::guard("the GET stream to end", get.next_msg()).await;
    assert!(after.is_none(), "the GET stream carried {after:?} after the token expired");
}

/// Finding 8 of issue 34: a silent stream ends too, at the first keep-alive past its
/// token's limit (the test's keep-alive is 50 ms; its clock moves only when told).
#[tokio::test]
async fn silent_streams_end_when_their_token_expires() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let http = conduit_mcp::transport::http::HttpConfig::default().keep_alive(Duration::from_millis(50));
    let rs = oauth_support::start_http(&[auth.issuer()], |c| c, http).await;
    let token = expiring(&auth, &rs, "alice", 60).await;
    let mut listen = listen_with(&rs, &token).await;
    let mut get = get_with(&rs, &token).await;
    rs.clock.advance(121_000);
    ends_without_a_list_change(&mut listen, "listen").await;
    assert!(common::guard("the GET stream to end", get.next_msg()).await.is_none(), "the GET stream ends");
}

/// Finding 8 of issue 34: at the end of an introspection answer's reuse limit the stream's
/// token is checked again: still active, the stream carries on; when it can no longer be
/// checked, the stream ends.
#[tokio::test]
async fn an_introspected_stream_is_checked_again_at_its_limit() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let rs = start(&[auth.issuer()], |c| {
        c.introspection_client("rs", "rs-secret").introspection_ttl(Duration::from_secs(60))
    })
    .await;
    auth.set_resource(&rs.url, ResourceSettings::opaque()).await;
    let token = auth.login(&Login::new(&APP, &rs.url).scope(READ).account("olga")).await.unwrap().access_token;
    let mut listen = listen_with(&rs, &token).await;
    let mut get = get_with(&rs, &token).await;
    auth.reset_stats().await;
    rs.clock.advance(61_000);
    rs.server.notify_tools_list_changed();
    assert_eq!(listen.next().await.expect("carried")["method"], "notifications/tools/list_changed");
    assert_eq!(get.next_msg().await.expect("carried").1["method"], "notifications/tools/list_changed");
    let asked = auth.stats().await.introspection;
    assert!((1..=2).contains(&asked), "the token was checked again ({asked} introspections)");
    auth.set_faults(Faults::none().introspection(Fault::Down)).await;
    rs.clock.advance(61_000);
    rs.server.notify_tools_list_changed();
    ends_without_a_list_change(&mut listen, "listen").await;
    assert!(common::guard("the GET stream to end", get.next_msg()).await.is_none(), "the GET stream ends");
}
