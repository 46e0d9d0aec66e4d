//! The row cap on a sharded counter (migration 0014), so that batches of
//! creates — of one node and of many — commit side by side.
//!
//! `conduit_task_shards` has [`SHARDS`] rows. Each counts the tasks credited
//! to it (`n`) and holds part of the room left under the cap (`free`, handed
//! out for the cap value `cap`, the same on every shard; NULL while no room is
//! handed out). The invariant, over all shards: `sum(free) <= cap - sum(n)`
//! whenever `cap` is set, and every `free` is `0` when it is not.
//!
//! - A batch first [`claim`]s: it locks one shard that has room for the whole
//!   batch (skipping shards other batches hold, starting at a shard of its
//!   own), inserts, and moves the rows it inserted from `free` to `n`. Creates
//!   without a cap take any shard while no room is handed out (or room, like
//!   the others). No batch waits for another here.
//! - When no shard has room (the room ran short, or the batch's cap is not
//!   the one the room was handed out for), the batch [`rebalance`]s: it locks
//!   every shard in id order (so it waits for the batches in flight and no two
//!   deadlock), counts the rows, admits the rows that fit under its cap,
//!   inserts them, and hands the room left out again, evenly. A create without
//!   a cap takes the room back instead.
//! - A delete lowers the `n` of the shard recorded on each deleted row
//!   ([`release`]); the room it frees is handed out by the next rebalance.
//!
//! The cap is exact across nodes: a claim never takes more than its shard was
//! given, and the room given out never exceeds what the count left.

use crate::common::NewRow;
use sqlx::postgres::PgConnection;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// Rows of `conduit_task_shards` (ids `0..SHARDS`; migration 0014 makes them).
pub(super) const SHARDS: u32 = 16;

/// The rows of a batch as arrays (`$1`..`$10`) with their position (`ord`).
const ROWS: &str = "\
unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], \
       $7::bigint[], $8::text[], $9::bigint[], $10::text[]) \
WITH ORDINALITY AS r(task_id, owner, status, version, created_at_ms, expires_at_ms, terminal_at_ms, \
                     lease_node, lease_expires_ms, doc, ord)";

const INSERT_COLUMNS: &str = "INSERT INTO conduit_tasks (task_id, owner, status, version, created_at_ms, \
expires_at_ms, terminal_at_ms, lease_node, lease_expires_ms, doc, shard) \
SELECT r.task_id, r.owner, r.status, r.version, r.created_at_ms, r.expires_at_ms, r.terminal_at_ms, \
r.lease_node, r.lease_expires_ms, r.doc::json";

/// [`claim`]: `$11` the cap (NULL: none), `$12` the shard to start from, `$13`
/// the rows of the batch. Answers the shard taken (NULL: none had room, nothing
/// was written) and the ids inserted.
static CLAIM: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH s AS (SELECT id FROM conduit_task_shards \
                    WHERE CASE WHEN $11::bigint IS NULL THEN cap IS NULL OR free >= $13::bigint \
                               ELSE cap = $11::bigint AND free >= $13::bigint END \
                    ORDER BY id < $12::smallint, id LIMIT 1 FOR UPDATE SKIP LOCKED), \
         ins AS ({INSERT_COLUMNS}, s.id FROM {ROWS}, s ORDER BY r.ord \
                 ON CONFLICT (task_id) DO NOTHING RETURNING task_id), \
         c AS (SELECT count(*)::bigint AS c FROM ins), \
         bump AS (UPDATE conduit_task_shards SET n = n + c.c, free = free - LEAST(free, c.c) \
                  FROM c WHERE id = (SELECT id FROM s)) \
         SELECT (SELECT id FROM s), ARRAY(SELECT task_id FROM ins)"
    )
});

/// [`rebalance`]: every shard locked in id order, the rows admitted while
/// `count + ord <= $11`, credited to shard `$12`, and the room left handed
/// out (`room / shards` each, one more to the first `room % shards`).
/// Answers the count as it was and the ids inserted.
static REBALANCE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH l AS (SELECT id, n FROM conduit_task_shards ORDER BY id FOR UPDATE), \
         tot AS (SELECT sum(n)::bigint AS t, count(*)::bigint AS k FROM l), \
         ins AS ({INSERT_COLUMNS}, $12::smallint FROM {ROWS}, tot \
                 WHERE $11::bigint IS NULL OR tot.t + r.ord <= $11::bigint ORDER BY r.ord \
                 ON CONFLICT (task_id) DO NOTHING RETURNING task_id), \
         c AS (SELECT count(*)::bigint AS c FROM ins), \
         room AS (SELECT GREATEST($11::bigint - tot.t - c.c, 0) AS h, tot.k, c.c FROM tot, c), \
         upd AS (UPDATE conduit_task_shards AS sh \
                 SET n = sh.n + CASE WHEN sh.id = $12::smallint THEN room.c ELSE 0 END, \
                     cap = $11::bigint, \
                     free = COALESCE(room.h / room.k + CASE WHEN sh.id < room.h % room.k THEN 1 ELSE 0 END, 0) \
                 FROM room WHERE sh.id IN (SELECT id FROM l)) \
         SELECT (SELECT t FROM tot), ARRAY(SELECT task_id FROM ins)"
    )
});

/// Where each writer's batches start looking for a shard: a random shard
/// per process, then the next one per batch, so the flushers of one node
/// and the nodes of a service spread over the shards.
#[derive(Debug)]
pub(super) struct Cursor(AtomicU32);

