//! A small connection pool.
//!
//! `sqlx::Pool` pings every connection when it is returned (one more round
//! trip per statement, during which the connection is unusable); for a store
//! whose every operation is one short statement that halves throughput. This
//! pool hands out connections in FIFO order behind a fair semaphore (waiting
//! has no deadline: like a lock, not like a timeout), opens them lazily,
//! pings only those idle for a while, and drops any connection whose
//! operation did not finish cleanly — so a broken connection is never reused
//! and the next operation reconnects.
//!
//! Every operation has a deadline ([`ConnPool::get`] sets it, [`bounded`]
//! keeps to it): a database whose connections hang (a network that drops
//! packets, a stopped server host) fails operations with a timeout instead
//! of holding them, and their connections are closed, never reused.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use sqlx::{ConnectOptions, Connection};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, SemaphorePermit};

/// A connection idle longer than this is pinged before it is handed out.
const STALE_AFTER: Duration = Duration::from_secs(30);

pub(crate) struct ConnPool<C: Connection> {
    opts: <C as Connection>::Options,
    idle: Mutex<Vec<(C, Instant)>>,
    gate: Semaphore,
    connect_timeout: Duration,
    /// How long one operation may take, from asking for a connection to its
    /// last statement's answer.
    op_timeout: Duration,
    /// Run on every new connection (PostgreSQL: `SET search_path`).
    setup: Option<Setup<C>>,
    /// Return connections even from failed or cancelled operations (an
    /// in-memory SQLite database dies with its last connection).
    keep_on_drop: bool,
}

impl<C: Connection> std::fmt::Debug for ConnPool<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnPool")
            .field("available", &self.gate.available_permits())
            .field("closed", &self.gate.is_closed())
            .finish_non_exhaustive()
    }
}

/// A hook run on every new connection before it is used.
pub(crate) type Setup<C> = Box<dyn for<'c> Fn(&'c mut C) -> BoxFuture<'c, Result<(), sqlx::Error>> + Send + Sync>;

/// A connection checked out of the pool. [`Checkout::release`] puts it back;
/// dropping it instead closes it (the operation failed or was cancelled).
pub(crate) struct Checkout<'a, C: Connection> {
    pool: &'a ConnPool<C>,
    conn: Option<C>,
    _permit: SemaphorePermit<'a>,
    /// When the operation that checked the connection out must be done.
    deadline: tokio::time::Instant,
}

/// Runs `op` (statements on a checked-out connection) until `deadline`;
/// past it the operation fails with [`timed_out`]'s error, which every engine
/// treats as a broken connection: it is closed, and the operation is not
/// retried on another one (the database is not answering).
///
/// Not an `async fn`: that would keep `op` twice in its state (the argument, and
/// inside the timeout), and sqlx 0.9's futures are kilobytes each, copied on
/// every move.
pub(crate) fn bounded<T, F>(deadline: tokio::time::Instant, op: F) -> impl Future<Output = Result<T, sqlx::Error>>
where
    F: Future<Output = Result<T, sqlx::Error>>,
{
    tokio::time::timeout_at(deadline, op).map(|r| r.unwrap_or_else(|_| Err(timed_out())))
}

/// The error of an operation that ran out of time.
pub(crate) fn timed_out() -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(std::io::ErrorKind::TimedOut, "the database did not answer in time"))
}

/// Whether `e` is an operation that ran out of time ([`bounded`], [`ConnPool::get`]).
pub(crate) fn is_timeout(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut)
        || matches!(e, sqlx::Error::PoolTimedOut)
}

