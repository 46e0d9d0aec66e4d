//! Token validation against a real authorization server: key rotation while
//! serving, the rate-limited refetch, known keys while the AS is down, the
//! keys' TTL, every
//! refusal of the bad-input table, introspection of opaque tokens and its
//! cache — and no token in any log line.

use crate::common;
use crate::legacy_common;
use crate::oauth_support;

use common::call;
use conduit_mcp::auth::oauth::{OAuth, OAuthConfig};
use conduit_mcp::clock::Clock;
use conduit_mcp::transport::http::HttpConfig;
use conduit_mcp_test_oauth::{APP, AuthorizationServer, Fault, Faults, Key, Login, Options, ResourceSettings};
use oauth_support::introspection_as::{Answer, IntrospectionAs, active, basic};
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
    // Some 45 refusals from one address follow: past its budget of failed authentications they
    // would be 429s, so this server has none (the budget is checked in `made_up_opaque_tokens_…`).
    let rs = start_http(
        &[auth.issuer()],
        |c| c.keys_ttl(Duration::from_secs(600)),
        HttpConfig::default().auth_failure_rate(None),
    )
    .await;
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

    // Introspection down: a cached answer still serves; an uncached token is 503, and stays
    // 503 without asking for the backoff after the failure (5 s), however the AS is doing.
    auth.set_faults(Faults::none().introspection(Fault::Down)).await;
    whoami(&rs, &token).await.assert_ok(&json!(1));
    let other = auth.login(&Login::new(&APP, &rs.url).scope(READ)).await.unwrap().access_token;
    assert_eq!(whoami(&rs, &other).await.status, 503);
    auth.set_faults(Faults::none()).await;
    assert_eq!(whoami(&rs, &other).await.status, 503, "within the backoff");
    rs.clock.advance(5_000);
    whoami(&rs, &other).await.assert_ok(&json!(1));

    // An unknown opaque token is not active: 401, and refused from the cache for a while.
    let before = auth.stats().await.introspection;
    assert_refused(&whoami(&rs, "no-such-token").await, "inactive");
    assert_refused(&whoami(&rs, "no-such-token").await, "inactive again");
    assert_eq!(auth.stats().await.introspection, before + 1, "an inactive answer is cached briefly");
}

/// Finding 1 of issue 34: made-up opaque tokens are no free relay to the AS. From one
/// address, past its budget of failed authentications, 429 before the AS is asked; the same
/// token, however often and however concurrently, is asked about once per inactive TTL.
#[tokio::test]
async fn made_up_opaque_tokens_cost_the_authorization_server_little() {
    let auth = IntrospectionAs::start().await; // every token inactive
    let rs = start(&[&auth.issuer], |c| c.introspection_client("rs", "rs-secret")).await;
    let mut limited = 0;
    for n in 0..300 {
        let r = whoami(&rs, &format!("made-up-{n}")).await;
        match r.status.as_u16() {
            401 => assert_refused(&r, "inactive"),
            429 => {
                limited += 1;
                assert!(r.headers.contains_key("retry-after"), "{}", r.text);
            }
            s => panic!("made-up token {n}: HTTP {s}: {}", r.text),
        }
    }
    let calls = auth.calls();
    eprintln!("300 made-up tokens from one address: {calls} introspection POSTs, {limited} answered 429");
    assert!(calls <= 25, "{calls} introspection POSTs for 300 made-up tokens from one address");
    assert!(limited >= 270, "{limited} of 300 refused with 429");

    // The same made-up token 50 times at once, then once more: one introspection (without the
    // address's budget, to count what the cache and the single flight save on their own).
    let auth = IntrospectionAs::start().await;
    let rs = start_http(
        &[&auth.issuer],
        |c| c.introspection_client("rs", "rs-secret"),
        HttpConfig::default().auth_failure_rate(None),
    )
    .await;
    let same = futures_util::future::join_all((0..50).map(|_| whoami(&rs, "the-same-made-up-token"))).await;
    for r in same.iter().chain(&[whoami(&rs, "the-same-made-up-token").await]) {
        assert_refused(r, "inactive");
    }
    assert_eq!(auth.calls(), 1, "one introspection for 51 uses of one token");
    // Refused answers are kept briefly: asked again after the inactive TTL (10 s by default).
    rs.clock.advance(9_999);
    assert_refused(&whoami(&rs, "the-same-made-up-token").await, "inactive, cached");
    assert_eq!(auth.calls(), 1);
    rs.clock.advance(1);
    assert_refused(&whoami(&rs, "the-same-made-up-token").await, "inactive, asked again");
    assert_eq!(auth.calls(), 2);
}

