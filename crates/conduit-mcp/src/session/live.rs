//! One legacy session as this node holds it while serving: its record, its
//! streams, the server→client requests awaiting answers, and the requests in
//! flight (for `notifications/cancelled`).

use super::events::{EventLog, ReplayBounds};
use super::relay::{ASK_PREFIX, hex, session_digest};
use super::store::SessionRecord;
use super::waits::{self, Asking, Gave, WaitPolicy};
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::{ErrorCode, Message, Request, RequestId};
use crate::protocol::meta::ClientCapabilities;
use crate::subscriptions::Registration;
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

type Waiter = oneshot::Sender<Result<Value, RpcError>>;

/// A live legacy session on this node.
pub struct LegacySession {
    record: Mutex<SessionRecord>,
    /// Whether the record lives in the session store (HTTP) or only here (stdio).
    pub(crate) persisted: bool,
    /// HTTP: the session's SSE streams.
    pub(crate) events: EventLog,
    /// stdio: the one output every message goes to.
    local_out: Option<UnboundedSender<Message>>,
    waiting: Mutex<Waiting>,
    /// The bounds on `waiting`, shared with the node's other sessions.
    waits: Arc<WaitPolicy>,
    /// The tag of this node, in every request id it sends (so another node can forward the answer).
    node: Arc<str>,
    /// The SHA-256 of the id (how a forwarded response names the session); zeros on stdio.
    key: [u8; 32],
    next_request: AtomicU64,
    /// SSE responses of this session open on this node (its GET stream, requests' streams;
    /// 32 bits: it packs beside `persisted`, and an idle session's size counts).
    open_streams: AtomicU32,
    in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    pub(crate) changes: Mutex<Option<Registration>>,
    /// The URIs of `resources/subscribe`.
    pub(crate) uris: Mutex<BTreeSet<String>>,
}

impl std::fmt::Debug for LegacySession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacySession").field("persisted", &self.persisted).finish_non_exhaustive()
    }
}

/// The server→client requests of a session awaiting answers, each with the bytes its
/// caller keeps meanwhile (summed when one more asks: at most `per_session` of them, and
/// an idle session holds only an empty map).
#[derive(Default)]
struct Waiting {
    by_id: HashMap<RequestId, (Waiter, usize)>,
}

impl Waiting {
    fn bytes(&self) -> usize {
        self.by_id.values().map(|(_, n)| n).sum()
    }
}

