//! Transports: Streamable HTTP (an axum `Router`) and stdio.

pub mod http;
pub mod stdio;
