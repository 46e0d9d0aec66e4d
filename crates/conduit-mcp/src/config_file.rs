//! [`ConfigFile`]: a server's TOML configuration file, parsed once into one
//! optional table per part and each table validated into that part's
//! configuration. Every error is one [`ConfigError`] naming the table and the
//! key; an unknown table or key is refused (a misspelt `[ext_task]` must not
//! silently turn tasks off), and the message lists the allowed names.
//!
//! | Table | Validated into | Its keys (one struct each) |
//! |---|---|---|
//! | `ext_tasks` (`true`, `false` or a table) | [`TasksConfig`] and the store URL | `ext/tasks/runtime/config_toml.rs` |
//! | `sessions` | [`SessionConfig`] | `session/config_toml.rs` |
//! | `http` (feature `http`) | over your [`HttpConfig`]: [`ConfigFile::http`] | `transport/http/config_toml.rs` |
//! | `oauth` (feature `oauth`) | `OAuthConfig` | `auth/oauth/config_toml.rs` |
//! | `events` (`[events.webhooks]`) | [`WebhookRules`] | `ext/events/config_toml.rs` |
//!
//! A table whose feature this build lacks is refused as such.
//!
//! ```
//! use conduit_mcp::config_file::ConfigFile;
//!
//! let file = ConfigFile::parse("[ext_tasks]\nmax_rows = 500\n[sessions]\nmax_sessions = 100\n").unwrap();
//! assert_eq!(file.tasks.as_ref().and_then(|t| t.max_rows), Some(500));
//! assert_eq!(file.sessions.limits.max_sessions, 100);
//! let e = ConfigFile::parse("[sessions]\nmax_sessions = 0\n").unwrap_err();
//! assert_eq!(e.to_string(), "invalid configuration [sessions] max_sessions: must be a positive integer");
//! ```

#[cfg(feature = "oauth")]
use crate::auth::oauth::{OAuthConfig, config_toml::OAuthTable};
use crate::config::shape::Switch;
use crate::config::{ConfigError, read};
use crate::ext::events::config_toml::EventsTable;
use crate::ext::events::webhook::WebhookRules;
use crate::ext::tasks::runtime::TasksConfig;
use crate::ext::tasks::runtime::config_toml::{self as tasks_toml, TasksTable};
use crate::session::SessionConfig;
use crate::session::config_toml::SessionsTable;
#[cfg(feature = "http")]
use crate::transport::http::{HttpConfig, config_toml::HttpTable};

/// The document as written: one optional table per part.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Tables {
    ext_tasks: Option<Switch<TasksTable>>,
    sessions: Option<SessionsTable>,
    events: Option<EventsTable>,
    #[cfg(feature = "http")]
    http: Option<HttpTable>,
    #[cfg(not(feature = "http"))]
    #[allow(dead_code)] // there only to be refused
    #[serde(default, deserialize_with = "without_http")]
    http: Option<std::convert::Infallible>,
    #[cfg(feature = "oauth")]
    oauth: Option<OAuthTable>,
    #[cfg(not(feature = "oauth"))]
    #[allow(dead_code)] // there only to be refused
    #[serde(default, deserialize_with = "without_oauth")]
    oauth: Option<std::convert::Infallible>,
}

/// A table this build cannot use: its feature is off.
#[cfg(any(not(feature = "http"), not(feature = "oauth")))]
fn feature_off<E: serde::de::Error>(feature: &str) -> E {
    E::custom(format!("needs the `{feature}` feature of conduit-mcp, which this build does not have"))
}

#[cfg(not(feature = "http"))]
fn without_http<'de, D: serde::Deserializer<'de>>(_: D) -> Result<Option<std::convert::Infallible>, D::Error> {
    Err(feature_off("http"))
}

#[cfg(not(feature = "oauth"))]
fn without_oauth<'de, D: serde::Deserializer<'de>>(_: D) -> Result<Option<std::convert::Infallible>, D::Error> {
    Err(feature_off("oauth"))
}

/// A server's configuration file, every table read and validated.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct ConfigFile {
    /// The `ext_tasks` value (`None` when the file has none: the caller
    /// decides the default; the reference server enables tasks).
    pub tasks: Option<TasksConfig>,
    /// `ext_tasks.store` when it names a database (`sqlite:PATH`,
    /// `postgres:URL`), for the caller to open; `None` for `"memory"` or none.
    pub store: Option<String>,
    /// The `[sessions]` table over the defaults.
    pub sessions: SessionConfig,
    /// The `[events.webhooks]` table: webhook delivery's rules (`None`:
    /// the file turns webhooks on nowhere).
    pub events_webhooks: Option<WebhookRules>,
    /// The `[oauth]` table (`None` when the file has none).
    #[cfg(feature = "oauth")]
    pub oauth: Option<OAuthConfig>,
    #[cfg(feature = "http")]
    http: HttpTable,
}

