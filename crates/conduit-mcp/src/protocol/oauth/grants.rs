//! The names the enterprise grants put on the wire: RFC 7523 (a JWT as an
//! authorization grant and as client authentication), RFC 8693 (token
//! exchange) and the Identity Assertion JWT Authorization Grant (ID-JAG) of
//! enterprise-managed authorization.

/// `grant_type` of the JWT bearer grant (RFC 7523 §2.1): a JWT as the grant.
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// `grant_type` of a token exchange (RFC 8693 §2.1).
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2, `private_key_jwt`).
pub const JWT_CLIENT_ASSERTION: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The token endpoint authentication method of a client that signs a JWT with its own key.
pub const PRIVATE_KEY_JWT: &str = "private_key_jwt";

/// The token type of an OpenID Connect ID token (RFC 8693 §3).
pub const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";

/// The token type of an Identity Assertion JWT Authorization Grant.
pub const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";
