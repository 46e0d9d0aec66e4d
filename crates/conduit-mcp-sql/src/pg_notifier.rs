//! `PgNotifier`: task changes delivered across nodes with PostgreSQL
//! `LISTEN`/`NOTIFY`.

use conduit_mcp::ext::tasks::{ListenNotifier, Notifier, Owner, TaskRecord, Tasks};
use conduit_mcp::session::{ForwardedResponse, RelayError, RelaySink, ResponseRelay};
use payload::{Incoming, Outgoing};
use sqlx::ConnectOptions;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPoolOptions};
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex, Once, OnceLock};
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

mod payload;

/// The default channel name.
pub const DEFAULT_CHANNEL: &str = "conduit_tasks";

const BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The largest payload published: PostgreSQL refuses a `NOTIFY` payload of 8000 bytes or more.
pub const MAX_PAYLOAD: usize = 7999;

/// A [`Notifier`] for many nodes on one PostgreSQL database.
///
/// Every change is published on a channel with a small payload — the task id
/// and its version, never the result; changes that queue up while one
/// statement is under way are published together by the next, packed into as
/// few `NOTIFY` payloads as fit (about 140 changes each). The node that
/// made a change delivers it to its own listen streams at once. Every other
/// node listens on the channel and, when something there cares about the task
/// (a listen stream naming it, work waiting on it or running it), reads the
/// task from the store, delivers it to its own listen streams (only those
/// whose principal owns the task) and wakes its own workers; a change nobody
/// there cares about costs it no read. So a `notifications/tasks` reaches a listen stream on whichever
/// node holds it, and `spawn`ed work waiting for input wakes on whichever node
/// runs it.
///
/// The legacy era's tasks flow the same way: attach a `PgNotifier` (on a
/// channel of its own, e.g. `conduit_legacy_tasks`) to the
/// [`LegacyTasks`](conduit_mcp::ext::tasks::legacy_store::LegacyTasks) handle, and a
/// `tasks/result` waiting on one node wakes when another node finishes the task.
///
/// The same channel carries legacy sessions' client responses between nodes:
/// as the [`ResponseRelay`] of a `SessionConfig` (`.relay(notifier.clone())`),
/// a response to an `elicitation/create` (or sampling, roots) POSTed to a node
/// that does not hold the waiting call is published here and delivered by the
/// node that does. A response whose payload would exceed [`MAX_PAYLOAD`] bytes
/// is refused (the POST gets 413 and the waiting call an error saying why).
///
/// The listener reconnects after the database drops its connection and then
/// re-reads every watched or awaited task, so the streams and waiters it
/// serves survive and miss no final state (a change made while it was
/// disconnected arrives when it is back).
///
/// ```no_run
/// # use conduit_mcp::ext::tasks::{NotifierConfig, Tasks, TasksConfig};
/// # use conduit_mcp_sql::{PgNotifier, PostgresStore};
/// # use std::sync::Arc;
/// # async fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
/// let clock = Arc::new(conduit_mcp::clock::SystemClock);
/// let store = PostgresStore::connect(url, clock.clone()).await?;
/// let notifier = PgNotifier::connect(url, conduit_mcp_sql::pg_notifier::DEFAULT_CHANNEL).await?;
/// let tasks = Tasks::with_clock(
///     TasksConfig::enabled().store(Arc::new(store)).notifier(NotifierConfig::Custom(Arc::new(notifier.clone()))),
///     clock,
/// )?;
/// notifier.attach(&tasks);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PgNotifier {
    inner: Arc<Inner>,
}

struct Inner {
    channel: String,
    options: PgConnectOptions,
    publish: UnboundedSender<Outgoing>,
    pending: Mutex<Option<UnboundedReceiver<Outgoing>>>,
    tasks: OnceLock<Tasks>,
    sink: OnceLock<RelaySink>,
    started: Once,
    /// Whether the listener's `LISTEN` is in place.
    listening: tokio::sync::watch::Sender<bool>,
    delivered: Mutex<HashMap<String, u64>>,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for PgNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgNotifier").field("channel", &self.inner.channel).finish_non_exhaustive()
    }
}

/// Why a `PgNotifier` could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NotifierError {
    /// The URL does not parse.
    #[error("invalid PostgreSQL URL: {0}")]
    Url(String),
    /// The channel name is not a plain identifier of at most 63 bytes.
    #[error("invalid channel name {0:?}: use letters, digits and underscores, at most 63 bytes")]
    Channel(String),
    /// The database could not be reached.
    #[error("cannot reach PostgreSQL: {0}")]
    Connect(String),
}

