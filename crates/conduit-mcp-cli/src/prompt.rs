//! The terminal's input handler: forms built from an elicitation's schema
//! (string, number, integer, boolean, enum, multi-select; defaults
//! pre-filled, required fields marked, decline and cancel offered), URL
//! elicitations shown for confirmation, sampling answered by the person or
//! by `--sampler CMD`; roots only those given with `--root PATH` (none and
//! no `roots` capability otherwise); `--no-input` fails with a clear message
//! instead of prompting. Server text is shown escaped (it cannot act on the
//! terminal) and each form field with its real name, so what a person
//! approves is what is sent.

use crate::progress::Progress;
use async_trait::async_trait;
use conduit_mcp::client::sanitize::{one_line, terminal_safe};
use conduit_mcp::client::{Ask, ClientError, InputHandler, InputSupport, elicit_accept, elicit_cancel, elicit_decline};
use dialoguer::theme::ColorfulTheme;
use dialoguer::{Confirm, Input, MultiSelect, Select};
use serde_json::{Map, Value, json};
use std::io::{IsTerminal, Write};
use std::sync::Arc;

/// Answers the server's questions in the terminal.
#[derive(Debug, Clone)]
pub(crate) struct Terminal {
    pub(crate) no_input: bool,
    pub(crate) sampler: Option<String>,
    pub(crate) progress: Arc<Progress>,
    /// The roots offered (`--root`), as `file://` URIs; none: roots are not declared.
    pub(crate) roots: Vec<String>,
}

/// The `file://` URIs of `--root` paths (absolute, resolved).
pub(crate) fn root_uris(paths: &[std::path::PathBuf]) -> Result<Vec<String>, String> {
    paths
        .iter()
        .map(|p| {
            let abs = std::fs::canonicalize(p).map_err(|e| format!("--root {}: {e}", p.display()))?;
            Ok(format!("file://{}", abs.display()))
        })
        .collect()
}

fn input_err(e: impl std::fmt::Display) -> ClientError {
    ClientError::Input(format!("prompt failed: {e}"))
}

#[async_trait]
impl InputHandler for Terminal {
    fn support(&self) -> InputSupport {
        let mut s = InputSupport::ALL;
        s.roots = !self.roots.is_empty();
        s
    }

    async fn answer(&self, _key: &str, ask: Ask<'_>) -> Result<Value, ClientError> {
        let what = match ask {
            Ask::Form { message, .. } | Ask::Url { message, .. } => format!("{message:?}"),
            Ask::Sample(_) => "a sampling reply".into(),
            Ask::Roots => "roots".into(),
            _ => "input".into(),
        };
        if let Ask::Roots = ask {
            // Only what the person offered with --root (nothing is declared otherwise).
            let roots: Vec<Value> = self.roots.iter().map(|uri| json!({ "uri": uri })).collect();
            return Ok(json!({ "roots": roots }));
        }
        if let (Ask::Sample(params), Some(cmd)) = (ask, &self.sampler) {
            return run_sampler(cmd, params.clone()).await;
        }
        if self.no_input {
            return Err(ClientError::Input(format!("the server asks for {what} and --no-input is set")));
        }
        if !std::io::stdin().is_terminal() {
            return Err(ClientError::Input(format!("the server asks for {what} but stdin is not a terminal")));
        }
        let owned = match ask {
            Ask::Form { message, schema } => Owned::Form(message.to_owned(), schema.clone()),
            Ask::Url { message, url } => Owned::Url(message.to_owned(), url.to_owned()),
            Ask::Sample(p) => Owned::Sample(p.clone()),
            _ => return Err(ClientError::Input(format!("cannot render {what}"))),
        };
        let progress = self.progress.clone();
        tokio::task::spawn_blocking(move || progress.suspend(|| owned.prompt())).await.map_err(input_err)?
    }
}

enum Owned {
    Form(String, Value),
    Url(String, String),
    Sample(Value),
}

