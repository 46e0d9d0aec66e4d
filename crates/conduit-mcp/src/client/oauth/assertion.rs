//! JWTs this client signs with its own key: the `private_key_jwt` client
//! assertion (RFC 7523 §2.2, §3), ES256, ES384 or RS256, the key from a PEM
//! file (PKCS#8 `PRIVATE KEY`, or `RSA PRIVATE KEY`).

use crate::client::error::ClientError;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rand::RngCore;
use serde_json::json;
use std::fmt;
use std::path::Path;

/// How long a client assertion is good for: long enough for clock skew, short enough not to matter if seen.
const ASSERTION_LIFETIME_S: i64 = 120;

/// The largest key file read.
const MAX_KEY_FILE: u64 = 64 * 1024;

/// A private key this client proves itself with at the token endpoint
/// (`private_key_jwt`): its public half is registered at the authorization
/// server. The key never leaves the process and is never printed.
#[derive(Clone)]
pub struct ClientAssertionKey {
    key: EncodingKey,
    alg: Algorithm,
    /// The file it was read from, kept with the client's registration so a later run can read it again.
    path: Option<std::path::PathBuf>,
}

impl fmt::Debug for ClientAssertionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientAssertionKey").field("alg", &self.alg).finish_non_exhaustive()
    }
}

impl ClientAssertionKey {
    /// The key in `pem`: an EC key on P-256 (ES256) or P-384 (ES384), or an RSA key (RS256).
    pub fn from_pem(pem: &[u8]) -> Result<Self, ClientError> {
        if let Ok(key) = EncodingKey::from_ec_pem(pem) {
            let jwk = Jwk::from_encoding_key(&key, Algorithm::ES256)
                .map_err(|e| ClientError::OAuth(format!("the EC private key cannot be read: {e}")))?;
            let alg = match &jwk.algorithm {
                AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => Algorithm::ES256,
                AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P384 => Algorithm::ES384,
                _ => return Err(ClientError::OAuth("the EC private key is on neither P-256 nor P-384".into())),
            };
            return Ok(Self { key, alg, path: None });
        }
        match EncodingKey::from_rsa_pem(pem) {
            Ok(key) => Ok(Self { key, alg: Algorithm::RS256, path: None }),
            Err(_) => Err(ClientError::OAuth(
                "the client assertion key is no PEM private key this client can use \
                 (PKCS#8 EC P-256/P-384, or RSA)"
                    .into(),
            )),
        }
    }

    /// The key in the PEM file at `path`.
    pub fn from_pem_file(path: impl AsRef<Path>) -> Result<Self, ClientError> {
        let path = path.as_ref();
        let pem = read_small(path, MAX_KEY_FILE)?;
        Ok(Self { path: Some(path.to_owned()), ..Self::from_pem(&pem)? })
    }

    /// The file the key was read from ([`from_pem_file`](Self::from_pem_file)).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The JWS algorithm it signs with (`ES256`, `ES384` or `RS256`).
    pub fn algorithm(&self) -> &'static str {
        match self.alg {
            Algorithm::ES384 => "ES384",
            Algorithm::RS256 => "RS256",
            _ => "ES256",
        }
    }

    /// A client assertion for `client_id` to the authorization server
    /// `audience` (its issuer): `iss` = `sub` = the client, a fresh `jti`,
    /// valid for two minutes from `now_s`.
    pub(crate) fn client_assertion(&self, client_id: &str, audience: &str, now_s: i64) -> Result<String, ClientError> {
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now_s,
            "exp": now_s + ASSERTION_LIFETIME_S,
            "jti": random_id(),
        });
        let mut header = Header::new(self.alg);
        header.typ = Some("JWT".into());
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| ClientError::OAuth(format!("signing the client assertion failed: {e}")))
    }
}

