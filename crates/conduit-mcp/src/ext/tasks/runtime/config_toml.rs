//! The `[ext_tasks]` TOML value ([`ConfigFile`](crate::config_file::ConfigFile)
//! reads it) and its validation into a [`TasksConfig`].
//!
//! ```toml
//! ext_tasks = true                 # or false, or the table:
//! [ext_tasks]
//! store = "memory"                 # or "sqlite:PATH", "postgres:URL" (opened by the caller)
//! janitor = { interval_ms = 60000, ttl_ms = 3600000 }   # or true, or false: no sweeping
//! max_rows = 10000                 # or "unlimited"
//! max_rows_per_principal = 2500    # default: a quarter of max_rows
//! max_terminal_bytes_per_principal = 4194304   # or "unlimited"
//! create_rate = "10/s,burst=20"    # tasks one client may create (default: no rate)
//! notifier = "listen"              # or "none"
//! ```

use super::config::{JanitorConfig, NotifierConfig, TasksConfig};
use crate::config::ConfigError;
use crate::config::shape::{Positive, PositiveOrUnlimited, Rate, Shape, Switch, shaped};
use std::time::Duration;

/// The `[ext_tasks]` table as written (`ext_tasks = true | false` is a
/// [`Switch`] around it).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TasksTable {
    store: Option<StoreUrl>,
    janitor: Option<Switch<JanitorTable>>,
    max_rows: Option<PositiveOrUnlimited>,
    max_rows_per_principal: Option<Positive>,
    max_terminal_bytes_per_principal: Option<PositiveOrUnlimited>,
    create_rate: Option<Rate>,
    notifier: Option<NotifierName>,
}

/// `janitor = { interval_ms, ttl_ms }`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JanitorTable {
    interval_ms: Option<Positive>,
    ttl_ms: Option<Positive>,
}

/// `notifier = "listen" | "none"`.
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum NotifierName {
    Listen,
    None,
}

/// `store`: `"memory"` (`None`), or a database URL for the caller to open.
#[derive(Debug, Clone)]
struct StoreUrl(Option<String>);

impl Shape for StoreUrl {
    const EXPECTING: &'static str = "\"memory\", \"sqlite:PATH\" or \"postgres:URL\"";
    fn from_str(s: &str) -> Option<Self> {
        let database = ["sqlite:", "postgres:", "postgresql:"]
            .iter()
            .any(|p| s.strip_prefix(p).is_some_and(|rest| !rest.is_empty()));
        match s {
            "memory" => Some(Self(None)),
            _ if database => Some(Self(Some(s.to_owned()))),
            _ => None,
        }
    }
}

impl<'de> serde::Deserialize<'de> for StoreUrl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d)
    }
}

/// The `ext_tasks` value validated: the configuration, and the store URL
/// when it names a database (`None` for `"memory"` or no `store`).
pub(crate) fn read(value: &Switch<TasksTable>) -> Result<(TasksConfig, Option<String>), ConfigError> {
    match value {
        Switch::On => Ok((TasksConfig::enabled(), None)),
        Switch::Off => Ok((TasksConfig::disabled(), None)),
        Switch::Table(t) => t.config(),
    }
}

