//! Reading a document: the text parsed once, straight into typed tables; an
//! error carries the path serde was at, turned into its table and key.

use super::ConfigError;
use serde::de::DeserializeOwned;
use serde_path_to_error::{Path, Segment};

/// Parses `text` into `T` (whose fields are the tables). A syntax error names
/// its line and column; any other error its table and key.
pub(crate) fn document<T: DeserializeOwned>(text: &str) -> Result<T, ConfigError> {
    let de = toml::de::Deserializer::parse(text).map_err(|e| syntax(text, &e))?;
    serde_path_to_error::deserialize(de).map_err(|e| at(e.path(), e.inner().message()))
}

/// One table of `text`, as a document holding only it would give it (tests
/// of each table's struct).
#[cfg(test)]
pub(crate) fn one_table<T: DeserializeOwned + Default>(name: &str, text: &str) -> Result<T, ConfigError> {
    let mut tables: std::collections::BTreeMap<String, T> = document(text)?;
    Ok(tables.remove(name).unwrap_or_default())
}

/// A syntax error, at its line and column (1-based).
fn syntax(text: &str, e: &toml::de::Error) -> ConfigError {
    let at = e.span().map_or(0, |s| s.start).min(text.len());
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    ConfigError::syntax(format!("line {line}, column {column}: {}", e.message().trim_end()))
}

/// The error at `path`: its first key is the table, the others (array indexes
/// left out) the key.
fn at(path: &Path, message: &str) -> ConfigError {
    let mut keys = path.iter().filter_map(|s| match s {
        Segment::Map { key } => Some(key.as_str()),
        _ => None,
    });
    let Some(table) = keys.next() else { return ConfigError::new("", "", message.trim_end()) };
    let rest: Vec<&str> = keys.collect();
    let key = if rest.is_empty() { table.to_owned() } else { rest.join(".") };
    ConfigError::new(table, &key, reason(message.trim_end(), rest.is_empty()))
}

/// serde's words in the configuration's: "unknown key", "must be …".
fn reason(message: &str, top_level: bool) -> String {
    if let Some(rest) = message.strip_prefix("unknown field ") {
        return format!("unknown {} {rest}", if top_level { "table" } else { "key" });
    }
    for prefix in ["invalid type: ", "invalid value: ", "unknown variant "] {
        if let Some((_, expected)) = message.strip_prefix(prefix).and_then(|rest| rest.rsplit_once(", expected ")) {
            let expected = if expected.starts_with("struct ") || expected == "a map" { "a table" } else { expected };
            return format!("must be {expected}");
        }
    }
    message.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        t: Option<Table>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Table {
        n: Option<crate::config::shape::Positive>,
        list: Option<Vec<Inner>>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        a: Option<bool>,
    }

    fn err(text: &str) -> ConfigError {
        document::<Doc>(text).expect_err(text)
    }

    #[test]
    fn an_error_names_its_table_and_key() {
        let e = err("[t]\nn = 0\n");
        assert_eq!((e.table(), e.key(), e.reason()), ("t", "n", "must be a positive integer"));
        let e = err("[t]\nbogus = 1\n");
        assert_eq!((e.table(), e.key()), ("t", "bogus"));
        assert_eq!(e.reason(), "unknown key `bogus`, expected `n` or `list`", "the allowed keys come from the struct");
        let e = err("[[t.list]]\nb = 1\n");
        assert_eq!((e.table(), e.key()), ("t", "list.b"), "array indexes are left out");
        let e = err("[[t.list]]\na = 1\n");
        assert_eq!((e.key(), e.reason()), ("list.a", "must be a boolean"));
        let e = err("t = 1\n");
        assert_eq!((e.table(), e.key(), e.reason()), ("t", "t", "must be a table"));
        let e = err("[u]\n");
        assert_eq!((e.table(), e.reason()), ("u", "unknown table `u`, expected `t`"));
    }

    #[test]
    fn a_syntax_error_names_its_line_and_column() {
        for text in ["[t]\nn = = 3\n", "[t]\nn = = 3"] {
            let e = err(text);
            assert_eq!((e.table(), e.key()), ("", crate::config::TOML_SYNTAX));
            assert!(e.to_string().starts_with("not valid TOML: line 2, column 5: "), "{e}");
        }
    }
}