impl PgNotifier {
    /// Checks a channel name before anything is connected or created: a plain
    /// identifier (letters, digits, underscores) of at most 63 bytes.
    pub fn check_channel(channel: &str) -> Result<(), NotifierError> {
        if channel.is_empty() || channel.len() > 63 || !channel.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(NotifierError::Channel(channel.to_owned()));
        }
        Ok(())
    }

    /// Connects (checking the database is reachable) and starts publishing.
    /// Call [`PgNotifier::attach`] once the `Tasks` handle exists to start listening.
    pub async fn connect(url: &str, channel: &str) -> Result<Self, NotifierError> {
        Self::check_channel(channel)?;
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| NotifierError::Url(e.to_string()))?
            .application_name("conduit-mcp-notifier");
        options.connect().await.map_err(|e| NotifierError::Connect(e.to_string()))?;
        let (tx, rx) = unbounded_channel();
        let me = Self {
            inner: Arc::new(Inner {
                channel: channel.to_owned(),
                options,
                publish: tx,
                pending: Mutex::new(Some(rx)),
                tasks: OnceLock::new(),
                sink: OnceLock::new(),
                started: Once::new(),
                listening: tokio::sync::watch::Sender::new(false),
                delivered: Mutex::new(HashMap::new()),
                shutdown: CancellationToken::new(),
            }),
        };
        Ok(me)
    }

    /// The channel it publishes and listens on.
    pub fn channel(&self) -> &str {
        &self.inner.channel
    }

    /// Starts the publisher and the listener for this node's `Tasks` handle (once).
    pub fn attach(&self, tasks: &Tasks) {
        if self.inner.tasks.set(tasks.clone()).is_ok() {
            self.start();
        }
    }

    /// Starts the publisher and the listener, once (whichever of `attach` and
    /// `attach_sink` comes first).
    fn start(&self) {
        self.inner.started.call_once(|| {
            let rx = self.inner.pending.lock().ok().and_then(|mut p| p.take());
            if let Some(rx) = rx {
                tokio::spawn(publisher(self.inner.clone(), rx));
            }
            tokio::spawn(listener(self.inner.clone()));
        });
    }

    /// Returns once the listener's `LISTEN` is in place (after `attach` or
    /// `attach_sink`): from then on, what any node publishes reaches this one.
    pub async fn listening(&self) {
        let mut rx = self.inner.listening.subscribe();
        let _ = rx.wait_for(|on| *on).await;
    }

    /// Stops publishing and listening.
    pub fn stop(&self) {
        self.inner.shutdown.cancel();
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Notifier for PgNotifier {
    fn task_changed(&self, task: &TaskRecord, listen: &ListenNotifier) {
        // This node's streams get the change now (the write path wakes its
        // workers); its own echo through LISTEN is then already delivered —
        // also when nothing here cares yet (a create, whose work starts after
        // it is stored): the echo must not cost a read of the row.
        self.inner.mark_delivered(&task.task_id, task.version, task.is_terminal());
        if self.inner.tasks.get().is_some_and(|t| t.cares_about(&task.task_id)) {
            listen.task_changed(task);
        }
        let _ = self.inner.publish.send(Outgoing::Change { id: task.task_id.clone(), version: task.version });
    }
}

impl ResponseRelay for PgNotifier {
    fn forward(&self, response: &ForwardedResponse) -> Result<(), RelayError> {
        let payload = format!("{{\"fwd\":{}}}", response.encode());
        if payload.len() > MAX_PAYLOAD {
            return Err(RelayError::TooLarge(MAX_PAYLOAD));
        }
        if self.inner.shutdown.is_cancelled() {
            return Err(RelayError::Unavailable);
        }
        self.inner.publish.send(Outgoing::Raw(payload)).map_err(|_| RelayError::Unavailable)
    }

    fn attach_sink(&self, sink: RelaySink) {
        if self.inner.sink.set(sink).is_ok() {
            self.start();
        }
    }
}

async fn pause(inner: &Inner, backoff: &mut Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(*backoff) => {}
        _ = inner.shutdown.cancelled() => return false,
    }
    *backoff = (*backoff * 2).min(MAX_BACKOFF);
    true
}

/// Items (changes, forwarded responses) one statement publishes at most;
/// packed, a full batch of changes makes about eight payloads.
const PUBLISH_BATCH: usize = 1024;

/// Publishes queued payloads, those queued together in one statement, on one
/// connection of its own (opened again after a failure); while the database is
/// unreachable it retries, keeping them.
async fn publisher(inner: Arc<Inner>, mut rx: UnboundedReceiver<Outgoing>) {
    let mut conn: Option<PgConnection> = None;
    let mut backoff = BACKOFF;
    let mut queued: Vec<Outgoing> = Vec::new();
    loop {
        let received = tokio::select! {
            n = rx.recv_many(&mut queued, PUBLISH_BATCH) => n,
            _ = inner.shutdown.cancelled() => 0,
        };
        if received == 0 {
            return;
        }
        // Drained, not taken: the queue keeps its capacity for the next batch.
        let payloads = payload::pack(queued.drain(..));
        loop {
            match publish(&inner, &mut conn, &payloads).await {
                Ok(()) => {
                    backoff = BACKOFF;
                    break;
                }
                Err(e) => {
                    // The connection may be broken: the next attempt opens another.
                    conn = None;
                    tracing::warn!(error = %e, "could not publish a task change; retrying");
                    if !pause(&inner, &mut backoff).await {
                        return;
                    }
                }
            }
        }
    }
}

