//! The `WWW-Authenticate: Bearer …` challenge of a 401 or 403 (RFC 6750 §3,
//! RFC 9728 §5.1): `resource_metadata`, `scope`, `error`.

/// The parameters of a Bearer challenge that the client acts on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// Where the protected resource metadata is (RFC 9728).
    pub(crate) resource_metadata: Option<String>,
    /// The scopes the server asks for, space-separated in the header.
    pub(crate) scopes: Option<Vec<String>>,
    /// `invalid_token`, `insufficient_scope`, ...
    pub(crate) error: Option<String>,
}

impl Challenge {
    /// Whether this is a 403's call for more scope.
    pub(crate) fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Reads the Bearer challenge out of the `WWW-Authenticate` header values
/// (joined with `, `); other schemes are skipped. `None` without a Bearer one.
pub(crate) fn parse(header: &str) -> Option<Challenge> {
    let mut p = Parser { s: header.as_bytes(), i: 0 };
    let mut in_bearer = false;
    let mut found = None::<Challenge>;
    loop {
        p.skip(|b| b == b' ' || b == b'\t' || b == b',');
        if p.done() {
            break;
        }
        let token = p.token();
        if token.is_empty() {
            p.i += 1; // not a token: skip the byte
            continue;
        }
        p.skip(|b| b == b' ' || b == b'\t');
        if p.peek() == Some(b'=') && !p.token68_follows() {
            p.i += 1;
            p.skip(|b| b == b' ' || b == b'\t');
            let value = p.value();
            if in_bearer && let Some(c) = found.as_mut() {
                match token.to_ascii_lowercase().as_str() {
                    "resource_metadata" => c.resource_metadata = Some(value),
                    "scope" => c.scopes = Some(value.split_whitespace().map(str::to_owned).collect()),
                    "error" => c.error = Some(value),
                    _ => {}
                }
            }
        } else {
            // A new challenge: `scheme [params]`.
            in_bearer = token.eq_ignore_ascii_case("bearer") && found.is_none();
            if in_bearer {
                found = Some(Challenge::default());
            }
        }
    }
    found
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn done(&self) -> bool {
        self.i >= self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip(&mut self, f: impl Fn(u8) -> bool) {
        while self.peek().is_some_and(&f) {
            self.i += 1;
        }
    }

    fn token(&mut self) -> String {
        let start = self.i;
        self.skip(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    /// `=` directly followed by `=`, `,` or the end: token68 padding, not a parameter.
    fn token68_follows(&self) -> bool {
        matches!(self.s.get(self.i + 1), None | Some(b'=' | b','))
    }

    fn value(&mut self) -> String {
        if self.peek() != Some(b'"') {
            return self.token();
        }
        self.i += 1;
        let mut out = Vec::new();
        while let Some(b) = self.peek() {
            self.i += 1;
            match b {
                b'\\' => {
                    if let Some(n) = self.peek() {
                        out.push(n);
                        self.i += 1;
                    }
                }
                b'"' => break,
                _ => out.push(b),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_parameters() {
        let c = parse(r#"Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp""#).unwrap();
        assert!(c.insufficient_scope());
        assert_eq!(c.scopes.unwrap(), ["mcp:read", "mcp:write"]);
        assert_eq!(c.resource_metadata.unwrap(), "http://h/.well-known/oauth-protected-resource/mcp");
    }

    #[test]
    fn other_schemes_and_odd_spacing() {
        let c = parse(r#"Basic realm="x", Bearer realm = "a \"b\"",scope=read , DPoP algs="ES256""#).unwrap();
        assert_eq!(c.scopes.unwrap(), ["read"]);
        assert!(c.error.is_none());
        assert!(parse("Basic realm=\"x\"").is_none());
        assert_eq!(parse("bearer"), Some(Challenge::default()));
        assert!(parse("Negotiate abc==, Bearer").is_some());
    }
}
