//! An application's own event type: [`TypedEvent`] (a name, a description,
//! typed arguments and payload whose schemas come from `schemars`, the
//! delivery modes, and the match between a subscription and an occurrence),
//! and the [`EventPublisher`] the application calls when something happens.
//! Occurrences are kept in memory, bounded, for replay.

use super::cursor::CURSOR_CHARS;
use super::source::{Filter, Page, Source};
use super::typed_log::{Published, TypedFilter, TypedLog};
use crate::clock::{Clock, format_rfc3339_ms};
use crate::protocol::RpcError;
use crate::protocol::events::{DeliveryMode, EventDescriptor, EventOccurrence};
use crate::seq_log::ReadFrom;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::marker::PhantomData;
use std::sync::Arc;
use tokio::sync::watch;

/// An application's event type, described by its Rust types.
///
/// ```
/// use conduit_mcp::ext::events::{Audience, Events, EventsConfig, TypedEvent};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// /// Subscription arguments: which severities to receive.
/// #[derive(Deserialize, JsonSchema)]
/// struct IncidentFilter {
///     severity: Option<String>,
/// }
///
/// /// What one occurrence carries.
/// #[derive(Serialize, JsonSchema)]
/// #[serde(rename_all = "camelCase")]
/// struct Incident {
///     incident_id: String,
///     severity: String,
/// }
///
/// struct IncidentCreated;
///
/// impl TypedEvent for IncidentCreated {
///     type Arguments = IncidentFilter;
///     type Payload = Incident;
///     const NAME: &'static str = "incident.created";
///     const DESCRIPTION: &'static str = "Fires when an incident is opened";
///
///     fn matches(arguments: &IncidentFilter, payload: &Incident) -> bool {
///         arguments.severity.as_ref().is_none_or(|s| *s == payload.severity)
///     }
/// }
///
/// let events = Events::new(EventsConfig::new()).unwrap();
/// let incidents = events.typed::<IncidentCreated>();
/// let incident = Incident { incident_id: "INC-1".into(), severity: "P1".into() };
/// incidents.publish(incident, Audience::principal("alice")).unwrap();
/// ```
pub trait TypedEvent: Send + Sync + 'static {
    /// A subscription's arguments (its filters).
    type Arguments: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    /// What an occurrence carries as `data` (a JSON object).
    type Payload: Serialize + JsonSchema + Send + Sync + 'static;
    /// The event type's name.
    const NAME: &'static str;
    /// When it fires.
    const DESCRIPTION: &'static str;

    /// The delivery modes offered (default: poll and push).
    fn delivery() -> Vec<DeliveryMode> {
        vec![DeliveryMode::Poll, DeliveryMode::Push]
    }

    /// Whether an occurrence with `payload` reaches a subscription with
    /// `arguments` (default: every one). Who may see it at all is the
    /// [`Audience`] it was published for.
    fn matches(_arguments: &Self::Arguments, _payload: &Self::Payload) -> bool {
        true
    }
}

/// Who may receive an occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Audience {
    /// Every subscriber, authenticated or not.
    Everyone,
    /// Authenticated subscribers only.
    Authenticated,
    /// Only these principals (by [`Principal::id`](crate::auth::Principal::id)).
    Principals(Vec<String>),
}

impl Audience {
    /// Only the principal `id`.
    pub fn principal(id: impl Into<String>) -> Self {
        Self::Principals(vec![id.into()])
    }

    /// Whether `owner` (a subscriber's principal id, `None` without one) is in it.
    pub fn admits(&self, owner: Option<&str>) -> bool {
        match self {
            Self::Everyone => true,
            Self::Authenticated => owner.is_some(),
            Self::Principals(ids) => owner.is_some_and(|o| ids.iter().any(|i| i == o)),
        }
    }
}

/// Why [`EventPublisher::publish`] refused an occurrence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The payload does not serialise to a JSON object.
    #[error("an event payload must serialise to a JSON object")]
    NotAnObject,
    /// The occurrence as delivered (the payload with its `eventId`, name,
    /// timestamp and cursor: a webhook body) would be larger than
    /// `EventsConfig::max_payload_bytes`.
    #[error("the event would be delivered as {len} bytes, more than the {max} allowed")]
    TooLarge {
        /// The size of the occurrence as delivered, as JSON.
        len: usize,
        /// The bound.
        max: usize,
    },
}

/// The `eventId` made for the occurrence at `seq` of a log of `epoch`.
fn made_id(epoch: u64, seq: u64) -> String {
    format!("{epoch:016x}-{seq}")
}

/// One typed event type: the [`Source`] the extension reads, over its
/// name's [`TypedLog`] (shared with the generations before it while each
/// change was additive).
pub(crate) struct TypedSource<E: TypedEvent> {
    descriptor: EventDescriptor,
    log: Arc<TypedLog>,
    /// Its index among the log's generations.
    generation: usize,
    clock: Arc<dyn Clock>,
    max_payload_bytes: usize,
    _event: PhantomData<fn() -> E>,
}

/// A schema with no `title` (the Rust type's name) and no top-level description.
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.remove("title");
        m.entry("type").or_insert_with(|| "object".into());
    }
    v
}

/// How `events/list` shows `E`; `webhooks`: whether the handle delivers
/// webhooks (else the mode is not offered).
pub(crate) fn descriptor_of<E: TypedEvent>(webhooks: bool) -> EventDescriptor {
    let mut delivery = E::delivery();
    delivery.retain(|m| webhooks || *m != DeliveryMode::Webhook);
    EventDescriptor::new(E::NAME, E::DESCRIPTION, delivery, schema_of::<E::Arguments>(), schema_of::<E::Payload>())
}

