//! A new legacy task as both engines insert it: the columns, the list
//! owner, and the two caps it must fit under. Each engine writes it with its
//! own statement (`RowWrite`), alone or inside a hooked transaction.

use super::{Columns, limit, list_owner};
use conduit_mcp::ext::tasks::{CreateCaps, TaskRecord};
use conduit_mcp::task::StoreError;

/// The values of one legacy task insert.
pub(crate) struct LegacyInsert {
    pub(crate) task_id: String,
    pub(crate) columns: Columns,
    pub(crate) list_owner: String,
    /// The row cap (`None`: none).
    pub(crate) max_rows: Option<i64>,
    /// The owner's cap; `None` without a cap or without an owner.
    pub(crate) per_owner: Option<i64>,
}

impl LegacyInsert {
    pub(crate) fn new(record: &TaskRecord, caps: CreateCaps) -> Result<Self, StoreError> {
        Ok(Self {
            task_id: record.task_id.clone(),
            columns: Columns::of(record)?,
            list_owner: list_owner(record.owner.as_deref()),
            max_rows: caps.max_rows.map(limit),
            per_owner: caps.max_rows_per_owner.filter(|_| record.owner.is_some()).map(limit),
        })
    }
}
