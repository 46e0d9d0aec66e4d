//! The public key a DPoP proof names in its header (`jwk`), parsed into ring's
//! verification form with its RFC 7638 thumbprint, and the signature of a
//! proof checked with it. ring's ECDSA P-256 verify is several times faster
//! than the pure-Rust one jsonwebtoken's `rust_crypto` backend uses, and a
//! proof's signature is the one check that cannot be cached (every proof is
//! new). What can be reused is the parse: [`ProofKeys`] remembers the key of a
//! header seen before (keyed by the header's SHA-256), filled only by proofs
//! that were taken (their token valid and bound to that key), so only holders
//! of such tokens can make it hold anything, and bounded in bytes.

use super::token_cache::ByHash;
use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, ThumbprintHash};
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use std::sync::Arc;

/// How long a remembered key is kept (it is re-parsed after that).
const KEEP_MS: u64 = 10 * 60 * 1000;
/// The memory the remembered keys may take.
const BUDGET_BYTES: usize = 1024 * 1024;

/// A proof key, ready to verify signatures of the one algorithm its header named.
#[derive(Debug)]
pub(super) struct ProofKey {
    /// Its RFC 7638 SHA-256 thumbprint (base64url), which a bound token's `cnf.jkt` names.
    pub(super) jkt: String,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// An EC point, uncompressed (`04 || x || y`).
    Ec(&'static signature::EcdsaVerificationAlgorithm, Vec<u8>),
    Rsa(&'static signature::RsaParameters, Vec<u8>, Vec<u8>),
    Ed25519(Vec<u8>),
}

fn b64(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).ok()
}

impl ProofKey {
    /// The key of `jwk` for `alg`; `None` when the key is not of the kind `alg` needs.
    pub(super) fn new(jwk: &Jwk, alg: Algorithm) -> Option<Self> {
        let kind = match (&jwk.algorithm, alg) {
            (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES256 | Algorithm::ES384) => {
                let (verify, len) = match (alg, &ec.curve) {
                    (Algorithm::ES256, EllipticCurve::P256) => (&signature::ECDSA_P256_SHA256_FIXED, 32),
                    (Algorithm::ES384, EllipticCurve::P384) => (&signature::ECDSA_P384_SHA384_FIXED, 48),
                    _ => return None,
                };
                let (x, y) = (b64(&ec.x)?, b64(&ec.y)?);
                if x.len() != len || y.len() != len {
                    return None;
                }
                Kind::Ec(verify, [&[4u8][..], &x, &y].concat())
            }
            (AlgorithmParameters::RSA(rsa), Algorithm::RS256 | Algorithm::PS256) => {
                let params = if alg == Algorithm::RS256 {
                    &signature::RSA_PKCS1_2048_8192_SHA256
                } else {
                    &signature::RSA_PSS_2048_8192_SHA256
                };
                Kind::Rsa(params, b64(&rsa.n)?, b64(&rsa.e)?)
            }
            (AlgorithmParameters::OctetKeyPair(okp), Algorithm::EdDSA) if okp.curve == EllipticCurve::Ed25519 => {
                Kind::Ed25519(b64(&okp.x)?)
            }
            _ => return None,
        };
        let jkt = jwk.thumbprint(ThumbprintHash::SHA256).ok()?;
        Some(Self { jkt, kind })
    }

    /// Whether `sig` (the JWS signature, decoded) signs `input` (`header.payload`) with this key.
    pub(super) fn verifies(&self, input: &[u8], sig: &[u8]) -> bool {
        match &self.kind {
            Kind::Ec(alg, point) => UnparsedPublicKey::new(*alg, point).verify(input, sig).is_ok(),
            Kind::Rsa(params, n, e) => RsaPublicKeyComponents { n, e }.verify(params, input, sig).is_ok(),
            Kind::Ed25519(x) => UnparsedPublicKey::new(&signature::ED25519, x).verify(input, sig).is_ok(),
        }
    }

    /// What remembering it costs, counted against the budget.
    fn bytes(&self) -> usize {
        let key = match &self.kind {
            Kind::Ec(_, p) | Kind::Ed25519(p) => p.len(),
            Kind::Rsa(_, n, e) => n.len() + e.len(),
        };
        160 + self.jkt.len() + key
    }
}

/// The keys of proofs taken lately, by the SHA-256 of their header (see the module docs).
#[derive(Default)]
pub(super) struct ProofKeys(ByHash<Arc<ProofKey>>);

impl std::fmt::Debug for ProofKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProofKeys")
    }
}

impl ProofKeys {
    /// The key of the header hashed `header`, when a proof with it was taken lately.
    pub(super) fn get(&self, header: &[u8; 32], now_ms: u64) -> Option<Arc<ProofKey>> {
        self.0.get(header, now_ms)
    }

    /// Remembers `key` for the header hashed `header` (after its proof was taken).
    pub(super) fn put(&self, header: [u8; 32], key: Arc<ProofKey>, now_ms: u64) {
        let bytes = key.bytes();
        self.0.put(header, key, now_ms.saturating_add(KEEP_MS), bytes, BUDGET_BYTES);
    }
}
