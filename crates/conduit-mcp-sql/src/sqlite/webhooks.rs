//! `SqliteWebhookStore`: the webhook state of every process on the SQLite
//! file (migration 0041). Every write is one `BEGIN IMMEDIATE` transaction on
//! the store's one writer, so a cap is checked and the row written with no
//! other writer between them, and a claim takes each entry once.

use super::{SqlQuery, SqliteStore, backend, broken};
use crate::common::webhook_tx as tx;
use crate::common::webhooks::{self as sql, ENTRY_COLUMNS};
use crate::pool::bounded;
use async_trait::async_trait;
use conduit_mcp::ext::events::webhook::{
    OutboxEntry, SWEEP_BATCH, Settlement, TERMINATED_ID_PREFIX, UpsertError, Upserted, VERIFICATION_KEEP_MS,
    WebhookCaps, WebhookStore, WebhookSubscription,
};
use conduit_mcp::task::StoreError;
use sqlx::sqlite::{Sqlite, SqliteConnection, SqliteRow};
use sqlx::{AssertSqlSafe, Connection};
use std::sync::LazyLock;

const ENGINE: &str = "sqlite";

/// The engine the shared transaction bodies run on.
type DB = Sqlite;

static WATERMARK_SQL: LazyLock<String> = LazyLock::new(|| sql::watermark_sql("max", "min"));
static CLAIM_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE conduit_webhook_outbox SET lease_node = $1, lease_until_ms = $3 \
         WHERE (subscription_id, id) IN (SELECT c.subscription_id, c.id FROM conduit_webhook_outbox c \
         JOIN conduit_webhook_subscriptions s ON s.id = c.subscription_id \
         WHERE c.due_ms <= $2 AND (c.lease_until_ms IS NULL OR c.lease_until_ms <= $2) AND s.active \
         AND (s.refresh_before_ms IS NULL OR s.refresh_before_ms > $2) \
         AND (substr(c.id, 1, {n}) <> '{TERMINATED_ID_PREFIX}' OR NOT EXISTS (SELECT 1 FROM conduit_webhook_outbox w \
         WHERE w.subscription_id = c.subscription_id AND w.id <> c.id)) \
         ORDER BY c.due_ms, c.position LIMIT $4) RETURNING {ENTRY_COLUMNS}",
        n = TERMINATED_ID_PREFIX.len()
    )
});

/// The webhook store in an SQLite database; made by
/// [`SqliteStore::webhooks`], it reads on the store's readers and writes on
/// its one writer.
#[derive(Debug, Clone)]
pub struct SqliteWebhookStore {
    store: SqliteStore,
}

impl SqliteStore {
    /// The webhook store in the same schema (its tables are created by the
    /// same migrations).
    pub fn webhooks(&self) -> SqliteWebhookStore {
        SqliteWebhookStore { store: self.clone() }
    }
}

fn decode_sub(row: &SqliteRow) -> Result<WebhookSubscription, StoreError> {
    sql::decode_subscription(ENGINE, row)
}

impl SqliteWebhookStore {
    async fn rows<'q>(
        &self,
        what: &str,
        s: &'q str,
        bind: impl Fn(SqlQuery<'q>) -> SqlQuery<'q>,
    ) -> Result<Vec<SqliteRow>, StoreError> {
        let mut c = self.store.engine().reader().await?;
        let rows = bounded(c.deadline(), bind(sqlx::query(AssertSqlSafe(s))).fetch_all(c.conn())).await;
        c.finish(rows, broken).map_err(|e| backend(what, e))
    }

    /// Runs `op` in one transaction on one connection.
    async fn in_tx<T>(
        &self,
        what: &str,
        op: impl for<'c> FnOnce(&'c mut SqliteConnection) -> futures_util::future::BoxFuture<'c, Result<T, sqlx::Error>>,
    ) -> Result<T, StoreError> {
        let mut c = self.store.engine().writer().await?;
        let done = bounded(c.deadline(), async {
            let mut tx = c.conn().begin_with("BEGIN IMMEDIATE").await?;
            let out = op(&mut tx).await?;
            tx.commit().await?;
            Ok(out)
        })
        .await;
        c.finish(done, broken).map_err(|e| backend(what, e))
    }
}

/// The shared transaction bodies with this engine's statements.
fn tx() -> tx::Tx<DB> {
    tx::Tx {
        // `BEGIN IMMEDIATE` already makes upserts take turns.
        serialize: None,
        existing: "SELECT refresh_before_ms FROM conduit_webhook_subscriptions WHERE id = $1",
        lock: "SELECT 1 FROM conduit_webhook_subscriptions WHERE id = $1",
        watermark: WATERMARK_SQL.as_str(),
        engine: std::marker::PhantomData,
    }
}

#[async_trait]
impl WebhookStore for SqliteWebhookStore {
    async fn upsert(&self, sub: WebhookSubscription, caps: WebhookCaps, now_ms: u64) -> Result<Upserted, UpsertError> {
        let now = sql::int(now_ms);
        let done = self
            .in_tx("upsert a webhook subscription", |conn| {
                Box::pin(async move { tx().upsert(conn, &sub, caps, now).await })
            })
            .await?;
        done.answer()
    }

