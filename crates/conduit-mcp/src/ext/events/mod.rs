#![doc = include_str!("../../../guides/events.md")]

mod config;
pub(crate) mod config_toml;
mod cursor;
mod evolution;
mod extension;
mod methods;
mod resolve;
mod source;
mod stream;
mod stream_outlet;
mod subscribe;
mod task_status;
mod typed;
mod typed_log;
pub mod webhook;

pub use config::EventsConfig;
pub use task_status::TASK_STATUS_CHANGED;
pub use typed::{Audience, EventPublisher, PublishError, TypedEvent};

use crate::clock::{Clock, SystemClock};
use crate::config::ConfigError;
use crate::ext::tasks::Tasks;
use crate::protocol::events::EVENTS_LIST_CHANGED;
use crate::quota::ClientKey;
use crate::quota::Counts;
use crate::subscriptions::Subscription;
use cursor::CursorSeal;
use evolution::Change;
use serde_json::Map;
use source::Source;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use typed_log::TypedLog;

/// The event types a server offers, and what its polls and streams share.
///
/// Cheap to clone.
///
/// ```
/// use conduit_mcp::ext::events::{Events, EventsConfig};
/// use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
/// use conduit_mcp::server::Server;
///
/// let tasks = Tasks::new(TasksConfig::default()).unwrap();
/// let events = Events::new(EventsConfig::new()).unwrap();
/// events.task_status(&tasks);
/// let server = Server::builder("demo", "1.0.0").extension(tasks).extension(events).build().unwrap();
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct Events {
    pub(crate) inner: Arc<EventsInner>,
}

/// One event type and the validator of its arguments.
pub(crate) struct Registered {
    pub(crate) source: Arc<dyn Source>,
    pub(crate) validator: Option<jsonschema::Validator>,
}

pub(crate) struct EventsInner {
    pub(crate) config: EventsConfig,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) seal: CursorSeal,
    pub(crate) types: RwLock<BTreeMap<String, Arc<Registered>>>,
    /// Bumped whenever a type is added or removed: live streams check theirs.
    pub(crate) catalog: watch::Sender<u64>,
    /// `subscriptions/listen` streams that asked for `eventsListChanged`.
    listeners: Mutex<Vec<Subscription>>,
    /// Push streams held, per client.
    pub(crate) streams: Counts<ClientKey>,
    pub(crate) shutdown: CancellationToken,
    /// Webhook delivery, when configured.
    #[cfg(feature = "webhooks")]
    pub(crate) webhooks: Option<Arc<webhook::runtime::Webhooks>>,
    /// Whether the webhook feeder and worker were started.
    #[cfg(feature = "webhooks")]
    pub(crate) started: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events").field("types", &self.names()).finish_non_exhaustive()
    }
}

impl Events {
    /// A handle with no event types yet, on the system clock.
    pub fn new(config: EventsConfig) -> Result<Self, ConfigError> {
        Self::with_clock(config, Arc::new(SystemClock))
    }