impl Owned {
    fn prompt(self) -> Result<Value, ClientError> {
        let theme = ColorfulTheme::default();
        match self {
            Owned::Form(message, schema) => form(&theme, &message, &schema),
            Owned::Url(message, url) => {
                eprintln!("The server asks you to open a URL:");
                quote(&message);
                eprintln!("  open: {}", one_line(&url));
                let ok = Confirm::with_theme(&theme)
                    .with_prompt("Continue once you have opened it?")
                    .default(true)
                    .interact_opt()
                    .map_err(input_err)?;
                Ok(match ok {
                    Some(true) => json!({ "action": "accept" }),
                    Some(false) => elicit_decline(),
                    None => elicit_cancel(),
                })
            }
            Owned::Sample(params) => {
                eprintln!("The server asks for a model reply to:");
                for m in params.get("messages").and_then(Value::as_array).into_iter().flatten() {
                    let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
                    let text = m.pointer("/content/text").and_then(Value::as_str).unwrap_or("[non-text content]");
                    eprintln!("  {}: {}", one_line(role), terminal_safe(text).replace('\n', "\n    "));
                }
                let reply: String =
                    Input::with_theme(&theme).with_prompt("Your reply").interact_text().map_err(input_err)?;
                Ok(sample_result(reply.trim()))
            }
        }
    }
}

/// Server text shown as a quotation: every line under a `│` margin, so it
/// cannot pass for the CLI's own prompts or answers.
fn quote(text: &str) {
    for line in terminal_safe(text).lines() {
        eprintln!("  │ {line}");
    }
}

fn sample_result(text: &str) -> Value {
    json!({ "role": "assistant", "content": { "type": "text", "text": text }, "model": "human", "stopReason": "endTurn" })
}