    async fn get(&self, principal: &str, id: &str, now_ms: u64) -> Result<Option<WebhookSubscription>, StoreError> {
        let rows = self
            .rows("read a webhook subscription", sql::GET_SQL, |q| q.bind(id).bind(principal).bind(sql::int(now_ms)))
            .await?;
        rows.first().map(decode_sub).transpose()
    }

    async fn remove(&self, principal: &str, id: &str, now_ms: u64) -> Result<bool, StoreError> {
        let (id, principal) = (id.to_owned(), principal.to_owned());
        self.in_tx("remove a webhook subscription", |conn| {
            Box::pin(async move { tx().remove(conn, &id, &principal, sql::int(now_ms)).await })
        })
        .await
    }

    async fn verified(&self, principal: &str, url: &str) -> Result<bool, StoreError> {
        let rows = self.rows("read a webhook verification", sql::VERIFIED_SQL, |q| q.bind(principal).bind(url)).await?;
        Ok(!rows.is_empty())
    }

    async fn set_verified(&self, principal: &str, url: &str, at_ms: u64) -> Result<(), StoreError> {
        let q = sqlx::query(sql::SET_VERIFIED_SQL).bind(principal).bind(url).bind(sql::int(at_ms));
        self.store.engine().write("record a webhook verification", q).await.map(|_| ())
    }

    async fn enqueue(&self, entry: OutboxEntry) -> Result<(), StoreError> {
        let q = sql::bind_entry(sqlx::query(sql::ENQUEUE_SQL), &entry);
        self.store.engine().write("enqueue a webhook message", q).await.map(|_| ())
    }

    async fn live(
        &self,
        now_ms: u64,
        after_id: Option<&str>,
        max: usize,
    ) -> Result<Vec<WebhookSubscription>, StoreError> {
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let rows = self
            .rows("list webhook subscriptions", sql::LIVE_SQL, |q| {
                q.bind(sql::int(now_ms)).bind(after_id.unwrap_or("")).bind(limit)
            })
            .await?;
        rows.iter().map(decode_sub).collect()
    }

    async fn feed(
        &self,
        subscription_id: &str,
        from: u64,
        to: u64,
        entries: Vec<OutboxEntry>,
    ) -> Result<bool, StoreError> {
        let id = subscription_id.to_owned();
        let (from, to) = (sql::int(from), sql::int(to));
        self.in_tx("feed a webhook outbox", |conn| {
            Box::pin(async move { tx().feed(conn, &id, from, to, &entries).await })
        })
        .await
    }

    async fn claim(&self, node: &str, now_ms: u64, lease_ms: u64, max: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let until = sql::int(now_ms.saturating_add(lease_ms));
        let q =
            sqlx::query(AssertSqlSafe(CLAIM_SQL.as_str())).bind(node).bind(sql::int(now_ms)).bind(until).bind(limit);
        let mut c = self.store.engine().writer().await?;
        let rows = bounded(c.deadline(), q.fetch_all(c.conn())).await;
        let rows = c.finish(rows, broken).map_err(|e| backend("claim webhook messages", e))?;
        let mut entries = rows.iter().map(|r| sql::decode_entry(ENGINE, r)).collect::<Result<Vec<_>, _>>()?;
        sql::sort_claimed(&mut entries);
        Ok(entries)
    }

    async fn settle(
        &self,
        node: &str,
        subscription_id: &str,
        id: &str,
        outcome: Settlement,
        now_ms: u64,
    ) -> Result<bool, StoreError> {
        let (node, sub, id) = (node.to_owned(), subscription_id.to_owned(), id.to_owned());
        let (tx, now) = (tx(), sql::int(now_ms));
        self.in_tx("settle a webhook message", |conn| {
            Box::pin(async move { tx.settle(conn, &node, &sub, &id, outcome, now).await })
        })
        .await
    }

    async fn sweep(&self, now_ms: u64) -> Result<usize, StoreError> {
        self.in_tx("sweep webhook subscriptions", |conn| {
            Box::pin(async move {
                let batch = i64::try_from(SWEEP_BATCH).unwrap_or(i64::MAX);
                let ids: Vec<String> = sqlx::query_scalar(sql::LAPSED_SQL)
                    .bind(sql::int(now_ms))
                    .bind(batch)
                    .fetch_all(&mut *conn)
                    .await?;
                for id in &ids {
                    sqlx::query(sql::DELETE_OUTBOX_SQL).bind(id).execute(&mut *conn).await?;
                    sqlx::query(sql::DELETE_SUB_SQL).bind(id).execute(&mut *conn).await?;
                }
                let cutoff = sql::int(now_ms.saturating_sub(VERIFICATION_KEEP_MS));
                sqlx::query(sql::STALE_VERIFICATIONS_SQL).bind(cutoff).execute(&mut *conn).await?;
                Ok(ids.len())
            })
        })
        .await
    }
}
