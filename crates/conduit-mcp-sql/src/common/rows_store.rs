//! [`rows_task_store!`]: the [`TaskStore`](conduit_mcp::ext::tasks::TaskStore)
//! methods every SQL task table answers the same way, whichever era's tasks it
//! keeps, written once.
//!
//! A store over [`Rows`](super::Rows) (the extension's `SqlStore`, and each
//! engine's legacy store) reads with [`get`](super::get), writes with
//! [`modify`](super::modify)'s compare-and-swap and sweeps with
//! [`cleanup`](super::cleanup); a `create` is its `create_capped` under the
//! row cap alone. What differs — the name, the clock, how a row is inserted,
//! the leases — the store writes in the block it passes.

/// Implements `TaskStore` for `$store`: the shared methods, then the store's
/// own (`impl[GENERICS] TaskStore for TYPE { OWN METHODS }`).
macro_rules! rows_task_store {
    (impl[$($generics:tt)*] TaskStore for $store:ty { $($own:tt)* }) => {
        #[async_trait::async_trait]
        impl<$($generics)*> conduit_mcp::ext::tasks::TaskStore for $store {
            async fn create(
                &self,
                record: conduit_mcp::ext::tasks::TaskRecord,
                max_rows: Option<usize>,
            ) -> Result<(), conduit_mcp::ext::tasks::StoreError> {
                self.create_capped(record, conduit_mcp::ext::tasks::CreateCaps::rows(max_rows)).await
            }

            /// `NotFound` when the row is missing, another owner's, or expired.
            async fn get(
                &self,
                task_id: &str,
                owner: conduit_mcp::ext::tasks::Owner<'_>,
            ) -> Result<conduit_mcp::ext::tasks::TaskRecord, conduit_mcp::ext::tasks::StoreError> {
                $crate::common::get(self, task_id, owner).await
            }

            /// An atomic read-modify-write: a compare-and-swap on the row's `version`, read
            /// again and re-applied when another writer won; terminal rows never change.
            async fn update(
                &self,
                task_id: &str,
                owner: conduit_mcp::ext::tasks::Owner<'_>,
                f: conduit_mcp::ext::tasks::UpdateFn<'_>,
            ) -> Result<conduit_mcp::ext::tasks::TaskRecord, conduit_mcp::ext::tasks::StoreError> {
                $crate::common::modify(self, task_id, owner, f, None).await
            }

            /// As `update`, with `hook` in each attempt's transaction (run only on the attempt that wins).
            async fn update_with(
                &self,
                task_id: &str,
                owner: conduit_mcp::ext::tasks::Owner<'_>,
                f: conduit_mcp::ext::tasks::UpdateFn<'_>,
                hook: &dyn conduit_mcp::ext::tasks::TransactionHook,
            ) -> Result<conduit_mcp::ext::tasks::TaskRecord, conduit_mcp::ext::tasks::StoreError> {
                $crate::common::modify(self, task_id, owner, f, Some(hook)).await
            }

            /// Rows expired before now, then terminal unlimited-TTL rows finished more than
            /// `terminal_ttl_ms` ago, in bounded batches.
            async fn cleanup(&self, terminal_ttl_ms: u64) -> Result<usize, conduit_mcp::ext::tasks::StoreError> {
                $crate::common::cleanup(self, terminal_ttl_ms).await
            }

            $($own)*
        }
    };
}

pub(crate) use rows_task_store;
