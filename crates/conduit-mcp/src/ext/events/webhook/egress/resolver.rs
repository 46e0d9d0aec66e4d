//! How the egress turns a callback URL's host name into addresses:
//! [`WebhookResolver`], with the system's resolver ([`SystemResolver`]) and a
//! fixed table ([`FixedResolver`]) for tests and for embedders that resolve
//! names their own way. Literal IP hosts never reach a resolver.

use async_trait::async_trait;
use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// Resolves a callback URL's host name to the addresses a delivery may dial.
///
/// The egress asks at every attempt (a verification POST included) and
/// checks every address answered before dialling one of them; an error or
/// an empty answer fails the attempt as `connection_refused`.
#[async_trait]
pub trait WebhookResolver: Send + Sync + 'static {
    /// The addresses of `host` (a DNS name, never an IP literal); `port`
    /// is the URL's, for resolvers that care.
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<IpAddr>>;
}

/// The operating system's resolver (`getaddrinfo`, through tokio).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemResolver;

#[async_trait]
impl WebhookResolver for SystemResolver {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<IpAddr>> {
        Ok(tokio::net::lookup_host((host, port)).await?.map(|a| a.ip()).collect())
    }
}

/// A resolver answering from a table the caller fills and may change at any
/// time: for tests (a name mapped to loopback, an answer that changes
/// between subscribe and delivery) and for embedders with their own naming.
/// A name not in the table fails to resolve; nothing is ever asked of DNS.
#[derive(Debug, Default)]
pub struct FixedResolver {
    table: Mutex<HashMap<String, Vec<IpAddr>>>,
    lookups: AtomicUsize,
}

impl FixedResolver {
    /// An empty table (every name fails to resolve).
    pub fn new() -> Self {
        Self::default()
    }

    /// The table with `host` answering `addrs`.
    #[must_use]
    pub fn with(self, host: &str, addrs: impl IntoIterator<Item = IpAddr>) -> Self {
        self.set(host, addrs);
        self
    }

    /// From now on `host` answers `addrs` (an empty list: no address).
    pub fn set(&self, host: &str, addrs: impl IntoIterator<Item = IpAddr>) {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        table.insert(host.to_ascii_lowercase(), addrs.into_iter().collect());
    }

    /// From now on `host` fails to resolve.
    pub fn remove(&self, host: &str) {
        self.table.lock().unwrap_or_else(PoisonError::into_inner).remove(&host.to_ascii_lowercase());
    }

    /// How many times a name was asked for so far.
    pub fn lookups(&self) -> usize {
        self.lookups.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl WebhookResolver for FixedResolver {
    async fn resolve(&self, host: &str, _port: u16) -> io::Result<Vec<IpAddr>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        let table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        table
            .get(&host.to_ascii_lowercase())
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "name not in the fixed table"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_fixed_table_answers_what_it_holds_now_and_nothing_else() {
        let r = FixedResolver::new().with("Hook.Test", ["127.0.0.1".parse().unwrap()]);
        assert_eq!(r.resolve("hook.test", 443).await.unwrap(), vec!["127.0.0.1".parse::<IpAddr>().unwrap()]);
        r.set("hook.test", ["::1".parse().unwrap()]);
        assert_eq!(r.resolve("HOOK.test", 1).await.unwrap(), vec!["::1".parse::<IpAddr>().unwrap()]);
        assert_eq!(r.resolve("other.test", 443).await.unwrap_err().kind(), io::ErrorKind::NotFound);
        r.remove("hook.test");
        assert!(r.resolve("hook.test", 443).await.is_err());
        assert_eq!(r.lookups(), 4);
    }
}
