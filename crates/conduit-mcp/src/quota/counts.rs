//! [`Counts`]: how many of something each client holds at once (requests
//! waiting on it, open streams), within a cap per client and a cap in all.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

#[derive(Debug)]
struct Inner<K> {
    per_client: HashMap<K, usize>,
    total: usize,
}

/// Per-client counts under one short lock, keyed by `K` (a [`ClientKey`](super::ClientKey),
/// or its text as a session keeps it). A client's entry goes when its count drops to
/// zero, so the map holds only clients that hold something.
#[derive(Debug)]
pub(crate) struct Counts<K> {
    inner: Arc<Mutex<Inner<K>>>,
}

impl<K> Clone for Counts<K> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone() }
    }
}

impl<K> Default for Counts<K> {
    fn default() -> Self {
        Self { inner: Arc::new(Mutex::new(Inner { per_client: HashMap::new(), total: 0 })) }
    }
}

/// What a client holds (one unit, or `n` of a weighed [`hold_n`](Counts::hold_n));
/// given back when dropped.
#[derive(Debug)]
pub(crate) struct Held<K: Hash + Eq> {
    counts: Counts<K>,
    key: K,
    n: usize,
}

/// Why [`Counts::hold`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// The client holds its cap.
    Client,
    /// Everyone together holds the total cap.
    Total,
}

impl<K> Counts<K> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<K>> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many are held in all.
    pub(crate) fn total(&self) -> usize {
        self.lock().total
    }
}

impl<K: Hash + Eq + Clone> Counts<K> {
    /// One more for `key`, when it holds fewer than `per_client` and everyone fewer than `total`.
    pub(crate) fn hold(&self, key: &K, per_client: usize, total: usize) -> Result<Held<K>, Full> {
        self.hold_n(key, 1, per_client, total)
    }

    /// `n` more for `key` (bytes, say), when its holding stays within `per_client`
    /// and everyone's within `total`. Zero always fits.
    pub(crate) fn hold_n(&self, key: &K, n: usize, per_client: usize, total: usize) -> Result<Held<K>, Full> {
        let mut g = self.lock();
        if n > 0 && g.total.saturating_add(n) > total {
            return Err(Full::Total);
        }
        let has = g.per_client.get(key).copied().unwrap_or(0);
        if n > 0 && has.saturating_add(n) > per_client {
            return Err(Full::Client);
        }
        if n > 0 {
            g.per_client.insert(key.clone(), has + n);
            g.total += n;
        }
        Ok(Held { counts: self.clone(), key: key.clone(), n })
    }

    /// How many `key` holds.
    #[cfg(test)]
    pub(crate) fn of(&self, key: &K) -> usize {
        self.lock().per_client.get(key).copied().unwrap_or(0)
    }
}

impl<K: Hash + Eq> Drop for Held<K> {
    fn drop(&mut self) {
        if self.n == 0 {
            return;
        }
        let mut g = self.counts.lock();
        g.total = g.total.saturating_sub(self.n);
        if let Some(n) = g.per_client.get_mut(&self.key) {
            *n = n.saturating_sub(self.n);
            if *n == 0 {
                g.per_client.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::ClientKey;

    #[test]
    fn caps_per_client_and_in_all_and_gives_back_on_drop() {
        let c = Counts::default();
        let (a, b) = (ClientKey::Local, ClientKey::Unknown);
        let a1 = c.hold(&a, 2, 3).expect("first");
        let a2 = c.hold(&a, 2, 3).expect("second");
        assert_eq!(c.hold(&a, 2, 3).unwrap_err(), Full::Client);
        let b1 = c.hold(&b, 2, 3).expect("another client");
        assert_eq!(c.hold(&b, 2, 3).unwrap_err(), Full::Total);
        drop(a1);
        assert_eq!((c.of(&a), c.total()), (1, 2));
        drop((a2, b1));
        assert_eq!(c.total(), 0);
        assert!(c.lock().per_client.is_empty(), "no entry is left behind");
    }

    #[test]
    fn weighed_holds_stay_within_both_caps() {
        let c = Counts::default();
        let (a, b) = (ClientKey::Local, ClientKey::Unknown);
        let a1 = c.hold_n(&a, 60, 100, 150).expect("fits");
        assert_eq!(c.hold_n(&a, 41, 100, 150).unwrap_err(), Full::Client);
        let a2 = c.hold_n(&a, 40, 100, 150).expect("exactly the cap");
        assert_eq!(c.hold_n(&b, 51, 100, 150).unwrap_err(), Full::Total);
        let _zero = c.hold_n(&a, 0, 100, 150).expect("nothing always fits");
        drop(a1);
        assert_eq!((c.of(&a), c.total()), (40, 40));
        drop(a2);
        assert!(c.lock().per_client.is_empty());
    }
}
