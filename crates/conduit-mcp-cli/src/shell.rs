//! Words of a command line the CLI suggests (`run conduit-mcp login URL
//! --scope …`): quoted for a POSIX shell, so text that came from a server is
//! one argument when the line is pasted, and never runs.

use std::borrow::Cow;

/// `s` as one word for a POSIX shell: as it is when it holds only characters
/// no shell treats specially, otherwise in single quotes (inside which
/// nothing is special; a `'` is written `'\''`).
pub(crate) fn quote(s: &str) -> Cow<'_, str> {
    let plain = !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"@%+=:,./_-".contains(&b));
    if plain { Cow::Borrowed(s) } else { Cow::Owned(format!("'{}'", s.replace('\'', r"'\''"))) }
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quoting_keeps_plain_words_and_disarms_the_rest() {
        assert_eq!(quote("http://127.0.0.1:8080/mcp"), "http://127.0.0.1:8080/mcp");
        assert_eq!(quote("mcp:read offline_access"), "'mcp:read offline_access'");
        assert_eq!(quote("'$(touch x)'"), r"''\''$(touch x)'\'''");
        assert_eq!(quote("a`b`;c|d&e>f<g*h?i~j#k!l{m}n[o]p\\q\"r"), "'a`b`;c|d&e>f<g*h?i~j#k!l{m}n[o]p\\q\"r'");
        assert_eq!(quote(""), "''");
    }
}
