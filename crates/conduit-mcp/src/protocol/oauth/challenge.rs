//! The `WWW-Authenticate: Bearer …` challenge of a 401 or 403 (RFC 6750 §3,
//! RFC 9728 §5.1): the server renders it, the client parses it, both with
//! the same parameters (`resource_metadata`, `scope`, `error`, `error_description`).

use super::errors::INSUFFICIENT_SCOPE;

/// The parameters of a Bearer challenge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Challenge {
    /// Where the protected resource metadata is (RFC 9728).
    pub resource_metadata: Option<String>,
    /// The scopes the server asks for, space-separated in the header.
    pub scopes: Option<Vec<String>>,
    /// `invalid_token`, `insufficient_scope`, ... ([`errors`](super::errors)).
    pub error: Option<String>,
    /// Why, in words (rendered as printable ASCII, at most 200 characters).
    pub error_description: Option<String>,
    /// The proof algorithms a `DPoP` challenge takes, space-separated in the header (RFC 9449 §7.1).
    pub algs: Option<Vec<String>>,
}

/// The most characters of an `error_description` rendered.
const MAX_DESCRIPTION: usize = 200;

impl Challenge {
    /// A 403's call for more scope (RFC 6750 §3.1): `error="insufficient_scope"` and the
    /// scopes the request needs. The server's one way to write it.
    pub fn more_scope(scopes: Vec<String>) -> Challenge {
        Challenge { scopes: Some(scopes), error: Some(INSUFFICIENT_SCOPE.to_owned()), ..Challenge::default() }
    }

    /// Whether this is a 403's call for more scope.
    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some(INSUFFICIENT_SCOPE)
    }

    /// The header value for `scheme` (`Bearer`, or an authenticator's own):
    /// `SCHEME resource_metadata="…", scope="…", error="…", error_description="…"`,
    /// each parameter only when set. Values are quoted strings without `"` or `\`.
    pub fn render(&self, scheme: &str) -> String {
        let mut params = Vec::new();
        let mut param = |name: &str, value: String| params.push(format!("{name}=\"{value}\""));
        if let Some(m) = &self.resource_metadata {
            param("resource_metadata", quotable(m).collect());
        }
        if let Some(s) = &self.scopes {
            param("scope", quotable(&s.join(" ")).collect());
        }
        if let Some(a) = &self.algs {
            param("algs", quotable(&a.join(" ")).collect());
        }
        if let Some(e) = &self.error {
            param("error", quotable(e).collect());
        }
        if let Some(d) = &self.error_description {
            param("error_description", quotable(d).take(MAX_DESCRIPTION).collect());
        }
        if params.is_empty() { scheme.to_owned() } else { format!("{scheme} {}", params.join(", ")) }
    }
}

/// The characters of `s` fit for a quoted header parameter: printable ASCII without quotes or backslashes.
fn quotable(s: &str) -> impl Iterator<Item = char> + '_ {
    s.chars().filter(|c| c.is_ascii_graphic() || *c == ' ').filter(|c| !matches!(c, '"' | '\\'))
}

/// Reads the Bearer challenge out of the `WWW-Authenticate` header values
/// (joined with `, `), else the `DPoP` one (RFC 9449 §7.1: a server that
/// takes only DPoP-bound tokens names its metadata there); other schemes are
/// skipped. `None` without either.
pub fn parse(header: &str) -> Option<Challenge> {
    parse_scheme(header, "Bearer").or_else(|| parse_scheme(header, super::dpop::SCHEME))
}

/// Reads the first challenge of `scheme` (case-insensitive) out of the
/// `WWW-Authenticate` header values; `None` without one.
pub fn parse_scheme(header: &str, scheme: &str) -> Option<Challenge> {
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
                    "error_description" => c.error_description = Some(value),
                    "algs" => c.algs = Some(value.split_whitespace().map(str::to_owned).collect()),
                    _ => {}
                }
            }
        } else {
            // A new challenge: `scheme [params]`.
            in_bearer = token.eq_ignore_ascii_case(scheme) && found.is_none();
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
    fn what_the_server_renders_the_client_reads() {
        let c = Challenge {
            resource_metadata: Some("https://m.example/.well-known/oauth-protected-resource/mcp".into()),
            scopes: Some(vec!["mcp:read".into(), "mcp:deploy".into()]),
            error: Some("invalid_token".into()),
            error_description: Some("expired \"yesterday\"\n".into()),
            ..Challenge::default()
        };
        let header = c.render("Bearer");
        assert_eq!(
            header,
            "Bearer resource_metadata=\"https://m.example/.well-known/oauth-protected-resource/mcp\", \
             scope=\"mcp:read mcp:deploy\", error=\"invalid_token\", error_description=\"expired yesterday\""
        );
        let read = parse(&header).unwrap();
        assert_eq!(read, Challenge { error_description: Some("expired yesterday".into()), ..c });
        assert_eq!(Challenge::default().render("ApiKey"), "ApiKey");
    }

    #[test]
    fn a_call_for_more_scope_is_read_back_as_one() {
        let header = Challenge::more_scope(vec!["mcp:deploy".into()]).render("Bearer");
        assert_eq!(header, "Bearer scope=\"mcp:deploy\", error=\"insufficient_scope\"");
        let read = parse(&header).unwrap();
        assert!(read.insufficient_scope());
        assert_eq!(read.scopes.unwrap(), ["mcp:deploy"]);
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

    #[test]
    fn a_dpop_challenge_when_there_is_no_bearer_one() {
        let nonce =
            r#"DPoP error="use_dpop_nonce", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp""#;
        let c = parse(nonce).unwrap();
        assert_eq!(c.error.as_deref(), Some("use_dpop_nonce"));
        assert_eq!(c.resource_metadata.as_deref(), Some("http://h/.well-known/oauth-protected-resource/mcp"));
        let both = r#"Bearer scope="a", DPoP algs="ES256", error="use_dpop_nonce""#;
        assert_eq!(parse(both).unwrap().scopes.unwrap(), ["a"]);
        let dpop = parse_scheme(both, "dpop").unwrap();
        assert_eq!((dpop.error.as_deref(), dpop.algs.unwrap()), (Some("use_dpop_nonce"), vec!["ES256".to_owned()]));
        assert!(parse_scheme("Bearer", "DPoP").is_none());
    }
}
