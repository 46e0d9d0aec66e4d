//! DPoP (RFC 9449) on the wire, both sides: the header names, the
//! authorization scheme, the error codes of a `DPoP` challenge, and the
//! `htu` a proof names for a request URL.

/// The request header that carries a proof, and the response header of a
/// server's `DPoP-Nonce` (RFC 9449 §4.1, §8).
pub const DPOP_HEADER: &str = "DPoP";

/// The response header that carries the nonce the next proof must hold.
pub const NONCE_HEADER: &str = "DPoP-Nonce";

/// The `Authorization` scheme of a DPoP-bound token, and the `token_type` of one (RFC 9449 §7.1, §5).
pub const SCHEME: &str = "DPoP";

/// The `typ` header of a proof.
pub const PROOF_TYP: &str = "dpop+jwt";

/// The error of a server that wants its nonce in the proof (RFC 9449 §8, §9).
pub const USE_DPOP_NONCE: &str = "use_dpop_nonce";

/// The error of a refused proof (RFC 9449 §7.1).
pub const INVALID_DPOP_PROOF: &str = "invalid_dpop_proof";

/// The `htu` of a request to `url`: the URL without its query and fragment (RFC 9449 §4.2).
pub fn htu(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    &url[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn htu_drops_query_and_fragment() {
        assert_eq!(htu("https://a.example/mcp?x=1#f"), "https://a.example/mcp");
        assert_eq!(htu("https://a.example/mcp#f?x"), "https://a.example/mcp");
        assert_eq!(htu("https://a.example/token"), "https://a.example/token");
    }
}
