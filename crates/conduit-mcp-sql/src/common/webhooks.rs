//! What both engines' webhook stores share (migration 0041): the statements
//! that read the same in both dialects (`$N` parameters), the rows decoded
//! into records, and the values bound for a subscription.

use super::backend;
use conduit_mcp::ext::events::webhook::{
    DeliveryFailure, OutboxEntry, SubscriptionKey, WebhookSecret, WebhookSubscription,
};
use conduit_mcp::task::StoreError;
use sqlx::{Decode, Row, Type};

/// The columns an outbox entry is read from, in [`decode_entry`]'s order.
pub(crate) const ENTRY_COLUMNS: &str =
    "subscription_id, id, position, body, attempts, due_ms, lease_node, lease_until_ms";

/// `$1` = id, `$2` = principal, `$3` = now: the subscription if live.
pub(crate) const GET_SQL: &str = "SELECT id, principal, url, name, arguments, secret, previous_secret, \
     previous_secret_until_ms, refresh_before_ms, active, acked_through, fed_through, failing_since_ms, last_failure \
     FROM conduit_webhook_subscriptions WHERE id = $1 AND principal = $2 \
     AND (refresh_before_ms IS NULL OR refresh_before_ms > $3)";

/// `$1` = principal, `$2` = the id upserted, `$3` = now: how many live
/// subscriptions the principal holds besides it, and their bytes.
pub(crate) const USAGE_SQL: &str = "SELECT count(*), CAST(COALESCE(sum(held_bytes), 0) AS BIGINT) \
     FROM conduit_webhook_subscriptions WHERE principal = $1 AND id <> $2 \
     AND (refresh_before_ms IS NULL OR refresh_before_ms > $3)";

/// A whole subscription, bound by [`bind_subscription`].
pub(crate) const INSERT_SQL: &str = "INSERT INTO conduit_webhook_subscriptions (id, principal, url, name, arguments, \
     secret, previous_secret, previous_secret_until_ms, refresh_before_ms, active, acked_through, fed_through, \
     failing_since_ms, last_failure, held_bytes) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)";

/// A refresh: what [`bind_subscription`] binds at the same places, the rest kept.
pub(crate) const REFRESH_SQL: &str = "UPDATE conduit_webhook_subscriptions SET secret = $6, previous_secret = $7, \
     previous_secret_until_ms = $8, refresh_before_ms = $9, active = $10, held_bytes = $15 WHERE id = $1";

/// `$1` = subscription id.
pub(crate) const DELETE_SUB_SQL: &str = "DELETE FROM conduit_webhook_subscriptions WHERE id = $1";
/// `$1` = subscription id: its whole outbox.
pub(crate) const DELETE_OUTBOX_SQL: &str = "DELETE FROM conduit_webhook_outbox WHERE subscription_id = $1";

/// `$1` = id, `$2` = principal: removes it, returning its expiry.
pub(crate) const REMOVE_SQL: &str =
    "DELETE FROM conduit_webhook_subscriptions WHERE id = $1 AND principal = $2 RETURNING refresh_before_ms";

/// `$1` = principal, `$2` = url.
pub(crate) const VERIFIED_SQL: &str = "SELECT 1 FROM conduit_webhook_verifications WHERE principal = $1 AND url = $2";
/// `$1` = principal, `$2` = url, `$3` = when.
pub(crate) const SET_VERIFIED_SQL: &str = "INSERT INTO conduit_webhook_verifications (principal, url, verified_at_ms) \
     VALUES ($1, $2, $3) ON CONFLICT (principal, url) DO UPDATE SET verified_at_ms = excluded.verified_at_ms";

/// An entry bound by [`bind_entry`], kept out when its subscription is not
/// stored, and left as it is when one of its key is.
pub(crate) const ENQUEUE_SQL: &str = "INSERT INTO conduit_webhook_outbox (subscription_id, id, position, body, \
     attempts, due_ms) SELECT $1, $2, $3, $4, $5, $6 \
     WHERE EXISTS (SELECT 1 FROM conduit_webhook_subscriptions WHERE id = $1) \
     ON CONFLICT (subscription_id, id) DO NOTHING";

/// `$1` = now, `$2` = after this id, `$3` = most: the live subscriptions, by id.
pub(crate) const LIVE_SQL: &str = "SELECT id, principal, url, name, arguments, secret, previous_secret, \
     previous_secret_until_ms, refresh_before_ms, active, acked_through, fed_through, failing_since_ms, last_failure \
     FROM conduit_webhook_subscriptions WHERE (refresh_before_ms IS NULL OR refresh_before_ms > $1) AND id > $2 \
     ORDER BY id LIMIT $3";

