//! The era seam: everything the client does differently on `2026-07-28`
//! and on `2025-11-25`, behind one trait ([`Dialect`]) chosen once, when
//! connecting ([`choose`]). Above it nothing asks which era it speaks.
//!
//! | | [`ModernEra`] (`2026-07-28`) | [`LegacyEra`] (`2025-11-25`) |
//! |---|---|---|
//! | handshake | `server/discover` (optional; `-32022` names the versions) | `initialize`, then `notifications/initialized`; a session |
//! | every request | `_meta`: version, `clientInfo`, `clientCapabilities` | nothing added |
//! | `tools/call` | `Mcp-Param-*` headers, MRTR rounds; the server decides task or not | `params.task` when the tool's `execution.taskSupport` allows it |
//! | reading a task | `tasks/get` (the result inline) | `tasks/get`, then `tasks/result` once it is terminal or needs input |
//! | answering a task | `tasks/update` | the server asks with requests ([`Connection::answer`]) |
//!
//! Imports point down: the handles ([`super::task`], [`super::follow`],
//! [`super::listen_hub`], [`super::notifications`]) call this module; it
//! calls the connection core ([`super::connection`]) and the protocol.

mod legacy_era;
mod modern_era;
mod tool_list;

use super::connection::Connection;
use super::error::ClientError;
use super::server_info::ServerInfo;
use super::wire::Replies;
use crate::protocol::tasks::{DetailedTask, Task};
use crate::protocol::tools::{CallToolResult, ToolInfo};
use crate::protocol::{Era, ErrorCode, Implementation, RequestId};
use legacy_era::LegacyEra;
use modern_era::ModernEra;
use serde_json::{Map, Value};
use std::sync::Arc;

/// What a `tools/call` came to once the era's rounds are done.
#[derive(Debug)]
pub(crate) enum ToolCall {
    /// The tool's result.
    Complete(CallToolResult),
    /// The task the server made of the call.
    Task(Task),
}

/// How the client speaks to this server's era.
#[async_trait::async_trait]
pub(crate) trait Dialect: Send + Sync + std::fmt::Debug {
    /// The connection underneath.
    fn connection(&self) -> &Connection;
    /// Sends `method` with what this era adds to every request, and waits for its result.
    async fn request(&self, method: &str, params: Map<String, Value>) -> Result<Value, ClientError>;
    /// Sends `method` like [`request`](Self::request) and hands back its id
    /// and its replies unread (a `subscriptions/listen` stream).
    async fn open(&self, method: &str, params: Map<String, Value>) -> Result<(RequestId, Replies), ClientError>;
    /// `tools/list`, every page, minus the tools a client must not call.
    async fn list_tools(&self) -> Result<Vec<ToolInfo>, ClientError>;
    /// `tools/call`, to a result or a task.
    async fn call_tool(&self, name: &str, args: Value) -> Result<ToolCall, ClientError>;
    /// The task now, with its result once it has one.
    async fn get_task(&self, id: &str) -> Result<DetailedTask, ClientError>;
    /// Sends answers to a task's input requests, by key.
    async fn update_task(&self, id: &str, responses: Map<String, Value>) -> Result<(), ClientError>;
    /// Asks the server to cancel a task.
    async fn cancel_task(&self, id: &str) -> Result<(), ClientError>;
}

/// Settles the era on `conn`: `pinned`, or `server/discover` first and
/// `initialize` when the server does not speak the modern era.
pub(crate) async fn choose(
    conn: &Arc<Connection>,
    pinned: Option<Era>,
    info: &Implementation,
) -> Result<(Arc<dyn Dialect>, ServerInfo), ClientError> {
    let modern = |pinned| async move {
        let (era, server) = ModernEra::discover(conn.clone(), info, pinned).await?;
        Ok::<_, ClientError>((Arc::new(era) as Arc<dyn Dialect>, server))
    };
    let legacy = || async {
        let (era, server) = LegacyEra::initialize(conn.clone(), info).await?;
        Ok::<_, ClientError>((Arc::new(era) as Arc<dyn Dialect>, server))
    };
    match pinned {
        Some(Era::Legacy) => legacy().await,
        Some(_) => modern(true).await,
        None => match modern(false).await {
            Ok(spoken) => Ok(spoken),
            Err(ClientError::Rpc(_) | ClientError::Protocol(_)) => legacy().await,
            // An HTTP error without a JSON-RPC body: a server of the older era.
            Err(ClientError::Transport(e)) if e.status().is_some() => legacy().await,
            Err(e) => Err(e),
        },
    }
}

/// The `{"taskId": id}` params of the `tasks/*` methods.
fn task_params(id: &str) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("taskId".into(), Value::String(id.to_owned()));
    p
}

/// A `tasks/*` refusal for an unknown task (`-32602`) as [`ClientError::TaskNotFound`].
fn not_found(e: ClientError) -> ClientError {
    match e {
        ClientError::Rpc(e) if e.error_code() == ErrorCode::InvalidParams => ClientError::TaskNotFound(e.message),
        e => e,
    }
}

/// Reads a `CallToolResult` (a missing `resultType` means complete).
pub(crate) fn tool_result(v: Value) -> Result<CallToolResult, ClientError> {
    serde_json::from_value(v).map_err(|e| ClientError::malformed("a CallToolResult", e))
}