/// One `NOTIFY` statement for `payloads`, on `conn` (opened first when there is none).
async fn publish(inner: &Inner, conn: &mut Option<PgConnection>, payloads: &[String]) -> Result<(), sqlx::Error> {
    let c = match conn {
        Some(c) => c,
        // Boxed: connecting is rare, and its future is kilobytes.
        None => conn.insert(Box::pin(inner.options.connect()).await?),
    };
    let statement = sqlx::query("SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p");
    statement.bind(&inner.channel).bind(payloads).execute(c).await.map(drop)
}

/// Listens for changes and delivers them locally; reconnects and catches up after a drop.
async fn listener(inner: Arc<Inner>) {
    let mut backoff = BACKOFF;
    loop {
        let pool = PgPoolOptions::new().max_connections(1).connect_lazy_with(inner.options.clone());
        let mut l = match PgListener::connect_with(&pool).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "task notifier cannot listen; retrying");
                if !pause(&inner, &mut backoff).await {
                    return;
                }
                continue;
            }
        };
        if let Err(e) = l.listen(&inner.channel).await {
            tracing::warn!(error = %e, "task notifier cannot LISTEN; retrying");
            if !pause(&inner, &mut backoff).await {
                return;
            }
            continue;
        }
        backoff = BACKOFF;
        inner.listening.send_replace(true);
        catch_up(&inner).await;
        // The loop is raced against shutdown once, not each notification: sqlx 0.9's
        // `try_recv` future is kilobytes, and a select per message would copy it each time.
        tokio::select! {
            e = receive(&inner, &mut l) => tracing::warn!(error = %e, "task notifier lost its connection"),
            _ = inner.shutdown.cancelled() => return,
        }
        if !pause(&inner, &mut backoff).await {
            return;
        }
    }
}

/// Delivers what arrives on `l` until its connection fails for good.
async fn receive(inner: &Inner, l: &mut PgListener) -> sqlx::Error {
    loop {
        match l.try_recv().await {
            Ok(Some(n)) => {
                let Some(mut got) = Incoming::parse(n.payload()) else { continue };
                if let Some(fwd) = got.fwd.take() {
                    let fwd = ForwardedResponse::decode(&fwd.to_string());
                    if let (Some(fwd), Some(sink)) = (fwd, inner.sink.get()) {
                        sink(fwd);
                    }
                } else if let Some(tasks) = inner.tasks.get() {
                    // The change log's readers read the feed themselves: a wake-up is all they need.
                    tasks.changed_elsewhere();
                    for (id, version) in got.changes() {
                        deliver(inner, tasks, &id, version).await;
                    }
                }
            }
            // The connection dropped and was re-established: catch up on what we missed.
            Ok(None) => {
                tracing::info!("task notifier reconnected");
                catch_up(inner).await;
            }
            Err(e) => return e,
        }
    }
}

/// Re-reads every watched or awaited task and delivers the ones that changed
/// since they were last delivered.
async fn catch_up(inner: &Inner) {
    let Some(tasks) = inner.tasks.get() else { return };
    tasks.changed_elsewhere();
    let mut ids = tasks.listen_notifier().watched();
    ids.extend(tasks.awaited());
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        deliver(inner, tasks, &id, 0).await;
    }
}

async fn deliver(inner: &Inner, tasks: &Tasks, id: &str, version: u64) {
    if !tasks.cares_about(id) {
        // Nothing here acts on it; forget what was delivered (the next stream
        // to watch the task reads it when it subscribes).
        if let Ok(mut d) = inner.delivered.lock() {
            d.remove(id);
        }
        return;
    }
    let last = inner.delivered.lock().ok().and_then(|d| d.get(id).copied()).unwrap_or(0);
    if version != 0 && version <= last {
        return;
    }
    let Ok(record) = tasks.store().get(id, Owner::Any).await else { return };
    if record.version <= last {
        return;
    }
    inner.mark_delivered(id, record.version, record.is_terminal());
    tasks.apply_change(&record);
}

impl Inner {
    /// Remembers that version `version` of task `id` reached this node's
    /// streams (a terminal task is forgotten: nothing follows it).
    fn mark_delivered(&self, id: &str, version: u64, terminal: bool) {
        if let Ok(mut d) = self.delivered.lock() {
            if terminal {
                d.remove(id);
            } else {
                let v = d.entry(id.to_owned()).or_insert(0);
                *v = (*v).max(version);
            }
        }
    }
}
