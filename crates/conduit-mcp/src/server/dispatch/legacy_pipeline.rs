//! The legacy (2025-11-25) pipeline: the `initialize` handshake, the session's
//! utilities (`ping`, `logging/setLevel`, resource subscriptions), client
//! notifications, and every other method through the same handlers as the
//! modern era (whose handlers stamp the modern fields — `resultType`, caching
//! hints, serverInfo `_meta` — on modern results only).

use super::env::{HeaderCheck, RequestEnv};
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::RESOURCE_NOT_FOUND;
use crate::protocol::jsonrpc::{ErrorClass, ErrorCode, RequestId};
use crate::protocol::legacy_session::{LOG_LEVELS, SERVED_LEGACY_VERSIONS, negotiate};
use crate::protocol::meta::ClientCapabilities;
use crate::protocol::methods::{
    CANCELLED, DISCOVER, INITIALIZE, INITIALIZED, LISTEN, LOGGING_SET_LEVEL, PING, RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
};
use crate::protocol::version::Era;
use crate::server::Server;
use crate::session::{LegacySession, SessionError, SessionRecord, new_session_id};
use crate::subscriptions::CoreFilter;
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub(super) async fn dispatch_legacy(
    server: &Server,
    id: RequestId,
    method: String,
    params: Map<String, Value>,
    meta: Map<String, Value>,
    env: RequestEnv,
) -> Result<Value, RpcError> {
    if method == INITIALIZE {
        return initialize(server, params, &env).await;
    }
    let Some(session) = env.legacy_session() else {
        return Err(RpcError::invalid_request("Bad Request: no session; send initialize first (Mcp-Session-Id)"));
    };
    match method.as_str() {
        PING => Ok(json!({})),
        LOGGING_SET_LEVEL => {
            let level = params.get("level").and_then(Value::as_str);
            let Some(level) = level.filter(|l| LOG_LEVELS.contains(l)) else {
                return Err(RpcError::invalid_params(format!("level must be one of {}", LOG_LEVELS.join(", "))));
            };
            let level = level.to_owned();
            session.edit(|r| r.log_level = Some(level));
            save_session(server, &session).await?;
            Ok(json!({}))
        }
        RESOURCES_SUBSCRIBE | RESOURCES_UNSUBSCRIBE => {
            if server.inner.resources.is_empty() && server.inner.templates.is_empty() {
                return Err(RpcError::method_not_found(&method));
            }
            let Some(uri) = params.get("uri").and_then(Value::as_str) else {
                return Err(RpcError::invalid_params(format!("{method} requires a string uri")));
            };
            {
                let mut uris = crate::session::lock_uris(&session);
                if method == RESOURCES_SUBSCRIBE {
                    uris.insert(uri.to_owned());
                } else {
                    uris.remove(uri);
                }
            }
            watch_changes(server, &session);
            Ok(json!({}))
        }
        DISCOVER | LISTEN => Err(RpcError::method_not_found(&method)),
        _ => {
            let result = super::legacy_rounds::legacy_rounds(server, &session, id, method, params, meta, env).await;
            result.map_err(legacy_error)
        }
    }
}

async fn save_session(server: &Server, s: &LegacySession) -> Result<(), RpcError> {
    server.inner.sessions.save(s).await.map_err(|e| match e {
        SessionError::NotFound => RpcError::invalid_request("session not found"),
        e => RpcError::internal(e.to_string()),
    })
}

