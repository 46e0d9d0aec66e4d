//! The `SessionStore` contract suite: every session store, in memory or in a
//! database, meets the same checks.

use crate::session::{SessionError, SessionLimits, SessionRecord, SessionStore, new_session_id, session_digest};
use serde_json::json;
use std::future::Future;

const T0: u64 = 1_800_000_000_000;
const IDLE: u64 = 30 * 60 * 1000;

fn limits(max: usize) -> SessionLimits {
    SessionLimits { max_sessions: max, max_per_client: 1000, idle_ms: IDLE, evict_idle_ms: 60_000 }
}

/// A record of `client` opened at `at`.
fn of(client: &str, at: u64) -> SessionRecord {
    let mut r = SessionRecord::new(new_session_id(), None, "2025-11-25", at);
    r.client_key = client.to_owned();
    r
}

/// Runs every check against stores built by `make`, which must return an empty
/// store on each call (the cap and sweep checks count rows).
pub async fn session_store_contract<S, F, Fut>(make: F)
where
    S: SessionStore,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    round_trip(&make().await).await;
    owner_binding(&make().await).await;
    idle_expiry(&make().await).await;
    touch_seen_matches_touch(&make().await).await;
    delete_ends_it(&make().await).await;
    cap_evicts_oldest_idle(&make().await).await;
    per_client_cap_evicts_only_the_clients_own(&make().await).await;
    per_client_cap_is_at_most_a_quarter_of_the_total(&make().await).await;
    sweep_removes_idle(&make().await).await;
}

async fn round_trip<S: SessionStore>(s: &S) {
    let mut r = SessionRecord::new(new_session_id(), Some("alice".into()), "2025-11-25", T0);
    r.client_capabilities = json!({"sampling": {}}).as_object().cloned().unwrap_or_default();
    s.create(r.clone(), limits(10)).await.expect("create");
    assert!(matches!(s.create(r.clone(), limits(10)).await, Err(SessionError::Duplicate)), "duplicate id refused");
    let got = s.touch(&r.id, Some("alice"), T0 + 5, IDLE).await.expect("touch");
    assert_eq!(got.protocol_version, "2025-11-25");
    assert_eq!(got.client_capabilities, r.client_capabilities);
    assert_eq!(got.last_seen_ms, T0 + 5, "touch moves last_seen");
    let mut changed = got.clone();
    changed.initialized = true;
    changed.log_level = Some("debug".into());
    s.update(&changed).await.expect("update");
    let again = s.touch(&r.id, Some("alice"), T0 + 6, IDLE).await.expect("touch");
    assert!(again.initialized);
    assert_eq!(again.log_level.as_deref(), Some("debug"));
}

async fn owner_binding<S: SessionStore>(s: &S) {
    let r = SessionRecord::new(new_session_id(), Some("alice".into()), "2025-11-25", T0);
    assert_eq!(r.client_key, "principal:alice", "an owner is its own client");
    s.create(r.clone(), limits(10)).await.expect("create");
    assert_eq!(s.touch(&r.id, Some("alice"), T0, IDLE).await.expect("touch").client_key, "principal:alice");
    assert!(matches!(s.touch(&r.id, Some("mallory"), T0, IDLE).await, Err(SessionError::NotFound)));
    assert!(matches!(s.touch(&r.id, None, T0, IDLE).await, Err(SessionError::NotFound)));
    assert!(matches!(s.delete(&r.id, Some("mallory")).await, Err(SessionError::NotFound)));
    let mut foreign = r.clone();
    foreign.owner = Some("mallory".into());
    assert!(matches!(s.update(&foreign).await, Err(SessionError::NotFound)), "update is owner-scoped");
    s.touch(&r.id, Some("alice"), T0, IDLE).await.expect("the owner still has it");
    assert!(matches!(s.touch("no-such-session", Some("alice"), T0, IDLE).await, Err(SessionError::NotFound)));
}

