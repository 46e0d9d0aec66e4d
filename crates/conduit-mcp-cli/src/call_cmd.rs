//! `conduit-mcp call URL TOOL [KEY=VALUE ...] [--args JSON]`: call a tool
//! and see it through (MRTR prompts, the task's progress and questions).

use crate::follow_ui::{follow, print_result};
use crate::ledger_args::LedgerArgs;
use crate::progress::Progress;
use crate::prompt::Terminal;
use crate::remote::{Exit, Remote, fail, usage};
use conduit_mcp::client::{CallOutcome, Client};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Options shared by the commands that may prompt.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct InputArgs {
    /// Fail with a clear message instead of prompting when the server asks for input.
    #[arg(long)]
    pub(crate) no_input: bool,
    /// Answer sampling requests with CMD (the request JSON on its stdin, the reply on its stdout).
    #[arg(long, value_name = "CMD")]
    pub(crate) sampler: Option<String>,
    /// Offer this directory to the server as a root (repeatable); without it no roots are offered.
    #[arg(long = "root", value_name = "PATH")]
    pub(crate) roots: Vec<std::path::PathBuf>,
}

impl InputArgs {
    /// The terminal's input handler for these options.
    pub(crate) fn terminal(&self, progress: Arc<Progress>) -> Result<Terminal, Exit> {
        let roots = crate::prompt::root_uris(&self.roots).map_err(usage)?;
        Ok(Terminal { no_input: self.no_input, sampler: self.sampler.clone(), progress, roots })
    }
}

/// `call` arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct CallArgs {
    #[command(flatten)]
    input: InputArgs,
    /// The arguments as one JSON object (KEY=VALUE pairs are added on top).
    #[arg(long, value_name = "JSON")]
    args: Option<String>,
    /// Print the task id and exit at once when the call becomes a task.
    #[arg(long)]
    detach: bool,
    /// `URL TOOL [KEY=VALUE ...]` (no URL with `--stdio`).
    #[arg(value_name = "URL TOOL [KEY=VALUE]")]
    positionals: Vec<String>,
    #[command(flatten)]
    ledger: LedgerArgs,
    #[command(flatten)]
    remote: Remote,
}

/// Types `raw` after the property's schema (`n=3` is a number where it says integer).
fn typed(name: &str, raw: &str, prop: Option<&Value>) -> Result<Value, String> {
    let ty = prop.and_then(|p| p.get("type")).and_then(Value::as_str);
    match ty {
        Some("integer") => {
            raw.parse::<i64>().map(Value::from).map_err(|_| format!("{name}: {raw:?} is not an integer"))
        }
        Some("number") => raw
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("{name}: {raw:?} is not a number")),
        Some("boolean") => match raw {
            "true" | "yes" | "1" => Ok(Value::Bool(true)),
            "false" | "no" | "0" => Ok(Value::Bool(false)),
            _ => Err(format!("{name}: {raw:?} is not a boolean")),
        },
        Some("array" | "object") => serde_json::from_str(raw).map_err(|e| format!("{name}: not JSON: {e}")),
        Some("null") => Ok(Value::Null),
        _ => Ok(Value::String(raw.to_owned())),
    }
}

/// Builds the arguments from `--args` and the KEY=VALUE pairs, typed from `schema`.
pub(crate) fn build_args(json: Option<&str>, pairs: &[String], schema: Option<&Value>) -> Result<Value, String> {
    let mut args = match json {
        Some(j) => match serde_json::from_str::<Value>(j).map_err(|e| format!("--args: not JSON: {e}"))? {
            Value::Object(m) => m,
            _ => return Err("--args must be a JSON object".into()),
        },
        None => Map::new(),
    };
    let props = schema.and_then(|s| s.get("properties"));
    for pair in pairs {
        let (k, v) = pair.split_once('=').ok_or_else(|| format!("{pair:?}: expected KEY=VALUE"))?;
        args.insert(k.to_owned(), typed(k, v, props.and_then(|p| p.get(k)))?);
    }
    Ok(Value::Object(args))
}

async fn schema_of(client: &Client, tool: &str) -> Result<Option<Value>, Exit> {
    let tools = client.list_tools().await.map_err(|e| fail(&e))?;
    Ok(tools.into_iter().find(|t| t.name == tool).map(|t| t.input_schema))
}

/// Runs `call`.
pub(crate) async fn run(a: CallArgs) -> Exit {
    let (url, rest) = match a.remote.split(a.positionals) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let Some((tool, pairs)) = rest.split_first() else { return usage("the tool name is missing") };
    let progress = Arc::new(Progress::new());
    let handler = match a.input.terminal(progress.clone()) {
        Ok(h) => h,
        Err(e) => return e,
    };
    // The ledger first: a task is written down before anything about it is printed.
    let ledger = if url.is_some() {
        match a.ledger.open().await {
            Ok(l) => l,
            Err(e) => return e,
        }
    } else {
        None
    };
    let client = match a.remote.connect_recording(url.as_deref(), handler, ledger).await {
        Ok(c) => c,
        Err(e) => return e,
    };
    let schema = match schema_of(&client, tool).await {
        Ok(s) => s,
        Err(e) => return e,
    };
    let args = match build_args(a.args.as_deref(), pairs, schema.as_ref()) {
        Ok(v) => v,
        Err(m) => return usage(m),
    };
    progress.show(format!("calling {tool}"));
    let outcome = tokio::select! {
        o = client.call_tool(tool, args) => o,
        _ = tokio::signal::ctrl_c() => {
            progress.finish();
            eprintln!("interrupted");
            return Exit::Interrupted;
        }
    };
    match outcome {
        Ok(CallOutcome::Complete(r)) => {
            progress.finish();
            print_result(&r, a.remote.json)
        }
        Ok(CallOutcome::Task(t)) if a.detach => {
            progress.finish();
            println!("{}", conduit_mcp::client::sanitize::one_line(t.id()));
            Exit::Ok
        }
        Ok(CallOutcome::Task(t)) => follow(&t, &progress, a.remote.json).await,
        Ok(_) => Exit::Usage,
        Err(e) => {
            progress.finish();
            fail(&e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pairs_are_typed_from_the_schema() {
        let schema = json!({ "properties": { "n": { "type": "integer" }, "x": { "type": "number" },
                                             "b": { "type": "boolean" }, "s": { "type": "string" },
                                             "l": { "type": "array" } } });
        let pairs: Vec<String> =
            ["n=3", "x=1.5", "b=true", "s=3", "l=[1,2]", "free=text"].iter().map(|s| s.to_string()).collect();
        let v = build_args(Some(r#"{"s": "over", "k": 1}"#), &pairs, Some(&schema)).unwrap();
        assert_eq!(v, json!({ "n": 3, "x": 1.5, "b": true, "s": "3", "l": [1, 2], "free": "text", "k": 1 }));
        assert!(build_args(None, &["n=three".into()], Some(&schema)).unwrap_err().contains("not an integer"));
        assert!(build_args(None, &["oops".into()], None).is_err());
        assert!(build_args(Some("[1]"), &[], None).is_err());
    }
}
