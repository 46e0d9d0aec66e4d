//! What the server counts for operators, through the `metrics` facade
//! (feature `metrics`; without it every function here is empty). Install any
//! recorder — the reference server's `--metrics ADDR` installs a Prometheus
//! one — and these appear:
//!
//! | Name | Kind | Labels |
//! |---|---|---|
//! | `conduit_requests_total` | counter | `method`, `outcome` (`ok` or the JSON-RPC code) |
//! | `conduit_request_duration_seconds` | histogram | `method` |
//! | `conduit_tasks_created_total` | counter | |
//! | `conduit_tasks_refused_total` | counter | `reason` (`limit`) |
//! | `conduit_tasks_finished_total` | counter | `status` (`completed`, `failed`, `cancelled`) |
//! | `conduit_tasks_live` | gauge | (created minus finished, by this node's writes) |
//! | `conduit_janitor_sweeps_total`, `conduit_janitor_removed_total` | counter | |
//! | `conduit_tasks_recovered_total` | counter | `how` (`resumed`, `failed`) |
//! | `conduit_store_errors_total` | counter | `op` |
//! | `conduit_listen_streams` | gauge | |
//! | `conduit_limited_total` | counter | `what` (`listen_streams`: a cap refused a listen or GET stream; `requests`, `task_creates`: a rate limit refused one; `session_bytes`: the node's ceiling on retained bytes refused a session) |

#![allow(unused_variables)]

use std::time::Duration;

/// The label of a request's method: a known name, else `other` (a client
/// must not grow the label set).
pub(crate) fn method_label(method: &str) -> &'static str {
    use crate::protocol::methods as m;
    const KNOWN: [&str; 20] = [
        m::INITIALIZE,
        m::PING,
        m::DISCOVER,
        m::TOOLS_LIST,
        m::TOOLS_CALL,
        m::PROMPTS_LIST,
        m::PROMPTS_GET,
        m::RESOURCES_LIST,
        m::RESOURCES_TEMPLATES_LIST,
        m::RESOURCES_READ,
        m::RESOURCES_SUBSCRIBE,
        m::RESOURCES_UNSUBSCRIBE,
        m::COMPLETION_COMPLETE,
        m::LOGGING_SET_LEVEL,
        m::LISTEN,
        m::TASKS_GET,
        m::TASKS_UPDATE,
        m::TASKS_CANCEL,
        m::TASKS_RESULT,
        m::TASKS_LIST,
    ];
    KNOWN.into_iter().find(|k| *k == method).unwrap_or("other")
}

/// One answered request.
pub(crate) fn request(method: &'static str, outcome: Option<i64>, took: Duration) {
    #[cfg(feature = "metrics")]
    {
        // A static label on success: no allocation on the common path.
        let outcome: metrics::SharedString = match outcome {
            None => metrics::SharedString::const_str("ok"),
            Some(code) => code.to_string().into(),
        };
        metrics::counter!("conduit_requests_total", "method" => method, "outcome" => outcome).increment(1);
        metrics::histogram!("conduit_request_duration_seconds", "method" => method).record(took.as_secs_f64());
    }
}

pub(crate) fn task_created() {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!("conduit_tasks_created_total").increment(1);
        metrics::gauge!("conduit_tasks_live").increment(1.0);
    }
}

pub(crate) fn task_refused_by_limit() {
    #[cfg(feature = "metrics")]
    metrics::counter!("conduit_tasks_refused_total", "reason" => "limit").increment(1);
}

pub(crate) fn task_finished(status: &'static str) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!("conduit_tasks_finished_total", "status" => status).increment(1);
        metrics::gauge!("conduit_tasks_live").decrement(1.0);
    }
}

pub(crate) fn sweep(removed: usize) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!("conduit_janitor_sweeps_total").increment(1);
        metrics::counter!("conduit_janitor_removed_total").increment(removed as u64);
    }
}

pub(crate) fn recovered(resumed: usize, failed: usize) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!("conduit_tasks_recovered_total", "how" => "resumed").increment(resumed as u64);
        metrics::counter!("conduit_tasks_recovered_total", "how" => "failed").increment(failed as u64);
    }
}

/// Tasks recovery moved to `failed`.
pub(crate) fn finished_by_recovery(n: usize) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!("conduit_tasks_finished_total", "status" => "failed").increment(n as u64);
        metrics::gauge!("conduit_tasks_live").decrement(n as f64);
    }
}

pub(crate) fn store_error(op: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("conduit_store_errors_total", "op" => op).increment(1);
}

pub(crate) fn listen_streams(delta: f64) {
    #[cfg(feature = "metrics")]
    metrics::gauge!("conduit_listen_streams").increment(delta);
}

/// A request refused by a per-client cap or rate (`what` it was).
pub(crate) fn limited(what: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("conduit_limited_total", "what" => what).increment(1);
}