/// `$1` = id, `$2` = from, `$3` = to: the compare-and-set of `feed`.
pub(crate) const FEED_SQL: &str =
    "UPDATE conduit_webhook_subscriptions SET fed_through = $3 WHERE id = $1 AND fed_through = $2";

/// `$1` = subscription, `$2` = entry id, `$3` = node: the entry goes if the node holds it.
pub(crate) const SETTLE_DELETE_SQL: &str =
    "DELETE FROM conduit_webhook_outbox WHERE subscription_id = $1 AND id = $2 AND lease_node = $3";
/// As [`SETTLE_DELETE_SQL`], `$4` = due again at: the entry waits for another attempt.
pub(crate) const SETTLE_RETRY_SQL: &str = "UPDATE conduit_webhook_outbox SET due_ms = $4, attempts = attempts + 1, \
     lease_node = NULL, lease_until_ms = NULL WHERE subscription_id = $1 AND id = $2 AND lease_node = $3";
/// `$1` = subscription, `$2` = now, `$3` = the failure's category.
pub(crate) const FAILED_SQL: &str = "UPDATE conduit_webhook_subscriptions SET \
     failing_since_ms = COALESCE(failing_since_ms, $2), last_failure = $3 WHERE id = $1";
/// `$1` = subscription.
pub(crate) const DELIVERED_SQL: &str =
    "UPDATE conduit_webhook_subscriptions SET failing_since_ms = NULL, last_failure = NULL WHERE id = $1";

/// `$1` = now, `$2` = most: the ids of lapsed subscriptions.
pub(crate) const LAPSED_SQL: &str = "SELECT id FROM conduit_webhook_subscriptions \
     WHERE refresh_before_ms <= $1 ORDER BY refresh_before_ms LIMIT $2";
/// `$1` = made before this: verifications no subscription names.
pub(crate) const STALE_VERIFICATIONS_SQL: &str = "DELETE FROM conduit_webhook_verifications \
     WHERE verified_at_ms < $1 AND NOT EXISTS (SELECT 1 FROM conduit_webhook_subscriptions \
     WHERE conduit_webhook_subscriptions.principal = conduit_webhook_verifications.principal \
     AND conduit_webhook_subscriptions.url = conduit_webhook_verifications.url)";

/// `$1` = subscription: `acked_through` to the safe watermark (see
/// `WebhookStore::settle`), with `max`/`min` of two values as the engine
/// spells them (`GREATEST`/`LEAST` on PostgreSQL).
pub(crate) fn watermark_sql(max: &str, min: &str) -> String {
    format!(
        "UPDATE conduit_webhook_subscriptions SET acked_through = {max}(acked_through, {min}(fed_through, \
         COALESCE((SELECT min(o.position) - 1 FROM conduit_webhook_outbox o \
         WHERE o.subscription_id = $1 AND o.position > 0), fed_through))) WHERE id = $1"
    )
}

/// u64 as stored (saturating).
pub(crate) fn int(v: u64) -> i64 {
    super::ms(v)
}

fn uint(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// The stored name of a failure category, back.
fn failure(name: &str) -> Option<DeliveryFailure> {
    use DeliveryFailure::*;
    [ConnectionRefused, Timeout, TlsError, Http4xx, Http5xx, ChallengeFailed].into_iter().find(|f| f.as_str() == name)
}

/// Binds `sub` as `$1..$15` of [`INSERT_SQL`] (and [`REFRESH_SQL`]).
pub(crate) fn bind_subscription<'q, DB: sqlx::Database>(
    q: super::Query<'q, DB>,
    sub: &WebhookSubscription,
) -> super::Query<'q, DB>
where
    String: sqlx::Encode<'q, DB> + Type<DB>,
    Option<String>: sqlx::Encode<'q, DB> + Type<DB>,
    i64: sqlx::Encode<'q, DB> + Type<DB>,
    Option<i64>: sqlx::Encode<'q, DB> + Type<DB>,
    bool: sqlx::Encode<'q, DB> + Type<DB>,
{
    let k = &sub.key;
    let previous = sub.previous_secret.as_ref();
    q.bind(sub.id.clone())
        .bind(k.principal.clone())
        .bind(k.url.clone())
        .bind(k.name.clone())
        .bind(k.arguments.to_string())
        .bind(sub.secret.expose().to_owned())
        .bind(previous.map(|(s, _)| s.expose().to_owned()))
        .bind(previous.map(|(_, until)| int(*until)))
        .bind(sub.refresh_before_ms.map(int))
        .bind(sub.active)
        .bind(int(sub.acked_through))
        .bind(int(sub.fed_through))
        .bind(sub.failing_since_ms.map(int))
        .bind(sub.last_failure.map(|f| f.as_str().to_owned()))
        .bind(i64::try_from(sub.held_bytes()).unwrap_or(i64::MAX))
}

