//! `serve`'s per-client limits: long-lived streams, the request rate and
//! `Mcp-Name` on `tasks/*` (HTTP; the `[http]` table of `--config` sets them
//! too), and the task-creation rate (both transports; `[ext_tasks]
//! create_rate`). A flag wins over the file.

use clap::Args;
use conduit_mcp::ext::tasks::TasksConfig;
use conduit_mcp::quota::RateLimit;
use conduit_mcp::transport::http::HttpConfig;
use std::time::Duration;

/// The flags of the HTTP endpoint's per-client limits.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct LimitArgs {
    /// HTTP: long-lived streams (listen streams and 2025-11-25 GET streams) open at once [default: 256;
    /// always below --max-connections].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_listen_streams: Option<u32>,
    /// HTTP: long-lived streams (listen and GET) one client (its principal, or without authentication its
    /// address) holds at once [default: 16].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_listen_streams_per_client: Option<u32>,
    /// HTTP: seconds a listen or GET stream may carry nothing before it is ended [default: 600].
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) listen_idle_timeout_s: Option<u64>,
    /// HTTP: refuse tasks/get, tasks/update and tasks/cancel without an Mcp-Name header (by default the
    /// body's taskId is enough; a header naming another task is always refused).
    #[arg(long)]
    pub(crate) require_task_name: bool,
    /// HTTP: JSON-RPC requests one client may send, per node: `COUNT/s`, `COUNT/min` or `COUNT/h`, optionally
    /// `,burst=N` (e.g. `50/s,burst=100`); past it: 429 with Retry-After [default: no rate].
    #[arg(long, value_name = "RATE")]
    pub(crate) request_rate: Option<RateLimit>,
    /// HTTP, with authentication: failed authentications one address may make, per node, as
    /// `--request-rate`, or `off`; checked before the credentials, so past it: 429 with Retry-After
    /// and nothing asked of an authorization server [default: 30/min,burst=20].
    #[arg(long, value_name = "RATE")]
    pub(crate) auth_failure_rate: Option<RateOrOff>,
    /// Tasks one client may create, per node (HTTP and stdio), as `--request-rate` [default: no rate].
    #[arg(long, value_name = "RATE")]
    pub(crate) task_create_rate: Option<RateLimit>,
}

impl LimitArgs {
    /// Whether any of these flags is set (they have no effect with `--stdio`).
    pub(crate) fn any(&self) -> bool {
        self.max_listen_streams.is_some()
            || self.max_listen_streams_per_client.is_some()
            || self.listen_idle_timeout_s.is_some()
            || self.require_task_name
            || self.request_rate.is_some()
            || self.auth_failure_rate.is_some()
    }

    /// `cfg` with `--task-create-rate` applied.
    pub(crate) fn apply_tasks(&self, cfg: TasksConfig) -> TasksConfig {
        match self.task_create_rate {
            Some(rate) => cfg.create_rate(Some(rate)),
            None => cfg,
        }
    }

    /// `cfg` (with the config file's `[http]` table applied) with these flags applied.
    pub(crate) fn apply(&self, mut cfg: HttpConfig) -> HttpConfig {
        if let Some(n) = self.max_listen_streams {
            cfg = cfg.max_listen_streams(n as usize);
        }
        if let Some(n) = self.max_listen_streams_per_client {
            cfg = cfg.max_listen_streams_per_client(n as usize);
        }
        if let Some(s) = self.listen_idle_timeout_s {
            cfg = cfg.listen_idle_timeout(Duration::from_secs(s));
        }
        if self.require_task_name {
            cfg = cfg.require_task_name(true);
        }
        if let Some(rate) = self.request_rate {
            cfg = cfg.request_rate(Some(rate));
        }
        if let Some(RateOrOff(rate)) = self.auth_failure_rate {
            cfg = cfg.auth_failure_rate(rate);
        }
        cfg
    }
}

/// A rate, or `off` (no rate at all).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RateOrOff(pub(crate) Option<RateLimit>);

impl std::str::FromStr for RateOrOff {
    type Err = conduit_mcp::quota::RateLimitError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "off" => Ok(Self(None)),
            s => s.parse().map(|r| Self(Some(r))),
        }
    }
}
