//! `conduit-mcp tools URL`: the server's tools and their parameters.

use crate::remote::{Exit, Remote, fail};
use conduit_mcp::client::NoInput;
use conduit_mcp::client::sanitize::{json_safe, one_line};
use serde_json::Value;

/// `tools` arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct ToolsArgs {
    /// `URL` (omit with `--stdio -- CMD ARGS...`).
    #[arg(value_name = "URL")]
    positionals: Vec<String>,
    #[command(flatten)]
    remote: Remote,
}

/// Runs `tools`.
pub(crate) async fn run(args: ToolsArgs) -> Exit {
    let (url, rest) = match args.remote.split(args.positionals) {
        Ok(x) => x,
        Err(e) => return e,
    };
    if !rest.is_empty() {
        return crate::remote::usage(format!("unexpected arguments: {}", rest.join(" ")));
    }
    let client = match args.remote.connect(url.as_deref(), NoInput).await {
        Ok(c) => c,
        Err(e) => return e,
    };
    let tools = match client.list_tools().await {
        Ok(t) => t,
        Err(e) => return fail(&e),
    };
    if args.remote.json {
        println!("{}", json_safe(&serde_json::to_string_pretty(&tools).unwrap_or_default()));
        return Exit::Ok;
    }
    for t in &tools {
        println!("{}  {}", one_line(&t.name), one_line(t.description.as_deref().unwrap_or("")));
        let required: Vec<&str> = t
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for (name, p) in t.input_schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
            let ty = p.get("type").and_then(Value::as_str).unwrap_or("any");
            let req = if required.contains(&name.as_str()) { ", required" } else { "" };
            let desc = p.get("description").and_then(Value::as_str).unwrap_or("");
            println!("    {} ({}{req})  {}", one_line(name), one_line(ty), one_line(desc));
        }
    }
    Exit::Ok
}
