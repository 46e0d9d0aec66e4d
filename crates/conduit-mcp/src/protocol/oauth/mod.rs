//! The OAuth 2.1 wire of MCP, for both sides: what the resource server
//! serves and challenges with, and what the client looks for and reads back.
//! No I/O: URLs are built and judged as strings.
//!
//! - [`well_known`]: the metadata paths and the order they are tried in
//!   (RFC 9728 protected resource metadata, RFC 8414 and OpenID discovery);
//! - [`challenge`]: the `WWW-Authenticate: Bearer …` challenge of a 401 or
//!   403 (RFC 6750 §3, RFC 9728 §5.1), rendered by the server and parsed by
//!   the client;
//! - [`errors`]: the OAuth error codes a challenge names;
//! - [`endpoint`]: where a credential may go (`https`, or `http` to this machine);
//! - [`dpop`]: DPoP (RFC 9449) headers, scheme and errors;
//! - [`grants`]: the names of the JWT bearer grant, token exchange and client assertions.

pub mod challenge;
pub mod dpop;
pub mod endpoint;
pub mod errors;
pub mod grants;
pub mod well_known;
