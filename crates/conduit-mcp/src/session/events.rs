//! A session's SSE streams on this node: event ids, the bounded replay buffer,
//! and the connection (if any) each stream is attached to.
//!
//! Every message sent to the client on a legacy HTTP session goes through here,
//! on exactly one stream: a POST's stream (what belongs to that request) or the
//! stand-alone GET stream (what belongs to none). An event id is
//! `<stream>-<seq>`, unique across the session; `seq` 0 is the priming event.
//! When a connection drops, its stream's messages still enter the buffer, and a
//! `GET` with `Last-Event-ID` replays what followed that id and attaches the new
//! connection to the same stream.
//!
//! The buffer is bounded twice: at most `cap` events and `budget` bytes (each
//! message counted as its JSON); the oldest events go first. The newest is kept
//! even when it alone is larger than the budget (a pending answer stays
//! replayable), but such a message counts against its client's [`OversizePool`],
//! shared by the client's sessions on the node: when the pool is full, the
//! message still goes to the stream's connection but is not kept for replay.
//! What every buffer of the node keeps also counts against the node's ceiling
//! ([`Retained`]): what does not fit under it goes, oldest first, the newest
//! message too when it alone does not fit (it still reaches its connection).

use super::retained::Retained;
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::quota::{Counts, Held};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// What a connection receives: an event id and its message (`None`: the priming event).
pub type Event = (String, Option<Message>);

/// Default number of events kept for replay per session.
pub const DEFAULT_REPLAY: usize = 256;

/// Default bytes of messages (as JSON) kept for replay per session.
pub const DEFAULT_REPLAY_BYTES: usize = 256 * 1024;

/// Default bytes of messages larger than a session's replay budget that one client's
/// sessions on a node keep for replay together (four answers at the default body limit).
pub const DEFAULT_OVERSIZE_REPLAY_BYTES_PER_CLIENT: usize = 16 * 1024 * 1024;

/// The bytes of messages kept for replay beyond their sessions' budgets, per client
/// (a session record's `client_key`), shared by the sessions of a node.
///
/// A client is counted under a keyed 64-bit hash of its key, so a session carries eight
/// bytes rather than a copy of the key (an idle session's size counts), and no client
/// can choose a key that shares another's count.
#[derive(Debug, Default)]
pub(crate) struct OversizePool {
    held: Counts<u64>,
    per_client: usize,
    hasher: std::hash::RandomState,
}

impl OversizePool {
    /// A pool of `per_client` bytes for each client.
    pub(crate) fn new(per_client: usize) -> Self {
        Self { per_client, ..Self::default() }
    }

    /// How the pool names the client whose key is `client_key`.
    pub(crate) fn client(&self, client_key: &str) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, client_key)
    }
}

/// How much each session of a node keeps for replay: one value the node's sessions share.
#[derive(Debug)]
pub(crate) struct ReplayPolicy {
    /// Events at most.
    pub(crate) events: usize,
    /// Bytes at most, but for a newest message larger than this by itself.
    pub(crate) bytes: usize,
    /// Where such a message is counted (`None`: it is always kept).
    pub(crate) oversize: Option<Arc<OversizePool>>,
    /// The node's account every buffer draws on (`None`: no ceiling).
    pub(crate) retained: Option<Arc<Retained>>,
}

/// How much one session keeps for replay: its node's policy, and whose session it is
/// (the client the oversize pool counts it against).
#[derive(Debug, Clone)]
pub(crate) struct ReplayBounds {
    pub(crate) policy: Arc<ReplayPolicy>,
    pub(crate) client: u64,
}

impl ReplayBounds {
    /// Bounds of their own, shared with nobody (stdio, tests).
    pub(crate) fn alone(events: usize, bytes: usize) -> Self {
        Self { policy: Arc::new(ReplayPolicy { events, bytes, oversize: None, retained: None }), client: 0 }
    }
}

#[derive(Debug)]
struct Stream {
    seq: u64,
    conn: Option<UnboundedSender<Event>>,
    /// The stream ends after its response (POST streams).
    ends_with_response: bool,
    ended: bool,
}

#[derive(Debug, Default)]
struct Inner {
    next_stream: u64,
    streams: HashMap<u64, Stream>,
    /// (stream, seq, message, its size as JSON), oldest first.
    buffer: VecDeque<(u64, u64, Message, usize)>,
    /// The sizes in `buffer`, summed.
    bytes: usize,
    /// The stream each server→client request went out on, until its asker forgets it.
    asks: HashMap<RequestId, u64>,
    standalone: Option<u64>,
    /// The place in the client's pool of a newest message larger than the budget (boxed:
    /// most sessions never have one, and an idle session's size counts).
    oversize: Option<Box<Held<u64>>>,
    /// The bytes the node's account holds for this buffer (`bytes`, once settled).
    charged: usize,
}

