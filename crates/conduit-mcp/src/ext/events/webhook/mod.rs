//! Webhook delivery of events (events.md §3, §4), server side — the parts
//! built so far, not yet wired to `events/subscribe` (which still answers
//! `Unsupported` for webhook delivery): the subscription key and its derived
//! id ([`SubscriptionKey`]), how long a subscription lives ([`TtlPolicy`]),
//! which addresses a delivery may reach ([`check_address`]), what is stored
//! ([`WebhookSubscription`], [`OutboxEntry`]) and where ([`WebhookStore`];
//! [`MemoryWebhookStore`] for one process, the SQL stores of
//! `conduit-mcp-sql` for many nodes).

mod address;
mod key;
mod memory;
mod record;
mod store;
mod ttl;

pub use address::{AddressRefusal, check_address};
pub use key::SubscriptionKey;
pub use memory::{MemoryWebhookLimits, MemoryWebhookStore};
pub use record::{DeliveryFailure, OutboxEntry, Settlement, WebhookCaps, WebhookSecret, WebhookSubscription};
pub use store::{SWEEP_BATCH, UpsertError, Upserted, VERIFICATION_KEEP_MS, WebhookStore};
pub use ttl::{TtlAsk, TtlPolicy};