impl<E: TypedEvent> TypedSource<E> {
    /// `E`, described by `descriptor`, publishing into `log` as its newest generation.
    pub(crate) fn new(
        descriptor: EventDescriptor,
        log: Arc<TypedLog>,
        clock: Arc<dyn Clock>,
        max_payload_bytes: usize,
    ) -> Self {
        let generation = log.generation_of::<E>();
        Self { descriptor, log, generation, clock, max_payload_bytes, _event: PhantomData }
    }

    /// The bytes of the occurrence as a webhook body carries it (the
    /// longest one it can be): its payload of `data_len` bytes with the
    /// `eventId` (a made one counted at its longest), the name, the
    /// timestamp of `at_ms` and a cursor around it.
    fn body_len(&self, data_len: usize, at_ms: u64, event_id: Option<&str>) -> usize {
        let made;
        let id = match event_id {
            Some(id) => id,
            None => {
                made = made_id(self.log.epoch(), u64::MAX);
                &made
            }
        };
        let mut around = EventOccurrence::new(id, E::NAME, format_rfc3339_ms(at_ms), Value::Object(Map::new()));
        around.cursor = Some("c".repeat(CURSOR_CHARS));
        // `{}` stands in for the payload in `around`.
        crate::bounds::json_len(&around) - 2 + data_len
    }

    fn publish(&self, payload: E::Payload, audience: Audience, event_id: Option<String>) -> Result<u64, PublishError> {
        let data = serde_json::to_value(&payload).map_err(|_| PublishError::NotAnObject)?;
        if !data.is_object() {
            return Err(PublishError::NotAnObject);
        }
        let len = crate::bounds::json_len(&data);
        let at_ms = self.clock.now_ms();
        let body = self.body_len(len, at_ms, event_id.as_deref());
        if body > self.max_payload_bytes {
            return Err(PublishError::TooLarge { len: body, max: self.max_payload_bytes });
        }
        let weight = 2 * len + 64 + event_id.as_ref().map_or(0, String::len);
        let published = Published { payload: Box::new(payload), generation: self.generation, data, audience, event_id };
        Ok(self.log.log().append(at_ms, weight, published))
    }
}

#[async_trait]
impl<E: TypedEvent> Source for TypedSource<E> {
    fn descriptor(&self) -> &EventDescriptor {
        &self.descriptor
    }

    fn epoch(&self) -> u64 {
        self.log.epoch()
    }

    fn filter(&self, arguments: Map<String, Value>) -> Result<Filter, RpcError> {
        // This generation's reading decides what is refused; the others' are kept as they parse.
        serde_json::from_value::<E::Arguments>(Value::Object(arguments.clone()))
            .map_err(|e| RpcError::invalid_params(format!("invalid arguments for event {}: {e}", E::NAME)))?;
        Ok(Box::new(self.log.filter(arguments)))
    }

    async fn head(&self) -> Result<u64, RpcError> {
        Ok(self.log.log().head())
    }

    fn watch(&self) -> watch::Receiver<u64> {
        self.log.log().watch()
    }

    async fn read(&self, owner: Option<&str>, filter: &Filter, from: ReadFrom) -> Result<Page, RpcError> {
        let Some(filter) = filter.downcast_ref::<TypedFilter>() else {
            return Err(RpcError::internal("a filter of another event type"));
        };
        let read = self.log.read(owner, filter, from);
        let epoch = self.log.epoch();
        let events = read
            .entries
            .into_iter()
            .map(|e| {
                let p = &e.item;
                let id = p.event_id.clone().unwrap_or_else(|| made_id(epoch, e.seq));
                (e.seq, EventOccurrence::new(id, E::NAME, format_rfc3339_ms(e.at_ms), p.data.clone()))
            })
            .collect();
        Ok(Page { events, through: read.through, truncated: read.truncated, more: read.more, settling: false })
    }

    fn typed_log(&self) -> Option<Arc<TypedLog>> {
        Some(self.log.clone())
    }
}

/// What an application calls to publish occurrences of event type `E`.
/// Cheap to clone; get one from [`Events::typed`](super::Events::typed).
pub struct EventPublisher<E: TypedEvent> {
    pub(crate) source: Arc<TypedSource<E>>,
}

impl<E: TypedEvent> Clone for EventPublisher<E> {
    fn clone(&self) -> Self {
        Self { source: self.source.clone() }
    }
}

impl<E: TypedEvent> std::fmt::Debug for EventPublisher<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventPublisher").field("name", &E::NAME).finish_non_exhaustive()
    }
}

impl<E: TypedEvent> EventPublisher<E> {
    /// Publishes an occurrence for `audience`: every poll and stream of a
    /// principal in it whose arguments [match](TypedEvent::matches) receives it.
    /// Its `eventId` is made here.
    pub fn publish(&self, payload: E::Payload, audience: Audience) -> Result<(), PublishError> {
        self.source.publish(payload, audience, None).map(drop)
    }

    /// Publishes an occurrence under the upstream's own stable id (the
    /// `eventId` clients dedupe on).
    pub fn publish_with_id(
        &self,
        event_id: impl Into<String>,
        payload: E::Payload,
        audience: Audience,
    ) -> Result<(), PublishError> {
        self.source.publish(payload, audience, Some(event_id.into())).map(drop)
    }
}