/// The streams of one session.
#[derive(Debug)]
pub struct EventLog {
    inner: Mutex<Inner>,
    policy: Arc<ReplayPolicy>,
    /// Whose session this is, for the oversize pool.
    client: u64,
}

impl Drop for EventLog {
    fn drop(&mut self) {
        if let Some(node) = &self.policy.retained {
            node.give(self.inner.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).charged);
        }
    }
}

/// Forgets `stream` when it has finished and none of its events is left in the buffer.
fn forget_if_done(g: &mut Inner, stream: u64) {
    if g.streams.get(&stream).is_some_and(|s| s.ended) && !g.buffer.iter().any(|(s, ..)| *s == stream) {
        g.streams.remove(&stream);
    }
}

fn event_id(stream: u64, seq: u64) -> String {
    format!("{stream}-{seq}")
}

fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (s, q) = id.trim().split_once('-')?;
    Some((s.parse().ok()?, q.parse().ok()?))
}

impl EventLog {
    /// An empty log keeping at most `cap` events and `budget` bytes for replay (and the
    /// newest message whatever its size).
    pub fn new(cap: usize, budget: usize) -> Self {
        Self::bounded(ReplayBounds::alone(cap, budget))
    }

    /// An empty log within `bounds`.
    pub(crate) fn bounded(bounds: ReplayBounds) -> Self {
        Self { inner: Mutex::new(Inner::default()), policy: bounds.policy, client: bounds.client }
    }

