//! Webhook delivery of events (events.md §3, §4), server side. With the
//! `webhooks` feature, [`EventsConfig::webhooks`](super::EventsConfig::webhooks())
//! turns it on with a [`WebhookConfig`]: a [`WebhookStore`] every node shares
//! ([`MemoryWebhookStore`] for one process, the SQL stores of
//! `conduit-mcp-sql` for many) and a `WebhookTransport` (the [`egress`]'s
//! `Egress`, which keeps the SSRF rules at every attempt). `events/subscribe`
//! then verifies the endpoint (`verify_endpoint`, or an origin the operator
//! vouches for) and stores the subscription under its key
//! ([`SubscriptionKey`], its id derived) for as long as [`TtlPolicy`]
//! grants; a feeder puts each subscription's occurrences in the outbox
//! ([`OutboxEntry`]) and a worker claims, signs, posts and settles them,
//! retrying and suspending as `RetryPolicy` and `SuspendPolicy` say.
//! Without the feature, `events/subscribe` answers `Unsupported`.

mod address;
#[cfg(feature = "webhooks")]
mod attempt;
#[cfg(feature = "webhooks")]
mod config;
#[cfg(feature = "webhooks")]
pub mod egress;
#[cfg(feature = "webhooks")]
mod envelope;
#[cfg(feature = "webhooks")]
mod feeder;
mod key;
mod memory;
pub(crate) mod origin;
mod record;
mod rules;
#[cfg(feature = "webhooks")]
pub(crate) mod runtime;
mod store;
mod ttl;
#[cfg(feature = "webhooks")]
mod verify;
#[cfg(feature = "webhooks")]
mod worker;

pub use address::{AddressRefusal, check_address};
#[cfg(feature = "webhooks")]
pub use config::{RetryPolicy, SuspendPolicy, WebhookConfig};
#[cfg(feature = "webhooks")]
pub use egress::{WebhookAnswer, WebhookTransport};
pub use key::SubscriptionKey;
pub use memory::{MemoryWebhookLimits, MemoryWebhookStore};
pub use record::{DeliveryFailure, OutboxEntry, Settlement, WebhookCaps, WebhookSecret, WebhookSubscription};
pub use rules::{MIN_ATTEMPT_TIMEOUT, MIN_LEASE, MIN_RETRY_DELAY, WebhookRules};
pub use store::{SWEEP_BATCH, TERMINATED_ID_PREFIX, UpsertError, Upserted, VERIFICATION_KEEP_MS, WebhookStore};
pub use ttl::{TtlAsk, TtlPolicy};
#[cfg(feature = "webhooks")]
pub use verify::{VERIFICATION_ID_PREFIX, VerifiedOrigins, ensure_verified, verify_endpoint};