/// 128 random bits, base64url: a `jti`.
pub(crate) fn random_id() -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A file of at most `max` bytes (a key or a token), read whole.
pub(crate) fn read_small(path: &Path, max: u64) -> Result<Vec<u8>, ClientError> {
    let what = || format!("{}", crate::client::sanitize::shown(&path.display().to_string()));
    let meta = std::fs::metadata(path).map_err(|e| ClientError::OAuth(format!("{}: {e}", what())))?;
    if meta.len() > max {
        return Err(ClientError::OAuth(format!("{}: larger than {max} bytes", what())));
    }
    std::fs::read(path).map_err(|e| ClientError::OAuth(format!("{}: {e}", what())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation};

    // A throwaway P-256 key (PKCS#8), used only by these tests.
    const EC_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgbzoIA9CBcUtTgjgR
i8anZZjW9T9R8FLs71Sfr5a0QAOhRANCAAQJGIWuoVcmz2gDjjrpDImcaChaCMdd
vNLZ7H/CKkbHU2uhoappXqDXgnBTbT2lTtxrNGOgaARrozyUW9VN0HHd
-----END PRIVATE KEY-----
";

    // A throwaway RSA key (PKCS#8), used only by these tests.
    const RSA_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDQptztxdAdbOBG
DuLOQi+5xDkv0GYhuXn8fA878rqzpk5b8PrVk7qubw+6XuI60Kut5xEg06SyPeNl
FXTxDf622GZoIbNuFAFH/kRogENELnZAG7fedN/OmfFAetrqjN0HgWmQ4x3D/ECE
Q/3TZVQIgPIhDe7ThkzewDNQGy5qB8zI4JS1DNLaoi7+/kJZcoTPWkOiI/CAvF3S
4AXs/Bciab7JLIs7jAoj2Y8vivTFtI4a3DCUFJWNsIzRZ/O1gNym5OucjWgtX5XW
ufl4TaorUOJQfxKfWxk3VlPy5KXKQaZf7hY7sIN4NDTLJybkx4zGYU0IzmzefgRS
T822SX6JAgMBAAECggEADebYOHViENvUs4ZBYUmyoVdsEf36GAwiDwr6/t0EyHxv
oxuSstE1cnLO4vV4cD+/+IW5M+01/3Q1JuJ/mKH8kxUm+ZApQs/NaA0OZMIK+Ut5
MHtITGeQE9VY6BlnZZI+FcZvEKq5LHotmEJpcoDBURG6UC5795bunzbCFHfDJ2g/
1OwLIM+M+5c/pNzIXwphGjgsy6JWDYGqW7fW9WDodpI1LIwwwV+n8Qv406zP78++
zwkrM3sXrUYKMGmYFYz5NmSCjoHzzAgdo0IZJ0Q4Nr5m2uogxGdQbrvSGRqtQ0Ot
GiNI3x0m0CD8S78B22yhbvVTvjcSUX+ILIjUM68z6QKBgQDrDPqAqA5UetBA0Knj
/Af4Z1YA7sPQskejcw6MvkN0QJ9q2FzDCF+a0InwhTbrnrtg6mFWeo1upOToiXQi
DfSSu4dXQ6oHGpVPGs8kw1xC6wMDvol1Jfl41dDOtoMTLbNt1ZDuKwQWH4fUNoP5
JXZd8v2Uu/IsOjwAAWYE51ei/QKBgQDjP45AFs3JJXEuG8ctoDzW4zyhdH0xX/VW
PoF+gT+Mi75S9VV+w6r+oVIl8PeSkciCEQb1newovBQqv2QIlKMUZlM8DVhiGa8f
G9k34mMkptaOJJ5sopAZU/4v6CzJKySUqAHQL/rJulwXIp376tlp8nJ7gBU8tZ7f
suj6pD1dfQKBgCpK24fqtSleL7p50RfEcWqwrTjdvT3/1gQC38tTMK/qMMT4yTgO
eaVRgIBWd9tNZEm74me9BVWzNbzhfpPiDu+X7nI1KpK8pcDmAf+LZz5jKtexoOoD
OzASyM9o54y73F0W4Ez6UHHqmnYEmRprMzEUV6w7ZQewMruNhN29AnfBAoGBAIMD
6WdZvlrxk0caDMNpVqotaI9NMcB9qlyGvPHKYnENQDVj7F6hQLx9FXd6bcG6+vbC
ClkhKz5w8M+UeH/Z8guY0vQUXZhxZl1xGNL3WmGPLrPUuOG494siubG1Ed0JWpW6
JxF4GAalwuIzuxG6XI6QkSBSv+u4alheNaQLfLWhAoGBAISpYvJcpGYVGmbwHUm6
FfAXAYvMGp0jpt7B/LfPsrKmXOwXPhlH2XvKWQ79mhavHcbZQ87SLtg+vxI2bSUl
UFK/c8Tjpb3/CcXqB8LKNVYy4NVOqGaAUoBi81E/dzOyTOKcjbh68xBEsnmhNzHT
6UuAkcU+ZvygGTtkD5nNIzxP
-----END PRIVATE KEY-----
";

    #[test]
    fn an_rsa_key_signs_rs256() {
        let key = ClientAssertionKey::from_pem(RSA_PEM.as_bytes()).unwrap();
        assert_eq!(key.algorithm(), "RS256");
        let jwt = key.client_assertion("cid", "https://as.example", 1_800_000_000).unwrap();
        assert_eq!(jsonwebtoken::decode_header(&jwt).unwrap().alg, Algorithm::RS256);
        let jwk = Jwk::from_encoding_key(&key.key, Algorithm::RS256).unwrap();
        let mut v = Validation::new(Algorithm::RS256);
        v.set_audience(&["https://as.example"]);
        v.validate_exp = false;
        assert!(jsonwebtoken::decode::<serde_json::Value>(&jwt, &DecodingKey::from_jwk(&jwk).unwrap(), &v).is_ok());
    }

    #[test]
    fn an_assertion_names_the_client_and_the_issuer() {
        let key = ClientAssertionKey::from_pem(EC_PEM.as_bytes()).unwrap();
        assert_eq!(key.algorithm(), "ES256");
        assert!(!format!("{key:?}").contains("MIGH"));
        let now = 1_800_000_000;
        let jwt = key.client_assertion("cid", "https://as.example", now).unwrap();
        let jwk = Jwk::from_encoding_key(&key.key, Algorithm::ES256).unwrap();
        let mut v = Validation::new(Algorithm::ES256);
        v.set_audience(&["https://as.example"]);
        v.validate_exp = false;
        let data = jsonwebtoken::decode::<serde_json::Value>(&jwt, &DecodingKey::from_jwk(&jwk).unwrap(), &v).unwrap();
        let c = data.claims;
        assert_eq!((c["iss"].as_str(), c["sub"].as_str()), (Some("cid"), Some("cid")));
        assert_eq!((c["iat"].as_i64(), c["exp"].as_i64()), (Some(now), Some(now + ASSERTION_LIFETIME_S)));
        let other = key.client_assertion("cid", "https://as.example", now).unwrap();
        let jti =
            |t: &str| jsonwebtoken::dangerous::insecure_decode::<serde_json::Value>(t).unwrap().claims["jti"].clone();
        assert_ne!(jti(&jwt), jti(&other));
        assert!(
            ClientAssertionKey::from_pem(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").is_err()
        );
    }
}
