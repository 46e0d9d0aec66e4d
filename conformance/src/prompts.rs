//! The fixture's prompts and its `completion/complete` handler.

use crate::assets::PNG_BASE64;
use crate::mrtr_tools::{Elicited, elicited};
use conduit_mcp::ServerBuilder;
use conduit_mcp::prelude::*;
use serde_json::{Value, json};

/// Most values a completion returns (the schema's `maxItems`).
const MAX_COMPLETIONS: usize = 100;

/// Registers every prompt and the completion handler.
pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    b.prompt(Prompt::new("test_simple_prompt", "A simple prompt without arguments").handle(|_ctx, _args| async {
        Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text("This is a simple prompt for testing."))]))
    }))
    .prompt(
        Prompt::new("test_prompt_with_arguments", "A prompt that interpolates two arguments")
            .argument("arg1", "First test argument", true)
            .argument("arg2", "Second test argument", true)
            .handle(|_ctx, args| async move {
                let arg = |k: &str| args.get(k).map(String::as_str).unwrap_or_default().to_owned();
                Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    arg("arg1"),
                    arg("arg2")
                )))]))
            }),
    )
    .prompt(
        Prompt::new("test_prompt_with_embedded_resource", "A prompt that embeds a resource")
            .argument("resourceUri", "URI of the resource to embed", true)
            .handle(|_ctx, args| async move {
                let uri = args.get("resourceUri").cloned().unwrap_or_default();
                Ok(GetPromptResult::new(vec![
                    PromptMessage::user(Content::resource(ResourceContents::text(
                        uri,
                        "text/plain",
                        "Embedded resource content for testing.",
                    ))),
                    PromptMessage::user(Content::text("Please process the embedded resource above.")),
                ]))
            }),
    )
    .prompt(Prompt::new("test_prompt_with_image", "A prompt that includes an image").handle(|_ctx, _args| async {
        Ok(GetPromptResult::new(vec![
            PromptMessage::user(Content::image(PNG_BASE64, "image/png")),
            PromptMessage::user(Content::text("Please analyze the image above.")),
        ]))
    }))
    .prompt(Prompt::new("test_input_required_result_prompt", "A prompt that asks for context first (MRTR)").handle(
        |ctx, _args| async move {
            let out: PromptOutput = match elicited(&ctx, "user_context")? {
                Elicited::Accepted(content) => {
                    let context = content
                        .get("context")
                        .and_then(Value::as_str)
                        .ok_or_else(|| RpcError::invalid_params("elicitation content needs a string \"context\""))?;
                    GetPromptResult::new(vec![PromptMessage::user(Content::text(format!(
                        "Answer using this context: {context}"
                    )))])
                    .into()
                }
                Elicited::Refused(_) => {
                    GetPromptResult::new(vec![PromptMessage::user(Content::text("Answer without extra context."))])
                        .into()
                }
                Elicited::Missing => InputRequired::new()
                    .request(
                        "user_context",
                        mrtr::elicit(
                            "What context should the prompt use?",
                            json!({
                                "type": "object",
                                "properties": { "context": { "type": "string" } },
                                "required": ["context"]
                            }),
                        ),
                    )
                    .into(),
            };
            Ok(out)
        },
    ))
    .completion(|_ctx, params| async move { Ok(complete(&params)) })
}

/// Suggestions for a prompt argument, keyed by `(prompt, argument)`.
fn candidates(prompt: &str, argument: &str) -> &'static [&'static str] {
    match (prompt, argument) {
        ("test_prompt_with_arguments", "arg1" | "arg2") => &["test", "testValue1", "testValue2", "example"],
        ("test_prompt_with_embedded_resource", "resourceUri") => {
            &["test://example-resource", "test://static-text", "test://static-binary"]
        }
        _ => &[],
    }
}

/// Answers `completion/complete`: the candidates that start with the typed value.
fn complete(params: &Value) -> Value {
    let is_prompt_ref = params.pointer("/ref/type").and_then(Value::as_str) == Some("ref/prompt");
    let prompt = params.pointer("/ref/name").and_then(Value::as_str).unwrap_or_default();
    let argument = params.pointer("/argument/name").and_then(Value::as_str).unwrap_or_default();
    let typed = params.pointer("/argument/value").and_then(Value::as_str).unwrap_or_default();
    let values: Vec<&str> = if is_prompt_ref {
        candidates(prompt, argument).iter().copied().filter(|v| v.starts_with(typed)).collect()
    } else {
        Vec::new()
    };
    let total = values.len();
    let values: Vec<&str> = values.into_iter().take(MAX_COMPLETIONS).collect();
    json!({ "values": values, "total": total, "hasMore": total > values.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_by_prefix() {
        let p = json!({ "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" },
                        "argument": { "name": "arg1", "value": "test" } });
        assert_eq!(complete(&p)["values"], json!(["test", "testValue1", "testValue2"]));
        let none = json!({ "ref": { "type": "ref/resource", "uri": "x" }, "argument": { "name": "a", "value": "" } });
        assert_eq!(complete(&none)["values"], json!([]));
    }
}
