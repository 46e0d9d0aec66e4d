//! `subscriptions/listen` method and notification names.

/// The listen method.
pub const LISTEN: &str = "subscriptions/listen";
/// The acknowledgment notification.
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// Tools list changed.
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// Prompts list changed.
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// Resources list changed.
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// One resource changed.
pub const RESOURCE_UPDATED: &str = "notifications/resources/updated";
/// Progress of one request.
pub const PROGRESS: &str = "notifications/progress";
/// A log message for one request.
pub const MESSAGE: &str = "notifications/message";
/// Client cancels a request (stdio).
pub const CANCELLED: &str = "notifications/cancelled";
