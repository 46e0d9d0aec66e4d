//! What a task keeps of what a client sent, and how much: the bounds that
//! make the row cap a bound on memory too (issue 11, finding 3).
//!
//! A task keeps, of the creating request's `clientCapabilities`, only the
//! declarations its input requests are judged by (see
//! [`task_capabilities`]); its `statusMessage` is cut at
//! [`MAX_STATUS_MESSAGE_BYTES`]; an answer to one of its input requests
//! larger than [`MAX_ANSWER_BYTES`], or past [`MAX_ANSWERS_BYTES`] in all, is
//! not accepted; resumable work's
//! arguments larger than [`MAX_RESUME_ARGS_BYTES`] refuse the create. With
//! these, every client-supplied part of a record is bounded, and so is a
//! record: see [`MAX_CLIENT_BYTES_PER_TASK`], and the byte budget
//! [`TasksConfig::byte_budget`](crate::ext::tasks::TasksConfig::byte_budget) (row cap × that bound).

use crate::protocol::meta::ClientCapabilities;

pub use crate::bounds::{MAX_STATUS_MESSAGE_BYTES, json_len};

/// The largest answer (`tasks/update` `inputResponses` value, as JSON) a task
/// accepts for one input request; a larger one is ignored like a malformed one.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024;

/// The most answer bytes one task keeps, over all its input requests: an
/// answer that would go past it is ignored like a malformed one.
pub const MAX_ANSWERS_BYTES: usize = 64 * 1024;

/// The shortest lifetime a task gets, in ms: a client's `params.task.ttl`
/// (2025-11-25) or a tool's `TaskSpec::ttl` below it is raised to it, so a
/// created task can always be read at least once (`ttl: 0` would answer a
/// `working` task that is already gone). Both revisions let the server choose
/// the actual TTL (2025-11-25: it "MAY override" the request; 2026-07-28:
/// `ttlMs` "MAY change"), so a short one is clamped, not refused.
pub const MIN_TTL_MS: u64 = 1_000;

/// The default bound on the bytes of one principal's terminal tasks
/// ([`TasksConfig::max_terminal_bytes_per_principal`](crate::ext::tasks::TasksConfig::max_terminal_bytes_per_principal)):
/// 4 MiB of records as JSON, thousands of small results or a few large ones.
pub const DEFAULT_MAX_TERMINAL_BYTES_PER_PRINCIPAL: usize = 4 << 20;

/// The largest arguments of resumable work (as JSON) a task keeps.
pub const MAX_RESUME_ARGS_BYTES: usize = 16 * 1024;

/// An upper bound on the bytes of a task's record that come from clients or
/// from these bounded fields: the capabilities kept (under 100 bytes), the
/// status message, the answers, the resumable arguments, plus 1 KiB for the
/// fixed fields (id, owner, times, lease). A tool's own result comes on top:
/// it is the server's, not a client's.
pub const MAX_CLIENT_BYTES_PER_TASK: usize =
    1024 + MAX_STATUS_MESSAGE_BYTES + MAX_ANSWERS_BYTES + MAX_RESUME_ARGS_BYTES;

/// The capabilities a task keeps: [`ClientCapabilities::input_only`], so that
/// [`ClientCapabilities::declares_input`] answers as it would on the whole
/// declaration; anything else the client sent is dropped.
pub fn task_capabilities(caps: &ClientCapabilities) -> ClientCapabilities {
    caps.input_only()
}

/// `message` cut to at most [`MAX_STATUS_MESSAGE_BYTES`] bytes.
pub fn bound_status_message(message: String) -> String {
    crate::bounds::cut_message(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::mrtr::InputKind;
    use serde_json::{Value, json};

    fn caps(v: Value) -> ClientCapabilities {
        ClientCapabilities(v.as_object().cloned().unwrap_or_default())
    }

    #[test]
    fn kept_capabilities_answer_as_the_whole_declaration() {
        let kinds = [
            InputKind::ElicitForm,
            InputKind::ElicitUrl,
            InputKind::Sample,
            InputKind::SampleWithTools,
            InputKind::ListRoots,
        ];
        let pad = "x".repeat(100_000);
        for whole in [
            json!({}),
            json!({ "elicitation": {} }),
            json!({ "elicitation": { "url": {} } }),
            json!({ "elicitation": { "form": {}, "url": {} } }),
            json!({ "sampling": { "tools": {} }, "roots": { "listChanged": true } }),
            json!({ "sampling": {}, "experimental": { "pad": pad }, "extensions": { "a": { "pad": pad } } }),
        ] {
            let whole = caps(whole);
            let kept = task_capabilities(&whole);
            for k in kinds {
                assert_eq!(kept.declares_input(k), whole.declares_input(k), "{k:?} on {:?}", kept.0);
            }
            assert!(json_len(&Value::Object(kept.0.clone())) < 100, "kept {:?}", kept.0);
        }
    }
}
