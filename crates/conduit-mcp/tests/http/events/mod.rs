//! The Events extension (`io.modelcontextprotocol/events`) over a real socket:
//! discovery and errors, polling, push streams, `task.status_changed`, and the
//! webhook methods (refused without webhooks; subscribed and delivered with them). Each test names the draft suite's check ids
//! (`sep-9999-…`, prefix left out) it covers.

mod discovery;
#[cfg(feature = "webhooks")]
mod egress;
mod evolution;
mod poll;
mod slow_reader;
mod stream;
mod task_status;
#[cfg(feature = "webhooks")]
mod webhook;

use crate::common::*;
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::clock::ManualClock;
use conduit_mcp::ext::events::{Audience, EventPublisher, Events, EventsConfig, TypedEvent};
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::events::DeliveryMode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

pub const EVENTS: &str = "io.modelcontextprotocol/events";
pub const TASKS: &str = "io.modelcontextprotocol/tasks";

/// Subscription arguments of `incident.created`.
#[derive(Deserialize, JsonSchema)]
pub struct IncidentFilter {
    /// Only this severity.
    pub severity: Option<Severity>,
}

/// An incident's severity.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    P1,
    P2,
}

/// An `incident.created` payload.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Incident {
    pub incident_id: String,
    pub severity: Severity,
}

pub struct IncidentCreated;

impl TypedEvent for IncidentCreated {
    type Arguments = IncidentFilter;
    type Payload = Incident;
    const NAME: &'static str = "incident.created";
    const DESCRIPTION: &'static str = "Fires when an incident is opened";

    fn matches(arguments: &IncidentFilter, payload: &Incident) -> bool {
        arguments.severity.is_none_or(|s| s == payload.severity)
    }
}

/// An event type offered by push only.
pub struct PushOnly;

impl TypedEvent for PushOnly {
    type Arguments = serde_json::Map<String, Value>;
    type Payload = serde_json::Map<String, Value>;
    const NAME: &'static str = "push.only";
    const DESCRIPTION: &'static str = "Offered on push streams only";

    fn delivery() -> Vec<DeliveryMode> {
        vec![DeliveryMode::Push]
    }
}

/// A server with the Events extension, its handles and a clock.
pub struct Fixture {
    pub h: Harness,
    /// The same server on another port, without authentication.
    pub anon: Harness,
    pub events: Events,
    pub tasks: Tasks,
    pub incidents: EventPublisher<IncidentCreated>,
    pub clock: ManualClock,
}

/// An incident for `alice`.
pub fn incident(id: &str, severity: Severity) -> Incident {
    Incident { incident_id: id.into(), severity }
}

pub fn alice() -> Audience {
    Audience::principal("alice")
}

/// Starts a server offering `incident.created`, `push.only` and
/// `task.status_changed`, with a `job` tool whose task a worker finishes,
/// bearer tokens for `alice` and `bob`, and `config`.
pub async fn fixture_with(config: EventsConfig, http: HttpConfig) -> Fixture {
    let clock = ManualClock::new(1_800_000_000_000);
    let tasks = Tasks::with_clock(TasksConfig::enabled(), Arc::new(clock.clone())).unwrap();
    let events = Events::with_clock(config, Arc::new(clock.clone())).unwrap();
    let incidents = events.typed::<IncidentCreated>();
    events.typed::<PushOnly>();
    events.task_status(&tasks);
    let server = Server::builder("events", "1")
        .extension(tasks.clone())
        .extension(events.clone())
        .tool(Tool::new("job", "a task a worker finishes").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
        .build()
        .unwrap();
    let auth =
        BearerTokens::new().token("alice-token", Principal::new("alice")).token("bob-token", Principal::new("bob"));
    let anon = start_with(server.clone(), http.clone()).await;
    let h = start_with(server, http.auth(auth)).await;
    Fixture { h, anon, events, tasks, incidents, clock }
}

pub async fn fixture() -> Fixture {
    fixture_with(EventsConfig::new(), HttpConfig::default()).await
}

/// A request with the Events (and Tasks) extension declared.
pub fn ereq(id: impl Into<Value>, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta_with(json!({ "extensions": { EVENTS: {}, TASKS: {} } }));
    req(id, method, params)
}

impl Fixture {
    /// Sends `body` as `who` (`None`: no credentials).
    pub async fn send_as(&self, who: Option<&str>, body: &Value) -> Resp {
        match who {
            Some(w) => {
                let t = format!("Bearer {w}-token");
                self.h.send_with(body, |hd| set(hd, "authorization", &t)).await
            }
            None => self.anon.send(body).await,
        }
    }

    /// An `events/poll` result of `who`, asserted a success and schema-checked.
    pub async fn poll(&self, who: Option<&str>, params: Value) -> Value {
        let r = self.send_as(who, &ereq(7, "events/poll", params)).await;
        let result = r.assert_ok(&json!(7));
        assert_def("JSONRPCResultResponse", &r.body);
        assert_eq!(result["resultType"], "complete", "{result}");
        result
    }

    /// Opens `events/stream` as `who`.
    pub async fn open_as(&self, who: &str, id: impl Into<Value>, params: Value) -> SseStream {
        let body = ereq(id, "events/stream", params);
        let t = format!("Bearer {who}-token");
        let resp = guard("stream headers", self.h.post_with(&body, |hd| set(hd, "authorization", &t)).send())
            .await
            .expect("sent");
        SseStream::new(resp)
    }
}

/// The next message of `s` that is not a heartbeat, schema-checked.
pub async fn next_non_heartbeat(s: &mut SseStream) -> Value {
    loop {
        let m = s.next().await.expect("the stream is open");
        assert_message(&m);
        if m["method"] != "notifications/events/heartbeat" {
            return m;
        }
    }
}

/// Asserts `m` is a valid JSON-RPC message of the 2026-07-28 schema.
#[track_caller]
pub fn assert_message(m: &Value) {
    let def = if m.get("method").is_some() {
        "JSONRPCNotification"
    } else if m.get("error").is_some() {
        "JSONRPCErrorResponse"
    } else {
        "JSONRPCResultResponse"
    };
    assert_def(def, m);
}

/// Asserts that `v` is a valid `def` of the official 2026-07-28 schema.
#[track_caller]
pub fn assert_def(def: &str, v: &Value) {
    type Cache = Mutex<HashMap<String, Arc<jsonschema::Validator>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    let validator = {
        let mut c = CACHE.get_or_init(Mutex::default).lock().expect("cache");
        c.entry(def.to_owned())
            .or_insert_with(|| {
                let core = SCHEMA.get_or_init(|| {
                    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                        .join("tests/schema/mcp-2026-07-28.schema.json");
                    serde_json::from_str(&std::fs::read_to_string(p).expect("schema file")).expect("schema JSON")
                });
                let mut root = core.clone();
                root["$ref"] = json!(format!("#/$defs/{def}"));
                Arc::new(jsonschema::validator_for(&root).expect("the schema compiles"))
            })
            .clone()
    };
    let errors: Vec<String> = validator.iter_errors(v).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "not a valid {def}: {errors:?}\n{v:#}");
}

/// The `error` of a JSON-RPC error answer (HTTP 200), asserting its code.
#[track_caller]
pub fn error_of(r: &Resp, id: i64, code: i64) -> Value {
    r.assert_error(200, code, &json!(id));
    assert_def("JSONRPCErrorResponse", &r.body);
    r.body["error"].clone()
}
