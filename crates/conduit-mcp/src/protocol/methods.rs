//! Every method and notification name on the wire, and the core methods as a
//! value to route on.

/// `initialize` (legacy handshake).
pub const INITIALIZE: &str = "initialize";
/// `ping` (legacy).
pub const PING: &str = "ping";
/// `server/discover`.
pub const DISCOVER: &str = "server/discover";
/// `tools/list`.
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`.
pub const TOOLS_CALL: &str = "tools/call";
/// `prompts/list`.
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`.
pub const PROMPTS_GET: &str = "prompts/get";
/// `resources/list`.
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`.
pub const RESOURCES_READ: &str = "resources/read";
/// `resources/subscribe` (legacy).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe` (legacy).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// `completion/complete`.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// `logging/setLevel` (legacy).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// `subscriptions/listen`.
pub const LISTEN: &str = "subscriptions/listen";
/// `tasks/get` (Tasks extension).
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/update` (Tasks extension).
pub const TASKS_UPDATE: &str = "tasks/update";
/// `tasks/cancel` (Tasks extension, and legacy tasks).
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// `tasks/result` (legacy tasks).
pub const TASKS_RESULT: &str = "tasks/result";
/// `tasks/list` (legacy tasks).
pub const TASKS_LIST: &str = "tasks/list";
/// `elicitation/create` (embedded in MRTR; a server request in the legacy era).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `sampling/createMessage` (embedded in MRTR; a server request in the legacy era).
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// `roots/list` (embedded in MRTR; a server request in the legacy era).
pub const ROOTS_LIST: &str = "roots/list";

/// The listen acknowledgment.
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
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
/// A peer cancels a request (stdio; the server ends a listen stream with it).
pub const CANCELLED: &str = "notifications/cancelled";
/// A task changed (Tasks extension, on listen streams).
pub const TASKS_NOTIFICATION: &str = "notifications/tasks";
/// A legacy task's status changed.
pub const TASKS_STATUS: &str = "notifications/tasks/status";
/// The legacy client finished its handshake.
pub const INITIALIZED: &str = "notifications/initialized";

/// The methods the core answers itself (extensions add their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CoreMethod {
    /// `server/discover`.
    Discover,
    /// `tools/list`.
    ToolsList,
    /// `tools/call`.
    ToolsCall,
    /// `prompts/list`.
    PromptsList,
    /// `prompts/get`.
    PromptsGet,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    ResourceTemplatesList,
    /// `resources/read`.
    ResourcesRead,
    /// `completion/complete`.
    Complete,
    /// `subscriptions/listen`.
    Listen,
}

impl CoreMethod {
    /// The core method named `method`, if it is one.
    pub fn parse(method: &str) -> Option<Self> {
        Some(match method {
            DISCOVER => Self::Discover,
            TOOLS_LIST => Self::ToolsList,
            TOOLS_CALL => Self::ToolsCall,
            PROMPTS_LIST => Self::PromptsList,
            PROMPTS_GET => Self::PromptsGet,
            RESOURCES_LIST => Self::ResourcesList,
            RESOURCES_TEMPLATES_LIST => Self::ResourceTemplatesList,
            RESOURCES_READ => Self::ResourcesRead,
            COMPLETION_COMPLETE => Self::Complete,
            LISTEN => Self::Listen,
            _ => return None,
        })
    }

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Discover => DISCOVER,
            Self::ToolsList => TOOLS_LIST,
            Self::ToolsCall => TOOLS_CALL,
            Self::PromptsList => PROMPTS_LIST,
            Self::PromptsGet => PROMPTS_GET,
            Self::ResourcesList => RESOURCES_LIST,
            Self::ResourceTemplatesList => RESOURCES_TEMPLATES_LIST,
            Self::ResourcesRead => RESOURCES_READ,
            Self::Complete => COMPLETION_COMPLETE,
            Self::Listen => LISTEN,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in [
            CoreMethod::Discover,
            CoreMethod::ToolsList,
            CoreMethod::ToolsCall,
            CoreMethod::PromptsList,
            CoreMethod::PromptsGet,
            CoreMethod::ResourcesList,
            CoreMethod::ResourceTemplatesList,
            CoreMethod::ResourcesRead,
            CoreMethod::Complete,
            CoreMethod::Listen,
        ] {
            assert_eq!(CoreMethod::parse(m.name()), Some(m));
        }
        assert_eq!(CoreMethod::parse(TASKS_GET), None);
    }
}
