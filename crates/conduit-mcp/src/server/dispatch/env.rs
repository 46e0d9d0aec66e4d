//! What a transport hands the server beside the request body.

use crate::auth::Principal;
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::Message;
use crate::quota::{Backlog, ClientKey};
use crate::session::LegacySession;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// A transport's header rules, which dispatch calls at the points the check
/// order puts them (HTTP implements them; stdio has none).
pub trait HeaderCheck: Send + Sync {
    /// The `MCP-Protocol-Version` header as sent, for the era decision.
    fn protocol_version(&self) -> Option<&str>;

    /// Whether an `MCP-Protocol-Version` header was sent that is not readable text.
    fn protocol_version_unreadable(&self) -> bool {
        false
    }

    /// Checks `MCP-Protocol-Version` and `Mcp-Method` against the body.
    fn check_base(&self, meta_version: &str, method: &str) -> Result<(), RpcError>;

    /// Checks `Mcp-Name` (when the method mirrors a value) and the `Mcp-Param-*`
    /// headers of the tool arguments that are mirrored (header name, body value).
    fn check_routing(&self, name: Option<&str>, params: &[(&str, &Value)]) -> Result<(), RpcError>;
}

/// The legacy session a request belongs to, and where `initialize` puts a new one.
///
/// HTTP makes one per request, holding the session its `Mcp-Session-Id` named;
/// stdio makes one per process (with the process output), so an `initialize`
/// switches the whole process to the legacy era.
#[derive(Debug, Default)]
pub struct SessionSlot {
    cell: Mutex<Option<Arc<LegacySession>>>,
    /// stdio: the output a session opened here sends everything to (not stored).
    pub(crate) local_out: Option<UnboundedSender<Message>>,
}

impl SessionSlot {
    /// A slot for one HTTP request, holding the session it named (if any).
    pub fn http(session: Option<Arc<LegacySession>>) -> Self {
        Self { cell: Mutex::new(session), local_out: None }
    }

    /// A slot for one stdio process; a session opened in it writes to `out`.
    pub fn local(out: UnboundedSender<Message>) -> Self {
        Self { cell: Mutex::default(), local_out: Some(out) }
    }

    /// The session, if one is open.
    pub fn get(&self) -> Option<Arc<LegacySession>> {
        self.cell.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    pub(crate) fn set(&self, s: Arc<LegacySession>) {
        *self.cell.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(s);
    }
}

/// What the transport knows about a request besides its body.
#[derive(Default)]
#[non_exhaustive]
pub struct RequestEnv {
    /// The authenticated caller (`None` without authentication).
    pub principal: Option<Principal>,
    /// Who per-client limits count this request against: the principal, else the
    /// client's address (HTTP, [`peer`](Self::peer)), else the process (stdio).
    pub client: ClientKey,
    /// Header rules (HTTP only).
    pub headers: Option<Box<dyn HeaderCheck>>,
    /// Fires when the client goes away or cancels.
    pub cancel: CancellationToken,
    /// Where request-scoped notifications (progress, log, listen) go.
    pub out: Option<UnboundedSender<Message>>,
    /// The legacy session of the request (`None`: the transport has no sessions).
    pub session: Option<Arc<SessionSlot>>,
    /// Cancelled by a handler that closes its SSE stream early (legacy SSE polling).
    pub close_stream: Option<CancellationToken>,
    /// Counts the bytes taken from `out` by the connection (HTTP streams), so a
    /// handler that streams can bound what waits for a slow reader.
    pub backlog: Option<Arc<Backlog>>,
}

impl std::fmt::Debug for RequestEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestEnv")
            .field("principal", &self.principal)
            .field("client", &self.client)
            .field("headers", &self.headers.is_some())
            .finish_non_exhaustive()
    }
}

impl RequestEnv {
    /// An environment with a principal, a cancellation token and an outlet for notifications.
    pub fn new(principal: Option<Principal>, cancel: CancellationToken, out: Option<UnboundedSender<Message>>) -> Self {
        let client = ClientKey::local(principal.as_ref());
        Self::admitted(principal, client, cancel, out)
    }

    /// An environment whose client key the transport computed when it admitted the request.
    pub(crate) fn admitted(
        principal: Option<Principal>,
        client: ClientKey,
        cancel: CancellationToken,
        out: Option<UnboundedSender<Message>>,
    ) -> Self {
        Self { principal, client, headers: None, cancel, out, session: None, close_stream: None, backlog: None }
    }

    /// Sets the client's address (HTTP): without a principal, limits count per address
    /// (`None`: the transport does not know it; such clients count as one).
    #[must_use]
    pub fn peer(mut self, peer: Option<std::net::IpAddr>) -> Self {
        self.client = ClientKey::of(self.principal.as_ref(), peer);
        self
    }

    /// Adds header rules.
    #[must_use]
    pub fn headers(mut self, headers: Box<dyn HeaderCheck>) -> Self {
        self.headers = Some(headers);
        self
    }

    /// Adds the legacy session slot.
    #[must_use]
    pub fn session(mut self, slot: Arc<SessionSlot>) -> Self {
        self.session = Some(slot);
        self
    }

    /// Adds the token a handler cancels to close its SSE stream early.
    #[must_use]
    pub fn close_stream(mut self, token: CancellationToken) -> Self {
        self.close_stream = Some(token);
        self
    }

    /// Adds the count of bytes the connection took from `out`.
    #[must_use]
    pub fn backlog(mut self, backlog: Arc<Backlog>) -> Self {
        self.backlog = Some(backlog);
        self
    }

    /// What one more input round's context takes from this environment: the caller, the
    /// cancellation and the outlets (the header rules and the session slot were read already).
    pub(crate) fn for_round(&self) -> Self {
        Self {
            principal: self.principal.clone(),
            client: self.client.clone(),
            headers: None,
            cancel: self.cancel.clone(),
            out: self.out.clone(),
            session: None,
            close_stream: self.close_stream.clone(),
            backlog: self.backlog.clone(),
        }
    }

    /// The open legacy session, if any.
    pub(crate) fn legacy_session(&self) -> Option<Arc<LegacySession>> {
        self.session.as_ref().and_then(|s| s.get())
    }
}