    /// A handle on an injected clock (occurrence timestamps, `maxAgeMs`).
    pub fn with_clock(config: EventsConfig, clock: Arc<dyn Clock>) -> Result<Self, ConfigError> {
        config.validate()?;
        let key = config.cursor_key.unwrap_or_else(rand::random);
        #[cfg(feature = "webhooks")]
        let webhooks = config.webhooks.clone().map(|w| Arc::new(webhook::runtime::Webhooks::new(w)));
        Ok(Self {
            inner: Arc::new(EventsInner {
                config,
                clock,
                seal: CursorSeal::new(key),
                types: RwLock::default(),
                catalog: watch::Sender::new(0),
                listeners: Mutex::default(),
                streams: Counts::default(),
                shutdown: CancellationToken::new(),
                #[cfg(feature = "webhooks")]
                webhooks,
                #[cfg(feature = "webhooks")]
                started: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &EventsConfig {
        &self.inner.config
    }

    /// The names of the event types offered, in order.
    pub fn names(&self) -> Vec<String> {
        self.inner.types.read().unwrap_or_else(PoisonError::into_inner).keys().cloned().collect()
    }

    /// Offers the event type `E` and returns its publisher.
    ///
    /// Offered again under a name already offered, `E` replaces that type.
    /// When the change is additive (the same `inputSchema`, a `payloadSchema`
    /// that only adds optional properties: the rule is in the guide) it
    /// continues the same log: cursors, live streams and webhook
    /// subscriptions carry on, and the earlier publishers still publish to
    /// them. Otherwise it starts a new log, and live streams end with
    /// `Unsupported` (`data: {feature, reason: "schema_changed"}`).
    pub fn typed<E: TypedEvent>(&self) -> EventPublisher<E> {
        let c = &self.inner.config;
        let descriptor = typed::descriptor_of::<E>(c.delivers_webhooks());
        let (clock, max_payload) = (self.inner.clock.clone(), c.max_payload_bytes);
        let retained = (c.retained_events, c.retained_bytes);
        let mut made = None;
        self.offer(E::NAME, |before| {
            let log = before
                .filter(|b| evolution::compare(b.source.descriptor(), &descriptor) == Change::Additive)
                .and_then(|b| b.source.typed_log())
                .unwrap_or_else(|| Arc::new(TypedLog::new(retained)));
            let source = Arc::new(typed::TypedSource::<E>::new(descriptor, log, clock, max_payload));
            made = Some(source.clone());
            source
        });
        EventPublisher { source: made.expect("offer calls make") }
    }

    /// Offers `task.status_changed` over `tasks` (both eras' tasks), which
    /// keeps its change log in memory from now on, as bounded as an
    /// application's event type ([`EventsConfig::retained`]). Delivered by
    /// poll, push, and webhook when [`EventsConfig::webhooks()`] is set.
    /// Offered again over the same `tasks`, its live streams carry on.
    pub fn task_status(&self, tasks: &Tasks) {
        let c = &self.inner.config;
        let retained = (c.retained_events, c.retained_bytes);
        let source = task_status::TaskStatusSource::new(tasks, retained, c.delivers_webhooks());
        self.offer(TASK_STATUS_CHANGED, |_| Arc::new(source));
    }

    /// Stops offering event type `name`: its live streams end with
    /// `NotFound`. Returns whether it was offered.
    pub fn remove(&self, name: &str) -> bool {
        let removed = self.inner.types.write().unwrap_or_else(PoisonError::into_inner).remove(name).is_some();
        if removed {
            self.changed(true);
        }
        removed
    }

    /// Offers under `name` the source `make` builds, told what it replaces
    /// (both under the lock, so two offers of one name take turns).
    fn offer(&self, name: &str, make: impl FnOnce(Option<&Arc<Registered>>) -> Arc<dyn Source>) {
        let mut types = self.inner.types.write().unwrap_or_else(PoisonError::into_inner);
        let before = types.get(name).cloned();
        let source = make(before.as_ref());
        let listed = before.is_none_or(|b| b.source.descriptor() != source.descriptor());
        let validator = jsonschema::validator_for(&source.descriptor().input_schema).ok();
        types.insert(name.to_owned(), Arc::new(Registered { source, validator }));
        drop(types);
        self.changed(listed);
    }

    /// The type `name`, if offered.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<Registered>> {
        self.inner.types.read().unwrap_or_else(PoisonError::into_inner).get(name).cloned()
    }

    /// Tells live streams that the types changed, and `eventsListChanged`
    /// listeners too when what `events/list` shows did (`listed`).
    fn changed(&self, listed: bool) {
        self.inner.catalog.send_modify(|v| *v += 1);
        if !listed {
            return;
        }
        let mut listeners = self.inner.listeners.lock().unwrap_or_else(PoisonError::into_inner);
        listeners.retain(|s| !s.is_closed() && s.send(EVENTS_LIST_CHANGED, Map::new()));
    }

    /// Sends `notifications/events/list_changed` to `sub` from now on.
    pub(crate) fn listen_list_changed(&self, sub: &Subscription) {
        let mut listeners = self.inner.listeners.lock().unwrap_or_else(PoisonError::into_inner);
        listeners.retain(|s| !s.is_closed());
        listeners.push(sub.clone());
        drop(listeners);
        let weak = Arc::downgrade(&self.inner);
        let key = sub.key();
        sub.on_close(move || {
            if let Some(inner) = weak.upgrade() {
                inner.listeners.lock().unwrap_or_else(PoisonError::into_inner).retain(|s| s.key() != key);
            }
        });
    }
}
