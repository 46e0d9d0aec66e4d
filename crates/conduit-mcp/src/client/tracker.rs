//! [`Tracker`]: what the task handles of one client share — the era they
//! speak, the follower's settings, the one listen hub, the one
//! `task.status_changed` hub, and the task ledger they write to.

use super::era::Dialect;
use super::event_hub::EventHub;
use super::listen_hub::Hub;
use super::recorder::Recorder;
use std::sync::Arc;
use std::time::Duration;

/// Settings of the task follower (set on the [`ClientBuilder`](super::ClientBuilder)).
#[derive(Clone)]
pub(crate) struct FollowSettings {
    /// The poll interval when the server suggests none.
    pub(crate) default_poll: Duration,
    /// The cap of the poll back-off.
    pub(crate) max_poll: Duration,
    /// Observations of `input_required` with nothing new before giving up.
    pub(crate) stuck_polls: u32,
    /// Whether to follow by push over `subscriptions/listen`.
    pub(crate) push: bool,
    /// Whether to follow by `task.status_changed` on `events/stream` where offered.
    pub(crate) events: bool,
    /// The wall clock (ms since the epoch) the TTL deadline is checked against.
    pub(crate) now_ms: Arc<dyn Fn() -> i64 + Send + Sync>,
}

impl std::fmt::Debug for FollowSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FollowSettings")
            .field("default_poll", &self.default_poll)
            .field("max_poll", &self.max_poll)
            .field("stuck_polls", &self.stuck_polls)
            .field("push", &self.push)
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

/// The task side of one client, shared by its handles.
#[derive(Debug)]
pub(crate) struct Tracker {
    era: Arc<dyn Dialect>,
    settings: FollowSettings,
    hub: Hub,
    recorder: Option<Recorder>,
    /// Where tasks are followed by `task.status_changed` when the listen push does not take them.
    event_hub: EventHub,
}

impl Tracker {
    /// Tasks on `era`, followed with `settings`, written to `recorder`'s ledger (if any).
    /// `offers_events`: the server advertised the Events extension.
    pub(crate) fn new(
        era: Arc<dyn Dialect>,
        settings: FollowSettings,
        recorder: Option<Recorder>,
        offers_events: bool,
    ) -> Self {
        let event_hub = EventHub::new(offers_events && settings.events);
        Self { era, settings, hub: Hub::default(), recorder, event_hub }
    }

    /// Where the tasks are written down, when they are.
    pub(crate) fn recorder(&self) -> Option<&Recorder> {
        self.recorder.as_ref()
    }

    /// The era the tasks are read, answered and cancelled in.
    pub(crate) fn era(&self) -> &Arc<dyn Dialect> {
        &self.era
    }

    /// The follower's settings.
    pub(crate) fn settings(&self) -> &FollowSettings {
        &self.settings
    }

    /// The listen hub pushes come through.
    pub(crate) fn hub(&self) -> &Hub {
        &self.hub
    }

    /// The hub `task.status_changed` occurrences come through.
    pub(crate) fn event_hub(&self) -> &EventHub {
        &self.event_hub
    }
}