/// Finding 2 of issue 34: a hung introspection endpoint holds at most the per-issuer cap of
/// requests (the rest get 503 at once), a token whose answer is cached never waits behind it,
/// and after a failure the issuer is not asked again for a short interval.
#[tokio::test]
async fn a_hung_introspection_endpoint_fails_fast_and_cached_tokens_never_wait() {
    let auth = IntrospectionAs::start().await;
    let rs = start_http(
        &[&auth.issuer],
        |c| c.introspection_client("rs", "rs-secret").fetch_timeout(Duration::from_secs(60)),
        HttpConfig::default().max_connections(12),
    )
    .await;
    let (issuer, resource) = (auth.issuer.clone(), rs.url.clone());
    auth.answer(move |t| match t {
        "good" => Answer::Json(active(&issuer, &resource, "alice", READ)),
        _ => Answer::Hang,
    });
    whoami(&rs, "good").await.assert_ok(&json!(1));
    assert_eq!(auth.calls(), 1);

    // 16 made-up tokens at once while the AS hangs.
    let url = rs.url.clone();
    let hung: Vec<_> = (0..16)
        .map(|n| {
            let url = url.clone();
            tokio::spawn(async move { post(&url, &call(1, "whoami", json!({})), Some(&format!("hung-{n}"))).await })
        })
        .collect();
    auth.until_calls(9).await;
    let started = std::time::Instant::now();
    whoami(&rs, "good").await.assert_ok(&json!(1));
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(2), "a cached token waited {waited:?} behind the hung AS");
    eprintln!("a cached token was answered in {waited:?} while the AS hung");
    let r = whoami(&rs, "one-more").await;
    assert_eq!(r.status, 503, "{}", r.text);
    assert!(r.headers.contains_key("retry-after"));
    assert_eq!(auth.calls(), 9, "at most 8 introspections wait on one issuer");

    // The hung ones fail; then the issuer is not asked for the backoff, and asked again after it.
    auth.release();
    for h in hung {
        let r = h.await.expect("joined");
        assert_eq!(r.status, 503, "{}", r.text);
    }
    let calls = auth.calls();
    let (issuer, resource) = (auth.issuer.clone(), rs.url.clone());
    auth.answer(move |t| match t {
        "good" => Answer::Json(active(&issuer, &resource, "alice", READ)),
        _ => Answer::Json(json!({ "active": false })),
    });
    for n in 0..5 {
        assert_eq!(whoami(&rs, &format!("after-{n}")).await.status, 503);
    }
    assert_eq!(auth.calls(), calls, "no introspection within the backoff");
    whoami(&rs, "good").await.assert_ok(&json!(1));
    rs.clock.advance(5_001);
    assert_refused(&whoami(&rs, "probe").await, "asked again after the backoff");
    assert_eq!(auth.calls(), calls + 1);
}

/// Finding 3 of issue 34: introspection credentials belong to one issuer; a token goes only to
/// issuers that have credentials, each with its own.
#[tokio::test]
async fn an_opaque_token_goes_only_to_issuers_with_their_own_credentials() {
    let (a, b) = (IntrospectionAs::start().await, IntrospectionAs::start().await);
    let two = OAuthConfig::new(&a.issuer, "http://127.0.0.1:9/mcp").issuer(&b.issuer);
    let e = OAuth::new(two.clone().introspection_client("rs-a", "secret-a")).expect_err("whose credentials?");
    assert_eq!(e.key(), "introspection_client", "{e}");
    let e = OAuth::new(two.introspection_client_for("https://c.example", "rs", "s")).expect_err("not trusted");
    assert_eq!(e.key(), "introspection_client", "{e}");

    // Credentials for A only: B, which would call anything active, never sees a token.
    let rs = start(&[&a.issuer, &b.issuer], |c| c.introspection_client_for(&a.issuer, "rs-a", "secret-a")).await;
    let (issuer, resource) = (b.issuer.clone(), rs.url.clone());
    b.answer(move |_| Answer::Json(active(&issuer, &resource, "mallory", READ)));
    assert_refused(&whoami(&rs, "alice-at-a").await, "inactive at A");
    let seen = a.seen();
    assert_eq!((seen.len(), seen[0].token.as_str()), (1, "alice-at-a"));
    assert_eq!(seen[0].authorization, basic("rs-a", "secret-a"));
    assert_eq!(b.calls(), 0, "B has no credentials here, so it is never asked");

    // Each with its own: A is asked first with A's, then B with B's.
    let rs = start(&[&a.issuer, &b.issuer], |c| {
        c.introspection_client_for(&a.issuer, "rs-a", "secret-a")
            .introspection_client_for(&b.issuer, "rs-b", "secret-b")
    })
    .await;
    let (issuer, resource) = (b.issuer.clone(), rs.url.clone());
    b.answer(move |_| Answer::Json(active(&issuer, &resource, "bob", READ)));
    let who = whoami(&rs, "bob-at-b").await.assert_ok(&json!(1))["structuredContent"].clone();
    assert_eq!(who["id"], format!("{}#bob", b.issuer));
    assert_eq!(a.seen().last().map(|s| s.authorization.clone()), Some(basic("rs-a", "secret-a")));
    assert_eq!(b.seen().iter().map(|s| s.authorization.clone()).collect::<Vec<_>>(), [basic("rs-b", "secret-b")]);
}

/// Finding 7 of issue 34: an introspection answer for a refresh token is no access token.
#[tokio::test]
async fn a_refresh_token_is_not_an_access_token() {
    let auth = IntrospectionAs::start().await;
    let rs = start(&[&auth.issuer], |c| c.introspection_client("rs", "rs-secret")).await;
    let (issuer, resource) = (auth.issuer.clone(), rs.url.clone());
    auth.answer(move |t| {
        let mut answer = active(&issuer, &resource, "alice", READ);
        if t == "refresh" {
            answer["token_type"] = json!("refresh_token");
        }
        Answer::Json(answer)
    });
    whoami(&rs, "access").await.assert_ok(&json!(1));
    assert_refused(&whoami(&rs, "refresh").await, "a refresh token");
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
    let http = HttpConfig::default().keep_alive(Duration::from_millis(50));
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
