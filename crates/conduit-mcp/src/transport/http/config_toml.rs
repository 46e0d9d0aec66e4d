//! The `[http]` TOML table: the endpoint's per-client limits, validated like
//! `[sessions]`: an error names the table and the key.
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
use std::time::Duration;

/// Why an `[http]` table was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid configuration [http] {key}: {message}")]
#[non_exhaustive]
pub struct HttpConfigError {
    /// The key at fault (`http` for the table itself).
    pub key: String,
    /// What is wrong.
    pub message: String,
}

fn err(key: &str, message: &str) -> HttpConfigError {
    HttpConfigError { key: key.to_owned(), message: message.to_owned() }
}

const KEYS: &str = "expected max_listen_streams, max_listen_streams_per_client, listen_idle_timeout_ms, \
                    require_task_name, request_rate, auth_failure_rate";

impl HttpConfig {
    /// Applies the `[http]` table of a TOML document to this configuration
    /// (unchanged when the table is absent).
    pub fn apply_toml(mut self, doc: &str) -> Result<Self, HttpConfigError> {
        let root: toml::Table = doc.parse().map_err(|e: toml::de::Error| err("http", e.message()))?;
        let Some(v) = root.get("http") else { return Ok(self) };
        let toml::Value::Table(t) = v else { return Err(err("http", "must be a table")) };
        for (k, v) in t {
            let positive = || v.as_integer().filter(|n| *n > 0).ok_or_else(|| err(k, "must be a positive integer"));
            match k.as_str() {
                "max_listen_streams" => self.max_listen_streams = positive()? as usize,
                "max_listen_streams_per_client" => self.max_listen_streams_per_client = positive()? as usize,
                "listen_idle_timeout_ms" => self.listen_idle_timeout = Duration::from_millis(positive()? as u64),
                "require_task_name" => {
                    self.require_task_name = v.as_bool().ok_or_else(|| err(k, "must be true or false"))?;
                }
                "request_rate" => {
                    let rate = v.as_str().and_then(|s| s.parse().ok());
                    let why = "must be a rate such as \"50/s\", \"600/min\" or \"50/s,burst=100\"";
                    self.request_rate = Some(rate.ok_or_else(|| err(k, why))?);
                }
                "auth_failure_rate" => {
                    let why = "must be a rate such as \"30/min,burst=20\", or \"off\"";
                    self.auth_failure_rate = match v.as_str() {
                        Some("off") => None,
                        s => Some(s.and_then(|s| s.parse().ok()).ok_or_else(|| err(k, why))?),
                    };
                }
                _ => return Err(err(k, &format!("unknown key ({KEYS})"))),
            }
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_validates_the_table() {
        let doc = "[http]\nmax_listen_streams = 8\nmax_listen_streams_per_client = 2\nlisten_idle_timeout_ms = 1500\n\
                   require_task_name = true\nrequest_rate = \"5/s\"\nauth_failure_rate = \"6/min,burst=3\"\n";
        let c = HttpConfig::default().apply_toml(doc).expect("valid");
        assert_eq!((c.max_listen_streams, c.max_listen_streams_per_client), (8, 2));
        assert_eq!((c.listen_idle_timeout, c.require_task_name), (Duration::from_millis(1500), true));
        assert_eq!(c.request_rate, crate::quota::RateLimit::per_second(5));
        assert_eq!(c.auth_failure_rate, crate::quota::RateLimit::per_minute(6).map(|r| r.burst(3)));
        let off = HttpConfig::default().apply_toml("[http]\nauth_failure_rate = \"off\"\n").expect("valid");
        assert_eq!(off.auth_failure_rate, None);
        let d = HttpConfig::default().apply_toml("[ext_tasks]\nmax_rows = 3\n").expect("absent");
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
            let e = HttpConfig::default().apply_toml(doc).expect_err(doc);
            assert_eq!(e.key, key, "{doc}");
            assert!(e.to_string().contains(&format!("[http] {key}")), "{e}");
        }
    }
}
