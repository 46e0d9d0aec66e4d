//! [`Backlog`]: the bytes a handler queued toward one response stream that
//! its connection has not yet taken. The handler counts what it queues, the
//! transport what it hands to the socket; the difference is what the server
//! holds for a client that reads slowly or not at all.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// Bytes queued toward one response stream and bytes taken from it.
///
/// Both sides measure a message the same way (the length of its JSON text),
/// so the difference is the bytes waiting in the server's buffers.
#[derive(Debug, Default)]
pub struct Backlog {
    queued: AtomicUsize,
    taken: AtomicUsize,
    /// Woken whenever the connection takes a message.
    drained: Notify,
}

impl Backlog {
    /// A stream with nothing queued.
    pub fn new() -> Self {
        Self::default()
    }

    /// The handler queued a message of `bytes` bytes.
    pub fn queued(&self, bytes: usize) {
        self.queued.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The transport handed a message of `bytes` bytes to the connection.
    pub fn taken(&self, bytes: usize) {
        self.taken.fetch_add(bytes, Ordering::Relaxed);
        self.drained.notify_waiters();
    }

    /// Waits until at most `limit` bytes wait, for at most `grace`; returns
    /// whether they do.
    pub async fn room_within(&self, limit: usize, grace: Duration) -> bool {
        let room = async {
            loop {
                // Registered before the check, so a take between the two still wakes.
                let drained = self.drained.notified();
                tokio::pin!(drained);
                drained.as_mut().enable();
                if self.waiting() <= limit {
                    return;
                }
                drained.await;
            }
        };
        tokio::time::timeout(grace, room).await.is_ok()
    }

    /// Bytes queued and not yet taken (messages the handler did not count,
    /// such as its final answer, never make this negative).
    pub fn waiting(&self) -> usize {
        // Read `taken` first: a take between the two reads then only overstates the wait.
        let taken = self.taken.load(Ordering::Relaxed);
        self.queued.load(Ordering::Relaxed).saturating_sub(taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_is_queued_minus_taken_and_never_below_zero() {
        let b = Backlog::new();
        b.queued(100);
        b.queued(50);
        assert_eq!(b.waiting(), 150);
        b.taken(100);
        assert_eq!(b.waiting(), 50);
        b.taken(80);
        assert_eq!(b.waiting(), 0);
    }

    #[tokio::test]
    async fn room_within_waits_for_a_take_and_gives_up_after_the_grace() {
        let b = std::sync::Arc::new(Backlog::new());
        b.queued(10);
        assert!(b.room_within(10, Duration::ZERO).await);
        b.queued(10);
        let waiter = tokio::spawn({
            let b = b.clone();
            async move { b.room_within(10, Duration::from_secs(3600)).await }
        });
        tokio::task::yield_now().await;
        b.taken(10);
        assert!(waiter.await.unwrap(), "woken by the take");
        b.queued(100);
        tokio::time::pause();
        assert!(!b.room_within(10, Duration::from_secs(1)).await, "nothing taken within the grace");
    }
}
