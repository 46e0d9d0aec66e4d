//! A long-lived stream opened with a DPoP-bound token, against a real
//! authorization server: when the token's introspection answer lapses, the
//! stream's credentials are checked again without a new proof (there is no
//! request to carry one): the token, still active and still bound to the key
//! proven at open, keeps the stream; once it can no longer be checked, the
//! stream ends.

use crate::common;
use crate::dpop::proof;
use crate::oauth_support;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use conduit_mcp::auth::oauth::DpopConfig;
use conduit_mcp::client::ClientBuilder;
use conduit_mcp::client::oauth::OAuth;
use conduit_mcp_test_oauth::{AuthorizationServer, Fault, Faults, ResourceSettings, SERVICE};
use oauth_support::*;
use serde_json::json;
use std::time::Duration;

/// Reads a listen stream to its end; fails if a list change comes first.
async fn ends_without_a_list_change(s: &mut common::SseStream) {
    while let Some(m) = common::guard("the stream to end", s.next()).await {
        assert_ne!(m["method"], "notifications/tools/list_changed", "delivered after the token could not be checked");
    }
}

#[tokio::test]
async fn a_dpop_bound_stream_is_checked_again_without_a_new_proof() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let rs = start(&[auth.issuer()], |c| {
        c.dpop(DpopConfig::default()).introspection_client("rs", "rs-secret").introspection_ttl(Duration::from_secs(60))
    })
    .await;
    auth.set_resource(&rs.url, ResourceSettings::opaque()).await;
    let oauth = OAuth::client_credentials(SERVICE.id, SERVICE.secret.unwrap()).dpop(true);
    ClientBuilder::http(&rs.url).oauth(oauth.clone()).login().await.unwrap();
    let t = oauth.tokens(&rs.url).await.unwrap().expect("stored");
    assert!(t.dpop_bound, "an opaque token bound to the client's key");
    let der = URL_SAFE_NO_PAD.decode(t.dpop_key.as_deref().unwrap()).unwrap();
    let token = t.access_token.as_str();

    let body = common::req("l", "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } }));
    let mut h = common::std_headers(&body);
    common::set(&mut h, "authorization", &format!("DPoP {token}"));
    h.append("dpop", proof(&der, &rs.url, Some(token), |_| {}).parse().unwrap());
    let sent = reqwest::Client::new().post(&rs.url).headers(h).body(body.to_string()).send();
    let mut listen = common::SseStream::new(common::guard("the listen stream", sent).await.expect("sent"));
    assert_eq!(listen.status, 200);
    assert_eq!(listen.next().await.expect("acknowledged")["method"], "notifications/subscriptions/acknowledged");

    // Past the introspection answer's reuse limit: checked again, and it holds.
    auth.reset_stats().await;
    rs.clock.advance(61_000);
    rs.server.notify_tools_list_changed();
    assert_eq!(listen.next().await.expect("carried")["method"], "notifications/tools/list_changed");
    let asked = auth.stats().await.introspection;
    assert!((1..=2).contains(&asked), "the token was checked again ({asked} introspections)");

    // Once the token cannot be checked, the stream ends before carrying anything more.
    auth.set_faults(Faults::none().introspection(Fault::Down)).await;
    rs.clock.advance(61_000);
    rs.server.notify_tools_list_changed();
    ends_without_a_list_change(&mut listen).await;
}