/// Binds `e` as `$1..$6` of [`ENQUEUE_SQL`].
pub(crate) fn bind_entry<'q, DB: sqlx::Database>(q: super::Query<'q, DB>, e: &OutboxEntry) -> super::Query<'q, DB>
where
    String: sqlx::Encode<'q, DB> + Type<DB>,
    i64: sqlx::Encode<'q, DB> + Type<DB>,
    i32: sqlx::Encode<'q, DB> + Type<DB>,
    Vec<u8>: sqlx::Encode<'q, DB> + Type<DB>,
{
    q.bind(e.subscription_id.clone())
        .bind(e.id.clone())
        .bind(int(e.position))
        .bind(e.body.clone())
        .bind(i32::try_from(e.attempts).unwrap_or(i32::MAX))
        .bind(int(e.due_ms))
}

/// A subscription from a row of [`GET_SQL`]'s columns (and [`LIVE_SQL`]'s).
pub(crate) fn decode_subscription<'r, R>(engine: &str, row: &'r R) -> Result<WebhookSubscription, StoreError>
where
    R: Row,
    usize: sqlx::ColumnIndex<R>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    bool: Decode<'r, R::Database> + Type<R::Database>,
{
    let get = |e: sqlx::Error| backend(engine, "decode a webhook subscription", e);
    let arguments: String = row.try_get(4).map_err(get)?;
    let arguments = serde_json::from_str(&arguments)
        .map_err(|e| StoreError::backend(format!("{engine}: stored webhook arguments are unreadable: {e}"), e))?;
    let previous: Option<String> = row.try_get(6).map_err(get)?;
    let previous_until: Option<i64> = row.try_get(7).map_err(get)?;
    let last_failure: Option<String> = row.try_get(13).map_err(get)?;
    Ok(WebhookSubscription {
        id: row.try_get(0).map_err(get)?,
        key: SubscriptionKey {
            principal: row.try_get(1).map_err(get)?,
            url: row.try_get(2).map_err(get)?,
            name: row.try_get(3).map_err(get)?,
            arguments,
        },
        secret: WebhookSecret::new(row.try_get::<String, _>(5).map_err(get)?),
        previous_secret: previous.map(|s| (WebhookSecret::new(s), uint(previous_until.unwrap_or(0)))),
        refresh_before_ms: row.try_get::<Option<i64>, _>(8).map_err(get)?.map(uint),
        active: row.try_get(9).map_err(get)?,
        acked_through: uint(row.try_get(10).map_err(get)?),
        fed_through: uint(row.try_get(11).map_err(get)?),
        failing_since_ms: row.try_get::<Option<i64>, _>(12).map_err(get)?.map(uint),
        last_failure: last_failure.as_deref().and_then(failure),
    })
}

/// An outbox entry from a row of [`ENTRY_COLUMNS`].
pub(crate) fn decode_entry<'r, R>(engine: &str, row: &'r R) -> Result<OutboxEntry, StoreError>
where
    R: Row,
    usize: sqlx::ColumnIndex<R>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    i32: Decode<'r, R::Database> + Type<R::Database>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    let get = |e: sqlx::Error| backend(engine, "decode a webhook outbox entry", e);
    let lease_node: Option<String> = row.try_get(6).map_err(get)?;
    let lease_until: Option<i64> = row.try_get(7).map_err(get)?;
    Ok(OutboxEntry {
        subscription_id: row.try_get(0).map_err(get)?,
        id: row.try_get(1).map_err(get)?,
        position: uint(row.try_get(2).map_err(get)?),
        body: row.try_get(3).map_err(get)?,
        attempts: u32::try_from(row.try_get::<i32, _>(4).map_err(get)?).unwrap_or(0),
        due_ms: uint(row.try_get(5).map_err(get)?),
        lease: lease_node.zip(lease_until.map(uint)),
    })
}

/// Claim order, for the rows a claim returns (`RETURNING` keeps none).
pub(crate) fn sort_claimed(entries: &mut [OutboxEntry]) {
    entries.sort_by(|a, b| {
        (a.due_ms, a.position, &a.subscription_id, &a.id).cmp(&(b.due_ms, b.position, &b.subscription_id, &b.id))
    });
}
