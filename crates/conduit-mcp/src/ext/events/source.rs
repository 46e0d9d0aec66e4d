//! [`Source`]: what the extension asks of one event type — its descriptor,
//! its arguments turned into a filter, and reads of its log from a position,
//! each occurrence matched against the subscriber. Both the application's
//! typed events and the built-in `task.status_changed` are sources.

use super::typed_log::TypedLog;
use crate::protocol::RpcError;
use crate::protocol::events::{EventDescriptor, EventOccurrence};
use crate::seq_log::ReadFrom;
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::any::Any;
use std::sync::Arc;
use tokio::sync::watch;

/// A subscription's arguments as its source reads them.
pub(crate) type Filter = Box<dyn Any + Send + Sync>;

/// One read of a source for one subscriber.
#[derive(Debug)]
pub(crate) struct Page {
    /// The occurrences this subscriber may see, each with its position, oldest first.
    pub(crate) events: Vec<(u64, EventOccurrence)>,
    /// The position read through.
    pub(crate) through: u64,
    /// The read started later than asked.
    pub(crate) truncated: bool,
    /// More waits after `through`.
    pub(crate) more: bool,
    /// Occurrences that happened may still be missing from this read and
    /// nothing will wake the reader for them: read again soon.
    pub(crate) settling: bool,
}

/// One event type.
#[async_trait]
pub(crate) trait Source: Send + Sync + 'static {
    /// How `events/list` shows it.
    fn descriptor(&self) -> &EventDescriptor;

    /// Which log its positions are in: a position of another epoch is not one of its own.
    fn epoch(&self) -> u64;

    /// The arguments, valid for the input schema already, as this source's filter
    /// (`-32602` for what the schema cannot say).
    fn filter(&self, arguments: Map<String, Value>) -> Result<Filter, RpcError>;

    /// The last position (where a subscription "from now" starts).
    async fn head(&self) -> Result<u64, RpcError>;

    /// Woken when the log moves.
    fn watch(&self) -> watch::Receiver<u64>;

    /// The occurrences after `from.after` that `owner` may see and `filter` keeps.
    async fn read(&self, owner: Option<&str>, filter: &Filter, from: ReadFrom) -> Result<Page, RpcError>;

    /// Whether a subscription with `filter` has seen its last occurrence
    /// already, before it began (one task that is terminal now): a push
    /// stream then closes with its result after its first read instead of
    /// waiting for what cannot come. Default: never.
    async fn ended(&self, owner: Option<&str>, filter: &Filter) -> Result<bool, RpcError> {
        let _ = (owner, filter);
        Ok(false)
    }

    /// The log an application's typed events are kept in, which a later
    /// generation of the type continues when it changed additively (none
    /// for other sources).
    fn typed_log(&self) -> Option<Arc<TypedLog>> {
        None
    }

    /// Whether `event` is the last a subscription with `filter` can ever see
    /// (a push stream then closes with its result). Default: never.
    fn is_last(&self, filter: &Filter, event: &EventOccurrence) -> bool {
        let _ = (filter, event);
        false
    }
}
