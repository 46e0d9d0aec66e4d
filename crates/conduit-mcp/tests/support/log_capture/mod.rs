//! Captures the tracing events a test's server emits (on a current-thread
//! runtime, with `tracing::subscriber::set_default`), to assert what an
//! operator would read in the log.

use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;

/// One recorded event: its target and its fields as text (`level` first, then `message`, ...).
pub type Recorded = (String, Vec<(String, String)>);

/// Records every event.
#[derive(Clone, Default)]
pub struct Events(pub Arc<Mutex<Vec<Recorded>>>);

struct FieldVisitor(Vec<(String, String)>);

impl Visit for FieldVisitor {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.push((field.name().to_owned(), value.to_string()));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Events {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut v = FieldVisitor(vec![("level".into(), event.metadata().level().to_string())]);
        event.record(&mut v);
        self.0.lock().unwrap().push((event.metadata().target().to_owned(), v.0));
    }
}

impl Events {
    /// The (level, message) of every event so far.
    pub fn messages(&self) -> Vec<(String, String)> {
        let field = |fields: &[(String, String)], name: &str| {
            fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default()
        };
        self.0.lock().unwrap().iter().map(|(_, f)| (field(f, "level"), field(f, "message"))).collect()
    }
}