    /// The bytes of messages kept for replay.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn open(&self, ends_with_response: bool) -> (u64, UnboundedReceiver<Event>) {
        let (tx, rx) = unbounded_channel();
        let mut g = self.lock();
        let id = g.next_stream;
        g.next_stream += 1;
        let _ = tx.send((event_id(id, 0), None));
        g.streams.insert(id, Stream { seq: 0, conn: Some(tx), ends_with_response, ended: false });
        (id, rx)
    }

    /// Opens the stream of one POSTed request; the connection gets the priming event first.
    pub fn open_request_stream(&self) -> (u64, UnboundedReceiver<Event>) {
        self.open(true)
    }

    /// Opens (or replaces) the stand-alone stream of a `GET`.
    pub fn open_standalone(&self) -> UnboundedReceiver<Event> {
        let (id, rx) = self.open(false);
        let old = self.lock().standalone.replace(id);
        if let Some(old) = old {
            self.lock().streams.remove(&old);
        }
        rx
    }

    /// Sends `msg` on `stream`: buffered for replay, and to its connection if one is attached.
    /// A response ends a request stream (its connection is then closed).
    pub fn send(&self, stream: u64, msg: Message) {
        let mut g = self.lock();
        let Some(s) = g.streams.get_mut(&stream) else { return };
        if s.ended {
            return;
        }
        s.seq += 1;
        let seq = s.seq;
        let end = s.ends_with_response && msg.is_response();
        if let Some(conn) = &s.conn
            && conn.send((event_id(stream, seq), Some(msg.clone()))).is_err()
        {
            s.conn = None;
        }
        if end {
            s.ended = true;
            s.conn = None;
        }
        if let Message::Request(r) = &msg {
            g.asks.insert(r.id.clone(), stream);
        }
        let len = crate::bounds::json_len(&msg);
        g.buffer.push_back((stream, seq, msg, len));
        g.bytes += len;
        let (cap, budget) = (self.policy.events.max(1), self.policy.bytes);
        while g.buffer.len() > 1 && (g.buffer.len() > cap || g.bytes > budget) {
            if let Some((old, _, _, len)) = g.buffer.pop_front() {
                g.bytes -= len;
                forget_if_done(&mut g, old);
            }
        }
        // Left over the budget: the newest message alone, larger than it.
        g.oversize = None;
        if g.bytes > budget
            && let Some(pool) = &self.policy.oversize
        {
            match pool.held.hold_n(&self.client, g.bytes, pool.per_client, usize::MAX) {
                Ok(place) => g.oversize = Some(Box::new(place)),
                Err(_) => {
                    g.buffer.clear();
                    g.bytes = 0;
                    forget_if_done(&mut g, stream);
                }
            }
        }
        self.settle(&mut g);
    }

    /// Charges the node's account for what the buffer keeps now; what does not fit goes,
    /// oldest first (the newest too, when it alone does not fit).
    fn settle(&self, g: &mut Inner) {
        let Some(node) = &self.policy.retained else { return };
        while g.bytes > g.charged && !node.take(g.bytes - g.charged) {
            let Some((old, _, _, len)) = g.buffer.pop_front() else { break };
            g.bytes -= len;
            forget_if_done(g, old);
        }
        if g.bytes < g.charged {
            node.give(g.charged - g.bytes);
        }
        g.charged = g.bytes;
        if g.bytes <= self.policy.bytes {
            g.oversize = None;
        }
    }

    /// The session ended: every connection closes, nothing more is sent, and nothing is
    /// kept for replay (nobody can resume it).
    pub(crate) fn close(&self) {
        let mut g = self.lock();
        for s in g.streams.values_mut() {
            s.ended = true;
            s.conn = None;
        }
        g.buffer.clear();
        g.bytes = 0;
        self.settle(&mut g);
    }

    /// Ends `stream` without a response (a cancelled request): nothing more is sent on it,
    /// and it is forgotten once its events have left the buffer.
    pub fn end(&self, stream: u64) {
        let mut g = self.lock();
        let buffered = g.buffer.iter().any(|(s, ..)| *s == stream);
        if let Some(s) = g.streams.get_mut(&stream) {
            s.ended = true;
            s.conn = None;
        }
        if !buffered {
            g.streams.remove(&stream);
        }
    }

    /// Whether the server→client request `id` was sent on a stream that now has no
    /// connection (the client left it; a `GET` with `Last-Event-ID` would attach one
    /// again). `false` when it did not go out here (yet).
    pub fn ask_detached(&self, id: &RequestId) -> bool {
        let g = self.lock();
        let Some(stream) = g.asks.get(id) else { return false };
        match g.streams.get(stream) {
            Some(s) => s.ended || s.conn.as_ref().is_none_or(UnboundedSender::is_closed),
            None => true,
        }
    }

    /// Forgets where request `id` went (its answer came, or its asker gave up).
    pub fn forget_ask(&self, id: &RequestId) {
        self.lock().asks.remove(id);
    }

    /// Sends `msg` on the stand-alone stream; `false` when no `GET` stream was ever opened.
    pub fn send_unsolicited(&self, msg: Message) -> bool {
        let standalone = self.lock().standalone;
        match standalone {
            Some(id) => {
                self.send(id, msg);
                true
            }
            None => false,
        }
    }

    /// Detaches the connection of `stream` (the server closes it; messages keep being buffered).
    pub fn detach(&self, stream: u64) {
        if let Some(s) = self.lock().streams.get_mut(&stream) {
            s.conn = None;
        }
    }

    /// Resumes after `last_event_id`: the events of that stream that followed it,
    /// then what comes next on it. `None` when the id names no stream here.
    pub fn resume(&self, last_event_id: &str) -> Option<UnboundedReceiver<Event>> {
        let (stream, after) = parse_event_id(last_event_id)?;
        let (tx, rx) = unbounded_channel();
        let mut g = self.lock();
        for (s, seq, m, _) in &g.buffer {
            if *s == stream && *seq > after {
                let _ = tx.send((event_id(*s, *seq), Some(m.clone())));
            }
        }
        let st = g.streams.get_mut(&stream)?;
        if !st.ended {
            st.conn = Some(tx);
        }
        Some(rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::RequestId;
    use serde_json::json;

    fn note(n: u64) -> Message {
        Message::notification("notifications/progress", json!({ "progress": n }))
    }

    #[test]
    fn replays_after_the_last_event_and_ends_with_the_response() {
        let log = EventLog::new(16, DEFAULT_REPLAY_BYTES);
        let (s, mut rx) = log.open_request_stream();
        assert_eq!(rx.try_recv().expect("priming"), (format!("{s}-0"), None));
        log.send(s, note(1));
        let (id1, _) = rx.try_recv().expect("live");
        log.detach(s);
        log.send(s, note(2));
        log.send(s, Message::Result { id: RequestId::Number(1), result: json!({}) });
        let mut again = log.resume(&id1).expect("known stream");
        assert_eq!(again.try_recv().expect("replayed").1, Some(note(2)));
        assert!(again.try_recv().expect("the response").1.is_some_and(|m| m.is_response()));
        assert!(again.try_recv().is_err(), "nothing after the response");
        assert!(log.resume("99-0").is_none());
        assert!(log.resume("garbage").is_none());
    }

    #[test]
    fn the_buffer_is_bounded_in_bytes_and_keeps_the_newest() {
        let one = crate::bounds::json_len(&note(0));
        let log = EventLog::new(100, 3 * one);
        let (s, _rx) = log.open_request_stream();
        for n in 0..10 {
            log.send(s, note(n % 10));
        }
        assert!(log.bytes() <= 3 * one, "{} > {}", log.bytes(), 3 * one);
        let big =
            Message::notification("notifications/progress", json!({ "progress": 1, "message": "x".repeat(10 * one) }));
        log.send(s, big.clone());
        let mut again = log.resume(&format!("{s}-0")).expect("known");
        assert_eq!(again.try_recv().expect("the newest is kept").1, Some(big), "only the newest, over the budget");
        assert!(again.try_recv().is_err());
    }

    #[test]
    fn messages_over_the_budget_share_the_clients_pool() {
        let big = || Message::Result { id: RequestId::Number(1), result: json!({ "text": "x".repeat(1000) }) };
        let one = crate::bounds::json_len(&big());
        let pool = Arc::new(OversizePool::new(2 * one));
        let alice = pool.client("alice");
        let log = || {
            let policy = ReplayPolicy { events: 16, bytes: 100, oversize: Some(pool.clone()), retained: None };
            EventLog::bounded(ReplayBounds { policy: Arc::new(policy), client: alice })
        };
        let replayed = |log: &EventLog, s: u64| {
            let mut rx = log.resume(&format!("{s}-0"));
            rx.as_mut().and_then(|rx| rx.try_recv().ok()).and_then(|e| e.1)
        };
        let (first, second, third) = (log(), log(), log());
        let mut streams = Vec::new();
        for l in [&first, &second, &third] {
            let (s, rx) = l.open_request_stream();
            drop(rx);
            l.send(s, big());
            streams.push(s);
        }
        assert_eq!(replayed(&first, streams[0]), Some(big()));
        assert_eq!(replayed(&second, streams[1]), Some(big()));
        assert_eq!(replayed(&third, streams[2]), None, "the client's pool is full: not kept");
        assert_eq!((third.bytes(), pool.held.total()), (0, 2 * one));
        drop(first);
        assert_eq!(pool.held.total(), one, "a session's place goes with it");
        let _rx = third.open_standalone();
        let s = third.lock().standalone.expect("the GET stream");
        let big_note = Message::notification("notifications/message", json!({ "data": "x".repeat(900) }));
        third.send(s, big_note.clone());
        assert_eq!(replayed(&third, s), Some(big_note), "room again");
        assert!(pool.held.total() > one);
        third.send(s, note(1));
        assert!(third.bytes() <= 100);
        assert_eq!(pool.held.total(), one, "a message that fits the budget frees the place");
    }

    #[test]
    fn every_buffer_of_a_node_fits_under_its_ceiling() {
        let one = crate::bounds::json_len(&note(0));
        let node = Arc::new(Retained::new(5 * one));
        let log = || {
            let policy = ReplayPolicy { events: 16, bytes: 4 * one, oversize: None, retained: Some(node.clone()) };
            EventLog::bounded(ReplayBounds { policy: Arc::new(policy), client: 0 })
        };
        let (a, b) = (log(), log());
        let (sa, _ra) = a.open_request_stream();
        let (sb, _rb) = b.open_request_stream();
        for n in 0..3 {
            a.send(sa, note(n));
        }
        assert_eq!((a.bytes(), node.used()), (3 * one, 3 * one));
        for n in 0..3 {
            b.send(sb, note(n));
        }
        // The third of b's did not fit: b's oldest went to make room for its newest.
        assert_eq!((b.bytes(), node.used()), (2 * one, 5 * one));
        let mut again = b.resume(&format!("{sb}-0")).expect("known");
        assert_eq!(again.try_recv().expect("kept").1, Some(note(1)));
        let big = Message::notification("notifications/progress", json!({ "message": "x".repeat(6 * one) }));
        b.send(sb, big);
        assert_eq!((b.bytes(), node.used()), (0, 3 * one), "a message larger than the room left is not kept");
        a.close();
        assert_eq!(node.used(), 0, "an ended session keeps nothing");
        b.send(sb, note(7));
        drop(b);
        assert_eq!(node.used(), 0, "a dropped log gives its bytes back");
    }

    #[test]
    fn a_stream_ended_without_a_response_is_forgotten() {
        let log = EventLog::new(16, DEFAULT_REPLAY_BYTES);
        let (s, _rx) = log.open_request_stream();
        log.end(s);
        assert!(log.resume(&format!("{s}-0")).is_none(), "nothing is kept of it");
    }

    #[test]
    fn the_buffer_is_bounded() {
        let log = EventLog::new(2, DEFAULT_REPLAY_BYTES);
        let (s, _rx) = log.open_request_stream();
        for n in 0..5 {
            log.send(s, note(n));
        }
        let mut again = log.resume(&format!("{s}-0")).expect("known");
        let mut got = 0;
        while again.try_recv().is_ok() {
            got += 1;
        }
        assert_eq!(got, 2);
    }
}
