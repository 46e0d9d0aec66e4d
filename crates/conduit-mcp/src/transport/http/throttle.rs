//! The request rate per client ([`HttpConfig::request_rate`](super::HttpConfig)):
//! every JSON-RPC request POSTed, of either era, counts against its client (the
//! principal, or without authentication the address); one past the rate is
//! answered `-32000` with `data.retryAfterMs`, HTTP 429 with `Retry-After`,
//! before the server sees it.

use super::AppState;
use super::status::error_response;
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::RequestId;
use crate::quota::ClientKey;
use axum::response::Response;

/// Counts one request of this client; the refusal when it is past its rate.
pub(super) fn refusal(st: &AppState, client: &ClientKey, id: Option<RequestId>) -> Option<Response> {
    let wait = st.request_rates.as_ref()?.check(client).err()?;
    crate::metrics::limited("requests");
    let e = RpcError::too_many("Too many requests from this client; try again after data.retryAfterMs", Some(wait));
    Some(error_response(&st.config, id, e))
}