impl Cursor {
    pub(super) fn new() -> Self {
        use std::hash::BuildHasher;
        let seed = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
        Self(AtomicU32::new((seed % u64::from(SHARDS)) as u32))
    }

    /// The shard the next batch starts from.
    pub(super) fn next(&self) -> i16 {
        (self.0.fetch_add(1, Ordering::Relaxed) % SHARDS) as i16
    }
}

type RowsQuery<'q, O> = sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>;

/// Binds the rows `todo` of `rows` as `$1`..`$10`.
fn bind_rows<'q, O>(q: RowsQuery<'q, O>, rows: &[&'q NewRow], todo: &[usize]) -> RowsQuery<'q, O> {
    let ints = |f: &dyn Fn(&NewRow) -> Option<i64>| todo.iter().map(|&i| f(rows[i])).collect::<Vec<_>>();
    let texts = |f: &dyn Fn(&'q NewRow) -> Option<&'q str>| todo.iter().map(|&i| f(rows[i])).collect::<Vec<_>>();
    q.bind(texts(&|r| Some(r.task_id.as_str())))
        .bind(texts(&|r| r.columns.owner.as_deref()))
        .bind(texts(&|r| Some(r.columns.status)))
        .bind(ints(&|r| Some(r.columns.version)))
        .bind(ints(&|r| Some(r.columns.created_at_ms)))
        .bind(ints(&|r| r.columns.expires_at_ms))
        .bind(ints(&|r| r.columns.terminal_at_ms))
        .bind(texts(&|r| r.columns.lease_node.as_deref()))
        .bind(ints(&|r| r.columns.lease_expires_ms))
        .bind(texts(&|r| Some(r.columns.doc.as_str())))
}

/// Inserts the rows `todo` of `rows` (one cap, `max_rows`) on one shard with
/// room for all of them, starting the search at `start`: the ids inserted,
/// or `None` when no shard had room (nothing was written or locked).
pub(super) async fn claim(
    conn: &mut PgConnection,
    rows: &[&NewRow],
    todo: &[usize],
    max_rows: Option<i64>,
    start: i16,
) -> Result<Option<Vec<String>>, sqlx::Error> {
    let n = i64::try_from(todo.len()).unwrap_or(i64::MAX);
    let q = bind_rows::<(Option<i16>, Vec<String>)>(sqlx::query_as(CLAIM.as_str()), rows, todo)
        .bind(max_rows)
        .bind(start)
        .bind(n);
    let (shard, ids) = q.fetch_one(conn).await?;
    Ok(shard.map(|_| ids))
}

/// Inserts, under every shard's lock, the first rows of `todo` that fit
/// under `max_rows`, credited to `shard`, and hands the room left out again:
/// the count before the batch and the ids inserted.
pub(super) async fn rebalance(
    conn: &mut PgConnection,
    rows: &[&NewRow],
    todo: &[usize],
    max_rows: Option<i64>,
    shard: i16,
) -> Result<(i64, Vec<String>), sqlx::Error> {
    let q = bind_rows::<(Option<i64>, Vec<String>)>(sqlx::query_as(REBALANCE.as_str()), rows, todo)
        .bind(max_rows)
        .bind(shard);
    let (n, ids) = q.fetch_one(conn).await?;
    Ok((n.unwrap_or(0), ids))
}

/// Lowers each shard's count by the rows deleted from it (`gone`: shard,
/// rows), locking the shards in id order, inside the caller's transaction.
pub(super) async fn release(conn: &mut PgConnection, gone: &[(i16, i64)]) -> Result<(), sqlx::Error> {
    if gone.is_empty() {
        return Ok(());
    }
    let (ids, counts): (Vec<i16>, Vec<i64>) = gone.iter().copied().unzip();
    // Locked first, in id order, as a rebalance locks them: no deadlock.
    sqlx::query("SELECT id FROM conduit_task_shards WHERE id = ANY($1) ORDER BY id FOR UPDATE")
        .bind(&ids)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "UPDATE conduit_task_shards AS sh SET n = GREATEST(sh.n - d.k, 0) \
         FROM unnest($1::smallint[], $2::bigint[]) AS d(id, k) WHERE sh.id = d.id",
    )
    .bind(&ids)
    .bind(&counts)
    .execute(conn)
    .await?;
    Ok(())
}

/// A delete from `t` of the rows `condition` selects (after the CTEs of
/// `with`, if any), answering `(shard, rows deleted)`; on the unsharded
/// (legacy) table it also lowers the counter row.
pub(super) fn counted_delete(t: &str, sharded: bool, with: &str, condition: &str) -> String {
    let gone = format!(
        "WITH {with}gone AS (DELETE FROM {t} WHERE {condition} RETURNING {})",
        if sharded { "shard" } else { "0::smallint AS shard" }
    );
    if sharded {
        format!("{gone} SELECT shard, count(*)::bigint FROM gone GROUP BY shard ORDER BY shard")
    } else {
        format!(
            "{gone}, k AS (SELECT count(*)::bigint AS k FROM gone) \
             UPDATE conduit_legacy_task_count SET n = GREATEST(n - (SELECT k FROM k), 0) \
             WHERE id = 1 AND (SELECT k FROM k) > 0 RETURNING 0::smallint, (SELECT k FROM k)"
        )
    }
}
