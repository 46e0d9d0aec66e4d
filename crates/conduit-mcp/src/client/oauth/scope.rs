//! Scopes as RFC 6749 §3.3 defines them: `scope-token`s of printable ASCII
//! other than space, `"` and `\` (`%x21 / %x23-5B / %x5D-7E`). A scope from
//! a server's challenge, its metadata or an authorization server's answer
//! goes into an authorization URL, a token request, the credential store
//! and the login command the CLI suggests: one outside that is refused.

use crate::client::error::ClientError;
use crate::client::sanitize::quoted;

/// Whether `s` is one RFC 6749 `scope-token`.
pub fn is_scope_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

/// Refuses `scopes` (named by `from`) unless each is a `scope-token`.
pub(crate) fn check(from: &str, scopes: &[String]) -> Result<(), ClientError> {
    match scopes.iter().find(|s| !is_scope_token(s)) {
        None => Ok(()),
        Some(bad) => Err(ClientError::OAuth(format!(
            "{from} names the scope {}, which is not a valid scope (RFC 6749 §3.3: printable ASCII \
             other than space, '\"' and '\\'): refused",
            quoted(bad)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_tokens_are_rfc_6749_characters() {
        for ok in ["mcp:read", "offline_access", "'$(touch", "a!#[]^~", "https://x.example/scope"] {
            assert!(is_scope_token(ok), "{ok}");
        }
        for bad in ["", "two words", "say\"hi", "back\\slash", "caf\u{e9}", "bell\x07", "tab\t"] {
            assert!(!is_scope_token(bad), "{bad:?}");
        }
        let e = check("the server", &["ok".into(), "x\"y".into()]).unwrap_err().to_string();
        assert!(e.contains(r#"the scope "x"y", which is not a valid scope"#), "{e}");
    }
}
