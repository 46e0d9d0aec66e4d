//! The request pipeline: the checks in the protocol's order, then the handler.
//!
//! The order (protocol brief §8.17): the era → `_meta` present (`-32602`/400)
//! → transport headers (`-32020`) → version supported (`-32022`) → method known
//! (`-32601`) → routing headers (`-32020`) → the handler's own checks. The
//! request is routed once ([`Route`](crate::server::route::Route)); the
//! routing-header check and the handler read the same route. Its context is
//! built once, by `context.rs`, for either era.

mod answer;
mod context;
mod env;
mod legacy_pipeline;
mod legacy_rounds;

pub(crate) use answer::Answer;
pub use env::{HeaderCheck, RequestEnv, SessionSlot};
pub(crate) use legacy_pipeline::handle_legacy_notification;

use super::Server;
use super::route;
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::{Message, Request};
use crate::protocol::meta::{CLIENT_CAPABILITIES_KEY, ClientCapabilities, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY};
use crate::protocol::methods::INITIALIZE;
use crate::protocol::routing::mirrored_name;
use crate::protocol::version::{Era, EraSignals, MODERN_VERSIONS, decide_era};
use serde_json::{Map, Value};

/// Answers one request, its result stamped (see [`answer`]).
pub(crate) async fn handle_request(server: &Server, req: Request, env: RequestEnv) -> Message {
    answer(server, req, env).await.into_message(server)
}

/// Answers one request: the pipeline, timed and counted; an internal error is logged
/// (rate-limited). A modern result leaves unstamped: its stamps are added on the way out.
pub(crate) async fn answer(server: &Server, req: Request, env: RequestEnv) -> Answer {
    let id = req.id.clone();
    let (method, started) = (crate::metrics::method_label(&req.method), std::time::Instant::now());
    let answer = dispatch(server, req, env).await;
    crate::metrics::request(method, answer.as_ref().err().map(|e| e.code), started.elapsed());
    match answer {
        Ok((result, true)) => Answer::unstamped(Message::Result { id, result }),
        Ok((result, false)) => Answer::plain(Message::Result { id, result }),
        Err(error) => {
            if error.code == -32603
                && let Some(suppressed) = crate::log_limit::admit(&error.message)
            {
                tracing::warn!(code = error.code, message = %error.message, suppressed, "internal error answered");
            }
            Answer::plain(Message::Error { id: Some(id), error })
        }
    }
}

/// The pipeline: the result, and whether it is a modern one that needs its stamps.
async fn dispatch(server: &Server, req: Request, env: RequestEnv) -> Result<(Value, bool), RpcError> {
    let Request { id, method, params } = req;
    let mut params = match params {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let meta = match params.remove("_meta") {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    };
    // The era, from the body and the transport's signals.
    let modern_meta = meta.as_ref().is_some_and(|m| m.contains_key(PROTOCOL_VERSION_KEY));
    let session = env.legacy_session();
    if session.is_some()
        && let Some(h) = &env.headers
    {
        legacy_pipeline::check_session_version(h.as_ref())?;
    }
    let era = decide_era(&EraSignals {
        modern_meta,
        method: &method,
        legacy_session: session.is_some(),
        version_header: env.headers.as_ref().and_then(|h| h.protocol_version()),
    });
    if modern_meta && session.is_some() && server.serves(Era::Legacy) {
        return Err(RpcError::invalid_request(
            "a 2026-07-28 request (per-request _meta) must not be sent inside a 2025-11-25 session",
        ));
    }
    let era = if server.serves(era) {
        era
    } else if method == INITIALIZE {
        return Err(legacy_refusal(server, &params));
    } else if era == Era::Modern {
        // A legacy-only server: modern requests name a version it does not speak.
        let requested = meta.as_ref().and_then(|m| m.get(PROTOCOL_VERSION_KEY)).and_then(Value::as_str);
        return Err(RpcError::unsupported_version(requested.unwrap_or("unknown"), &server.supported_versions()));
    } else {
        // Not served: judged as a (malformed) modern request.
        Era::Modern
    };
    if era == Era::Legacy {
        let result = legacy_pipeline::dispatch_legacy(server, id, method, params, meta.unwrap_or_default(), env).await;
        return result.map(|r| (r, false));
    }
    // 1. _meta present and well-formed.
    let Some(meta) = meta else {
        return Err(RpcError::missing_meta("Missing params._meta"));
    };
    let version = match meta.get(PROTOCOL_VERSION_KEY) {
        Some(Value::String(v)) => v.as_str(),
        Some(_) => {
            return Err(RpcError::missing_meta(format!("_meta[{PROTOCOL_VERSION_KEY}] must be a string")));
        }
        None => return Err(RpcError::missing_meta(format!("Missing _meta[{PROTOCOL_VERSION_KEY}]"))),
    };
    let caps = match meta.get(CLIENT_CAPABILITIES_KEY) {
        Some(Value::Object(c)) => ClientCapabilities(c.clone()),
        Some(_) => {
            return Err(RpcError::missing_meta(format!("_meta[{CLIENT_CAPABILITIES_KEY}] must be an object")));
        }
        None => return Err(RpcError::missing_meta(format!("Missing _meta[{CLIENT_CAPABILITIES_KEY}]"))),
    };
    // 2. Transport headers agree with the body.
    if let Some(h) = &env.headers {
        h.check_base(version, &method)?;
    }
    // 3. Version supported.
    if !MODERN_VERSIONS.contains(&version) {
        return Err(RpcError::unsupported_version(version, &server.supported_versions()));
    }
    // 4. Method known: routed once.
    let Some(route) = route::route(server, era, &method, &params) else {
        return Err(RpcError::method_not_found(&method));
    };
    // 5. Routing headers, from the same route.
    if let Some(h) = &env.headers {
        let mut mirrored = Vec::new();
        if let (Some(tool), Some(args)) = (route.tool, params.get("arguments")) {
            for p in &tool.header_params {
                if let Some(v) = p.lookup(args) {
                    mirrored.push((p.header.as_str(), v));
                }
            }
        }
        h.check_routing(mirrored_name(&method, &params), &mirrored)?;
    }
    // 6. The context, read once.
    let log_level = meta.get(LOG_LEVEL_KEY).and_then(Value::as_str).map(String::from);
    let read = context::Read { id, method, era, caps, log_level, meta, session: None };
    let parts = context::context(server, read, env);
    // 7. The handler.
    let result = crate::server::handlers::handle(server, route, parts, params).await?;
    Ok((result, true))
}

/// The answer to a legacy `initialize` while only the modern era is served:
/// `-32022` naming the versions served, so the client knows what to speak.
fn legacy_refusal(server: &Server, params: &Map<String, Value>) -> RpcError {
    let requested = params.get("protocolVersion").and_then(Value::as_str).unwrap_or("unknown");
    let versions = server.supported_versions();
    let mut e = RpcError::unsupported_version(requested, &versions);
    e.message = format!(
        "Unsupported protocol version: this server speaks only {} (stateless, no initialize); send per-request _meta",
        versions.join(", ")
    );
    e
}
