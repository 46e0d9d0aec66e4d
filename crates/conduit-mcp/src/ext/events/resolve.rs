//! One subscription resolved for `events/poll` and `events/stream`: the
//! type (`NotFound`), its delivery mode (`Unsupported`), the arguments
//! (`-32602` past the byte bound or against the schema), and where reading
//! starts (a cursor opened for this principal and type, `-32602` otherwise).
//! Checked in that order; nothing is held or changed before all pass. And
//! what a live subscription carries on with when its type is offered again.

use super::cursor::Position;
use super::evolution::{Change, compare};
use super::source::Filter;
use super::{Events, Registered};
use crate::protocol::RpcError;
use crate::protocol::events::{DeliveryMode, EventErrorKind};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Where a subscription starts reading.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Start {
    /// The position after which to read.
    pub(crate) after: u64,
    /// The cursor named a position this log cannot serve (another epoch):
    /// delivery starts from now.
    pub(crate) truncated: bool,
    /// Skip occurrences older than this (epoch ms), from `maxAgeMs`.
    pub(crate) floor_ms: Option<u64>,
    /// No cursor was given: start from now, read nothing old.
    pub(crate) from_now: bool,
}

/// A subscription ready to read.
pub(crate) struct Resolved {
    pub(crate) name: String,
    pub(crate) registered: Arc<Registered>,
    /// The arguments as asked (a later generation of the type reads them again).
    pub(crate) arguments: Map<String, Value>,
    pub(crate) filter: Filter,
    pub(crate) start: Start,
}

/// What a poll or stream request names.
pub(crate) struct Asked<'a> {
    pub(crate) name: &'a str,
    pub(crate) arguments: Map<String, Value>,
    pub(crate) cursor: Option<&'a str>,
    pub(crate) max_age_ms: Option<u64>,
    pub(crate) mode: DeliveryMode,
}

impl Events {
    /// The error of `kind` in this handle's numbering.
    pub(crate) fn error(&self, kind: EventErrorKind, data: Value) -> RpcError {
        kind.error(self.inner.config.error_codes, data)
    }

    /// `NotFound` for an event type nobody offers.
    pub(crate) fn not_found(&self) -> RpcError {
        self.error(EventErrorKind::NotFound, json!({ "kind": "event" }))
    }

    /// The offered type `name` (`NotFound` otherwise) with `mode` (`Unsupported` otherwise).
    pub(crate) fn offering(&self, name: &str, mode: DeliveryMode) -> Result<Arc<Registered>, RpcError> {
        let registered = self.get(name).ok_or_else(|| self.not_found())?;
        if !registered.source.descriptor().offers(mode) {
            let data = json!({ "feature": "deliveryMode", "value": mode.as_str() });
            return Err(self.error(EventErrorKind::Unsupported, data));
        }
        Ok(registered)
    }

    /// Checks `arguments` against the byte bound and the type's schema.
    pub(crate) fn check_arguments(
        &self,
        registered: &Registered,
        arguments: &Map<String, Value>,
    ) -> Result<(), RpcError> {
        let max = self.inner.config.max_argument_bytes;
        if crate::bounds::json_len(arguments) > max {
            return Err(RpcError::invalid_params(format!("arguments are larger than {max} bytes"))
                .data(json!({ "limit": "argumentBytes", "max": max })));
        }
        if let Some(v) = &registered.validator {
            let args = Value::Object(arguments.clone());
            if let Some(e) = v.iter_errors(&args).next() {
                let at = e.instance_path().to_string();
                return Err(RpcError::invalid_params(format!(
                    "arguments do not match the event's inputSchema at '{at}'"
                )));
            }
        }
        Ok(())
    }

    /// Resolves a poll or stream request of `owner`.
    pub(crate) async fn resolve(&self, owner: Option<&str>, asked: Asked<'_>) -> Result<Resolved, RpcError> {
        let registered = self.offering(asked.name, asked.mode)?;
        self.check_arguments(&registered, &asked.arguments)?;
        let arguments = asked.arguments;
        let filter = registered.source.filter(arguments.clone())?;
        let source = &registered.source;
        // The head first: a durable log learns its epoch when first read.
        let head = source.head().await?;
        let start = match asked.cursor {
            None => Start { after: head, truncated: false, floor_ms: None, from_now: true },
            Some(c) => {
                let at = self.inner.seal.open(c, owner, asked.name).map_err(|_| {
                    RpcError::invalid_params("cursor was not issued for this event type to this caller")
                })?;
                let floor_ms = asked.max_age_ms.map(|age| self.inner.clock.now_ms().saturating_sub(age));
                if at.epoch == source.epoch() {
                    Start { after: at.seq, truncated: false, floor_ms, from_now: false }
                } else {
                    Start { after: head, truncated: true, floor_ms: None, from_now: true }
                }
            }
        };
        Ok(Resolved { name: asked.name.to_owned(), registered, arguments, filter, start })
    }

    /// What follows `r` once the types changed: nothing new (`None`, still
    /// the type offered), or the type offered again under its name that `r`
    /// carries on with (its registration and `r`'s arguments as its filter).
    /// Otherwise the error that ends `r`: `NotFound` (`kind: "event"`) for a
    /// type gone or offered again over another log, `Unsupported` with
    /// `reason: "schema_changed"` for a change that is not additive, or
    /// naming `mode` when it is no longer offered.
    pub(crate) fn successor(
        &self,
        r: &Resolved,
        mode: DeliveryMode,
    ) -> Result<Option<(Arc<Registered>, Filter)>, RpcError> {
        let now = self.get(&r.name).ok_or_else(|| self.not_found())?;
        if Arc::ptr_eq(&now, &r.registered) {
            return Ok(None);
        }
        self.carries_on(&r.registered, &now, mode)?;
        let filter = now.source.filter(r.arguments.clone())?;
        Ok(Some((now, filter)))
    }

    /// Whether a subscription by `mode` to `before` carries on with `now`,
    /// offered under its name since (see [`successor`](Self::successor)).
    pub(crate) fn carries_on(&self, before: &Registered, now: &Registered, mode: DeliveryMode) -> Result<(), RpcError> {
        let (before, now) = (before.source.as_ref(), now.source.as_ref());
        if let Change::Breaking(feature) = compare(before.descriptor(), now.descriptor()) {
            let data = json!({ "feature": feature, "reason": "schema_changed" });
            return Err(self.error(EventErrorKind::Unsupported, data));
        }
        if before.epoch() != now.epoch() {
            return Err(self.not_found());
        }
        if !now.descriptor().offers(mode) {
            let data = json!({ "feature": "deliveryMode", "value": mode.as_str() });
            return Err(self.error(EventErrorKind::Unsupported, data));
        }
        Ok(())
    }

    /// The cursor of position `seq` in `r`'s type, for `owner`.
    pub(crate) fn cursor(&self, owner: Option<&str>, r: &Resolved, seq: u64) -> String {
        self.inner.seal.seal(owner, &r.name, Position { epoch: r.registered.source.epoch(), seq })
    }
}
