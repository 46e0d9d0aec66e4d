//! The `[http]` TOML table: the endpoint's per-client limits
//! ([`ConfigFile`](crate::config_file::ConfigFile) reads it; a value of the
//! wrong shape is refused there, naming the table and the key).
//!
//! ```toml
//! [http]
//! max_listen_streams = 256            # listen and GET streams open at once (kept below max_connections)
//! max_listen_streams_per_client = 16  # ... of one principal (without authentication: one address)
//! listen_idle_timeout_ms = 600000     # a listen or GET stream carrying nothing this long is ended
//! require_task_name = false           # tasks/* without Mcp-Name: accepted (false) or refused (true)
//! request_rate = "50/s,burst=100"     # JSON-RPC requests per client (default: no rate)
//! auth_failure_rate = "30/min,burst=20"  # failed authentications per address ("off": none)
//! ```

use super::HttpConfig;
use crate::config::shape::{Positive, Rate, RateOrOff};
use std::time::Duration;

/// The `[http]` table as written.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HttpTable {
    max_listen_streams: Option<Positive>,
    max_listen_streams_per_client: Option<Positive>,
    listen_idle_timeout_ms: Option<Positive>,
    require_task_name: Option<bool>,
    request_rate: Option<Rate>,
    auth_failure_rate: Option<RateOrOff>,
}

impl HttpTable {
    /// `cfg` with the values the table gives (every other setting kept).
    pub(crate) fn apply(&self, mut cfg: HttpConfig) -> HttpConfig {
        if let Some(n) = self.max_listen_streams {
            cfg.max_listen_streams = n.count();
        }
        if let Some(n) = self.max_listen_streams_per_client {
            cfg.max_listen_streams_per_client = n.count();
        }
        if let Some(ms) = self.listen_idle_timeout_ms {
            cfg.listen_idle_timeout = Duration::from_millis(ms.0);
        }
        if let Some(on) = self.require_task_name {
            cfg.require_task_name = on;
        }
        if let Some(rate) = self.request_rate {
            cfg.request_rate = Some(rate.0);
        }
        if let Some(rate) = self.auth_failure_rate {
            cfg.auth_failure_rate = rate.0;
        }
        cfg
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigError;
    use crate::config::read::one_table;

    fn read(text: &str) -> Result<HttpConfig, ConfigError> {
        Ok(one_table::<HttpTable>("http", text)?.apply(HttpConfig::default()))
    }

    #[test]
    fn reads_and_validates_the_table() {
        let doc = "[http]\nmax_listen_streams = 8\nmax_listen_streams_per_client = 2\nlisten_idle_timeout_ms = 1500\n\
                   require_task_name = true\nrequest_rate = \"5/s\"\nauth_failure_rate = \"6/min,burst=3\"\n";
        let c = read(doc).expect("valid");
        assert_eq!((c.max_listen_streams, c.max_listen_streams_per_client), (8, 2));
        assert_eq!((c.listen_idle_timeout, c.require_task_name), (Duration::from_millis(1500), true));
        assert_eq!(c.request_rate, crate::quota::RateLimit::per_second(5));
        assert_eq!(c.auth_failure_rate, crate::quota::RateLimit::per_minute(6).map(|r| r.burst(3)));
        let off = read("[http]\nauth_failure_rate = \"off\"\n").expect("valid");
        assert_eq!(off.auth_failure_rate, None);
        let d = read("").expect("absent");
        assert_eq!(d.max_listen_streams, HttpConfig::default().max_listen_streams);
        for (doc, key) in [
            ("[http]\nmax_listen_streams = 0\n", "max_listen_streams"),
            ("[http]\nlisten_idle_timeout_ms = -5\n", "listen_idle_timeout_ms"),
            ("[http]\nrequire_task_name = 1\n", "require_task_name"),
            ("[http]\nbogus = 1\n", "bogus"),
            ("[http]\nrequest_rate = \"fast\"\n", "request_rate"),
            ("[http]\nauth_failure_rate = 3\n", "auth_failure_rate"),
            ("http = 1\n", "http"),
        ] {
            let e = read(doc).expect_err(doc);
            assert_eq!((e.table(), e.key()), ("http", key), "{doc}");
            assert!(e.to_string().contains(&format!("[http] {key}")) || key == "http", "{e}");
        }
    }

    #[test]
    fn an_unknown_key_lists_the_allowed_ones() {
        let e = read("[http]\nmax_streams = 5\n").expect_err("unknown");
        assert_eq!(
            e.to_string(),
            "invalid configuration [http] max_streams: unknown key `max_streams`, expected one of \
             `max_listen_streams`, `max_listen_streams_per_client`, `listen_idle_timeout_ms`, \
             `require_task_name`, `request_rate`, `auth_failure_rate`"
        );
    }
}