impl ConfigFile {
    /// Parses `text` once and validates every table it has.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let tables: Tables = read::document(text)?;
        let (tasks, store) = match &tables.ext_tasks {
            Some(v) => tasks_toml::read(v).map(|(c, s)| (Some(c), s))?,
            None => (None, None),
        };
        let sessions = tables.sessions.as_ref().map_or_else(|| Ok(SessionConfig::default()), SessionsTable::config)?;
        let events_webhooks = tables.events.as_ref().map(EventsTable::webhooks).transpose()?.flatten();
        Ok(Self {
            tasks,
            store,
            sessions,
            events_webhooks,
            #[cfg(feature = "oauth")]
            oauth: tables.oauth.as_ref().map(OAuthTable::config).transpose()?,
            #[cfg(feature = "http")]
            http: tables.http.unwrap_or_default(),
        })
    }

    /// `cfg` with the `[http]` table's values set (the rest of `cfg` kept;
    /// unchanged when the file has no `[http]`).
    #[cfg(feature = "http")]
    pub fn http(&self, cfg: HttpConfig) -> HttpConfig {
        self.http.apply(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_table_lists_the_tables() {
        let e = ConfigFile::parse("[ext_task]\nmax_rows = 5\n").unwrap_err();
        assert_eq!((e.table(), e.key()), ("ext_task", "ext_task"));
        assert_eq!(
            e.to_string(),
            "invalid configuration [ext_task]: unknown table `ext_task`, expected one of `ext_tasks`, `sessions`, `events`, `http`, `oauth`"
        );
    }

    #[test]
    fn absent_tables_are_defaults() {
        let file = ConfigFile::parse("").unwrap();
        assert!(file.tasks.is_none() && file.store.is_none());
        assert_eq!(file.sessions.limits.max_sessions, SessionConfig::default().limits.max_sessions);
        assert!(!ConfigFile::parse("ext_tasks = false").unwrap().tasks.unwrap().enabled);
    }

    #[test]
    fn a_file_bad_in_two_tables_is_refused_once() {
        // The file is parsed once, its tables in the order of their names: one error, the first.
        let e = ConfigFile::parse("[sessions]\nbogus = 1\n[ext_tasks]\nmax_rows = 0\n").unwrap_err();
        assert_eq!((e.table(), e.key()), ("ext_tasks", "max_rows"));
        let e = ConfigFile::parse(
            "[sessions]\nreplay_bytes = 2048\nmax_retained_bytes = 1024\n[ext_tasks]\nmax_rows = 5\nstore = \"sqlite:/x\"\n",
        );
        assert_eq!(e.unwrap_err().key(), "max_retained_bytes");
    }

    #[test]
    fn a_syntax_error_is_reported_as_one() {
        let e = ConfigFile::parse("[ext_tasks]\nmax_rows = = 3\n").unwrap_err();
        assert_eq!(e.key(), crate::config::TOML_SYNTAX);
        assert!(e.to_string().starts_with("not valid TOML: line 2, column 12: "), "{e}");
    }

    #[cfg(feature = "http")]
    #[test]
    fn the_http_table_applies_over_the_callers_config() {
        let file = ConfigFile::parse("[http]\nmax_listen_streams = 8\n").unwrap();
        let cfg = file.http(HttpConfig::default().max_connections(100));
        assert_eq!(cfg.max_listen_streams, 8);
        let plain = ConfigFile::parse("").unwrap().http(HttpConfig::default());
        assert_eq!(plain.max_listen_streams, HttpConfig::default().max_listen_streams);
    }

    #[cfg(feature = "oauth")]
    #[test]
    fn the_oauth_table_is_validated_with_the_rest() {
        let file =
            ConfigFile::parse("[oauth]\nissuer = \"https://as.example\"\nresource = \"https://r.example/mcp\"\n");
        assert_eq!(file.unwrap().oauth.expect("present").resource, "https://r.example/mcp");
        let e = ConfigFile::parse("[oauth]\nissuer = \"https://as.example\"\n").unwrap_err();
        assert_eq!((e.table(), e.key()), ("oauth", "resource"));
    }

    #[cfg(not(feature = "oauth"))]
    #[test]
    fn a_table_whose_feature_is_off_says_so() {
        let e = ConfigFile::parse("[oauth]\nissuer = \"https://as.example\"\n").unwrap_err();
        assert_eq!((e.table(), e.key()), ("oauth", "oauth"));
        assert!(e.reason().contains("`oauth` feature"), "{e}");
    }
}
