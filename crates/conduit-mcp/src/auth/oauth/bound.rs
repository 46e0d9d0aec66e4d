//! DPoP-bound access tokens on the resource server (RFC 9449 §7): a token
//! presented as `Authorization: DPoP` comes with one proof for this request,
//! checked by the [`DpopVerifier`](super::DpopVerifier), and the token's
//! `cnf.jkt` (a JWT's claim, or an introspection answer's) must be the proof
//! key's thumbprint. A bound token presented as Bearer is refused, and so is
//! any Bearer token when DPoP is required.

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
        let checked = verifier.verify(proof, &req).map_err(|e| self.refusal(e.error, e.reason, e.nonce))?;
        let principal = self.principal_of(token).await?;
        if confirmation(&principal) != Some(checked.jkt.as_str()) {
            return Err(self.refusal(INVALID_TOKEN, "the token is not bound to the proof's key", None));
        }
        self.scoped(principal)
    }
}
