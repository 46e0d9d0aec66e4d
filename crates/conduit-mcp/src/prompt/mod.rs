//! Prompts: templates the client can fetch with `prompts/get`.

use crate::ctx::Ctx;
use crate::mrtr::InputRequired;
use crate::protocol::RpcError;
use crate::protocol::prompts::{GetPromptResult, PromptArgument, PromptInfo};
use futures_util::future::BoxFuture;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

/// What a prompt returns.
#[derive(Debug)]
#[non_exhaustive]
pub enum PromptOutput {
    /// The messages.
    Complete(GetPromptResult),
    /// Input is needed first (MRTR).
    InputRequired(InputRequired),
}

impl From<GetPromptResult> for PromptOutput {
    fn from(r: GetPromptResult) -> Self {
        Self::Complete(r)
    }
}

impl From<InputRequired> for PromptOutput {
    fn from(r: InputRequired) -> Self {
        Self::InputRequired(r)
    }
}

/// Prompt arguments by name.
pub type PromptArgs = BTreeMap<String, String>;

type Handler = Arc<dyn Fn(Ctx, PromptArgs) -> BoxFuture<'static, Result<PromptOutput, RpcError>> + Send + Sync>;

/// A prompt built from a closure.
///
/// ```
/// use conduit_mcp::prelude::*;
///
/// let p = Prompt::new("review", "Review a diff")
///     .argument("diff", "The diff", true)
///     .handle(|_ctx, args| async move {
///         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(format!(
///             "Review this: {}", args["diff"]
///         )))]))
///     });
/// assert_eq!(p.info().name, "review");
/// ```
#[derive(Clone)]
#[must_use]
pub struct Prompt {
    info: PromptInfo,
    handler: Handler,
}

impl std::fmt::Debug for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompt").field("name", &self.info.name).finish_non_exhaustive()
    }
}

impl Prompt {
    /// A prompt with a name and description.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            info: PromptInfo { name: name.into(), description: Some(description.into()), arguments: Vec::new() },
            handler: Arc::new(|_, _| Box::pin(async { Err(RpcError::internal("prompt has no handler")) })),
        }
    }

    /// Declares an argument.
    pub fn argument(mut self, name: &str, description: &str, required: bool) -> Self {
        self.info.arguments.push(PromptArgument::new(name, description, required));
        self
    }

    /// Sets the handler.
    pub fn handle<F, Fut, O>(mut self, f: F) -> Self
    where
        F: Fn(Ctx, PromptArgs) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, RpcError>> + Send + 'static,
        O: Into<PromptOutput>,
    {
        self.handler = Arc::new(move |ctx, args| {
            let fut = f(ctx, args);
            Box::pin(async move { fut.await.map(Into::into) })
        });
        self
    }

    /// How the prompt is listed.
    pub fn info(&self) -> &PromptInfo {
        &self.info
    }

    pub(crate) async fn get(&self, ctx: Ctx, args: PromptArgs) -> Result<PromptOutput, RpcError> {
        if let Some(missing) = self.info.arguments.iter().find(|a| a.required && !args.contains_key(&a.name)) {
            return Err(RpcError::invalid_params(format!(
                "Missing required argument {:?} for prompt {}",
                missing.name, self.info.name
            )));
        }
        (self.handler)(ctx, args).await
    }
}