/// One request waiting on the client: forgotten, and its bytes given back, however
/// the wait ends (answered, given up, or its caller dropped, as a cancelled call is).
struct Asked<'a> {
    session: &'a LegacySession,
    id: RequestId,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        lock(&self.session.waiting).by_id.remove(&self.id);
        self.session.events.forget_ask(&self.id);
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl LegacySession {
    /// A session served over HTTP (its record is in the store).
    /// `replay` bounds its replay buffer; `waits` its waiting requests.
    pub(crate) fn http(record: SessionRecord, replay: ReplayBounds, waits: Arc<WaitPolicy>, node: Arc<str>) -> Self {
        let key = session_digest(&record.id);
        Self::build(record, true, None, replay, waits, node, key)
    }

    /// A session bound to one stdio process: everything goes to `out`.
    pub(crate) fn local(record: SessionRecord, out: UnboundedSender<Message>) -> Self {
        let replay = ReplayBounds::alone(1, 0);
        Self::build(record, false, Some(out), replay, Arc::new(WaitPolicy::local()), Arc::from("local"), [0; 32])
    }

    fn build(
        record: SessionRecord,
        persisted: bool,
        local_out: Option<UnboundedSender<Message>>,
        replay: ReplayBounds,
        waits: Arc<WaitPolicy>,
        node: Arc<str>,
        key: [u8; 32],
    ) -> Self {
        Self {
            record: Mutex::new(record),
            persisted,
            events: EventLog::bounded(replay),
            local_out,
            waiting: Mutex::default(),
            waits,
            node,
            key,
            next_request: AtomicU64::new(1),
            open_streams: AtomicU32::new(0),
            in_flight: Mutex::default(),
            changes: Mutex::new(None),
            uris: Mutex::default(),
        }
    }

    /// A copy of the record.
    pub fn record(&self) -> SessionRecord {
        lock(&self.record).clone()
    }

    /// Changes the record (the caller writes it to the store when persisted).
    pub(crate) fn edit(&self, f: impl FnOnce(&mut SessionRecord)) {
        f(&mut lock(&self.record));
    }

    /// When the session was last seen (epoch ms).
    pub(crate) fn last_seen_ms(&self) -> u64 {
        lock(&self.record).last_seen_ms
    }

    /// The SHA-256 of the id.
    pub(crate) fn digest(&self) -> &[u8; 32] {
        &self.key
    }

    /// Whether the session is still live at `now_ms` with this idle timeout.
    pub(crate) fn is_live(&self, now_ms: u64, idle_ms: u64) -> bool {
        lock(&self.record).is_live(now_ms, idle_ms)
    }

    /// Whether `owner` is the principal that opened the session.
    pub(crate) fn owned_by(&self, owner: Option<&str>) -> bool {
        lock(&self.record).owner.as_deref() == owner
    }

    /// The session id (a capability: do not log it).
    pub fn id(&self) -> String {
        lock(&self.record).id.clone()
    }

    /// The SHA-256 of the id in hex, as a forwarded response names the session.
    pub(crate) fn key(&self) -> String {
        hex(&self.key)
    }

    /// Whether `key` (hex, as [`key`](Self::key) gives it) names this session.
    pub(crate) fn has_key(&self, key: &str) -> bool {
        key.len() == 64 && key.eq_ignore_ascii_case(&hex(&self.key))
    }

    /// The capabilities the client declared at `initialize`.
    pub fn client_capabilities(&self) -> ClientCapabilities {
        ClientCapabilities(lock(&self.record).client_capabilities.clone())
    }

    /// The level `logging/setLevel` set, if any.
    pub fn log_level(&self) -> Option<String> {
        lock(&self.record).log_level.clone()
    }

    /// Sends a message that belongs to no request: the stand-alone GET stream
    /// (HTTP) or the process output (stdio). Returns whether it had somewhere to go.
    pub fn send_unsolicited(&self, msg: Message) -> bool {
        match &self.local_out {
            Some(out) => out.send(msg).is_ok(),
            None => self.events.send_unsolicited(msg),
        }
    }

    /// Sends `method` to the client on `out` (the stream of the request that needs the
    /// answer) and waits for the client's response, at most `asking.timeout`, and no
    /// longer once its stream has been left without a connection (see [`super::waits`]).
    /// Refused at once past the session's or the client's cap on waiting requests, in
    /// number or in the bytes their callers keep (`asking.held_bytes` each).
    pub(crate) async fn ask(
        &self,
        out: &UnboundedSender<Message>,
        method: &str,
        params: Option<Value>,
        asking: Asking,
    ) -> Result<Value, RpcError> {
        let client = lock(&self.record).client_key.clone();
        let bytes = asking.held_bytes;
        let _held = self.waits.admit(&client, bytes)?;
        let id = RequestId::String(format!(
            "{ASK_PREFIX}{}-{}",
            self.node,
            self.next_request.fetch_add(1, Ordering::Relaxed)
        ));
        let (tx, rx) = oneshot::channel();
        let _asked = {
            let mut waiting = lock(&self.waiting);
            if waiting.by_id.len() >= self.waits.per_session {
                return Err(waits::too_many("session"));
            }
            if waiting.bytes().saturating_add(bytes) > self.waits.bytes_per_session {
                return Err(waits::too_large("session"));
            }
            waiting.by_id.insert(id.clone(), (tx, bytes));
            Asked { session: self, id: id.clone() }
        };
        let sent = out.send(Message::Request(Request::new(id.clone(), method, params)));
        if sent.is_err() {
            return Err(RpcError::internal("the request's stream is closed"));
        }
        let answer = waits::wait_for(&self.events, &id, rx, asking.timeout, self.waits.abandon_after).await;
        match answer {
            Ok(r) => r,
            Err(Gave::Ended) => Err(RpcError::internal("the session ended while waiting for the client")),
            Err(Gave::Timeout) => Err(RpcError::internal(format!("the client did not answer {method} in time"))),
            Err(Gave::Abandoned) => Err(RpcError::new(
                ErrorCode::Other(-32000),
                format!("the client left without answering {method} (its stream was not resumed)"),
            )),
        }
    }

    /// Hands the client's response to the request waiting for it; `false` when nobody waits on `id`.
    pub fn deliver(&self, id: &RequestId, outcome: Result<Value, RpcError>) -> bool {
        matches!(self.offer(id, outcome), Ok(true))
    }

    /// Like [`deliver`](Self::deliver), but hands the outcome back when no request of this
    /// node waits on `id` (so it can be forwarded); `Ok(false)`: the waiter just gave up.
    pub(crate) fn offer(
        &self,
        id: &RequestId,
        outcome: Result<Value, RpcError>,
    ) -> Result<bool, Result<Value, RpcError>> {
        let waiter = lock(&self.waiting).by_id.remove(id);
        match waiter {
            Some((w, _)) => Ok(w.send(outcome).is_ok()),
            None => Err(outcome),
        }
    }

    /// Registers a request in flight, cancelled by `notifications/cancelled` or when the session ends.
    pub(crate) fn track(&self, id: RequestId, token: CancellationToken) {
        lock(&self.in_flight).insert(id, token);
    }

    /// Forgets a finished request.
    pub(crate) fn untrack(&self, id: &RequestId) {
        lock(&self.in_flight).remove(id);
    }

    /// `notifications/cancelled`: stops request `id` if it is in flight (else ignored).
    pub fn cancel(&self, id: &RequestId) {
        if let Some(t) = lock(&self.in_flight).get(id) {
            t.cancel();
        }
    }

    /// Whether the session is in use on this node: a stream of it is open, or a request of
    /// it is in flight. Such a session is not idle, however long since its last request.
    pub(crate) fn in_use(&self) -> bool {
        self.open_streams.load(Ordering::Acquire) > 0 || !lock(&self.in_flight).is_empty()
    }

    /// The session ends: in-flight requests stop, waiters are released, its open streams
    /// close and nothing is kept for replay.
    pub(crate) fn end(&self) {
        lock(&self.in_flight).values().for_each(CancellationToken::cancel);
        lock(&self.waiting).by_id.clear();
        lock(&self.changes).take();
        self.events.close();
    }
}

