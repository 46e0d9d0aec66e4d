//! [`Clients`]: the egress's HTTP clients, one per callback origin and the
//! exact set of addresses an attempt checked for it, kept up to a bound.
//!
//! Building a client (its TLS configuration, its roots) for every attempt
//! cost more than the attempt's own work; a kept client also keeps its TLS
//! session cache and its idle connections. Keying by the checked addresses
//! keeps the SSRF rule: an attempt uses a client only when its own
//! resolution and check answered exactly the addresses that client is pinned
//! to, so a connection it reuses was dialled to an address this attempt
//! checked. A name whose answer changes gets a new client; the old one goes
//! when the bound pushes it out.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};

/// The most clients kept; past it the oldest made goes (with its connections).
pub(crate) const KEPT_CLIENTS: usize = 64;

/// A client's key: the origin (`scheme://host:port`) and the checked addresses, sorted.
type Key = (String, Vec<IpAddr>);

/// Clients by origin and checked addresses, oldest first out.
#[derive(Default)]
pub(crate) struct Clients {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    by_key: HashMap<Key, reqwest::Client>,
    /// Keys in the order their clients were made.
    order: VecDeque<Key>,
}

impl Clients {
    /// The client for `origin` pinned to `addrs` (any order), made by `make`
    /// when none is kept; a client `make` fails to build is not kept.
    pub(crate) fn get_or_make(
        &self,
        origin: &str,
        addrs: &[IpAddr],
        make: impl FnOnce() -> reqwest::Result<reqwest::Client>,
    ) -> reqwest::Result<reqwest::Client> {
        let mut sorted = addrs.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let key = (origin.to_owned(), sorted);
        if let Some(c) = self.kept.lock().unwrap_or_else(PoisonError::into_inner).by_key.get(&key) {
            return Ok(c.clone());
        }
        // Built outside the lock: other origins' attempts do not wait on it.
        let client = make()?;
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = kept.by_key.get(&key) {
            return Ok(c.clone());
        }
        if kept.order.len() >= KEPT_CLIENTS
            && let Some(oldest) = kept.order.pop_front()
        {
            kept.by_key.remove(&oldest);
        }
        kept.order.push_back(key.clone());
        kept.by_key.insert(key, client.clone());
        Ok(client)
    }

    /// How many clients are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).by_key.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_client_is_kept_per_origin_and_address_set_up_to_the_bound() {
        let clients = Clients::default();
        let made = std::cell::Cell::new(0);
        let make = || {
            made.set(made.get() + 1);
            reqwest::Client::builder().build()
        };
        let o = "https://hook.test:443";
        clients.get_or_make(o, &[ip("192.0.2.1"), ip("192.0.2.2")], make).unwrap();
        clients.get_or_make(o, &[ip("192.0.2.2"), ip("192.0.2.1")], make).unwrap();
        assert_eq!(made.get(), 1, "the same set in another order is the same client");
        clients.get_or_make(o, &[ip("192.0.2.1")], make).unwrap();
        clients.get_or_make("https://other.test:443", &[ip("192.0.2.1")], make).unwrap();
        assert_eq!(made.get(), 3, "another answer or another origin is another client");
        for i in 0..KEPT_CLIENTS {
            clients.get_or_make(&format!("https://h{i}.test:443"), &[ip("192.0.2.9")], make).unwrap();
        }
        assert_eq!(clients.len(), KEPT_CLIENTS);
        clients.get_or_make(o, &[ip("192.0.2.1"), ip("192.0.2.2")], make).unwrap();
        assert_eq!(made.get(), 3 + KEPT_CLIENTS + 1, "the oldest went first");
    }
}