/// The handshake: versions negotiated down, a session opened (and stored on HTTP).
async fn initialize(server: &Server, mut params: Map<String, Value>, env: &RequestEnv) -> Result<Value, RpcError> {
    let Some(slot) = env.session.as_ref() else {
        return Err(RpcError::invalid_request("this transport has no sessions"));
    };
    if slot.get().is_some() {
        return Err(RpcError::invalid_request("initialize was already sent in this session"));
    }
    let version = negotiate(params.get("protocolVersion").and_then(Value::as_str));
    let owner = env.principal.as_ref().map(|p| p.id.to_string());
    let sessions = &server.inner.sessions;
    let mut record = SessionRecord::new(new_session_id(), owner, version, sessions.now());
    record.client_key = env.client.to_string();
    // Only what the server reads back is kept (finding 1 of issue 20): the input
    // declarations, and the client's identity within its bound.
    record.client_capabilities = match params.remove("capabilities") {
        Some(Value::Object(c)) => ClientCapabilities(c).input_only().0,
        None => Map::new(),
        Some(_) => return Err(RpcError::invalid_params("capabilities must be an object")),
    };
    if let Some(info) = params.get("clientInfo") {
        record.client_info = crate::bounds::client_info(info);
    }
    let session = match &slot.local_out {
        Some(out) => Arc::new(LegacySession::local(record, out.clone())),
        None => sessions.open(record).await.map_err(|e| match e {
            SessionError::LimitReached => {
                RpcError::new(ErrorCode::Other(-32000), "Too many live sessions; try again later")
            }
            SessionError::ClientLimitReached => RpcError::new(
                ErrorCode::Other(-32000),
                "Too many live sessions for this client; end one (DELETE) or try again later",
            ),
            SessionError::RetainedBytesReached => RpcError::new(
                ErrorCode::Other(-32000),
                "This server's sessions retain all the bytes it allows (replay buffers, requests waiting \
                 for clients' answers); try again later",
            ),
            e => RpcError::internal(e.to_string()),
        })?,
    };
    slot.set(session.clone());
    watch_changes(server, &session);
    let mut caps = crate::server::handlers::capabilities(server, Era::Legacy);
    caps.remove("extensions");
    caps.insert("logging".into(), json!({}));
    let mut r = json!({ "protocolVersion": version, "capabilities": caps, "serverInfo": server.inner.info_value });
    if let Some(text) = &server.inner.instructions {
        r["instructions"] = json!(text);
    }
    Ok(r)
}

/// (Re)registers the session on the change hub: list changes, and updates of its subscribed URIs,
/// delivered as unsolicited messages.
fn watch_changes(server: &Server, session: &Arc<LegacySession>) {
    let filter = CoreFilter {
        tools_list_changed: !server.inner.tools.is_empty(),
        prompts_list_changed: !server.inner.prompts.is_empty(),
        resources_list_changed: !server.inner.resources.is_empty() || !server.inner.templates.is_empty(),
        resource_subscriptions: crate::session::lock_uris(session).clone(),
    };
    let sink = Arc::new(crate::session::UnsolicitedSink::new(session));
    let registration = server.inner.changes.hub().register_sink(filter, sink);
    *crate::session::lock_changes(session) = Some(registration);
}

/// A client notification on a legacy session: `initialized`, `cancelled`; others are ignored.
pub(crate) async fn handle_legacy_notification(
    server: &Server,
    session: &LegacySession,
    method: &str,
    params: Option<&Value>,
) {
    match method {
        INITIALIZED => {
            session.edit(|r| r.initialized = true);
            if let Err(e) = server.inner.sessions.save(session).await {
                tracing::debug!(error = %e, "could not record notifications/initialized");
            }
        }
        CANCELLED => {
            if let Some(id) = params.and_then(|p| p.get("requestId")).and_then(RequestId::from_value) {
                session.cancel(&id);
            }
        }
        _ => {}
    }
}

/// Inside a session, `MCP-Protocol-Version` (when sent) names a version the
/// session speaks: `-32600` (400) otherwise.
pub(super) fn check_session_version(h: &dyn HeaderCheck) -> Result<(), RpcError> {
    let served = h.protocol_version().is_some_and(|v| SERVED_LEGACY_VERSIONS.contains(&v));
    if h.protocol_version_unreadable() || (h.protocol_version().is_some() && !served) {
        return Err(RpcError::invalid_request("MCP-Protocol-Version names a version this session does not speak"));
    }
    Ok(())
}

/// A legacy error: resource not found (known by its class) is `-32002` on this era.
fn legacy_error(mut e: RpcError) -> RpcError {
    if e.class() == ErrorClass::ResourceNotFound {
        let data = e.data.take();
        e = RpcError::new(ErrorCode::Other(RESOURCE_NOT_FOUND), "Resource not found");
        if let Some(d) = data {
            e = e.data(d);
        }
    }
    e
}