impl<C: Connection> ConnPool<C> {
    pub(crate) fn new(
        opts: <C as Connection>::Options,
        size: u32,
        connect_timeout: Duration,
        op_timeout: Duration,
        setup: Option<Setup<C>>,
        keep_on_drop: bool,
    ) -> Self {
        Self {
            opts,
            idle: Mutex::new(Vec::new()),
            gate: Semaphore::new(size.max(1) as usize),
            connect_timeout,
            op_timeout,
            setup,
            keep_on_drop,
        }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<(C, Instant)>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a turn, then hands out an idle connection or opens one; the
    /// checkout's deadline (the pool's operation timeout from now) bounds the
    /// wait, the connect, and, through [`bounded`], the statements run on it.
    pub(crate) async fn get(&self) -> Result<Checkout<'_, C>, sqlx::Error> {
        let deadline = tokio::time::Instant::now() + self.op_timeout;
        bounded(deadline, self.checkout(deadline)).await
    }

    async fn checkout(&self, deadline: tokio::time::Instant) -> Result<Checkout<'_, C>, sqlx::Error> {
        let permit = self.gate.acquire().await.map_err(|_| sqlx::Error::PoolClosed)?;
        loop {
            let idle = self.idle().pop();
            match idle {
                // The ping and the connect are boxed: they are rare, and their futures
                // (kilobytes in sqlx 0.9) would otherwise size every checkout's.
                Some((mut conn, since)) => {
                    if since.elapsed() > STALE_AFTER && Box::pin(conn.ping()).await.is_err() {
                        continue; // dropped: the server or a proxy closed it
                    }
                    return Ok(Checkout { pool: self, conn: Some(conn), _permit: permit, deadline });
                }
                None => {
                    let conn = Box::pin(self.open()).await?;
                    return Ok(Checkout { pool: self, conn: Some(conn), _permit: permit, deadline });
                }
            }
        }
    }

    /// A deadline one operation timeout from now, for statements run on a
    /// connection the pool does not hand out (see [`ConnPool::open`]).
    #[cfg(feature = "postgres")]
    pub(crate) fn deadline_from_now(&self) -> tokio::time::Instant {
        tokio::time::Instant::now() + self.op_timeout
    }

    /// Opens a connection of this pool's kind (setup run) that the pool does
    /// not count or keep: for a session that must stay open, such as the one
    /// holding a node id's lock.
    pub(crate) async fn open(&self) -> Result<C, sqlx::Error> {
        let connect = async {
            let mut conn = self.opts.connect().await?;
            if let Some(setup) = &self.setup {
                setup(&mut conn).await?;
            }
            Ok::<C, sqlx::Error>(conn)
        };
        tokio::time::timeout(self.connect_timeout, connect).await.map_err(|_| sqlx::Error::PoolTimedOut)?
    }

    /// Closes the pool: waiting and later operations fail, idle connections close.
    pub(crate) async fn close(&self) {
        self.gate.close();
        let idle: Vec<(C, Instant)> = std::mem::take(&mut *self.idle());
        for (conn, _) in idle {
            let _ = conn.close().await;
        }
    }
}

impl<C: Connection> Checkout<'_, C> {
    /// When the operation holding this checkout must be done (see [`bounded`]).
    pub(crate) fn deadline(&self) -> tokio::time::Instant {
        self.deadline
    }

    /// The connection.
    pub(crate) fn conn(&mut self) -> &mut C {
        self.conn.as_mut().expect("a checkout holds its connection until released")
    }

    /// Returns the connection to the pool for reuse.
    pub(crate) fn release(mut self) {
        self.put_back();
    }

    fn put_back(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.idle.lock().unwrap_or_else(|p| p.into_inner()).push((conn, Instant::now()));
        }
    }

    /// Ends the checkout after an operation: the connection goes back to the
    /// pool unless the operation failed in a way that `broken` says may have
    /// left it unusable, in which case it is closed.
    pub(crate) fn finish<T>(
        self,
        result: Result<T, sqlx::Error>,
        broken: impl Fn(&sqlx::Error) -> bool,
    ) -> Result<T, sqlx::Error> {
        match &result {
            Err(e) if broken(e) => drop(self),
            _ => self.release(),
        }
        result
    }
}

impl<C: Connection> Drop for Checkout<'_, C> {
    fn drop(&mut self) {
        if self.pool.keep_on_drop {
            self.put_back();
        }
    }
}
