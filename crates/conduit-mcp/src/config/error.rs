//! [`ConfigError`]: an invalid configuration, said in the terms of the table
//! and the key that hold it.

/// An invalid configuration: a key of a table of the TOML file (or of the
/// builder that sets it), or a file that is not TOML at all.
///
/// The message names the table and the key (`invalid configuration [http]
/// max_listen_streams: must be a positive integer`); a document that does not
/// parse is reported as such, with its line and column
/// ([`key`](Self::key) is then [`TOML_SYNTAX`] and [`table`](Self::table) empty).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigError {
    table: String,
    key: String,
    reason: String,
}

/// The [`key`](ConfigError::key) of a [`ConfigError`] for a document that is not valid TOML.
pub const TOML_SYNTAX: &str = "toml";

impl ConfigError {
    /// The error of `key` in `table` (`key` is the table's own name when the
    /// table itself is at fault).
    pub(crate) fn new(table: &str, key: &str, reason: impl Into<String>) -> Self {
        Self { table: table.into(), key: key.into(), reason: reason.into() }
    }

    /// A document that is not TOML.
    pub(crate) fn syntax(reason: impl Into<String>) -> Self {
        Self { table: String::new(), key: TOML_SYNTAX.into(), reason: reason.into() }
    }

    /// The table at fault (`ext_tasks`, `sessions`, `http`, `oauth`, or the
    /// unknown name given); empty for a syntax error.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The offending key inside it (nested keys joined with `.`, as
    /// `janitor.interval_ms`; the table's own name for the table itself;
    /// [`TOML_SYNTAX`] for a document that does not parse).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// What is wrong with it.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (table, key, reason) = (&self.table, &self.key, &self.reason);
        if table.is_empty() && key == TOML_SYNTAX {
            write!(f, "not valid TOML: {reason}")
        } else if table.is_empty() {
            write!(f, "invalid configuration: {reason}")
        } else if key == table || key.is_empty() {
            write!(f, "invalid configuration [{table}]: {reason}")
        } else {
            write!(f, "invalid configuration [{table}] {key}: {reason}")
        }
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_table_and_the_key() {
        let e = ConfigError::new("http", "max_listen_streams", "must be a positive integer");
        assert_eq!(e.to_string(), "invalid configuration [http] max_listen_streams: must be a positive integer");
        assert_eq!(
            ConfigError::new("oauth", "oauth", "must be a table").to_string(),
            "invalid configuration [oauth]: must be a table"
        );
        assert_eq!(ConfigError::syntax("line 1, column 3: x").to_string(), "not valid TOML: line 1, column 3: x");
    }
}
