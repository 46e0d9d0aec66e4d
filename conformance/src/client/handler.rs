//! The conformance client's input handler: what a cooperative user does.
//! Forms are accepted with the schema's defaults (SEP-1034), URLs are
//! consented to, sampling gets a fixed reply, roots are empty.

use async_trait::async_trait;
use conduit_mcp::client::{Ask, ClientError, InputHandler, InputSupport, elicit_accept, schema_defaults};
use serde_json::{Value, json};

/// Accepts everything.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cooperative;

#[async_trait]
impl InputHandler for Cooperative {
    fn support(&self) -> InputSupport {
        InputSupport::ALL
    }

    async fn answer(&self, _key: &str, ask: Ask<'_>) -> Result<Value, ClientError> {
        Ok(match ask {
            Ask::Form { schema, .. } => elicit_accept(schema_defaults(schema)),
            Ask::Url { .. } => json!({ "action": "accept" }),
            Ask::Sample(_) => json!({
                "role": "assistant",
                "content": { "type": "text", "text": "conformance reply" },
                "model": "conduit-mcp-conformance-client",
                "stopReason": "endTurn"
            }),
            Ask::Roots => json!({ "roots": [] }),
            _ => return Err(ClientError::Input("unknown request kind".into())),
        })
    }
}
