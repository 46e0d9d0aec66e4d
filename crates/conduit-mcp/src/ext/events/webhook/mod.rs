//! Webhook delivery of events (events.md §3, §4), server side. Turned on by
//! [`EventsConfig::webhooks`](super::EventsConfig::webhooks()) with a
//! [`WebhookConfig`]: a [`WebhookStore`] every node shares and a
//! [`WebhookTransport`]. `events/subscribe` then verifies the endpoint and
//! stores the subscription under its key ([`SubscriptionKey`], its id
//! derived) for as long as [`TtlPolicy`] grants; a feeder puts each
//! subscription's occurrences in the outbox ([`OutboxEntry`]) and a worker
//! claims, signs, posts and settles them, retrying as [`RetryPolicy`] says
//! and suspending a subscription as [`SuspendPolicy`] says. Every delivery
//! attempt's address is the transport's to check ([`check_address`]).

mod address;
mod attempt;
mod config;
pub(crate) mod envelope;
mod feeder;
mod key;
pub(crate) mod origin;
mod record;
mod rules;
pub(crate) mod runtime;
mod store;
mod transport;
mod ttl;
mod worker;

pub use address::{AddressRefusal, check_address};
pub use config::{RetryPolicy, SuspendPolicy, WebhookConfig};
pub use envelope::verify_endpoint;
pub use key::SubscriptionKey;
pub use record::{DeliveryFailure, OutboxEntry, Settlement, WebhookCaps, WebhookSecret, WebhookSubscription};
pub use rules::WebhookRules;
pub use store::{UpsertError, Upserted, WebhookStore};
pub use transport::{WebhookAnswer, WebhookTransport};
pub use ttl::{TtlAsk, TtlPolicy};