async fn idle_expiry<S: SessionStore>(s: &S) {
    let r = SessionRecord::new(new_session_id(), None, "2025-06-18", T0);
    s.create(r.clone(), limits(10)).await.expect("create");
    s.touch(&r.id, None, T0 + IDLE - 1, IDLE).await.expect("live just before the timeout");
    // Idle counts from the last touch.
    s.touch(&r.id, None, T0 + 2 * IDLE - 2, IDLE).await.expect("live: touched recently");
    assert!(matches!(s.touch(&r.id, None, T0 + 3 * IDLE, IDLE).await, Err(SessionError::NotFound)), "expired");
}

/// `touch_seen` (a node that holds the record) moves and answers `last_seen_ms` exactly as
/// `touch` does, with the same owner and expiry rules, and keeps the clientInfo text.
async fn touch_seen_matches_touch<S: SessionStore>(s: &S) {
    let mut r = SessionRecord::new(new_session_id(), Some("alice".into()), "2025-11-25", T0);
    r.client_info = json!({"name": "probe", "version": "1"}).to_string();
    s.create(r.clone(), limits(10)).await.expect("create");
    assert_eq!(s.touch_seen(&r.id, Some("alice"), T0 + 7, IDLE).await.expect("touch_seen"), T0 + 7);
    assert_eq!(s.touch_seen(&r.id, Some("alice"), T0 + 3, IDLE).await.expect("never backwards"), T0 + 7);
    let got = s.touch(&r.id, Some("alice"), T0 + 8, IDLE).await.expect("touch");
    assert_eq!(got.last_seen_ms, T0 + 8);
    let info: serde_json::Value = serde_json::from_str(&got.client_info).expect("clientInfo is JSON text");
    assert_eq!(info["name"], "probe");
    assert!(matches!(s.touch_seen(&r.id, Some("mallory"), T0 + 9, IDLE).await, Err(SessionError::NotFound)));
    assert!(matches!(s.touch_seen(&r.id, Some("alice"), T0 + 9 + IDLE, IDLE).await, Err(SessionError::NotFound)));
    assert!(
        matches!(s.touch(&r.id, Some("alice"), T0 + 9, IDLE).await, Err(SessionError::NotFound)),
        "expired is gone"
    );
}

async fn delete_ends_it<S: SessionStore>(s: &S) {
    let r = SessionRecord::new(new_session_id(), None, "2025-11-25", T0);
    s.create(r.clone(), limits(10)).await.expect("create");
    s.delete(&r.id, None).await.expect("delete");
    assert!(matches!(s.touch(&r.id, None, T0, IDLE).await, Err(SessionError::NotFound)));
    assert!(matches!(s.delete(&r.id, None).await, Err(SessionError::NotFound)));
}

async fn cap_evicts_oldest_idle<S: SessionStore>(s: &S) {
    // Three clients (one session each is their share of three).
    let ids: Vec<String> = (0..3).map(|_| new_session_id()).collect();
    for (i, id) in ids.iter().enumerate() {
        let mut r = SessionRecord::new(id.clone(), None, "2025-11-25", T0 + i as u64);
        r.client_key = format!("ip:192.0.2.{i}");
        s.create(r, limits(3)).await.expect("under the cap");
    }
    // Nobody idle long enough: a clear refusal.
    let extra = of("ip:192.0.2.9", T0 + 10);
    assert!(matches!(s.create(extra, limits(3)).await, Err(SessionError::LimitReached)));
    // The second and third were used recently; the first is the oldest idle.
    let later = T0 + 120_000;
    s.touch(&ids[1], None, later, IDLE).await.expect("touch");
    s.touch(&ids[2], None, later, IDLE).await.expect("touch");
    let newcomer = of("ip:192.0.2.9", later + 70_000);
    let created = s.create(newcomer.clone(), limits(3)).await.expect("room made by eviction");
    assert_eq!(created.removed, vec![session_digest(&ids[0])], "the create names what it evicted");
    assert!(
        matches!(s.touch(&ids[0], None, later + 70_000, IDLE).await, Err(SessionError::NotFound)),
        "oldest evicted"
    );
    s.touch(&ids[1], None, later + 70_000, IDLE).await.expect("kept");
    s.touch(&newcomer.id, None, later + 70_000, IDLE).await.expect("stored");
    assert_eq!(s.count().await.expect("len"), 3);
}