/// `--sampler CMD`: the request on stdin, the reply on stdout (JSON result or plain text).
async fn run_sampler(cmd: &str, params: Value) -> Result<Value, ClientError> {
    let mut child = tokio::process::Command::new("sh")
        .args(["-c", cmd])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| ClientError::Input(format!("--sampler: cannot run {cmd:?}: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        use tokio::io::AsyncWriteExt;
        let _ = stdin.write_all(params.to_string().as_bytes()).await;
    }
    let out = child.wait_with_output().await.map_err(|e| ClientError::Input(format!("--sampler: {e}")))?;
    if !out.status.success() {
        return Err(ClientError::Input(format!("--sampler exited with {}", out.status)));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    match serde_json::from_str::<Value>(&text) {
        Ok(v) if v.get("content").is_some() => Ok(v),
        _ => Ok(sample_result(text.trim())),
    }
}

/// The choices of an enum property: (value, label).
fn choices(prop: &Value) -> Option<Vec<(Value, String)>> {
    if let Some(e) = prop.get("enum").and_then(Value::as_array) {
        let names = prop.get("enumNames").and_then(Value::as_array);
        return Some(
            e.iter()
                .enumerate()
                .map(|(i, v)| {
                    let label = names.and_then(|n| n.get(i)).and_then(Value::as_str).map(str::to_owned);
                    let label = label.unwrap_or_else(|| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
                    (v.clone(), one_line(&label).into_owned())
                })
                .collect(),
        );
    }
    let alts = prop.get("oneOf").or_else(|| prop.get("anyOf"))?.as_array()?;
    Some(
        alts.iter()
            .filter_map(|a| {
                let v = a.get("const")?.clone();
                let label = a.get("title").and_then(Value::as_str).map_or_else(|| v.to_string(), str::to_owned);
                Some((v, one_line(&label).into_owned()))
            })
            .collect(),
    )
}

fn form(theme: &ColorfulTheme, message: &str, schema: &Value) -> Result<Value, ClientError> {
    let props = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    for (name, prop) in &props {
        let ty = prop.get("type").and_then(Value::as_str).unwrap_or("string");
        let renderable = matches!(ty, "string" | "number" | "integer" | "boolean")
            || (ty == "array" && prop.get("items").and_then(choices).is_some());
        if !renderable {
            return Err(ClientError::Input(format!("cannot render form field {name:?} of type {ty:?}")));
        }
    }
    let _ = writeln!(std::io::stderr(), "The server asks:");
    quote(message);
    let names: Vec<String> = props.keys().map(|k| one_line(k).into_owned()).collect();
    let _ = writeln!(
        std::io::stderr(),
        "  fields sent: {}",
        if names.is_empty() { "none".into() } else { names.join(", ") }
    );
    let how = Select::with_theme(theme)
        .with_prompt("Answer")
        .items(&["fill in the form", "decline", "cancel"])
        .default(0)
        .interact_opt()
        .map_err(input_err)?;
    match how {
        Some(0) => {}
        Some(1) => return Ok(elicit_decline()),
        _ => return Ok(elicit_cancel()),
    }
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let mut out = Map::new();
    for (name, prop) in &props {
        let req = required.contains(&name.as_str());
        // The field's real name is always shown: a title cannot disguise what is sent.
        let title = prop.get("title").and_then(Value::as_str).filter(|t| *t != name);
        let title = title
            .map(|t| format!("{} [{}]", one_line(t), one_line(name)))
            .unwrap_or_else(|| one_line(name).into_owned());
        let desc =
            prop.get("description").and_then(Value::as_str).map(|d| format!(" ({})", one_line(d))).unwrap_or_default();
        let label = format!("{title}{}{desc}", if req { " *" } else { "" });
        if let Some(v) = field(theme, &label, prop, req)? {
            out.insert(name.clone(), v);
        }
    }
    Ok(elicit_accept(Value::Object(out)))
}

/// Asks one field; `None` leaves an optional field out.
fn field(theme: &ColorfulTheme, label: &str, prop: &Value, required: bool) -> Result<Option<Value>, ClientError> {
    let ty = prop.get("type").and_then(Value::as_str).unwrap_or("string");
    let default = prop.get("default");
    if ty == "boolean" {
        let d = default.and_then(Value::as_bool).unwrap_or(false);
        let v = Confirm::with_theme(theme).with_prompt(label).default(d).interact().map_err(input_err)?;
        return Ok(Some(Value::Bool(v)));
    }
    if ty == "array" {
        let items = prop.get("items").and_then(choices).unwrap_or_default();
        let defaults: Vec<bool> =
            items.iter().map(|(v, _)| default.and_then(Value::as_array).is_some_and(|d| d.contains(v))).collect();
        let labels: Vec<&str> = items.iter().map(|(_, l)| l.as_str()).collect();
        let picked = MultiSelect::with_theme(theme)
            .with_prompt(label)
            .items(&labels)
            .defaults(&defaults)
            .interact()
            .map_err(input_err)?;
        return Ok(Some(Value::Array(picked.into_iter().map(|i| items[i].0.clone()).collect())));
    }
    if let Some(items) = choices(prop) {
        let labels: Vec<&str> = items.iter().map(|(_, l)| l.as_str()).collect();
        let d = default.and_then(|d| items.iter().position(|(v, _)| v == d)).unwrap_or(0);
        let i = Select::with_theme(theme).with_prompt(label).items(&labels).default(d).interact().map_err(input_err)?;
        return Ok(Some(items[i].0.clone()));
    }
    let numeric = matches!(ty, "number" | "integer");
    let mut input = Input::<String>::with_theme(theme).with_prompt(label).allow_empty(!required);
    if let Some(d) = default {
        input = input.default(d.as_str().map_or_else(|| d.to_string(), str::to_owned));
    }
    let integer = ty == "integer";
    let text = input
        .validate_with(move |s: &String| -> Result<(), String> {
            if s.is_empty() || !numeric {
                return Ok(());
            }
            match (integer, s.trim().parse::<i64>(), s.trim().parse::<f64>()) {
                (true, Ok(_), _) | (false, _, Ok(_)) => Ok(()),
                (true, ..) => Err("an integer, please".into()),
                _ => Err("a number, please".into()),
            }
        })
        .interact_text()
        .map_err(input_err)?;
    if text.is_empty() {
        return Ok(None);
    }
    Ok(Some(if integer {
        json!(text.trim().parse::<i64>().unwrap_or_default())
    } else if numeric {
        json!(text.trim().parse::<f64>().unwrap_or_default())
    } else {
        Value::String(text)
    }))
}
