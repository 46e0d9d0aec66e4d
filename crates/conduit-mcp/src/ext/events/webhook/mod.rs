//! Webhook delivery of events (events.md §3, §4), server side — the parts
//! built so far, not yet wired to `events/subscribe` (which still answers
//! `Unsupported` for webhook delivery): the subscription key and its derived
//! id ([`SubscriptionKey`]), how long a subscription lives ([`TtlPolicy`]),
//! which addresses a delivery may reach ([`check_address`]), what is stored
//! ([`WebhookSubscription`], [`OutboxEntry`]) and where ([`WebhookStore`]);
//! with the `webhooks` feature, how a request goes out under the SSRF rules
//! (the `egress` module) and how an endpoint is verified (`verify_endpoint`,
//! `VerifiedOrigins`).

mod address;
#[cfg(feature = "webhooks")]
pub mod egress;
mod key;
mod record;
mod store;
mod ttl;
#[cfg(feature = "webhooks")]
mod verify;

pub use address::{AddressRefusal, check_address};
pub use key::SubscriptionKey;
pub use record::{DeliveryFailure, OutboxEntry, Settlement, WebhookCaps, WebhookSecret, WebhookSubscription};
pub use store::{UpsertError, Upserted, WebhookStore};
pub use ttl::{TtlAsk, TtlPolicy};
#[cfg(feature = "webhooks")]
pub use verify::{VERIFICATION_ID_PREFIX, VerifiedOrigins, ensure_verified, verify_endpoint};
