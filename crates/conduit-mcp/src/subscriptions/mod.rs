//! `subscriptions/listen`: the hub of open streams, their filters and fan-out
//! (here), and the listen request itself, step by step (its own file).
//!
//! Every stream gets the acknowledgment first; every notification on it
//! carries `_meta["io.modelcontextprotocol/subscriptionId"]` equal to the
//! listen request's id, with the id's JSON type.

pub(crate) mod listen;

use crate::auth::Principal;
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::meta::SUBSCRIPTION_ID_KEY;
use crate::protocol::methods as names;
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::UnboundedSender;

/// The core filter fields a stream asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CoreFilter {
    /// `toolsListChanged`.
    pub tools_list_changed: bool,
    /// `promptsListChanged`.
    pub prompts_list_changed: bool,
    /// `resourcesListChanged`.
    pub resources_list_changed: bool,
    /// `resourceSubscriptions`.
    pub resource_subscriptions: BTreeSet<String>,
}

/// One open listen stream, as extensions see it.
#[derive(Clone)]
pub struct Subscription {
    inner: Arc<SubInner>,
}

struct SubInner {
    key: u64,
    id: RequestId,
    principal: Option<Principal>,
    filter: CoreFilter,
    outlet: Outlet,
    /// Run once when the stream closes (see [`Subscription::on_close`]).
    on_close: Mutex<OnClose>,
}

/// Where a stream's notifications go.
enum Outlet {
    /// A listen stream: the notification, tagged with the subscription id, onto its channel.
    Channel(UnboundedSender<Message>),
    /// A receiver called in place with the untagged notification (a legacy session, which
    /// needs no channel and no task of its own to forward what the hub announces).
    Sink(Arc<dyn Sink>),
}

/// A receiver of the hub's announcements that is not a listen stream.
pub(crate) trait Sink: Send + Sync {
    /// Delivers one notification; `false` once the receiver is gone.
    fn deliver(&self, method: &str, params: Map<String, Value>) -> bool;
    /// Whether the receiver is gone.
    fn is_closed(&self) -> bool;
}

/// The close hooks of a stream, or `Closed` once they ran.
enum OnClose {
    Open(Vec<Box<dyn FnOnce() + Send>>),
    Closed,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription").field("key", &self.inner.key).finish_non_exhaustive()
    }
}

impl Subscription {
    /// A stable key for indexing this stream.
    pub fn key(&self) -> u64 {
        self.inner.key
    }

    /// The listen request's id (the subscription id).
    pub fn id(&self) -> &RequestId {
        &self.inner.id
    }

    /// Who opened the stream.
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.principal.as_ref()
    }

    /// The principal id, `None` when unauthenticated.
    pub fn owner(&self) -> Option<&str> {
        self.inner.principal.as_ref().map(|p| p.id())
    }

    /// Sends a notification on this stream, tagging it with the subscription id.
    /// Returns `false` once the stream is closed.
    pub fn send(&self, method: &str, params: Map<String, Value>) -> bool {
        match &self.inner.outlet {
            Outlet::Channel(tx) => tx.send(tagged(&self.inner.id, method, params)).is_ok(),
            Outlet::Sink(sink) => sink.deliver(method, params),
        }
    }

    /// Whether the stream is gone.
    pub fn is_closed(&self) -> bool {
        match &self.inner.outlet {
            Outlet::Channel(tx) => tx.is_closed(),
            Outlet::Sink(sink) => sink.is_closed(),
        }
    }

    /// Runs `f` once when the stream closes (at once if it already has):
    /// an extension that indexes this stream forgets it there.
    pub fn on_close(&self, f: impl FnOnce() + Send + 'static) {
        let mut hooks = self.inner.on_close.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *hooks {
            OnClose::Open(v) => v.push(Box::new(f)),
            OnClose::Closed => {
                drop(hooks);
                f();
            }
        }
    }

    /// Runs the close hooks (once).
    fn closed(&self) {
        let hooks =
            std::mem::replace(&mut *self.inner.on_close.lock().unwrap_or_else(|p| p.into_inner()), OnClose::Closed);
        if let OnClose::Open(v) = hooks {
            for f in v {
                f();
            }
        }
    }
}

/// Builds a notification tagged with a subscription id.
pub(crate) fn tagged(id: &RequestId, method: &str, mut params: Map<String, Value>) -> Message {
    let meta = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = meta {
        m.insert(SUBSCRIPTION_ID_KEY.into(), id.to_value());
    }
    Message::notification(method, Value::Object(params))
}

