//! The legacy (2025-11-25) tasks wire vocabulary: what ties a message to a
//! task on that era.

/// `_meta` key tying a message to a legacy task.
pub const RELATED_TASK_KEY: &str = "io.modelcontextprotocol/related-task";