/// Marks a session in use while one of its SSE responses is open (see
/// [`LegacySession::in_use`]).
pub(crate) struct StreamOpen(Arc<LegacySession>);

impl StreamOpen {
    /// An open response of `session`, until this is dropped.
    pub(crate) fn new(session: &Arc<LegacySession>) -> Self {
        session.open_streams.fetch_add(1, Ordering::AcqRel);
        Self(session.clone())
    }
}

impl Drop for StreamOpen {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Delivers what the change hub announces (list changes, updates of subscribed URIs) to a
/// session as unsolicited messages, in place: a session holds no channel and no task for it.
pub(crate) struct UnsolicitedSink(Weak<LegacySession>);

impl UnsolicitedSink {
    pub(crate) fn new(session: &Arc<LegacySession>) -> Self {
        Self(Arc::downgrade(session))
    }
}

impl crate::subscriptions::Sink for UnsolicitedSink {
    fn deliver(&self, method: &str, params: Map<String, Value>) -> bool {
        match self.0.upgrade() {
            Some(s) => {
                s.send_unsolicited(Message::notification(method, Value::Object(params)));
                true
            }
            None => false,
        }
    }

    fn is_closed(&self) -> bool {
        self.0.strong_count() == 0
    }
}

/// The subscribed URIs of a session, locked.
pub(crate) fn lock_uris(s: &LegacySession) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
    lock(&s.uris)
}

/// The session's registration on the change hub, locked.
pub(crate) fn lock_changes(s: &LegacySession) -> std::sync::MutexGuard<'_, Option<Registration>> {
    lock(&s.changes)
}