/// The registry of open streams.
#[derive(Default)]
pub(crate) struct Hub {
    next: AtomicU64,
    subs: Mutex<HashMap<u64, Subscription>>,
}

/// Removes a stream from the hub when dropped.
pub(crate) struct Registration {
    hub: Arc<Hub>,
    key: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let sub = self.hub.subs.lock().ok().and_then(|mut s| s.remove(&self.key));
        if let Some(sub) = sub {
            crate::metrics::listen_streams(-1.0);
            sub.closed();
        }
    }
}

impl Hub {
    pub(crate) fn register(
        self: &Arc<Self>,
        id: RequestId,
        principal: Option<Principal>,
        filter: CoreFilter,
        tx: UnboundedSender<Message>,
    ) -> (Subscription, Registration) {
        self.add(id, principal, filter, Outlet::Channel(tx))
    }

    /// Registers a receiver called in place (no channel, no task) for the changes `filter` asks for.
    pub(crate) fn register_sink(self: &Arc<Self>, filter: CoreFilter, sink: Arc<dyn Sink>) -> Registration {
        self.add(RequestId::String(String::new()), None, filter, Outlet::Sink(sink)).1
    }

    fn add(
        self: &Arc<Self>,
        id: RequestId,
        principal: Option<Principal>,
        filter: CoreFilter,
        outlet: Outlet,
    ) -> (Subscription, Registration) {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let on_close = Mutex::new(OnClose::Open(Vec::new()));
        let sub = Subscription { inner: Arc::new(SubInner { key, id, principal, filter, outlet, on_close }) };
        if let Ok(mut s) = self.subs.lock() {
            s.insert(key, sub.clone());
            crate::metrics::listen_streams(1.0);
        }
        (sub, Registration { hub: self.clone(), key })
    }

    fn fan_out(&self, method: &str, params: Map<String, Value>, wants: impl Fn(&CoreFilter) -> bool) -> usize {
        let targets: Vec<Subscription> = match self.subs.lock() {
            Ok(s) => s.values().filter(|s| wants(&s.inner.filter)).cloned().collect(),
            Err(_) => return 0,
        };
        targets.iter().filter(|s| s.send(method, params.clone())).count()
    }

    pub(crate) fn tools_changed(&self) -> usize {
        self.fan_out(names::TOOLS_LIST_CHANGED, Map::new(), |f| f.tools_list_changed)
    }

    pub(crate) fn prompts_changed(&self) -> usize {
        self.fan_out(names::PROMPTS_LIST_CHANGED, Map::new(), |f| f.prompts_list_changed)
    }

    pub(crate) fn resources_changed(&self) -> usize {
        self.fan_out(names::RESOURCES_LIST_CHANGED, Map::new(), |f| f.resources_list_changed)
    }

    pub(crate) fn resource_updated(&self, uri: &str) -> usize {
        let mut p = Map::new();
        p.insert("uri".into(), uri.into());
        self.fan_out(names::RESOURCE_UPDATED, p, |f| f.resource_subscriptions.contains(uri))
    }

    pub(crate) fn len(&self) -> usize {
        self.subs.lock().map(|s| s.len()).unwrap_or(0)
    }
}

/// Announces changes to the listen streams that asked for them: a cheap handle
/// on the server's hub ([`Ctx::changes`](crate::ctx::Ctx::changes), `Server::changes`).
#[derive(Clone, Default)]
pub struct Changes {
    hub: Arc<Hub>,
}

impl std::fmt::Debug for Changes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Changes").field("streams", &self.hub.len()).finish()
    }
}

impl Changes {
    pub(crate) fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// Tells the streams that asked for it that the tool list changed; returns how many were told.
    pub fn tools_list_changed(&self) -> usize {
        self.hub.tools_changed()
    }

    /// Tells the streams that asked for it that the prompt list changed.
    pub fn prompts_list_changed(&self) -> usize {
        self.hub.prompts_changed()
    }

    /// Tells the streams that asked for it that the resource list changed.
    pub fn resources_list_changed(&self) -> usize {
        self.hub.resources_changed()
    }

    /// Tells the streams subscribed to `uri` that it changed.
    pub fn resource_updated(&self, uri: &str) -> usize {
        self.hub.resource_updated(uri)
    }

    /// How many listen streams are open.
    pub fn open_streams(&self) -> usize {
        self.hub.len()
    }
}
