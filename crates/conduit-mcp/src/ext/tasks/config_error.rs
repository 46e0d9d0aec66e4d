//! [`ConfigError`]: an invalid `ext_tasks` setting, said in the terms of the
//! key that holds it.

/// An invalid `ext_tasks` setting. The message names `ext_tasks` and the key;
/// a document that is not TOML at all is reported as such, with its line and
/// column ([`key`](Self::key) is then [`TOML_SYNTAX`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigError {
    key: String,
    reason: String,
}

/// The [`key`](ConfigError::key) of a [`ConfigError`] for a document that is not valid TOML.
pub const TOML_SYNTAX: &str = "toml";

impl ConfigError {
    /// The error of setting `key`.
    pub(crate) fn new(key: &str, reason: impl Into<String>) -> Self {
        Self { key: key.into(), reason: reason.into() }
    }

    /// The offending key (`ext_tasks` itself for the top-level value,
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
        if self.key == TOML_SYNTAX {
            write!(f, "not valid TOML: {}", self.reason)
        } else {
            write!(f, "invalid ext_tasks configuration: {}: {}", self.key, self.reason)
        }
    }
}

impl std::error::Error for ConfigError {}
