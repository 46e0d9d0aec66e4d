//! [`Recorder`]: what a client's handles write to its task ledger — a task
//! when it is created (before its handle is returned), its status as it
//! changes, and why it was lost — and who the client is there.

use super::credential::Credential;
use super::error::ClientError;
use super::ledger::{LedgerEntry, LedgerError, TaskLedger, principal};
use super::time::parse_rfc3339_ms;
use crate::protocol::Era;
use crate::protocol::tasks::{Task, TaskStatus};
use std::sync::{Arc, Mutex, PoisonError};

/// The ledger of one client, and what its entries share.
#[derive(Clone)]
pub(crate) struct Recorder {
    ledger: Arc<dyn TaskLedger>,
    /// The server, as the ledger keys it ([`server_key`](super::ledger::server_key)).
    server: String,
    credential: Credential,
    now_ms: Arc<dyn Fn() -> i64 + Send + Sync>,
    /// Whether a `tools/call` is written down before it is sent, too.
    calls_in_flight: bool,
    /// The principal last named and what it was read from (a JWT's payload
    /// is decoded once per token, not once per task; a static token is
    /// fingerprinted once).
    named: Arc<Mutex<Option<Named>>>,
}

/// A principal and the OAuth tokens it names (empty for a static token).
struct Named {
    issuer: String,
    client_id: String,
    access_token: String,
    principal: String,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("ledger", &self.ledger).field("server", &self.server).finish_non_exhaustive()
    }
}

impl Recorder {
    /// Records into `ledger` the tasks of `server`, made with `credential`.
    pub(crate) fn new(
        ledger: Arc<dyn TaskLedger>,
        server: String,
        credential: Credential,
        now_ms: Arc<dyn Fn() -> i64 + Send + Sync>,
        calls_in_flight: bool,
    ) -> Self {
        let named = match &credential {
            Credential::Token(t) => Some(Named {
                issuer: String::new(),
                client_id: String::new(),
                access_token: String::new(),
                principal: principal::of_token(t),
            }),
            Credential::None | Credential::OAuth(_) => None,
        };
        Self { ledger, server, credential, now_ms, calls_in_flight, named: Arc::new(Mutex::new(named)) }
    }

    /// The ledger.
    pub(crate) fn ledger(&self) -> &Arc<dyn TaskLedger> {
        &self.ledger
    }

    /// The server as the ledger keys it.
    pub(crate) fn server(&self) -> &str {
        &self.server
    }

    /// Now, on the client's wall clock.
    pub(crate) fn now(&self) -> i64 {
        (self.now_ms)()
    }

    /// Who the client is at the server, as the ledger names it.
    pub(crate) async fn principal(&self) -> Result<String, ClientError> {
        let named = || self.named.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(match &self.credential {
            Credential::None => principal::ANONYMOUS.to_owned(),
            Credential::Token(t) => match &*named() {
                Some(n) => n.principal.clone(),
                None => principal::of_token(t),
            },
            Credential::OAuth(s) => match s.tokens_now().await? {
                Some(t) => {
                    if let Some(n) = &*named()
                        && (n.access_token == t.access_token && n.issuer == t.issuer && n.client_id == t.client_id)
                    {
                        return Ok(n.principal.clone());
                    }
                    let p = principal::of_oauth(&t.issuer, &t.client_id, &t.access_token);
                    let (issuer, client_id, access_token) = (t.issuer, t.client_id, t.access_token);
                    *named() = Some(Named { issuer, client_id, access_token, principal: p.clone() });
                    p
                }
                None => principal::ANONYMOUS.to_owned(),
            },
        })
    }

    /// Writes down a `tools/call` about to be sent (when calls in flight are
    /// recorded), its arguments by their digest
    /// ([`args_digest`](super::ledger::args_digest)): its key, for
    /// [`created`](Self::created) or [`answered`](Self::answered) to clear.
    /// On failure nothing is sent.
    pub(crate) async fn calling(&self, version: &str, tool: &str, digest: &str) -> Result<Option<String>, ClientError> {
        if !self.calls_in_flight {
            return Ok(None);
        }
        let principal = self.principal().await?;
        let e = LedgerEntry::call_in_flight(&self.server, principal, version, tool, digest, self.now());
        self.ledger.record(&e).await.map_err(|source| ClientError::Ledger { source, task_id: None })?;
        Ok(Some(e.task_id))
    }

    /// The call in flight `key` was answered without a task (a result, or a
    /// refusal): it is forgotten. When `failed` says why no answer came, it
    /// is kept as lost instead (the server may have made a task).
    pub(crate) async fn answered(&self, key: &str, failed: Option<&ClientError>) {
        let done = match failed {
            None => self.ledger.forget(key).await.map(drop),
            Some(e) => {
                let why =
                    format!("the call ended before the server answered ({e}): if it made a task, its id never arrived");
                self.ledger.mark_lost(&self.server, key, &why, self.now()).await
            }
        };
        if let Err(e) = done {
            tracing::warn!(error = %e, "could not clear a call in flight from the task ledger");
        }
    }

    /// Records a task `tools/call` just created (in place of the call in
    /// flight `call_key`, if any), its arguments by their `digest`. On failure
    /// the error names the task, which runs on unrecorded.
    pub(crate) async fn created(
        &self,
        call_key: Option<&str>,
        task: &Task,
        version: &str,
        era: Era,
        tool: &str,
        digest: &str,
    ) -> Result<(), ClientError> {
        let unrecorded = |source: LedgerError| ClientError::Ledger { source, task_id: Some(task.task_id.clone()) };
        let principal = match self.principal().await {
            Ok(p) => p,
            Err(e) => {
                let source = LedgerError::io(&self.server, std::io::Error::other(e.to_string()));
                return Err(unrecorded(source));
            }
        };
        let now = self.now();
        let mut e = LedgerEntry::new(&self.server, principal, &task.task_id, version, tool, digest, now);
        e.expires_ms = parse_rfc3339_ms(&task.created_at)
            .zip(task.ttl_ms)
            .map(|(at, ttl)| at.saturating_add(i64::try_from(ttl).unwrap_or(i64::MAX)));
        e.status = task.status;
        // Without authentication a 2025-11-25 task is its session's: no other session reads it.
        e.resumable = !(era == Era::Legacy && e.principal == principal::ANONYMOUS);
        match call_key {
            Some(key) => self.ledger.replace(key, &e).await.map_err(unrecorded),
            None => self.ledger.record(&e).await.map_err(unrecorded),
        }
    }

    /// Notes the status last seen of task `id` (a failure is logged, not returned:
    /// the task is recorded already, and following it matters more).
    pub(crate) async fn status(&self, id: &str, status: TaskStatus) {
        if let Err(e) = self.ledger.set_status(&self.server, id, status, self.now()).await {
            tracing::warn!(error = %e, "could not note a task's status in the task ledger");
        }
    }

    /// Notes that task `id` cannot be followed any more, and why.
    pub(crate) async fn lost(&self, id: &str, reason: &str) {
        if let Err(e) = self.ledger.mark_lost(&self.server, id, reason, self.now()).await {
            tracing::warn!(error = %e, "could not mark a task lost in the task ledger");
        }
    }
}