impl TasksTable {
    fn config(&self) -> Result<(TasksConfig, Option<String>), ConfigError> {
        let mut cfg = TasksConfig::enabled();
        if let Some(j) = &self.janitor {
            cfg.janitor = match j {
                Switch::On => JanitorConfig::default(),
                Switch::Off => JanitorConfig::Disabled,
                Switch::Table(t) => {
                    let ms = |v: Option<Positive>, default: u64| Duration::from_millis(v.map_or(default, |p| p.0));
                    JanitorConfig::Every { interval: ms(t.interval_ms, 60_000), ttl: ms(t.ttl_ms, 3_600_000) }
                }
            };
        }
        if let Some(n) = self.max_rows {
            cfg.max_rows = n.0;
        }
        if let Some(n) = self.max_rows_per_principal {
            cfg.max_rows_per_principal = Some(n.count());
        }
        if let Some(n) = self.max_terminal_bytes_per_principal {
            cfg.max_terminal_bytes_per_principal = n.0;
        }
        if let Some(rate) = self.create_rate {
            cfg.create_rate = Some(rate.0);
        }
        if let Some(n) = self.notifier {
            cfg.notifier = match n {
                NotifierName::Listen => NotifierConfig::Listen,
                NotifierName::None => NotifierConfig::None,
            };
        }
        cfg.validate()?;
        Ok((cfg, self.store.clone().and_then(|s| s.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::read::one_table;

    fn from_toml(text: &str) -> Result<(TasksConfig, Option<String>), ConfigError> {
        match one_table::<Option<Switch<TasksTable>>>("ext_tasks", text)? {
            Some(v) => read(&v),
            None => Ok((TasksConfig::disabled(), None)),
        }
    }

    #[test]
    fn toml_values() {
        assert!(!from_toml("").unwrap().0.enabled);
        assert!(from_toml("ext_tasks = true").unwrap().0.enabled);
        assert!(!from_toml("ext_tasks = false").unwrap().0.enabled);
        let e = from_toml("[ext_tasks]\nstore = \"sqlite:\"").unwrap_err();
        assert!(e.to_string().contains("store"), "{e}");
        let (c, s) = from_toml(
            "[ext_tasks]\nmax_rows = \"unlimited\"\njanitor = { interval_ms = 30000, ttl_ms = 14400000 }\nnotifier = \"none\"\nstore = \"sqlite:/tmp/t.db\"",
        )
        .unwrap();
        assert_eq!(c.max_rows, None);
        assert_eq!(
            c.janitor,
            JanitorConfig::Every { interval: Duration::from_secs(30), ttl: Duration::from_secs(14400) }
        );
        assert!(matches!(c.notifier, NotifierConfig::None));
        assert_eq!(s.as_deref(), Some("sqlite:/tmp/t.db"));
        assert_eq!(from_toml("[ext_tasks]\nstore = \"memory\"").unwrap().1, None);
        let doc = "[ext_tasks]\nmax_terminal_bytes_per_principal = 65536";
        assert_eq!(from_toml(doc).unwrap().0.max_terminal_bytes_per_principal, Some(65_536));
        let doc = "[ext_tasks]\nmax_terminal_bytes_per_principal = \"unlimited\"";
        assert_eq!(from_toml(doc).unwrap().0.max_terminal_bytes_per_principal, None);
        assert!(matches!(from_toml("[ext_tasks]\njanitor = false").unwrap().0.janitor, JanitorConfig::Disabled));
        assert_eq!(from_toml("[ext_tasks]\njanitor = true").unwrap().0.janitor, JanitorConfig::default());
    }

    #[test]
    fn errors_name_ext_tasks_and_the_key() {
        for (doc, key) in [
            ("ext_tasks = 3", "ext_tasks"),
            ("[ext_tasks]\nmax_rows = 0", "max_rows"),
            ("[ext_tasks]\nmax_rows = \"lots\"", "max_rows"),
            ("[ext_tasks]\nbogus = 1", "bogus"),
            ("[ext_tasks]\nnotifier = \"email\"", "notifier"),
            ("[ext_tasks]\njanitor = { interval_ms = -1 }", "janitor.interval_ms"),
            ("[ext_tasks]\njanitor = 3", "janitor"),
            ("[ext_tasks]\nstore = \"redis:x\"", "store"),
            ("[ext_tasks]\nstore = 3", "store"),
            // Only the documented names: no `interval`/`ttl` without their unit, no `infinity`.
            ("[ext_tasks]\njanitor = { interval = 1000 }", "janitor.interval"),
            ("[ext_tasks]\njanitor = { ttl = 1000 }", "janitor.ttl"),
            ("[ext_tasks]\nmax_rows = \"infinity\"", "max_rows"),
            ("[ext_tasks]\nmax_rows_per_principal = \"unlimited\"", "max_rows_per_principal"),
            ("[ext_tasks]\ncreate_rate = \"10/day\"", "create_rate"),
            ("[ext_tasks]\ncreate_rate = 10", "create_rate"),
            ("[ext_tasks]\nmax_terminal_bytes_per_principal = 0", "max_terminal_bytes_per_principal"),
        ] {
            let e = from_toml(doc).unwrap_err();
            assert_eq!((e.table(), e.key()), ("ext_tasks", key), "{doc}");
            assert!(e.to_string().contains("[ext_tasks]") && e.to_string().contains(key), "{e}");
        }
    }

    #[test]
    fn the_reasons_say_what_a_value_must_be() {
        let reason = |doc: &str| from_toml(doc).unwrap_err().reason().to_owned();
        assert_eq!(
            reason("[ext_tasks]\nstore = \"redis:x\""),
            "must be \"memory\", \"sqlite:PATH\" or \"postgres:URL\""
        );
        assert_eq!(reason("[ext_tasks]\nnotifier = \"email\""), "must be `listen` or `none`");
        assert_eq!(reason("[ext_tasks]\nmax_rows = 0"), "must be a positive integer or \"unlimited\"");
        assert_eq!(reason("ext_tasks = 3"), "must be true, false or a table");
        let unknown = reason("[ext_tasks]\njanitor = { interval = 1000 }");
        assert_eq!(unknown, "unknown key `interval`, expected `interval_ms` or `ttl_ms`");
    }
}
