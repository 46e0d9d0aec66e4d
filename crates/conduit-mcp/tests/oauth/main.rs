//! Authentication on the resource server: JWT validation (feature jwt) and OAuth 2.1 against
//! a real authorization server (feature oauth): login, tokens, introspection.

#[path = "../support/common/mod.rs"]
pub mod common;
#[path = "../support/legacy_common/mod.rs"]
pub mod legacy_common;
#[cfg(feature = "oauth")]
#[path = "../support/oauth_support/mod.rs"]
pub mod oauth_support;

#[cfg(feature = "oauth")]
mod audience;
#[cfg(all(feature = "oauth", feature = "client"))]
mod dpop;
#[cfg(all(feature = "oauth", feature = "client"))]
mod dpop_streams;
#[cfg(all(feature = "oauth", feature = "client"))]
mod enterprise;
#[cfg(feature = "jwt")]
mod jwt;
#[cfg(feature = "oauth")]
mod login;
#[cfg(feature = "oauth")]
mod tokens;
