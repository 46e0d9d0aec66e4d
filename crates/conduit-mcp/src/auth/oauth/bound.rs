//! DPoP-bound access tokens on the resource server (RFC 9449 §7): a token
//! presented as `Authorization: DPoP` comes with one proof for this request,
//! checked by the [`DpopVerifier`](super::DpopVerifier), and the token's
//! `cnf.jkt` (a JWT's claim, or an introspection answer's) must be the proof
//! key's thumbprint. Only then is the proof's `jti` taken (once per window,
//! in the replay store), so a made-up key with a made-up token makes the store
//! hold nothing. A bound token presented as Bearer is refused, and so is
//! any Bearer token when DPoP is required.
//!
//! A long-lived stream (a `subscriptions/listen` stream, a 2025-11-25 GET
//! stream) opened with a bound token is checked again when the token's answer
//! lapses, with no request and so no proof: the proof of its opening request
//! showed that the client holds the key, and the stream is that request's
//! answer, still on the connection it came on; a proof cannot be asked for
//! without a request to carry it. What can change since is the token (expired,
//! revoked, its binding): the token is checked again as on any request and
//! must still be bound to the key proven at open (`cnf.jkt` of the principal the
//! stream was opened by). Nothing of the opening proof is taken again, so a
//! captured proof gains nothing from it.

use super::OAuth;
use super::dpop::ProofRequest;
use crate::auth::{AuthError, Principal};
use crate::protocol::oauth::dpop::{DPOP_HEADER, INVALID_DPOP_PROOF, SCHEME};
use crate::protocol::oauth::errors::INVALID_TOKEN;
use serde_json::Value;

/// The token of `Authorization: DPoP TOKEN`; `None` for another scheme or none.
pub(super) fn dpop_token(headers: &http::HeaderMap) -> Result<Option<&str>, AuthError> {
    let Some(v) = headers.get(http::header::AUTHORIZATION) else { return Ok(None) };
    let v = v.to_str().map_err(|_| AuthError::Invalid("authorization header is not ASCII".into()))?;
    match v.trim().split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case(SCHEME) && !token.trim().is_empty() => {
            Ok(Some(token.trim()))
        }
        _ => Ok(None),
    }
}

/// The key thumbprint a token is bound to (`cnf.jkt`), if it is bound.
pub(super) fn confirmation(p: &Principal) -> Option<&str> {
    p.claims.get("cnf").and_then(|c| c.get("jkt")).and_then(Value::as_str)
}

impl OAuth {
    /// A refusal with a `DPoP` challenge.
    fn refusal(&self, error: &str, description: impl Into<String>, nonce: Option<String>) -> AuthError {
        let algs = self.shared.dpop.as_ref().map_or_else(String::new, super::DpopVerifier::algs);
        AuthError::Proof { error: error.to_owned(), description: description.into(), nonce, algs }
    }

    /// `principal` of a token presented as Bearer: refused when it is bound, or when DPoP is required.
    pub(super) fn unbound(&self, principal: Principal) -> Result<Principal, AuthError> {
        if confirmation(&principal).is_some() {
            return Err(self.refusal(INVALID_TOKEN, "a DPoP-bound token needs its proof (Authorization: DPoP)", None));
        }
        if self.shared.cfg.require_dpop {
            return Err(self.refusal(INVALID_TOKEN, "this server takes DPoP-bound tokens only", None));
        }
        self.scoped(principal)
    }

    /// The principal of the DPoP-bound `token` of a stream `opened` by a principal bound to
    /// a key proven then: still valid, still bound to that key (see the module docs).
    pub(super) async fn still_bound(&self, token: &str, opened: &Principal) -> Result<Principal, AuthError> {
        let Some(proven) = confirmation(opened) else {
            return Err(self.refusal(INVALID_TOKEN, "the stream was not opened with a DPoP-bound token", None));
        };
        let principal = self.principal_of(token).await?;
        if confirmation(&principal) != Some(proven) {
            return Err(self.refusal(INVALID_TOKEN, "the token is no longer bound to the key proven at open", None));
        }
        self.scoped(principal)
    }

    /// The principal of the DPoP-bound `token`, its proof checked for this `method`.
    pub(super) async fn bound(
        &self,
        method: &http::Method,
        headers: &http::HeaderMap,
        token: &str,
    ) -> Result<Principal, AuthError> {
        let sh = &*self.shared;
        let Some(verifier) = sh.dpop.as_ref() else {
            return Err(AuthError::Invalid("DPoP-bound tokens are not taken here".into()));
        };
        let mut proofs = headers.get_all(DPOP_HEADER).iter();
        let (Some(proof), None) = (proofs.next(), proofs.next()) else {
            return Err(self.refusal(INVALID_DPOP_PROOF, "exactly one DPoP proof header is needed", None));
        };
        let proof = proof.to_str().map_err(|_| self.refusal(INVALID_DPOP_PROOF, "the proof is not ASCII", None))?;
        let req = ProofRequest {
            method: method.as_str(),
            url: &sh.cfg.resource,
            access_token: Some(token),
            now_ms: sh.cfg.clock.now_ms(),
        };
        let checked = verifier.check(proof, &req).map_err(|e| self.refusal(e.error, e.reason, e.nonce))?;
        let principal = self.principal_of(token).await?;
        if confirmation(&principal) != Some(checked.jkt.as_str()) {
            return Err(self.refusal(INVALID_TOKEN, "the token is not bound to the proof's key", None));
        }
        let principal = self.scoped(principal)?;
        match verifier.admit(&checked, req.now_ms).await {
            Ok(Ok(())) => Ok(principal),
            Ok(Err(e)) => Err(self.refusal(e.error, e.reason, e.nonce)),
            Err(e) => Err(AuthError::Unavailable(e.to_string())),
        }
    }
}
