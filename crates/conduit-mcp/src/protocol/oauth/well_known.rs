//! The well-known metadata paths, and the order a client tries them in:
//! one rule, served by the resource server and followed by the client.

/// The well-known path prefix of protected resource metadata (RFC 9728 §3).
pub const PROTECTED_RESOURCE: &str = "/.well-known/oauth-protected-resource";
/// The well-known path prefix of authorization server metadata (RFC 8414 §3).
pub const AUTHORIZATION_SERVER: &str = "/.well-known/oauth-authorization-server";
/// The well-known path of OpenID Connect discovery.
pub const OPENID_CONFIGURATION: &str = "/.well-known/openid-configuration";

/// The paths, on the resource's origin, of the protected resource metadata
/// of a resource at `resource_path`: path-inserted first, then the root one
/// (one path for a resource at the root).
pub fn protected_resource_paths(resource_path: &str) -> Vec<String> {
    let path = resource_path.trim_end_matches('/');
    if path.is_empty() {
        return vec![PROTECTED_RESOURCE.to_owned()];
    }
    vec![format!("{PROTECTED_RESOURCE}{path}"), PROTECTED_RESOURCE.to_owned()]
}

/// The paths, on the issuer's origin, of the metadata of an authorization
/// server whose issuer has `issuer_path`, in the order MCP clients try them:
/// RFC 8414 path-inserted, OpenID path-inserted, OpenID appended (one of
/// each of the first two when the issuer has no path).
pub fn authorization_server_paths(issuer_path: &str) -> Vec<String> {
    let path = issuer_path.trim_end_matches('/');
    if path.is_empty() {
        return vec![AUTHORIZATION_SERVER.to_owned(), OPENID_CONFIGURATION.to_owned()];
    }
    vec![
        format!("{AUTHORIZATION_SERVER}{path}"),
        format!("{OPENID_CONFIGURATION}{path}"),
        format!("{path}{OPENID_CONFIGURATION}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_order() {
        assert_eq!(
            authorization_server_paths(""),
            ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]
        );
        assert_eq!(authorization_server_paths("/"), authorization_server_paths(""));
        assert_eq!(
            authorization_server_paths("/tenant1"),
            [
                "/.well-known/oauth-authorization-server/tenant1",
                "/.well-known/openid-configuration/tenant1",
                "/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            protected_resource_paths("/api/mcp/"),
            ["/.well-known/oauth-protected-resource/api/mcp", "/.well-known/oauth-protected-resource"]
        );
        assert_eq!(protected_resource_paths(""), ["/.well-known/oauth-protected-resource"]);
    }
}
