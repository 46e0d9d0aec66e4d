//! Transports: Streamable HTTP (an axum `Router`, feature `http`) and stdio.

#[cfg(feature = "http")]
pub mod http;
pub mod stdio;
