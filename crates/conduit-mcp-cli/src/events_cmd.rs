//! `conduit-mcp events URL [NAME] [KEY=VALUE ...]`: without NAME, the event
//! types the server offers; with it, each occurrence as it comes on the push
//! stream (or by polling with `--poll`), one escaped line each, or one JSON
//! object per line with `--json`. KEY=VALUE pairs are typed from the event
//! type's `inputSchema` as `call` types them from a tool's.

use crate::call_cmd::build_args;
use crate::remote::{Exit, Remote, fail, usage};
use conduit_mcp::client::sanitize::{excerpt, json_safe, one_line};
use conduit_mcp::client::{Client, EventQuery, NoInput, StreamEvent};
use conduit_mcp::protocol::RpcError;
use conduit_mcp::protocol::events::{EventDescriptor, EventOccurrence};
use std::time::Duration;

/// The shortest wait between polls, whatever `nextPollMs` says.
const MIN_POLL: Duration = Duration::from_secs(1);
/// How much of a server's message an error line shows.
const MESSAGE_CHARS: usize = 200;

/// `events` arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct EventsArgs {
    /// `URL [NAME [KEY=VALUE ...]]` (no URL with `--stdio`).
    #[arg(value_name = "URL [NAME] [KEY=VALUE]")]
    positionals: Vec<String>,
    /// Poll (`events/poll`, at the server's `nextPollMs`) instead of following the push stream.
    #[arg(long)]
    poll: bool,
    /// Continue after this cursor (a cursor printed before); default: from now.
    #[arg(long)]
    cursor: Option<String>,
    /// Exit after this many events.
    #[arg(long, value_name = "N")]
    max_events: Option<u64>,
    #[command(flatten)]
    remote: Remote,
}

/// Runs `events`.
pub(crate) async fn run(args: EventsArgs) -> Exit {
    let (url, rest) = match args.remote.split(args.positionals.clone()) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let client = match args.remote.connect(url.as_deref(), NoInput).await {
        Ok(c) => c,
        Err(e) => return e,
    };
    let types = match client.list_events().await {
        Ok(t) => t,
        Err(e) => return fail(&e),
    };
    let Some((name, pairs)) = rest.split_first() else {
        print_types(&types, args.remote.json);
        return Exit::Ok;
    };
    let Some(kind) = types.iter().find(|t| t.name == *name) else {
        return usage(format!("the server offers no event type {}", excerpt(name, MESSAGE_CHARS)));
    };
    let arguments = match build_args(None, pairs, Some(&kind.input_schema)) {
        Ok(serde_json::Value::Object(m)) => m,
        Ok(_) => serde_json::Map::new(),
        Err(e) => return usage(e),
    };
    let query = EventQuery::new(name.clone()).arguments(arguments).cursor(args.cursor.clone());
    let out = Printer { json: args.remote.json, left: args.max_events };
    if args.poll { poll(&client, query, out).await } else { follow(&client, query, out).await }
}

fn print_types(types: &[EventDescriptor], json: bool) {
    if json {
        for t in types {
            println!("{}", json_safe(&serde_json::to_string(t).unwrap_or_default()));
        }
        return;
    }
    for t in types {
        let modes: Vec<&str> = t.delivery.iter().map(|m| m.as_str()).collect();
        println!("{}  [{}]  {}", one_line(&t.name), modes.join(","), one_line(&t.description));
    }
}

/// Prints occurrences and counts them down.
struct Printer {
    json: bool,
    left: Option<u64>,
}

impl Printer {
    /// Prints `o`; false once the asked number has been printed.
    fn print(&mut self, o: &EventOccurrence) -> bool {
        if self.left == Some(0) {
            return false;
        }
        if self.json {
            println!("{}", json_safe(&serde_json::to_string(o).unwrap_or_default()));
        } else {
            let data = serde_json::to_string(&o.data).unwrap_or_default();
            println!("{} {} {} {}", one_line(&o.timestamp), one_line(&o.name), one_line(&o.event_id), one_line(&data));
        }
        if let Some(n) = self.left.as_mut() {
            *n -= 1;
        }
        self.left != Some(0)
    }

    fn done(&self) -> bool {
        self.left == Some(0)
    }
}

fn server_error(what: &str, e: &RpcError) {
    eprintln!("{what}: server error {}: {}", e.code, excerpt(&e.message, MESSAGE_CHARS));
}

async fn follow(client: &Client, query: EventQuery, mut out: Printer) -> Exit {
    if out.done() {
        return Exit::Ok;
    }
    let mut stream = match client.stream_events(&query).await {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(StreamEvent::Active { truncated, .. }) => {
                eprintln!("following {}", one_line(&query.name));
                if truncated {
                    eprintln!("some events were skipped (the cursor was older than the server keeps)");
                }
            }
            Ok(StreamEvent::Event(o)) => {
                if !out.print(&o) {
                    return Exit::Ok;
                }
            }
            Ok(StreamEvent::Heartbeat { .. }) => {}
            Ok(StreamEvent::Error(e)) => server_error("events", &e),
            Ok(StreamEvent::Terminated(e)) => {
                server_error("the subscription ended", &e);
                return Exit::ToolError;
            }
            Ok(_) => {}
            Err(e) => return fail(&e),
        }
    }
    match stream.cursor() {
        Some(c) => eprintln!("error: the server closed the stream; continue with --cursor {}", one_line(c)),
        None => eprintln!("error: the server closed the stream"),
    }
    Exit::Usage
}

async fn poll(client: &Client, mut query: EventQuery, mut out: Printer) -> Exit {
    while !out.done() {
        let page = match client.poll_events(&query, out.left).await {
            Ok(p) => p,
            Err(e) => return fail(&e),
        };
        if page.truncated {
            eprintln!("some events were skipped (the cursor was older than the server keeps)");
        }
        for o in &page.events {
            if !out.print(o) {
                return Exit::Ok;
            }
        }
        // A null cursor is never sent back: the next poll starts from now.
        query = query.cursor(page.cursor);
        if !page.has_more {
            tokio::time::sleep(Duration::from_millis(page.next_poll_ms).max(MIN_POLL)).await;
        }
    }
    Exit::Ok
}
