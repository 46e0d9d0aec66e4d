//! The `LegacyTaskStore` trait: a [`TaskStore`] that can also list an
//! owner's tasks, for the legacy era's `tasks/list`.

use super::cursor::{CursorKey, ListPosition};
use crate::ext::tasks::store::{TaskRecord, TaskStore};
use crate::task::StoreError;
use async_trait::async_trait;

/// The page size `tasks/list` uses when the caller names none.
pub const DEFAULT_PAGE_SIZE: usize = 50;

/// The largest page a store returns, whatever was asked.
pub const MAX_PAGE_SIZE: usize = 100;

/// `limit` brought into `1..=MAX_PAGE_SIZE`.
pub fn clamp_page_size(limit: usize) -> usize {
    limit.clamp(1, MAX_PAGE_SIZE)
}

/// One page of an owner's tasks.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskPage {
    /// The tasks, oldest first (by creation time, then id).
    pub tasks: Vec<TaskRecord>,
    /// The cursor of the next page; `None` on the last one.
    pub next_cursor: Option<String>,
}

/// Where the legacy era's tasks live (the seed's `ConduitMcp.Tasks.Store`).
///
/// Everything the modern [`TaskStore`] contract says holds here too — the
/// same records, `create` under a row cap, owner-scoped reads, compare-and-swap
/// updates, terminal states that never change, expiry and `cleanup`, leases —
/// and it is a separate store (its own memory, its own table). What it adds is
/// listing, which the modern contract forbids: the legacy `tasks/list` must
/// list every task its caller may `get`, and only those.
///
/// A store implements [`list_after`](Self::list_after) (a keyset query) and
/// [`cursor_key`](Self::cursor_key); [`list`](Self::list) is provided over
/// them, so every store pages, clamps and checks cursors the same way.
///
/// The listing contract (proved by `conduit_mcp::testing::legacy_store_contract`):
/// - only tasks whose `owner` equals the caller's exactly (`None` lists the
///   unauthenticated tasks), never an expired one, never a foreign one;
/// - in `(created_at_ms, task_id)` order, each live task exactly once over
///   the pages, pages of at most [`MAX_PAGE_SIZE`];
/// - a cursor that was altered, sealed for another caller, or sealed by
///   another key is refused with [`StoreError::InvalidCursor`];
/// - a terminal task is listed (and read) as it ended until its TTL, unless
///   [`trim_terminal`](TaskStore::trim_terminal) or
///   [`evict_oldest_terminal`](TaskStore::evict_oldest_terminal) removed it
///   first; then it is listed nowhere.
#[async_trait]
pub trait LegacyTaskStore: TaskStore {
    /// The key that seals this store's cursors (the same on every node that
    /// shares the store).
    fn cursor_key(&self) -> &CursorKey;

    /// Up to `limit` live tasks owned exactly by `owner`, in
    /// `(created_at_ms, task_id)` order, strictly after `after` (from the
    /// start when `None`).
    async fn list_after(
        &self,
        owner: Option<&str>,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError>;

    /// One page of `owner`'s tasks: from the start, or after `cursor` (a
    /// `next_cursor` this store gave `owner`). `limit` is clamped to
    /// `1..=MAX_PAGE_SIZE`.
    ///
    /// Provided: one [`list_after`](Self::list_after) for one task more than
    /// the page, so the last page never carries a cursor to an empty one.
    async fn list(&self, owner: Option<&str>, cursor: Option<&str>, limit: usize) -> Result<TaskPage, StoreError> {
        let limit = clamp_page_size(limit);
        let after = cursor.map(|c| self.cursor_key().open(c, owner)).transpose()?;
        let mut tasks = self.list_after(owner, after.as_ref(), limit + 1).await?;
        let next_cursor = if tasks.len() > limit {
            tasks.truncate(limit);
            tasks.last().map(|t| self.cursor_key().seal(owner, &ListPosition::new(t.created_at_ms, &t.task_id)))
        } else {
            None
        };
        Ok(TaskPage { tasks, next_cursor })
    }
}