async fn sweep_removes_idle<S: SessionStore>(s: &S) {
    let old = SessionRecord::new(new_session_id(), None, "2025-11-25", T0);
    let fresh = SessionRecord::new(new_session_id(), None, "2025-11-25", T0 + IDLE);
    s.create(old.clone(), limits(10)).await.expect("create");
    s.create(fresh.clone(), limits(10)).await.expect("create");
    assert_eq!(s.sweep(T0 + IDLE + 1, IDLE).await.expect("sweep"), 1);
    assert_eq!(s.count().await.expect("len"), 1);
    s.touch(&fresh.id, None, T0 + IDLE + 1, IDLE).await.expect("fresh kept");
}

/// One client at its cap: its own least recently seen idle session makes room, or the
/// create is refused with `ClientLimitReached`; other clients' sessions are never touched.
async fn per_client_cap_evicts_only_the_clients_own<S: SessionStore>(s: &S) {
    let cap = SessionLimits { max_per_client: 2, ..limits(10) };
    let (a1, a2, b1) = (of("ip:192.0.2.1", T0), of("ip:192.0.2.1", T0 + 1), of("principal:bob", T0 + 2));
    for r in [&a1, &a2, &b1] {
        assert!(s.create(r.clone(), cap).await.expect("under the caps").removed.is_empty());
    }
    // Nobody of this client idle long enough: refused, and nothing went.
    let a3 = of("ip:192.0.2.1", T0 + 10);
    assert!(matches!(s.create(a3, cap).await, Err(SessionError::ClientLimitReached)), "the client's cap");
    assert_eq!(s.count().await.expect("len"), 3, "a refused create evicts nothing");
    let b2 = of("principal:bob", T0 + 11);
    s.create(b2.clone(), cap).await.expect("another client still has room");
    // The client's oldest idle session makes room; bob's, idle as long, stay.
    let later = T0 + 120_000;
    s.touch(&a2.id, None, later, IDLE).await.expect("touch");
    let a4 = of("ip:192.0.2.1", later + 10_000);
    let created = s.create(a4.clone(), cap).await.expect("room made by the client's own eviction");
    assert_eq!(created.removed, vec![session_digest(&a1.id)]);
    let now = later + 10_000;
    assert!(matches!(s.touch(&a1.id, None, now, IDLE).await, Err(SessionError::NotFound)), "evicted");
    for r in [&a2, &a4, &b1, &b2] {
        s.touch(&r.id, None, now, IDLE).await.expect("kept");
    }
    // Expired sessions do not count against the client.
    let c1 = of("ip:198.51.100.9", now);
    let c2 = of("ip:198.51.100.9", now);
    s.create(c1, cap).await.expect("create");
    s.create(c2, cap).await.expect("create");
    s.create(of("ip:198.51.100.9", now + IDLE + 1), cap).await.expect("the expired two are not counted");
}

/// Whatever `max_per_client` says, one client holds at most a quarter of `max_sessions`
/// (at least one): its default of 64 cannot let one client fill a cap of 8.
async fn per_client_cap_is_at_most_a_quarter_of_the_total<S: SessionStore>(s: &S) {
    let eight = SessionLimits { max_per_client: 64, ..limits(8) };
    for i in 0..2 {
        s.create(of("principal:alice", T0 + i), eight).await.expect("alice's share");
    }
    let third = of("principal:alice", T0 + 2);
    assert!(matches!(s.create(third, eight).await, Err(SessionError::ClientLimitReached)), "past her share");
    for i in 0..2 {
        s.create(of("principal:bob", T0 + 3 + i), eight).await.expect("bob's share is still there");
    }
    assert_eq!(s.count().await.expect("len"), 4);
}
