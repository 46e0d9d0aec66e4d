//! How many times one request has renewed its credential: each kind of
//! renewal is bounded per request (the bounds are the session's).

/// The renewals one request has made so far (each kind is bounded).
#[derive(Debug, Default)]
pub(crate) struct Retry {
    /// 401s answered by renewing the token.
    pub(crate) unauthorized: u32,
    /// 403 `insufficient_scope` answered by authorizing for more scope.
    pub(crate) step_ups: u32,
    /// 401 `use_dpop_nonce` answered by a proof with the server's new nonce.
    pub(crate) nonces: u32,
}
